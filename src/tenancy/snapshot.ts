/**
 * Immutable snapshots of the whole tenant configuration, and the copy-on-write step that turns
 * one snapshot plus a batch of key changes into the next.
 *
 * Why copy-on-write: readers (every request of every service) must never lock and never see a
 * half-applied change. A batch of changes is applied to private drafts, the lookup indexes are
 * brought up to date, and only then does the caller swap the finished snapshot in with one assignment. A
 * reader holding the previous snapshot keeps a consistent view for as long as it holds it.
 *
 * Cost: a change copies only what it touches. Tenants live in a sharded map and the indexes in
 * layered maps (see those), so a one-tenant change copies a few dozen entries, not all tenants;
 * and the indexes are updated for the tenants that changed rather than recomputed, with the same
 * result as a full rebuild: every value maps to the highest tenant ID claiming it.
 *
 * Pure: no I/O, no logging. Rejected values and index conflicts are returned for the caller to
 * report.
 */
import { classifyKey, keyOf, type ConfigKey, type ConfigKind, type TenantConfigKey } from './keys.js';
import {
  DEFAULT_RESOLVER_CONFIG,
  type DatabaseConfig,
  type DomainConfig,
  type FtpConfig,
  type ResolverConfig,
  type StorageConfig,
  type TenantMeta,
  type WvpConfig,
} from './model.js';
import {
  parseDatabaseConfig,
  parseDomainAliases,
  parseDomainName,
  parseFtpConfig,
  parseResolverConfig,
  parseStorageConfig,
  parseTenantMeta,
  parseWvpConfig,
  type Parsed,
} from './parse.js';
import { IdSet, type IdSetBuilder } from './id-set.js';
import { LayeredMap, type LayeredMapBuilder } from './layered-map.js';
import { ShardedMap } from './sharded-map.js';

/** Everything known about one tenant. Tenants exist while any of their keys does. */
export interface TenantEntry {
  readonly id: number;
  readonly meta: TenantMeta | undefined;
  readonly databases: ReadonlyMap<string, DatabaseConfig>;
  readonly ftp: ReadonlyMap<string, FtpConfig>;
  readonly storage: StorageConfig | undefined;
  readonly wvp: WvpConfig | undefined;
  readonly domain: DomainConfig | undefined;
  /** `meta.status === 'active'` (mirrored in the snapshot's set of active IDs). */
  readonly active: boolean;
  /** Index keys: lower-cased domains (primary, internal, aliases) and code. */
  readonly domainKeys: readonly string[];
  readonly codeKey: string;
}

export type SnapshotSource = 'empty' | 'etcd' | 'cache';

export const INDEX_NAMES = ['domain', 'code', 'ftpUsername'] as const;
export type IndexName = (typeof INDEX_NAMES)[number];

/** Two tenants claim the same domain, code or FTP username; the later (higher ID) wins. */
export interface IndexConflict {
  readonly index: IndexName;
  readonly value: string;
  readonly winner: number;
  readonly loser: number;
}

export interface RejectedValue {
  readonly key: string;
  readonly kind: ConfigKind;
  readonly reason: string;
}

/** One etcd change, key relative to the namespace prefix; `value: null` is a delete. */
export interface KeyChange {
  readonly key: string;
  readonly value: string | null;
}

export interface SnapshotIndexes {
  /** Every tenant with at least one key, ascending. */
  readonly ids: readonly number[];
  /** Tenants with a meta key, ascending. */
  readonly metaIds: readonly number[];
  /** Tenants whose status is active: the per-request check. */
  readonly active: IdSet;
  readonly byDomain: LayeredMap<number>;
  readonly byCode: LayeredMap<number>;
  readonly byFtpUsername: LayeredMap<number>;
  /** `index:value` claimed by several tenants → their IDs ascending; the last one owns the value. */
  readonly contested: LayeredMap<readonly number[]>;
}

const EMPTY_ENTRY_MAP: ReadonlyMap<never, never> = new Map<never, never>();

export class TenantSnapshot {
  /** The resolver config in force: the published one, or the default while none is. */
  readonly effectiveResolverConfig: ResolverConfig;

  constructor(
    /** The etcd revision this snapshot reflects (0 when empty). */
    readonly revision: number,
    readonly source: SnapshotSource,
    /** When this snapshot was assembled (epoch ms). */
    readonly updatedAt: number,
    readonly tenants: ShardedMap<TenantEntry>,
    /** The published resolver config; null when `common/resolver` is unset. */
    readonly resolverConfig: ResolverConfig | null,
    /** Lookup indexes, updated with every snapshot that changes tenants. */
    readonly indexes: SnapshotIndexes,
  ) {
    this.effectiveResolverConfig = resolverConfig ?? DEFAULT_RESOLVER_CONFIG;
    Object.freeze(this);
  }

  get tenantCount(): number {
    return this.indexes.metaIds.length;
  }

  /** Values several tenants claim, with who wins. */
  get conflicts(): IndexConflict[] {
    const out: IndexConflict[] = [];
    for (const [key, claimants] of this.indexes.contested) {
      const colon = key.indexOf(':');
      const winner = claimants.at(-1)!;
      for (const loser of claimants.slice(0, -1)) {
        out.push({ index: key.slice(0, colon) as IndexName, value: key.slice(colon + 1), winner, loser });
      }
    }
    return out;
  }

  /** Sorted IDs of every tenant that has any key. */
  get entryIds(): readonly number[] {
    return this.indexes.ids;
  }

  tenant(id: number): TenantEntry | undefined {
    return this.tenants.get(id);
  }

  getTenantMeta(id: number): TenantMeta | undefined {
    return this.tenants.get(id)?.meta;
  }

  isTenantEnabled(id: number): boolean {
    return this.indexes.active.has(id);
  }

  /** IDs of every tenant with a meta key, ascending. A new array each call. */
  getAllTenantIds(): number[] {
    return [...this.indexes.metaIds];
  }

  getDatabaseConfig(id: number, serviceCode: string): DatabaseConfig | undefined {
    return this.tenants.get(id)?.databases.get(serviceCode);
  }

  /** Service code → config. A new map each call. */
  getAllDatabaseConfigs(id: number): Map<string, DatabaseConfig> {
    return new Map(this.tenants.get(id)?.databases ?? EMPTY_ENTRY_MAP);
  }

  getFtpConfigs(id: number): FtpConfig[] {
    return [...(this.tenants.get(id)?.ftp.values() ?? [])];
  }

  getActiveFtpConfigs(id: number): FtpConfig[] {
    return this.getFtpConfigs(id).filter((c) => c.status === 'active');
  }

  /** FTP usernames are global: the account of any tenant, case-sensitive. */
  getFtpConfigByUsername(username: string): FtpConfig | undefined {
    const id = this.indexes.byFtpUsername.get(username);
    return id === undefined ? undefined : this.tenants.get(id)?.ftp.get(username);
  }

  getStorageConfig(id: number): StorageConfig | undefined {
    return this.tenants.get(id)?.storage;
  }

  getWvpConfig(id: number): WvpConfig | undefined {
    return this.tenants.get(id)?.wvp;
  }

  getDomainConfig(id: number): DomainConfig | undefined {
    return this.tenants.get(id)?.domain;
  }

  /** Exact match on primary, internal or alias domains; case-insensitive (RFC 4343). */
  getTenantIdByDomain(domain: string): number | undefined {
    return this.indexes.byDomain.get(domain.toLowerCase());
  }

  /** Case-insensitive match on the tenant code. */
  getTenantIdByCode(code: string): number | undefined {
    return this.indexes.byCode.get(code.toLowerCase());
  }

  getTenantIdByFtpUsername(username: string): number | undefined {
    return this.indexes.byFtpUsername.get(username);
  }

  getResolverConfig(): ResolverConfig | null {
    return this.resolverConfig;
  }

  /** A private copy: callers may change it without touching what other readers see. */
  getResolverConfigOrDefault(): ResolverConfig {
    return { ...this.effectiveResolverConfig };
  }
}

export interface SnapshotUpdate {
  readonly snapshot: TenantSnapshot;
  /** False when the batch held only unknown keys: `snapshot` is then the base, not a copy. */
  readonly changed: boolean;
  readonly rejected: readonly RejectedValue[];
  /** Conflicts this update created (the base snapshot did not have them). */
  readonly newConflicts: readonly IndexConflict[];
}

export interface ApplyOptions {
  revision: number;
  source?: SnapshotSource;
  now?: number;
  /**
   * Where a rejected value falls back to. Applying a watch batch keeps the base's value; a full
   * reload starts empty and passes the previous snapshot here, so a value that went bad while
   * the watch was down still keeps its last valid version.
   */
  fallback?: TenantSnapshot;
}

const EMPTY_INDEXES: SnapshotIndexes = {
  ids: [],
  metaIds: [],
  active: IdSet.EMPTY,
  byDomain: LayeredMap.empty(),
  byCode: LayeredMap.empty(),
  byFtpUsername: LayeredMap.empty(),
  contested: LayeredMap.empty(),
};

export const EMPTY_SNAPSHOT = new TenantSnapshot(0, 'empty', 0, ShardedMap.empty(), null, EMPTY_INDEXES);

/** A snapshot of exactly these key/value pairs (a full etcd list or a cache file). */
export function buildSnapshot(entries: Iterable<readonly [string, string]>, options: ApplyOptions): SnapshotUpdate {
  const changes: KeyChange[] = [];
  for (const [key, value] of entries) changes.push({ key, value });
  const update = applyChanges(EMPTY_SNAPSHOT, changes, options);
  // An empty list is still a (changed) snapshot: it carries the list's revision and source.
  if (update.changed) return update;
  return {
    ...update,
    snapshot: new TenantSnapshot(
      options.revision,
      options.source ?? 'etcd',
      options.now ?? Date.now(),
      EMPTY_SNAPSHOT.tenants,
      null,
      EMPTY_INDEXES,
    ),
    changed: true,
  };
}

/** The next snapshot after a batch of changes, copy-on-write; `base` is never modified. */
export function applyChanges(
  base: TenantSnapshot,
  changes: readonly KeyChange[],
  options: ApplyOptions,
): SnapshotUpdate {
  const drafts = new Map<number, TenantDraft>();
  const rejected: RejectedValue[] = [];
  const fallback = options.fallback;
  let resolver = base.resolverConfig;
  let known = 0;

  for (const change of changes) {
    const ref = classifyKey(change.key);
    if (ref === undefined) continue;
    known++;
    if (ref.kind === 'resolver') {
      if (change.value === null) {
        resolver = null;
      } else {
        const parsed = parseResolverConfig(change.value);
        if (parsed.ok) resolver = parsed.value;
        else {
          rejected.push({ key: change.key, kind: ref.kind, reason: parsed.reason });
          if (fallback) resolver = fallback.resolverConfig;
        }
      }
      continue;
    }
    let draft = drafts.get(ref.tenantId);
    if (draft === undefined) {
      draft = new TenantDraft(ref.tenantId, base.tenants.get(ref.tenantId));
      drafts.set(ref.tenantId, draft);
    }
    if (change.value === null) {
      draft.remove(ref);
      continue;
    }
    const reason = draft.put(ref, change.value);
    if (reason !== undefined) {
      rejected.push({ key: change.key, kind: ref.kind, reason });
      if (fallback) draft.restore(ref, fallback.tenants.get(ref.tenantId));
    }
  }

  if (known === 0) return { snapshot: base, changed: false, rejected, newConflicts: [] };

  const revision = options.revision;
  const source = options.source ?? 'etcd';
  const now = options.now ?? Date.now();
  if (drafts.size === 0) {
    // Only the resolver changed: tenants and indexes are shared with the base as they are.
    return {
      snapshot: new TenantSnapshot(revision, source, now, base.tenants, resolver, base.indexes),
      changed: true,
      rejected,
      newConflicts: [],
    };
  }

  const tenants = base.tenants.edit();
  const indexes = new IndexEditor(base.indexes);
  for (const [id, draft] of drafts) {
    const entry = draft.finish();
    if (entry === undefined) tenants.delete(id);
    else tenants.set(id, entry);
    indexes.replace(id, base.tenants.get(id), entry);
  }
  return {
    snapshot: new TenantSnapshot(revision, source, now, tenants.build(), resolver, indexes.build()),
    changed: true,
    rejected,
    newConflicts: indexes.newConflicts,
  };
}

/**
 * Brings the indexes from the base snapshot's tenants to the new ones, touching only the values
 * of tenants that changed. Each value is owned by the highest tenant ID claiming it; values with
 * several claimants keep the full list, so when the winner lets go the next one takes over.
 */
class IndexEditor {
  readonly newConflicts: IndexConflict[] = [];
  private readonly owners: Record<IndexName, LayeredMapBuilder<number>>;
  private readonly contested: LayeredMapBuilder<readonly number[]>;
  private readonly active: IdSetBuilder;
  private readonly added: number[] = [];
  private readonly removed = new Set<number>();
  private readonly metaAdded: number[] = [];
  private readonly metaRemoved = new Set<number>();

  constructor(private readonly base: SnapshotIndexes) {
    this.owners = { domain: base.byDomain.edit(), code: base.byCode.edit(), ftpUsername: base.byFtpUsername.edit() };
    this.contested = base.contested.edit();
    this.active = base.active.edit();
  }

  replace(id: number, before: TenantEntry | undefined, after: TenantEntry | undefined): void {
    if (before === undefined && after !== undefined) this.added.push(id);
    if (before !== undefined && after === undefined) this.removed.add(id);
    if (before?.meta === undefined && after?.meta !== undefined) this.metaAdded.push(id);
    if (before?.meta !== undefined && after?.meta === undefined) this.metaRemoved.add(id);
    if (after?.active) this.active.add(id);
    else this.active.delete(id);
    for (const index of INDEX_NAMES) {
      const old = claimsOf(index, before);
      const next = claimsOf(index, after);
      for (const value of old) if (!next.has(value)) this.release(index, value, id);
      for (const value of next) if (!old.has(value)) this.claim(index, value, id);
    }
  }

  build(): SnapshotIndexes {
    const { base, owners, contested } = this;
    return {
      ids: updateSorted(base.ids, this.added, this.removed),
      metaIds: updateSorted(base.metaIds, this.metaAdded, this.metaRemoved),
      active: this.active.changed ? this.active.build() : base.active,
      byDomain: owners.domain.changed ? owners.domain.build() : base.byDomain,
      byCode: owners.code.changed ? owners.code.build() : base.byCode,
      byFtpUsername: owners.ftpUsername.changed ? owners.ftpUsername.build() : base.byFtpUsername,
      contested: contested.changed ? contested.build() : base.contested,
    };
  }

  private claim(index: IndexName, value: string, id: number): void {
    const owners = this.owners[index];
    const owner = owners.get(value);
    if (owner === undefined) {
      owners.set(value, id);
      return;
    }
    const key = `${index}:${value}`;
    const claimants = this.contested.get(key) ?? [owner];
    if (claimants.includes(id)) return;
    const next = [...claimants, id].sort((a, b) => a - b);
    const winner = next.at(-1)!;
    this.contested.set(key, next);
    owners.set(value, winner);
    this.newConflicts.push({ index, value, winner, loser: winner === id ? owner : id });
  }

  private release(index: IndexName, value: string, id: number): void {
    const owners = this.owners[index];
    const key = `${index}:${value}`;
    const claimants = this.contested.get(key);
    if (claimants === undefined) {
      if (owners.get(value) === id) owners.delete(value);
      return;
    }
    const rest = claimants.filter((c) => c !== id);
    if (rest.length === 1) this.contested.delete(key);
    else this.contested.set(key, rest);
    owners.set(value, rest.at(-1)!);
  }
}

const NO_CLAIMS: ReadonlySet<string> = new Set();

function claimsOf(index: IndexName, entry: TenantEntry | undefined): ReadonlySet<string> {
  if (entry === undefined) return NO_CLAIMS;
  switch (index) {
    case 'domain':
      return entry.domainKeys.length ? new Set(entry.domainKeys) : NO_CLAIMS;
    case 'code':
      return entry.codeKey ? new Set([entry.codeKey]) : NO_CLAIMS;
    case 'ftpUsername':
      return entry.ftp.size ? new Set(entry.ftp.keys()) : NO_CLAIMS;
  }
}

/** `base` with `removed` taken out and `added` put in, ascending; `base` itself when unchanged. */
function updateSorted(
  base: readonly number[],
  added: readonly number[],
  removed: ReadonlySet<number>,
): readonly number[] {
  if (added.length === 0 && removed.size === 0) return base;
  const next = removed.size ? base.filter((id) => !removed.has(id)) : [...base];
  if (added.length > 64) {
    for (const id of added) next.push(id);
    return next.sort((a, b) => a - b);
  }
  for (const id of added) {
    let lo = 0;
    let hi = next.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (next[mid]! < id) lo = mid + 1;
      else hi = mid;
    }
    next.splice(lo, 0, id);
  }
  return next;
}

/** A mutable working copy of one tenant, private to one applyChanges call. */
class TenantDraft {
  meta: TenantMeta | undefined;
  databases: ReadonlyMap<string, DatabaseConfig>;
  ftp: ReadonlyMap<string, FtpConfig>;
  storage: StorageConfig | undefined;
  wvp: WvpConfig | undefined;
  primary: string;
  internal: string;
  aliases: readonly string[];
  private ownDatabases = false;
  private ownFtp = false;

  constructor(
    readonly id: number,
    base: TenantEntry | undefined,
  ) {
    this.meta = base?.meta;
    this.databases = base?.databases ?? EMPTY_ENTRY_MAP;
    this.ftp = base?.ftp ?? EMPTY_ENTRY_MAP;
    this.storage = base?.storage;
    this.wvp = base?.wvp;
    this.primary = base?.domain?.primary ?? '';
    this.internal = base?.domain?.internal ?? '';
    this.aliases = base?.domain?.aliases ?? [];
  }

  /** Applies a put; returns the rejection reason when the value is malformed (nothing changes). */
  put(ref: TenantConfigKey, raw: string): string | undefined {
    const id = this.id;
    switch (ref.kind) {
      case 'meta':
        return this.take(parseTenantMeta(id, raw), (v) => (this.meta = v));
      case 'database':
        return this.take(parseDatabaseConfig(id, ref.serviceCode, raw), (v) =>
          this.writableDatabases().set(ref.serviceCode, v),
        );
      case 'ftp':
        return this.take(parseFtpConfig(id, ref.username, raw), (v) => this.writableFtp().set(ref.username, v));
      case 'storage':
        return this.take(parseStorageConfig(id, raw), (v) => (this.storage = v));
      case 'wvp':
        return this.take(parseWvpConfig(id, raw), (v) => (this.wvp = v));
      case 'domain':
        if (ref.part === 'aliases') return this.take(parseDomainAliases(raw), (v) => (this.aliases = v));
        if (ref.part === 'primary') return this.take(parseDomainName(raw), (v) => (this.primary = v));
        return this.take(parseDomainName(raw), (v) => (this.internal = v));
    }
  }

  remove(ref: TenantConfigKey): void {
    switch (ref.kind) {
      case 'meta':
        this.meta = undefined;
        return;
      case 'database':
        if (this.databases.has(ref.serviceCode)) this.writableDatabases().delete(ref.serviceCode);
        return;
      case 'ftp':
        if (this.ftp.has(ref.username)) this.writableFtp().delete(ref.username);
        return;
      case 'storage':
        this.storage = undefined;
        return;
      case 'wvp':
        this.wvp = undefined;
        return;
      case 'domain':
        if (ref.part === 'aliases') this.aliases = [];
        else if (ref.part === 'primary') this.primary = '';
        else this.internal = '';
        return;
    }
  }

  /** Sets the value at `ref` to what `from` has there (or removes it when `from` has none). */
  restore(ref: TenantConfigKey, from: TenantEntry | undefined): void {
    switch (ref.kind) {
      case 'meta':
        this.meta = from?.meta;
        return;
      case 'database': {
        const v = from?.databases.get(ref.serviceCode);
        if (v) this.writableDatabases().set(ref.serviceCode, v);
        else this.remove(ref);
        return;
      }
      case 'ftp': {
        const v = from?.ftp.get(ref.username);
        if (v) this.writableFtp().set(ref.username, v);
        else this.remove(ref);
        return;
      }
      case 'storage':
        this.storage = from?.storage;
        return;
      case 'wvp':
        this.wvp = from?.wvp;
        return;
      case 'domain':
        if (ref.part === 'aliases') this.aliases = from?.domain?.aliases ?? [];
        else if (ref.part === 'primary') this.primary = from?.domain?.primary ?? '';
        else this.internal = from?.domain?.internal ?? '';
        return;
    }
  }

  /** The finished, frozen entry; undefined when the tenant has no keys left. */
  finish(): TenantEntry | undefined {
    const { id, meta } = this;
    const code = meta?.code ?? '';
    const name = meta?.name ?? '';
    let storage = this.storage;
    if (storage !== undefined && (storage.code !== code || storage.name !== name)) {
      storage = Object.freeze({ ...storage, code, name });
    }
    const hasDomain = this.primary !== '' || this.internal !== '' || this.aliases.length > 0;
    const domain = hasDomain
      ? Object.freeze({
          tenantId: id,
          code,
          name,
          primary: this.primary,
          internal: this.internal,
          aliases: this.aliases,
        })
      : undefined;
    if (
      meta === undefined &&
      this.databases.size === 0 &&
      this.ftp.size === 0 &&
      storage === undefined &&
      this.wvp === undefined &&
      !hasDomain
    ) {
      return undefined;
    }
    const domainKeys = hasDomain
      ? [...new Set([this.primary, this.internal, ...this.aliases].filter(Boolean).map((d) => d.toLowerCase()))]
      : [];
    const codeKey = code ? code.toLowerCase() : '';
    return Object.freeze({
      id,
      meta,
      databases: this.databases,
      ftp: this.ftp,
      storage,
      wvp: this.wvp,
      domain,
      active: meta?.status === 'active',
      domainKeys,
      codeKey,
    });
  }

  private take<T>(parsed: Parsed<T>, set: (value: T) => void): string | undefined {
    if (!parsed.ok) return parsed.reason;
    set(parsed.value);
    return undefined;
  }

  // The base snapshot's maps are shared and must stay untouched: copy on first write.
  private writableDatabases(): Map<string, DatabaseConfig> {
    if (!this.ownDatabases) {
      this.databases = new Map(this.databases);
      this.ownDatabases = true;
    }
    return this.databases as Map<string, DatabaseConfig>;
  }

  private writableFtp(): Map<string, FtpConfig> {
    if (!this.ownFtp) {
      this.ftp = new Map(this.ftp);
      this.ownFtp = true;
    }
    return this.ftp as Map<string, FtpConfig>;
  }
}

/**
 * The snapshot as key/value pairs, each value re-encoded from what is in force (so a value that
 * was rejected in etcd is saved as its last valid version). Feeding this to buildSnapshot gives
 * back an equivalent snapshot, indexes included: this is the file cache's format. Lazy, so a
 * caller can spread the work over several ticks (the snapshot is immutable meanwhile).
 */
export function* snapshotEntries(snapshot: TenantSnapshot): Generator<[string, string]> {
  const entry = (ref: ConfigKey, value: unknown): [string, string] => [keyOf(ref), JSON.stringify(value)];
  if (snapshot.resolverConfig) yield entry({ kind: 'resolver' }, snapshot.resolverConfig);
  for (const tenantId of snapshot.entryIds) {
    const t = snapshot.tenants.get(tenantId);
    if (t === undefined) continue;
    if (t.meta) yield entry({ kind: 'meta', tenantId }, t.meta);
    for (const [serviceCode, db] of t.databases) yield entry({ kind: 'database', tenantId, serviceCode }, db);
    for (const [username, ftp] of t.ftp) yield entry({ kind: 'ftp', tenantId, username }, ftp);
    if (t.storage) {
      const { quotaBytes, maxFileSizeBytes, maxConcurrentUploads } = t.storage;
      yield entry({ kind: 'storage', tenantId }, { quotaBytes, maxFileSizeBytes, maxConcurrentUploads });
    }
    if (t.wvp) yield entry({ kind: 'wvp', tenantId }, { apiUrl: t.wvp.apiUrl, realm: t.wvp.realm });
    if (t.domain) {
      if (t.domain.primary) yield entry({ kind: 'domain', tenantId, part: 'primary' }, t.domain.primary);
      if (t.domain.internal) yield entry({ kind: 'domain', tenantId, part: 'internal' }, t.domain.internal);
      if (t.domain.aliases.length) yield entry({ kind: 'domain', tenantId, part: 'aliases' }, t.domain.aliases);
    }
  }
}
