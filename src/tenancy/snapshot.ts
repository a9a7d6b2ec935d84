/**
 * Immutable snapshots of the whole tenant configuration, and the step that turns one snapshot
 * plus a batch of key changes into the next.
 *
 * Readers (every request of every service) never lock and never see a half-applied change: a
 * batch is applied to fresh copies of the plain Maps it touches, in one synchronous step, and the
 * caller swaps the finished snapshot in with one assignment. A reader holding the previous
 * snapshot keeps a consistent view for as long as it holds it (across awaits too).
 *
 * Cost: a batch copies the tenant map, and the lookup maps whose values it changes (a few ms at
 * 10,000 tenants, once per batch of watch events), not every map per event. Lookups are plain
 * Map reads.
 *
 * Pure: no I/O, no logging. Rejected values and index conflicts are returned for the caller to
 * report.
 */
import {
  DEFAULT_RESOLVER_CONFIG,
  DOMAIN_PARTS,
  RESOLVER_KEY,
  classifyKey,
  keyOf,
  type ConfigKind,
  type DatabaseConfig,
  type DomainConfig,
  type FtpConfig,
  type ResolverConfig,
  type SandboxConfig,
  type StorageConfig,
  type TenantConfigKey,
  type TenantMeta,
  type WvpConfig,
} from './model.js';
import {
  parseDatabaseConfig,
  parseDomainAliases,
  parseDomainName,
  parseFtpConfig,
  parseResolverConfig,
  parseSandboxConfig,
  parseStorageConfig,
  parseTenantMeta,
  parseWvpConfig,
  type Parsed,
} from './parse.js';

/** What one key of a tenant holds, parsed. */
export type TenantItem =
  | { readonly kind: 'meta'; readonly value: TenantMeta }
  | { readonly kind: 'database'; readonly value: DatabaseConfig }
  | { readonly kind: 'ftp'; readonly value: FtpConfig }
  | { readonly kind: 'storage'; readonly value: StorageConfig }
  | { readonly kind: 'wvp'; readonly value: WvpConfig }
  | { readonly kind: 'sandbox'; readonly value: SandboxConfig }
  | { readonly kind: 'primary' | 'internal'; readonly value: string }
  | { readonly kind: 'aliases'; readonly value: readonly string[] };

/** Everything known about one tenant. Tenants exist while any of their keys does. */
export interface TenantEntry {
  readonly id: number;
  readonly meta: TenantMeta | undefined;
  readonly databases: ReadonlyMap<string, DatabaseConfig>;
  readonly ftp: ReadonlyMap<string, FtpConfig>;
  readonly storage: StorageConfig | undefined;
  readonly wvp: WvpConfig | undefined;
  readonly sandbox: SandboxConfig | undefined;
  readonly domain: DomainConfig | undefined;
  /** `meta.status === 'active'`. */
  readonly active: boolean;
  /** Index keys: lower-cased domains (primary, internal, aliases) and code. */
  readonly domainKeys: readonly string[];
  readonly codeKey: string;
}

export type SnapshotSource = 'empty' | 'etcd' | 'cache';

export const INDEX_NAMES = ['domain', 'code', 'ftpUsername'] as const;
export type IndexName = (typeof INDEX_NAMES)[number];

/**
 * One lookup: each value → the tenant owning it. When several tenants claim a value, the highest
 * ID owns it ("the later tenant wins", as in the original) and `contested` keeps every claimant,
 * ascending, so the next one takes over when the owner lets go.
 */
export interface LookupIndex {
  readonly owners: ReadonlyMap<string, number>;
  readonly contested: ReadonlyMap<string, readonly number[]>;
}

export type SnapshotIndexes = Readonly<Record<IndexName, LookupIndex>>;

/** Two tenants claim the same domain, code or FTP username; the later (higher ID) wins. */
export interface IndexConflict {
  readonly index: IndexName;
  readonly value: string;
  readonly winner: number;
  readonly loser: number;
}

/** A value skipped as malformed (the last valid one stays), or with `item`: one part of a value skipped while the rest applies. */
export interface RejectedValue {
  readonly key: string;
  readonly kind: ConfigKind;
  readonly reason: string;
  /** The part skipped (`[2]` of an alias list, `httpType`); absent when the whole value was. */
  readonly item?: string;
}

/** One etcd change, key relative to the namespace prefix; `value: null` is a delete. */
export interface KeyChange {
  readonly key: string;
  readonly value: string | null;
}

export class TenantSnapshot {
  /** The resolver config in force: the published one, or the default while none is. */
  readonly effectiveResolverConfig: ResolverConfig;
  // Derived on first use: most snapshots are replaced before anyone asks.
  #entryIds: readonly number[] | undefined;
  #tenantIds: readonly number[] | undefined;

  constructor(
    /** The etcd revision this snapshot reflects (0 when empty). */
    readonly revision: number,
    readonly source: SnapshotSource,
    /** When this snapshot was assembled (epoch ms). */
    readonly updatedAt: number,
    readonly tenants: ReadonlyMap<number, TenantEntry>,
    /** The published resolver config; null when `common/resolver` is unset. */
    readonly resolverConfig: ResolverConfig | null,
    readonly indexes: SnapshotIndexes,
  ) {
    this.effectiveResolverConfig = resolverConfig ?? DEFAULT_RESOLVER_CONFIG;
    Object.freeze(this);
  }

  /** Sorted IDs of every tenant that has any key. */
  get entryIds(): readonly number[] {
    return (this.#entryIds ??= [...this.tenants.keys()].sort((a, b) => a - b));
  }

  get tenantCount(): number {
    return this.tenantIds().length;
  }

  /** Values several tenants claim, with who wins. */
  get conflicts(): IndexConflict[] {
    const out: IndexConflict[] = [];
    for (const index of INDEX_NAMES) {
      for (const [value, claimants] of this.indexes[index].contested) {
        const winner = claimants.at(-1)!;
        for (const loser of claimants.slice(0, -1)) out.push({ index, value, winner, loser });
      }
    }
    return out;
  }

  tenant(id: number): TenantEntry | undefined {
    return this.tenants.get(id);
  }

  getTenantMeta(id: number): TenantMeta | undefined {
    return this.tenants.get(id)?.meta;
  }

  isTenantEnabled(id: number): boolean {
    return this.tenants.get(id)?.active ?? false;
  }

  /** IDs of every tenant with a meta key, ascending. A new array each call. */
  getAllTenantIds(): number[] {
    return [...this.tenantIds()];
  }

  getDatabaseConfig(id: number, serviceCode: string): DatabaseConfig | undefined {
    return this.tenants.get(id)?.databases.get(serviceCode);
  }

  /** Service code → config. A new map each call. */
  getAllDatabaseConfigs(id: number): Map<string, DatabaseConfig> {
    return new Map(this.tenants.get(id)?.databases);
  }

  getFtpConfigs(id: number): FtpConfig[] {
    return [...(this.tenants.get(id)?.ftp.values() ?? [])];
  }

  getActiveFtpConfigs(id: number): FtpConfig[] {
    return this.getFtpConfigs(id).filter((c) => c.status === 'active');
  }

  /** FTP usernames are global: the account of any tenant, case-sensitive. */
  getFtpConfigByUsername(username: string): FtpConfig | undefined {
    const id = this.getTenantIdByFtpUsername(username);
    return id === undefined ? undefined : this.tenants.get(id)?.ftp.get(username);
  }

  getStorageConfig(id: number): StorageConfig | undefined {
    return this.tenants.get(id)?.storage;
  }

  getWvpConfig(id: number): WvpConfig | undefined {
    return this.tenants.get(id)?.wvp;
  }

  /** Undefined: the tenant has no sandbox settings, so no sandbox limit applies. */
  getSandboxConfig(id: number): SandboxConfig | undefined {
    return this.tenants.get(id)?.sandbox;
  }

  getDomainConfig(id: number): DomainConfig | undefined {
    return this.tenants.get(id)?.domain;
  }

  /** Exact match on primary, internal or alias domains; case-insensitive (RFC 4343). */
  getTenantIdByDomain(domain: string): number | undefined {
    return this.indexes.domain.owners.get(domain.toLowerCase());
  }

  /** Case-insensitive match on the tenant code. */
  getTenantIdByCode(code: string): number | undefined {
    return this.indexes.code.owners.get(code.toLowerCase());
  }

  getTenantIdByFtpUsername(username: string): number | undefined {
    return this.indexes.ftpUsername.owners.get(username);
  }

  getResolverConfig(): ResolverConfig | null {
    return this.resolverConfig;
  }

  /** A private copy: callers may change it without touching what other readers see. */
  getResolverConfigOrDefault(): ResolverConfig {
    return { ...this.effectiveResolverConfig };
  }

  private tenantIds(): readonly number[] {
    return (this.#tenantIds ??= this.entryIds.filter((id) => this.tenants.get(id)!.meta !== undefined));
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

const NO_LOOKUP: LookupIndex = { owners: new Map(), contested: new Map() };
const NO_CLAIMS: SnapshotIndexes = { domain: NO_LOOKUP, code: NO_LOOKUP, ftpUsername: NO_LOOKUP };

export const EMPTY_SNAPSHOT = new TenantSnapshot(0, 'empty', 0, new Map(), null, NO_CLAIMS);

/** A snapshot of exactly these key/value pairs (a full etcd list or a cache file). */
export function buildSnapshot(entries: Iterable<readonly [string, string]>, options: ApplyOptions): SnapshotUpdate {
  const changes = Array.from(entries, ([key, value]): KeyChange => ({ key, value }));
  // An empty list is still a (changed) snapshot: it carries the list's revision and source.
  return update(EMPTY_SNAPSHOT, changes, options, true);
}

/** The next snapshot after a batch of changes; `base` is never modified. */
export function applyChanges(
  base: TenantSnapshot,
  changes: readonly KeyChange[],
  options: ApplyOptions,
): SnapshotUpdate {
  return update(base, changes, options, false);
}

function update(base: TenantSnapshot, changes: readonly KeyChange[], options: ApplyOptions, always: boolean) {
  const { fallback } = options;
  const drafts = new Map<number, Draft>();
  const rejected: RejectedValue[] = [];
  let resolver = base.resolverConfig;
  let known = always;

  for (const { key, value } of changes) {
    const ref = classifyKey(key);
    if (ref === undefined) continue;
    known = true;
    if (ref.kind === 'resolver') {
      const parsed: Parsed<ResolverConfig | null> = value === null ? { ok: true, value } : parseResolverConfig(value);
      if (parsed.ok) {
        resolver = parsed.value;
        for (const { item, reason } of parsed.skipped ?? []) rejected.push({ key, kind: ref.kind, item, reason });
      } else {
        rejected.push({ key, kind: ref.kind, reason: parsed.reason });
        if (fallback) resolver = fallback.resolverConfig;
      }
      continue;
    }
    let draft = drafts.get(ref.tenantId);
    if (draft === undefined) {
      draft = draftOf(base.tenant(ref.tenantId));
      drafts.set(ref.tenantId, draft);
    }
    const parsed = value === null ? undefined : parseItem(ref, value);
    if (parsed?.ok === false) {
      rejected.push({ key, kind: ref.kind, reason: parsed.reason });
      if (fallback) place(draft, ref, itemAt(fallback.tenant(ref.tenantId), ref));
    } else {
      place(draft, ref, parsed?.value);
      for (const { item, reason } of parsed?.skipped ?? []) rejected.push({ key, kind: ref.kind, item, reason });
    }
  }

  if (!known) return { snapshot: base, changed: false, rejected, newConflicts: [] };
  const revision = options.revision;
  const source = options.source ?? 'etcd';
  const now = options.now ?? Date.now();
  if (drafts.size === 0) {
    // Only the resolver changed: tenants and indexes are shared with the base as they are.
    const snapshot = new TenantSnapshot(revision, source, now, base.tenants, resolver, base.indexes);
    return { snapshot, changed: true, rejected, newConflicts: [] };
  }
  const tenants = new Map(base.tenants);
  const indexes = new IndexEditor(base.indexes);
  for (const [id, draft] of drafts) {
    const entry = assemble(id, draft);
    if (entry === undefined) tenants.delete(id);
    else tenants.set(id, entry);
    indexes.replace(id, base.tenant(id), entry);
  }
  const snapshot = new TenantSnapshot(revision, source, now, tenants, resolver, indexes.build());
  return { snapshot, changed: true, rejected, newConflicts: indexes.newConflicts };
}

function as<V>(kind: TenantItem['kind'], parsed: Parsed<V>): Parsed<TenantItem> {
  return (parsed.ok ? { ...parsed, value: { kind, value: parsed.value } } : parsed) as Parsed<TenantItem>;
}

function parseItem(ref: TenantConfigKey, raw: string): Parsed<TenantItem> {
  const id = ref.tenantId;
  switch (ref.kind) {
    case 'meta':
      return as('meta', parseTenantMeta(id, raw));
    case 'database':
      return as('database', parseDatabaseConfig(id, ref.serviceCode, raw));
    case 'ftp':
      return as('ftp', parseFtpConfig(id, ref.username, raw));
    case 'storage':
      return as('storage', parseStorageConfig(id, raw));
    case 'wvp':
      return as('wvp', parseWvpConfig(id, raw));
    case 'sandbox':
      return as('sandbox', parseSandboxConfig(id, raw));
    case 'domain':
      return ref.part === 'aliases' ? as('aliases', parseDomainAliases(raw)) : as(ref.part, parseDomainName(raw));
  }
}

/** A tenant's values while a batch is applied to them: private to one update. */
interface Draft {
  meta?: TenantMeta | undefined;
  storage?: StorageConfig | undefined;
  wvp?: WvpConfig | undefined;
  sandbox?: SandboxConfig | undefined;
  databases: Map<string, DatabaseConfig>;
  ftp: Map<string, FtpConfig>;
  primary: string;
  internal: string;
  aliases: readonly string[];
}

function draftOf(entry: TenantEntry | undefined): Draft {
  const { meta, storage, wvp, sandbox, domain } = entry ?? {};
  return {
    meta,
    storage,
    wvp,
    sandbox,
    databases: new Map(entry?.databases),
    ftp: new Map(entry?.ftp),
    primary: domain?.primary ?? '',
    internal: domain?.internal ?? '',
    aliases: domain?.aliases ?? NONE_LISTED,
  };
}

function item(kind: TenantItem['kind'], value: unknown): TenantItem | undefined {
  return value ? ({ kind, value } as TenantItem) : undefined;
}

/** What `entry` holds at the key `ref` names. */
function itemAt(entry: TenantEntry | undefined, ref: TenantConfigKey): TenantItem | undefined {
  if (entry === undefined) return undefined;
  switch (ref.kind) {
    case 'database':
      return item('database', entry.databases.get(ref.serviceCode));
    case 'ftp':
      return item('ftp', entry.ftp.get(ref.username));
    case 'domain':
      return item(ref.part, entry.domain?.[ref.part]);
    default:
      return item(ref.kind, entry[ref.kind]);
  }
}

/** Puts `item` at the key `ref` names; undefined removes what is there. */
function place(draft: Draft, ref: TenantConfigKey, item: TenantItem | undefined): void {
  if (ref.kind === 'database') {
    if (item?.kind === 'database') draft.databases.set(ref.serviceCode, item.value);
    else draft.databases.delete(ref.serviceCode);
  } else if (ref.kind === 'ftp') {
    if (item?.kind === 'ftp') draft.ftp.set(ref.username, item.value);
    else draft.ftp.delete(ref.username);
  } else if (ref.kind === 'domain') {
    if (ref.part === 'aliases') draft.aliases = item?.kind === 'aliases' ? item.value : NONE_LISTED;
    else draft[ref.part] = item?.kind === ref.part ? item.value : '';
  } else if (ref.kind === 'meta') draft.meta = item?.kind === 'meta' ? item.value : undefined;
  else if (ref.kind === 'storage') draft.storage = item?.kind === 'storage' ? item.value : undefined;
  else if (ref.kind === 'wvp') draft.wvp = item?.kind === 'wvp' ? item.value : undefined;
  else draft.sandbox = item?.kind === 'sandbox' ? item.value : undefined;
}

/** The frozen entry of a draft; undefined when the tenant has no values left. */
function assemble(id: number, draft: Draft): TenantEntry | undefined {
  const { meta, wvp, sandbox, primary, internal, aliases } = draft;
  const domains = [primary, internal, ...aliases].filter(Boolean);
  const empty =
    !meta && !draft.storage && !wvp && !sandbox && !draft.databases.size && !draft.ftp.size && !domains.length;
  if (empty) return undefined;
  // Storage and domain carry the tenant's code and name, as in the original.
  const code = meta?.code ?? '';
  const name = meta?.name ?? '';
  const storage = draft.storage && Object.freeze({ ...draft.storage, code, name });
  return Object.freeze({
    id,
    meta,
    // Most tenants have no FTP account or database of their own: share one empty map.
    databases: draft.databases.size ? draft.databases : NONE,
    ftp: draft.ftp.size ? draft.ftp : NONE,
    storage,
    wvp,
    sandbox,
    domain: domains.length ? Object.freeze({ tenantId: id, code, name, primary, internal, aliases }) : undefined,
    active: meta?.status === 'active',
    domainKeys: domains.length ? [...new Set(domains.map((d) => d.toLowerCase()))] : NONE_LISTED,
    codeKey: code.toLowerCase(),
  });
}

const NONE: ReadonlyMap<never, never> = new Map<never, never>();
const NONE_LISTED: readonly string[] = Object.freeze([]);

/**
 * Brings the indexes from the base snapshot's tenants to the new ones: copies only the lookups
 * whose values change, and touches only the values of tenants that changed. Same result as a
 * rebuild from scratch (tested).
 */
class IndexEditor {
  readonly newConflicts: IndexConflict[] = [];
  private readonly copies: Partial<
    Record<IndexName, { owners: Map<string, number>; contested: Map<string, readonly number[]> }>
  > = {};

  constructor(private readonly base: SnapshotIndexes) {}

  replace(id: number, before: TenantEntry | undefined, after: TenantEntry | undefined): void {
    for (const index of INDEX_NAMES) {
      const old = claimsOf(index, before);
      const next = claimsOf(index, after);
      for (const value of old) if (!next.includes(value)) this.release(index, value, id);
      for (const value of next) if (!old.includes(value)) this.claim(index, value, id);
    }
  }

  build(): SnapshotIndexes {
    const { domain, code, ftpUsername } = { ...this.base, ...this.copies };
    return { domain, code, ftpUsername };
  }

  private edit(index: IndexName) {
    const { owners, contested } = this.base[index];
    return (this.copies[index] ??= { owners: new Map(owners), contested: new Map(contested) });
  }

  private claim(index: IndexName, value: string, id: number): void {
    const { owners, contested } = this.edit(index);
    const owner = owners.get(value);
    if (owner === undefined) {
      owners.set(value, id);
      return;
    }
    const claimants = [...(contested.get(value) ?? [owner]), id].sort((a, b) => a - b);
    const winner = claimants.at(-1)!;
    contested.set(value, claimants);
    owners.set(value, winner);
    this.newConflicts.push({ index, value, winner, loser: winner === id ? owner : id });
  }

  private release(index: IndexName, value: string, id: number): void {
    const { owners, contested } = this.edit(index);
    const claimants = contested.get(value);
    if (claimants === undefined) {
      owners.delete(value);
      return;
    }
    const rest = claimants.filter((c) => c !== id);
    if (rest.length === 1) contested.delete(value);
    else contested.set(value, rest);
    owners.set(value, rest.at(-1)!);
  }
}

function claimsOf(index: IndexName, entry: TenantEntry | undefined): readonly string[] {
  if (entry === undefined) return [];
  if (index === 'domain') return entry.domainKeys;
  if (index === 'code') return entry.codeKey ? [entry.codeKey] : [];
  return [...entry.ftp.keys()];
}

/**
 * The snapshot as key/value pairs, each value re-encoded from what is in force (so a value that
 * was rejected in etcd is saved as its last valid version). Feeding this to buildSnapshot gives
 * back an equivalent snapshot, indexes included: this is the file cache's format. Lazy, so a
 * caller can spread the work over several ticks (the snapshot is immutable meanwhile).
 */
export function* snapshotEntries(snapshot: TenantSnapshot): Generator<[string, string]> {
  if (snapshot.resolverConfig) yield [RESOLVER_KEY, JSON.stringify(snapshot.resolverConfig)];
  for (const tenantId of snapshot.entryIds) {
    const t = snapshot.tenants.get(tenantId)!;
    const refs: TenantConfigKey[] = [
      { kind: 'meta', tenantId },
      ...[...t.databases.keys()].map((serviceCode) => ({ kind: 'database' as const, tenantId, serviceCode })),
      ...[...t.ftp.keys()].map((username) => ({ kind: 'ftp' as const, tenantId, username })),
      { kind: 'storage', tenantId },
      { kind: 'wvp', tenantId },
      { kind: 'sandbox', tenantId },
      ...DOMAIN_PARTS.map((part) => ({ kind: 'domain' as const, tenantId, part })),
    ];
    for (const ref of refs) {
      const item = itemAt(t, ref);
      if (item && !(Array.isArray(item.value) && item.value.length === 0))
        yield [keyOf(ref), JSON.stringify(item.value)];
    }
  }
}
