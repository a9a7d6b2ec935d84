/**
 * Immutable snapshots of the whole tenant configuration, and the copy-on-write step that turns
 * one snapshot plus a batch of key changes into the next.
 *
 * Why copy-on-write: readers (every request of every service) must never lock and never see a
 * half-applied change. A batch of changes is applied to private drafts, the lookup indexes are
 * rebuilt, and only then does the caller swap the finished snapshot in with one assignment. A
 * reader holding the previous snapshot keeps a consistent view for as long as it holds it.
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

/** Everything known about one tenant. Tenants exist while any of their keys does. */
export interface TenantEntry {
  readonly id: number;
  readonly meta: TenantMeta | undefined;
  readonly databases: ReadonlyMap<string, DatabaseConfig>;
  readonly ftp: ReadonlyMap<string, FtpConfig>;
  readonly storage: StorageConfig | undefined;
  readonly wvp: WvpConfig | undefined;
  readonly domain: DomainConfig | undefined;
}

export type SnapshotSource = 'empty' | 'etcd' | 'cache';

export type IndexName = 'domain' | 'code' | 'ftpUsername';

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
  readonly byDomain: ReadonlyMap<string, number>;
  readonly byCode: ReadonlyMap<string, number>;
  readonly byFtpUsername: ReadonlyMap<string, number>;
  readonly conflicts: ReadonlyMap<string, IndexConflict>;
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
    readonly tenants: ReadonlyMap<number, TenantEntry>,
    /** The published resolver config; null when `common/resolver` is unset. */
    readonly resolverConfig: ResolverConfig | null,
    /** Lookup indexes, rebuilt with every snapshot that changes tenants. */
    readonly indexes: SnapshotIndexes,
  ) {
    this.effectiveResolverConfig = resolverConfig ?? DEFAULT_RESOLVER_CONFIG;
    Object.freeze(this);
  }

  get tenantCount(): number {
    return this.indexes.metaIds.length;
  }

  get conflicts(): ReadonlyMap<string, IndexConflict> {
    return this.indexes.conflicts;
  }

  /** Sorted IDs of every tenant that has any key; the order indexes are built in. */
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
    return this.tenants.get(id)?.meta?.status === 'active';
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
  /** Conflicts the base snapshot did not have. */
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
  byDomain: new Map(),
  byCode: new Map(),
  byFtpUsername: new Map(),
  conflicts: new Map(),
};

export const EMPTY_SNAPSHOT = new TenantSnapshot(0, 'empty', 0, new Map(), null, EMPTY_INDEXES);

/** A snapshot of exactly these key/value pairs (a full etcd list or a cache file). */
export function buildSnapshot(entries: Iterable<readonly [string, string]>, options: ApplyOptions): SnapshotUpdate {
  const changes: KeyChange[] = [];
  for (const [key, value] of entries) changes.push({ key, value });
  const update = applyChanges(EMPTY_SNAPSHOT, changes, options);
  // An empty list is still a (changed) snapshot: it carries the list's revision and source.
  if (update.changed) return update;
  return { ...update, snapshot: new TenantSnapshot(options.revision, options.source ?? 'etcd', options.now ?? Date.now(), new Map(), null, EMPTY_INDEXES), changed: true };
}

/** The next snapshot after a batch of changes, copy-on-write; `base` is never modified. */
export function applyChanges(base: TenantSnapshot, changes: readonly KeyChange[], options: ApplyOptions): SnapshotUpdate {
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
    return { snapshot: new TenantSnapshot(revision, source, now, base.tenants, resolver, base.indexes), changed: true, rejected, newConflicts: [] };
  }

  const tenants = new Map(base.tenants);
  let membershipChanged = false;
  for (const [id, draft] of drafts) {
    const entry = draft.finish();
    const existed = tenants.has(id);
    if (entry === undefined) tenants.delete(id);
    else tenants.set(id, entry);
    if (existed !== (entry !== undefined)) membershipChanged = true;
  }
  const baseIndexes = base.indexes;
  const ids = membershipChanged ? [...tenants.keys()].sort((a, b) => a - b) : baseIndexes.ids;
  const indexes = buildIndexes(tenants, ids);
  const newConflicts = [...indexes.conflicts].filter(([k]) => !baseIndexes.conflicts.has(k)).map(([, c]) => c);
  return { snapshot: new TenantSnapshot(revision, source, now, tenants, resolver, indexes), changed: true, rejected, newConflicts };
}

/** Rebuilt with every snapshot; tenants are visited in ascending ID order so the later one wins. */
function buildIndexes(tenants: ReadonlyMap<number, TenantEntry>, ids: readonly number[]): SnapshotIndexes {
  const metaIds: number[] = [];
  const byDomain = new Map<string, number>();
  const byCode = new Map<string, number>();
  const byFtpUsername = new Map<string, number>();
  const conflicts = new Map<string, IndexConflict>();
  const add = (index: IndexName, map: Map<string, number>, value: string, id: number) => {
    const previous = map.get(value);
    if (previous !== undefined && previous !== id) conflicts.set(`${index}:${value}`, { index, value, winner: id, loser: previous });
    map.set(value, id);
  };
  for (const id of ids) {
    const entry = tenants.get(id);
    if (entry === undefined) continue;
    if (entry.meta !== undefined) {
      metaIds.push(id);
      if (entry.meta.code !== '') add('code', byCode, entry.meta.code.toLowerCase(), id);
    }
    const domain = entry.domain;
    if (domain !== undefined) {
      if (domain.primary !== '') add('domain', byDomain, domain.primary.toLowerCase(), id);
      if (domain.internal !== '') add('domain', byDomain, domain.internal.toLowerCase(), id);
      for (const alias of domain.aliases) add('domain', byDomain, alias.toLowerCase(), id);
    }
    for (const username of entry.ftp.keys()) add('ftpUsername', byFtpUsername, username, id);
  }
  return { ids, metaIds, byDomain, byCode, byFtpUsername, conflicts };
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
        return this.take(parseDatabaseConfig(id, ref.serviceCode, raw), (v) => this.writableDatabases().set(ref.serviceCode, v));
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
      ? Object.freeze({ tenantId: id, code, name, primary: this.primary, internal: this.internal, aliases: this.aliases })
      : undefined;
    if (meta === undefined && this.databases.size === 0 && this.ftp.size === 0 && storage === undefined && this.wvp === undefined && !hasDomain) {
      return undefined;
    }
    return Object.freeze({ id, meta, databases: this.databases, ftp: this.ftp, storage, wvp: this.wvp, domain });
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
 * back an equivalent snapshot, indexes included: this is the file cache's format.
 */
export function snapshotEntries(snapshot: TenantSnapshot): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const push = (ref: ConfigKey, value: unknown) => out.push([keyOf(ref), JSON.stringify(value)]);
  if (snapshot.resolverConfig) push({ kind: 'resolver' }, snapshot.resolverConfig);
  for (const tenantId of snapshot.entryIds) {
    const t = snapshot.tenants.get(tenantId);
    if (t === undefined) continue;
    if (t.meta) push({ kind: 'meta', tenantId }, t.meta);
    for (const [serviceCode, db] of t.databases) push({ kind: 'database', tenantId, serviceCode }, db);
    for (const [username, ftp] of t.ftp) push({ kind: 'ftp', tenantId, username }, ftp);
    if (t.storage) {
      const { quotaBytes, maxFileSizeBytes, maxConcurrentUploads } = t.storage;
      push({ kind: 'storage', tenantId }, { quotaBytes, maxFileSizeBytes, maxConcurrentUploads });
    }
    if (t.wvp) push({ kind: 'wvp', tenantId }, { apiUrl: t.wvp.apiUrl, realm: t.wvp.realm });
    if (t.domain) {
      if (t.domain.primary) push({ kind: 'domain', tenantId, part: 'primary' }, t.domain.primary);
      if (t.domain.internal) push({ kind: 'domain', tenantId, part: 'internal' }, t.domain.internal);
      if (t.domain.aliases.length) push({ kind: 'domain', tenantId, part: 'aliases' }, t.domain.aliases);
    }
  }
  return out;
}
