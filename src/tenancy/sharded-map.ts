/**
 * An immutable map from tenant ID to value that is cheap to copy with a few changes: entries are
 * spread over a fixed number of shards by ID, and a change copies only the shards it touches
 * (plus the array of shard pointers). With 10,000 tenants a one-tenant change copies ~40 entries
 * instead of 10,000, which is what keeps copy-on-write snapshots fast enough to make on every
 * etcd event. A read costs one array index more than a Map lookup.
 *
 * Numeric keys only: picking a shard for a string would mean hashing it in JavaScript on every
 * lookup. String-keyed indexes use LayeredMap instead.
 *
 * Iteration order is by shard, not insertion.
 */
const SHARD_BITS = 8;
const SHARDS = 1 << SHARD_BITS;
const MASK = SHARDS - 1;

const EMPTY_SHARD: ReadonlyMap<never, never> = new Map<never, never>();

export class ShardedMap<V> implements ReadonlyMap<number, V> {
  private constructor(
    private readonly shards: ReadonlyArray<ReadonlyMap<number, V>>,
    readonly size: number,
  ) {}

  static empty<V>(): ShardedMap<V> {
    return new ShardedMap<V>(new Array<ReadonlyMap<number, V>>(SHARDS).fill(EMPTY_SHARD), 0);
  }

  static from<V>(entries: Iterable<readonly [number, V]>): ShardedMap<V> {
    const builder = ShardedMap.empty<V>().edit();
    for (const [k, v] of entries) builder.set(k, v);
    return builder.build();
  }

  get(key: number): V | undefined {
    return this.shards[key & MASK]!.get(key);
  }

  has(key: number): boolean {
    return this.shards[key & MASK]!.has(key);
  }

  /** A builder for the next version; this map stays as it is. */
  edit(): ShardedMapBuilder<V> {
    return new ShardedMapBuilder(this.shards, this.size, (shards, size) => new ShardedMap(shards, size));
  }

  *entries(): MapIterator<[number, V]> {
    for (const shard of this.shards) yield* shard.entries();
  }

  *keys(): MapIterator<number> {
    for (const shard of this.shards) yield* shard.keys();
  }

  *values(): MapIterator<V> {
    for (const shard of this.shards) yield* shard.values();
  }

  [Symbol.iterator](): MapIterator<[number, V]> {
    return this.entries();
  }

  forEach(callback: (value: V, key: number, map: ReadonlyMap<number, V>) => void, thisArg?: unknown): void {
    for (const [k, v] of this.entries()) callback.call(thisArg, v, k, this);
  }
}

/** Collects changes; copies a shard the first time it is written. Single use. */
export class ShardedMapBuilder<V> {
  private readonly shards: Array<ReadonlyMap<number, V>>;
  private readonly owned = new Set<number>();
  private built = false;

  constructor(
    shards: ReadonlyArray<ReadonlyMap<number, V>>,
    private size: number,
    private readonly assemble: (shards: ReadonlyArray<ReadonlyMap<number, V>>, size: number) => ShardedMap<V>,
  ) {
    this.shards = [...shards];
  }

  get(key: number): V | undefined {
    return this.shards[key & MASK]!.get(key);
  }

  set(key: number, value: V): this {
    const shard = this.writable(key & MASK);
    if (!shard.has(key)) this.size++;
    shard.set(key, value);
    return this;
  }

  delete(key: number): this {
    const i = key & MASK;
    if (!this.shards[i]!.has(key)) return this;
    this.writable(i).delete(key);
    this.size--;
    return this;
  }

  build(): ShardedMap<V> {
    if (this.built) throw new Error('ShardedMapBuilder.build() called twice');
    this.built = true;
    return this.assemble(this.shards, this.size);
  }

  private writable(i: number): Map<number, V> {
    if (this.built) throw new Error('ShardedMapBuilder used after build()');
    if (!this.owned.has(i)) {
      this.shards[i] = new Map(this.shards[i]!);
      this.owned.add(i);
    }
    return this.shards[i] as Map<number, V>;
  }
}
