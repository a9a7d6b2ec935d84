/**
 * An immutable string-keyed map that is cheap to copy with a few changes: a large shared base
 * plus a small overlay of the changes made since (deletions as tombstones). A change copies only
 * the overlay; once the overlay grows past a threshold it is folded into a new base, so reads
 * stay at two native Map lookups and the copying is amortized.
 *
 * Used for the snapshot's lookup indexes (domain, code, FTP username → tenant ID). A sharded map
 * would copy less, but picking a shard for a string means hashing it in JavaScript on every
 * request; here V8 hashes the probe natively, once.
 */
const DELETED: unique symbol = Symbol('deleted');
type Slot<V> = V | typeof DELETED;

const EMPTY: ReadonlyMap<never, never> = new Map<never, never>();

/** Overlay size at which it is folded into the base: ~4·√n, at least 256. */
function foldThreshold(baseSize: number): number {
  return Math.max(256, 4 * Math.ceil(Math.sqrt(baseSize)));
}

export class LayeredMap<V> implements ReadonlyMap<string, V> {
  private constructor(
    private readonly base: ReadonlyMap<string, V>,
    private readonly overlay: ReadonlyMap<string, Slot<V>>,
    readonly size: number,
  ) {}

  static empty<V>(): LayeredMap<V> {
    return new LayeredMap<V>(EMPTY, EMPTY, 0);
  }

  static from<V>(entries: Iterable<readonly [string, V]>): LayeredMap<V> {
    const base = new Map(entries);
    return new LayeredMap(base, EMPTY, base.size);
  }

  /** @internal The builder assembles results through this. */
  static of<V>(base: ReadonlyMap<string, V>, overlay: ReadonlyMap<string, Slot<V>>, size: number): LayeredMap<V> {
    return new LayeredMap(base, overlay, size);
  }

  get(key: string): V | undefined {
    if (this.overlay.size !== 0) {
      const slot = this.overlay.get(key);
      if (slot !== undefined) return slot === DELETED ? undefined : slot;
    }
    return this.base.get(key);
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  /** How many changes sit in the overlay (for tests and diagnostics). */
  get overlaySize(): number {
    return this.overlay.size;
  }

  edit(): LayeredMapBuilder<V> {
    return new LayeredMapBuilder(this.base, this.overlay, this.size);
  }

  *entries(): MapIterator<[string, V]> {
    for (const [k, v] of this.base) if (!this.overlay.has(k)) yield [k, v];
    for (const [k, slot] of this.overlay) if (slot !== DELETED) yield [k, slot];
  }

  *keys(): MapIterator<string> {
    for (const [k] of this.entries()) yield k;
  }

  *values(): MapIterator<V> {
    for (const [, v] of this.entries()) yield v;
  }

  [Symbol.iterator](): MapIterator<[string, V]> {
    return this.entries();
  }

  forEach(callback: (value: V, key: string, map: ReadonlyMap<string, V>) => void, thisArg?: unknown): void {
    for (const [k, v] of this.entries()) callback.call(thisArg, v, k, this);
  }
}

/** Collects changes into a private copy of the overlay (made on the first write). Single use. */
export class LayeredMapBuilder<V> {
  private overlay: ReadonlyMap<string, Slot<V>>;
  private owned = false;
  private built = false;

  constructor(
    private readonly base: ReadonlyMap<string, V>,
    overlay: ReadonlyMap<string, Slot<V>>,
    private size: number,
  ) {
    this.overlay = overlay;
  }

  get changed(): boolean {
    return this.owned;
  }

  get(key: string): V | undefined {
    const slot = this.overlay.get(key);
    if (slot !== undefined) return slot === DELETED ? undefined : slot;
    return this.base.get(key);
  }

  set(key: string, value: V): this {
    if (this.get(key) === undefined) this.size++;
    this.writable().set(key, value);
    return this;
  }

  delete(key: string): this {
    if (this.get(key) === undefined) return this;
    this.size--;
    // A key only in the overlay can simply go; one in the base needs a tombstone over it.
    if (this.base.has(key)) this.writable().set(key, DELETED);
    else this.writable().delete(key);
    return this;
  }

  build(): LayeredMap<V> {
    if (this.built) throw new Error('LayeredMapBuilder.build() called twice');
    this.built = true;
    if (this.overlay.size <= foldThreshold(this.base.size)) return LayeredMap.of(this.base, this.overlay, this.size);
    // Over an empty base nothing was deleted, so the overlay holds no tombstones: it is the base.
    if (this.base.size === 0) return LayeredMap.of(this.overlay as ReadonlyMap<string, V>, EMPTY, this.size);
    const base = new Map(this.base);
    for (const [k, slot] of this.overlay) {
      if (slot === DELETED) base.delete(k);
      else base.set(k, slot);
    }
    return LayeredMap.of(base, EMPTY, this.size);
  }

  private writable(): Map<string, Slot<V>> {
    if (this.built) throw new Error('LayeredMapBuilder used after build()');
    if (!this.owned) {
      this.overlay = new Map(this.overlay);
      this.owned = true;
    }
    return this.overlay as Map<string, Slot<V>>;
  }
}
