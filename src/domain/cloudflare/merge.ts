/**
 * Read-merge-write, decided purely: given the live list of a shared Cloudflare object and the
 * items our sources want in it, what to write — or that nothing needs writing.
 *
 * - Items that are not ours (no marker: dashboard edits; another cluster's marker; the original's
 *   marker unless adoption is on) stay exactly where and as they are.
 * - Our items (our cluster's marker, whichever source it names — also sources that no longer
 *   exist, so a lost removal is cleaned up) are replaced as a block by the desired ones, at the
 *   place of the first of ours in the live list, or at the end when there is none yet.
 * - The desired managed subset is compared with the **live** managed subset: equal → no write
 *   at all. So a no-op sync costs one GET, and an edit made in the dashboard to one of our items
 *   shows up as a difference (drift) on the next observation.
 * - A desired item that may adopt (`DesiredItem.adopt`, the user's explicit opt-in) takes over
 *   the unmarked live item with its key: it becomes ours and is rewritten with our marker. Items
 *   of other clusters are never adopted.
 */
import { type Ownership, type SourceRef, ownershipOf, refString } from './markers.js';

export interface ItemCodec<T> {
  /** The text carrying the marker (rule/entry `description`, record `comment`). */
  descriptionOf(item: T): string | undefined;
  /** The fields the operator sets, normalised: equal projections = the same configuration. */
  comparable(item: T): unknown;
  /** Identity in a keyed list (split-tunnel address/host, fallback suffix); undefined = unkeyed (rules). */
  keyOf?(item: T): string | undefined;
  /** Keeps server-assigned identity (a rule's id) when a live item of ours is replaced. */
  carryIdentity?(desired: T, live: T): T;
  /**
   * A name the user gave the item that must stay unique (a rule's explicit `ref`): a desired item
   * with one takes the identity of the live item with the same name, never another's by position.
   */
  identityOf?(item: T): string | undefined;
  /** How the item is named in messages. */
  label(item: T): string;
}

/** One item a source wants, with the marker already in its description. */
export interface DesiredItem<T> {
  owner: SourceRef;
  item: T;
  /** May take over an unmarked live item with the same key (keyed lists only). */
  adopt?: boolean;
}

export interface Conflict {
  /** The source whose item was left out. */
  owner: string;
  key: string;
  /** Who holds the key: `external`, `cluster <id>`, or the source that came first. */
  heldBy: string;
}

export interface WritePlan<T> {
  /** The whole list to write (ours + everyone else's). */
  items: T[];
  /** False when the live managed subset already equals the desired one: write nothing. */
  write: boolean;
  /** What differs between the live managed subset and the desired one (empty when `write` is false). */
  differences: string[];
  /** Desired items left out because their key is taken. */
  conflicts: Conflict[];
  counts: {
    ours: number;
    external: number;
    otherClusters: number;
    legacy: number;
    frozen: number;
    desired: number;
    /** Unmarked live items taken over this time (each counted in `ours` too). */
    adopted: number;
  };
}

export interface MergeOptions {
  clusterId: string;
  /** Treat items carrying the original's marker (no cluster id) as ours. */
  adoptLegacy: boolean;
  /**
   * Sources (`Kind/Namespace/Name`) whose items in Cloudflare stay exactly as they are this time,
   * e.g. because their spec became invalid: their items are kept like everyone else's, and they
   * want nothing.
   */
  frozenOwners?: ReadonlySet<string>;
  /**
   * The source kinds that feed this target, when another target reads the same Cloudflare list
   * (a zone's DNS records: DNSRecord sets and a zone's tunnel hostnames). An item marked by our
   * source of another kind belongs to that other target: held, never rewritten or removed here.
   */
  ownedKinds?: ReadonlySet<string>;
}

function isOurs(ownership: Ownership, opts: MergeOptions): boolean {
  if (ownership.owner !== 'ours' && !(ownership.owner === 'legacy' && opts.adoptLegacy)) return false;
  if (opts.ownedKinds && !opts.ownedKinds.has(ownership.ref.kind)) return false;
  return !opts.frozenOwners?.has(refString(ownership.ref));
}

/** Canonical JSON (sorted keys, no undefined): the equality of `comparable` projections. */
export function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>)
            .filter(([, x]) => x !== undefined)
            .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : v,
  );
}

export function planWrite<T>(
  live: readonly T[],
  desired: readonly DesiredItem<T>[],
  codec: ItemCodec<T>,
  opts: MergeOptions,
): WritePlan<T> {
  const counts = { ours: 0, external: 0, otherClusters: 0, legacy: 0, frozen: 0, desired: 0, adopted: 0 };
  const ownership = live.map((item) => ownershipOf(codec.descriptionOf(item), opts.clusterId));
  const adoptedBy = adoptions(live, ownership, desired, codec);
  const heldKeys = new Map<string, string>();
  const liveOurs: { item: T; owner: string }[] = [];
  let firstOurs = -1;
  ownership.forEach((o, i) => {
    const item = live[i]!;
    const adopter = adoptedBy.get(i);
    if (isOurs(o, opts) || adopter) {
      if (adopter) counts.adopted++;
      if (o.owner === 'legacy') counts.legacy++;
      else counts.ours++;
      if (firstOurs < 0) firstOurs = i;
      liveOurs.push({ item, owner: adopter ? refString(adopter) : 'ref' in o ? refString(o.ref) : '' });
      return;
    }
    if (o.owner === 'other-cluster') counts.otherClusters++;
    else if (o.owner === 'legacy') counts.legacy++;
    else if (o.owner === 'ours') counts.frozen++;
    else counts.external++;
    const key = codec.keyOf?.(item);
    if (key !== undefined)
      heldKeys.set(
        key,
        o.owner === 'other-cluster'
          ? `cluster ${o.clusterId}`
          : o.owner === 'legacy'
            ? 'legacy marker'
            : o.owner === 'ours' && opts.ownedKinds && !opts.ownedKinds.has(o.ref.kind)
              ? refString(o.ref)
              : o.owner === 'ours'
                ? `${refString(o.ref)} (invalid spec, left as it is)`
                : 'external',
      );
  });

  // Desired items in aggregation order; in a keyed list the first holder of a key wins.
  const conflicts: Conflict[] = [];
  const accepted: DesiredItem<T>[] = [];
  const takenBy = new Map<string, string>();
  const adoptedKeys = new Set(
    [...adoptedBy].map(([i, owner]) => `${refString(owner)}|${codec.keyOf?.(live[i]!) ?? ''}`),
  );
  for (const d of desired) {
    const key = codec.keyOf?.(d.item);
    if (key !== undefined) {
      // A source that adopted the item of this key holds it, whoever else has the same key.
      const adopted = adoptedKeys.has(`${refString(d.owner)}|${key}`);
      const holder = (adopted ? undefined : heldKeys.get(key)) ?? takenBy.get(key);
      if (holder !== undefined) {
        conflicts.push({ owner: refString(d.owner), key, heldBy: holder });
        continue;
      }
      takenBy.set(key, refString(d.owner));
    }
    accepted.push(d);
  }
  counts.desired = accepted.length;

  // Compare the managed subsets (each item's projection computed once). Keyed lists have no
  // meaningful order; rules do.
  const keyed = codec.keyOf !== undefined;
  const wantItems = accepted.map((d) => d.item);
  const haveItems = liveOurs.map((l) => l.item);
  const wantC = wantItems.map((x) => canonical(codec.comparable(x)));
  const haveC = haveItems.map((x) => canonical(codec.comparable(x)));
  const differences = diff(wantC, haveC, keyed, wantItems, haveItems, codec);
  const write = differences.length > 0;

  // Keep a replaced rule's identity: the n-th live item of a source becomes its n-th desired item.
  const liveByOwner = new Map<string, T[]>();
  for (const l of liveOurs) {
    const list = liveByOwner.get(l.owner);
    if (list) list.push(l.item);
    else liveByOwner.set(l.owner, [l.item]);
  }
  const ours = carryIdentities(accepted, liveByOwner, codec);

  const mine = ownership.map((o, i) => isOurs(o, opts) || adoptedBy.has(i));
  const kept = live.filter((_, i) => !mine[i]);
  const at = firstOurs < 0 ? kept.length : mine.slice(0, firstOurs).filter((m) => !m).length;
  const items = [...kept.slice(0, at), ...ours, ...kept.slice(at)];
  return { items, write, differences: write ? differences : [], conflicts, counts };
}

/**
 * Each desired item with the identity of a live item of its source: first by name (an explicit
 * `ref` keeps its rule even when rules are inserted before it), then the n-th remaining desired
 * item takes the n-th remaining live one.
 */
function carryIdentities<T>(
  accepted: readonly DesiredItem<T>[],
  liveByOwner: ReadonlyMap<string, T[]>,
  codec: ItemCodec<T>,
): T[] {
  const carry = codec.carryIdentity;
  if (!carry) return accepted.map((d) => d.item);
  const named = (item: T) => codec.identityOf?.(item);
  const previous = new Map<number, T>();
  const claimed = new Set<T>();
  accepted.forEach((d, i) => {
    const name = named(d.item);
    const live = name === undefined ? undefined : liveByOwner.get(refString(d.owner))?.find((l) => named(l) === name);
    if (live && !claimed.has(live)) {
      previous.set(i, live);
      claimed.add(live);
    }
  });
  const rest = new Map<string, T[]>();
  for (const [owner, list] of liveByOwner)
    rest.set(
      owner,
      list.filter((l) => !claimed.has(l)),
    );
  accepted.forEach((d, i) => {
    if (previous.has(i)) return;
    const next = rest.get(refString(d.owner))?.shift();
    if (next) previous.set(i, next);
  });
  return accepted.map((d, i) => {
    const live = previous.get(i);
    return live ? carry(d.item, live) : d.item;
  });
}

/**
 * Which unmarked live items the desired ones adopt: for each desired item that may adopt, the
 * first external live item with its key not adopted yet (live index → adopting source).
 */
function adoptions<T>(
  live: readonly T[],
  ownership: readonly Ownership[],
  desired: readonly DesiredItem<T>[],
  codec: ItemCodec<T>,
): Map<number, SourceRef> {
  const adoptedBy = new Map<number, SourceRef>();
  if (!codec.keyOf) return adoptedBy;
  for (const d of desired) {
    const key = d.adopt ? codec.keyOf(d.item) : undefined;
    if (key === undefined) continue;
    const i = live.findIndex(
      (item, j) => ownership[j]!.owner === 'external' && !adoptedBy.has(j) && codec.keyOf!(item) === key,
    );
    if (i >= 0) adoptedBy.set(i, d.owner);
  }
  return adoptedBy;
}

/**
 * Human-readable differences between the desired and the live managed subsets, given each
 * item's canonical projection (`wantC[i]` is `wantItems[i]`'s); empty when they are equal.
 */
function diff<T>(
  wantC: string[],
  haveC: string[],
  keyed: boolean,
  wantItems: T[],
  haveItems: T[],
  codec: ItemCodec<T>,
): string[] {
  const want = keyed ? [...wantC].sort() : wantC;
  const have = keyed ? [...haveC].sort() : haveC;
  if (want.length === have.length && want.every((w, i) => w === have[i])) return [];
  const out: string[] = [];
  const remaining = new Map<string, number>();
  for (const h of haveC) remaining.set(h, (remaining.get(h) ?? 0) + 1);
  const wanted = new Map<string, number>();
  for (const w of wantC) wanted.set(w, (wanted.get(w) ?? 0) + 1);
  wantC.forEach((c, i) => {
    const n = remaining.get(c) ?? 0;
    if (n > 0) remaining.set(c, n - 1);
    else out.push(`missing in Cloudflare: ${codec.label(wantItems[i]!)}`);
  });
  haveC.forEach((c, i) => {
    const n = wanted.get(c) ?? 0;
    if (n > 0) wanted.set(c, n - 1);
    else out.push(`not wanted or changed in Cloudflare: ${codec.label(haveItems[i]!)}`);
  });
  if (out.length === 0) out.push('our items are in another order');
  return out;
}
