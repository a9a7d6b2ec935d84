/**
 * The emulator's state: accounts, zones, phase entrypoint rulesets, device policy lists, DNS
 * records, zone settings, virtual networks, tunnels (and their configurations), the Gateway
 * configuration, Access groups and identity providers.
 * Plain in-memory maps; `reset()` empties them and `seed()` fills them (test hooks).
 */
import { randomUUID } from 'node:crypto';
import { ZONE_PLANS, type ZonePlan } from './ruleset-limits.js';

export interface Account {
  id: string;
  name: string;
}

export interface Zone {
  id: string;
  name: string;
  status: 'active' | 'pending';
  paused: boolean;
  type: 'full';
  account: { id: string; name: string };
  name_servers: string[];
  original_name_servers: string[] | null;
  development_mode: number;
  owner: { id: string | null; name: string | null; type: string | null };
  permissions: string[];
  meta: { phishing_detected: boolean; page_rule_quota: number };
  plan: { id: string; name: string };
  created_on: string;
  modified_on: string;
  activated_on: string;
}

export interface Rule {
  id: string;
  version: string;
  last_updated: string;
  action: string;
  expression: string;
  description?: string;
  enabled: boolean;
  ref: string;
  [field: string]: unknown;
}

export interface Ruleset {
  id: string;
  name: string;
  description: string;
  kind: 'zone' | 'root';
  phase: string;
  version: string;
  last_updated: string;
  rules: Rule[];
}

export type Scope = 'accounts' | 'zones';
export type DeviceList = 'include' | 'exclude' | 'fallback_domains';
export type DeviceEntry = Record<string, unknown>;

export interface SeedDocument {
  accounts?: Array<{ id: string; name?: string }>;
  /** A zone's plan decides its rule quotas (ruleset-limits.ts); Free when absent, as a new zone. */
  zones?: Array<{ id?: string; name: string; account_id: string; status?: 'active' | 'pending'; plan?: ZonePlan }>;
  /** "Dashboard-made" DNS records, stored as given (no duplicate checks); `name` relative or FQDN. */
  dns_records?: Array<{ zone_id: string } & Record<string, unknown>>;
}

/** A DNS record as the API returns it (type-specific fields such as `priority`, `data` ride along). */
export interface DnsRecord {
  id: string;
  name: string;
  type: string;
  content?: string;
  proxied: boolean;
  proxiable: boolean;
  ttl: number;
  comment: string | null;
  tags: string[];
  settings: Record<string, unknown>;
  meta: Record<string, unknown>;
  created_on: string;
  modified_on: string;
  comment_modified_on?: string;
  tags_modified_on?: string;
  [field: string]: unknown;
}

export interface VirtualNetwork {
  id: string;
  name: string;
  comment: string;
  is_default_network: boolean;
  created_at: string;
  deleted_at: string | null;
}

export interface NetworkRoute {
  id: string;
  network: string;
  tunnel_id: string;
  tunnel_name: string;
  tun_type: string;
  virtual_network_id: string | null;
  comment: string;
  created_at: string;
  deleted_at: string | null;
}

export interface StoredSetting {
  value: unknown;
  modified_on: string;
}

export interface GatewayConfiguration {
  settings: Record<string, unknown>;
  created_at: string;
  updated_at: string;
}

export interface AccessGroup {
  id: string;
  name: string;
  include: unknown[];
  exclude: unknown[];
  require: unknown[];
  is_default: boolean;
  created_at: string;
  updated_at: string;
}

export interface IdentityProvider {
  id: string;
  name: string;
  type: string;
  config: Record<string, unknown>;
  scim_config: Record<string, unknown>;
}

export interface Tunnel {
  id: string;
  account_tag: string;
  name: string;
  created_at: string;
  deleted_at: string | null;
  connections: unknown[];
  conns_active_at: string | null;
  conns_inactive_at: string | null;
  tun_type: 'cfd_tunnel';
  status: 'inactive' | 'degraded' | 'healthy' | 'down';
  remote_config: boolean;
  config_src: 'local' | 'cloudflare';
  metadata: Record<string, unknown>;
}

export interface TunnelConfiguration {
  tunnel_id: string;
  account_id: string;
  version: number;
  config: Record<string, unknown> | null;
  source: 'cloudflare' | 'local';
  created_at: string;
}

/** A 32-hex identifier, as Cloudflare's. */
export function cfId(): string {
  return randomUUID().replaceAll('-', '');
}

export class EmulatorStore {
  readonly accounts = new Map<string, Account>();
  readonly zones = new Map<string, Zone>();
  /** Key: `${scope}/${scopeId}/${phase}`. */
  readonly entrypoints = new Map<string, Ruleset>();
  /** Key: `${accountId}/${policyId ?? 'default'}/${list}`. */
  readonly deviceLists = new Map<string, DeviceEntry[]>();
  /** Key: zone id; records in creation order. */
  readonly dnsRecords = new Map<string, DnsRecord[]>();
  /** Key: account id. */
  readonly virtualNetworks = new Map<string, VirtualNetwork[]>();
  /** Key: `${zoneId}/${settingId}`; absent = the setting's default. */
  readonly zoneSettings = new Map<string, StoredSetting>();
  /** Key: account id. */
  readonly gatewayConfigs = new Map<string, GatewayConfiguration>();
  /** Key: `${scope}/${scopeId}`. */
  readonly accessGroups = new Map<string, AccessGroup[]>();
  /** Key: `${scope}/${scopeId}`; secrets stay here, responses redact them. */
  readonly identityProviders = new Map<string, IdentityProvider[]>();
  /** Key: account id. */
  readonly tunnels = new Map<string, Tunnel[]>();
  /** Key: tunnel id; the tunnel secret (base64), never returned except inside the token. */
  readonly tunnelSecrets = new Map<string, string>();
  /** Key: tunnel id. */
  readonly tunnelConfigs = new Map<string, TunnelConfiguration>();
  /** Key: tunnel id; the connectors (client ids) running it (a test hook starts and stops them). */
  readonly tunnelConnectors = new Map<string, Set<string>>();
  /** Key: account id. */
  readonly networkRoutes = new Map<string, NetworkRoute[]>();

  constructor(readonly now: () => Date = () => new Date()) {}

  /** The current time as the API writes timestamps. */
  timestamp(): string {
    return this.now().toISOString();
  }

  reset(): void {
    this.accounts.clear();
    this.zones.clear();
    this.entrypoints.clear();
    this.deviceLists.clear();
    this.dnsRecords.clear();
    this.virtualNetworks.clear();
    this.zoneSettings.clear();
    this.gatewayConfigs.clear();
    this.accessGroups.clear();
    this.identityProviders.clear();
    this.tunnels.clear();
    this.tunnelConnectors.clear();
    this.networkRoutes.clear();
    this.tunnelSecrets.clear();
    this.tunnelConfigs.clear();
  }

  seed(doc: SeedDocument): { accounts: Account[]; zones: Zone[]; dns_records: DnsRecord[] } {
    const accounts = (doc.accounts ?? []).map((a) => this.addAccount(a.id, a.name));
    const zones = (doc.zones ?? []).map((z) => this.addZone(z));
    const dns_records = (doc.dns_records ?? []).map(({ zone_id, ...input }) => {
      const zone = this.zones.get(zone_id);
      if (!zone) throw new Error(`seed: dns record for unknown zone ${zone_id}`);
      const record = buildDnsRecord(zone.name, input, this.timestamp());
      this.dnsRecordsOf(zone.id).push(record);
      return record;
    });
    return { accounts, zones, dns_records };
  }

  /** The (mutable) record list of a zone. */
  dnsRecordsOf(zoneId: string): DnsRecord[] {
    let list = this.dnsRecords.get(zoneId);
    if (!list) this.dnsRecords.set(zoneId, (list = []));
    return list;
  }

  addAccount(id: string, name?: string): Account {
    const account = { id, name: name ?? `account ${id}` };
    this.accounts.set(id, account);
    return account;
  }

  addZone(z: { id?: string; name: string; account_id: string; status?: 'active' | 'pending'; plan?: ZonePlan }): Zone {
    const account = this.accounts.get(z.account_id) ?? this.addAccount(z.account_id);
    const at = this.now().toISOString();
    const zone: Zone = {
      id: z.id ?? cfId(),
      name: z.name,
      status: z.status ?? 'active',
      paused: false,
      type: 'full',
      account: { id: account.id, name: account.name },
      name_servers: ['ada.ns.cloudflare.com', 'bob.ns.cloudflare.com'],
      original_name_servers: null,
      development_mode: 0,
      owner: { id: null, name: null, type: 'user' },
      permissions: ['#zone:read', '#zone:edit'],
      meta: { phishing_detected: false, page_rule_quota: 3 },
      plan: { ...ZONE_PLANS[z.plan ?? 'free'] },
      created_on: at,
      modified_on: at,
      activated_on: at,
    };
    this.zones.set(zone.id, zone);
    return zone;
  }

  /** The zones in a stable order (name, then id), as a list endpoint returns them. */
  zoneList(): Zone[] {
    return [...this.zones.values()].sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
  }

  getEntrypoint(scope: Scope, scopeId: string, phase: string): Ruleset | undefined {
    return this.entrypoints.get(`${scope}/${scopeId}/${phase}`);
  }

  /** Entrypoints of one account or zone, by id (for `rulesets.list`). */
  rulesetsOf(scope: Scope, scopeId: string): Ruleset[] {
    const prefix = `${scope}/${scopeId}/`;
    return [...this.entrypoints.entries()]
      .filter(([key]) => key.startsWith(prefix))
      .map(([, rs]) => rs)
      .sort((a, b) => a.id.localeCompare(b.id));
  }

  /**
   * PUT of a phase entrypoint: creates it on first write; replaces `rules[]` wholesale; a rule
   * keeps its id when the body names it, gets a new id otherwise; `ref` defaults to the id;
   * the ruleset's `version` goes up by one on every write, a rule's when it changes.
   */
  putEntrypoint(
    scope: Scope,
    scopeId: string,
    phase: string,
    body: { name?: string; description?: string; rules: Array<Record<string, unknown>> },
  ): Ruleset {
    const key = `${scope}/${scopeId}/${phase}`;
    const at = this.now().toISOString();
    const previous = this.entrypoints.get(key);
    const oldRules = new Map((previous?.rules ?? []).map((r) => [r.id, r]));
    const version = previous ? String(Number(previous.version) + 1) : '1';
    const rules: Rule[] = body.rules.map((input) => {
      const { id: askedId, version: _v, last_updated: _l, ...fields } = input;
      const old = typeof askedId === 'string' ? oldRules.get(askedId) : undefined;
      const id = old?.id ?? cfId();
      const rule = {
        enabled: true,
        ...fields,
        id,
        ref: typeof fields.ref === 'string' && fields.ref ? fields.ref : (old?.ref ?? id),
      } as Rule;
      const changed = !old || JSON.stringify(strip(old)) !== JSON.stringify(strip(rule));
      rule.version = old && !changed ? old.version : old ? String(Number(old.version) + 1) : '1';
      rule.last_updated = old && !changed ? old.last_updated : at;
      return rule;
    });
    const ruleset: Ruleset = {
      id: previous?.id ?? cfId(),
      name: body.name ?? previous?.name ?? 'default',
      description: body.description ?? previous?.description ?? '',
      kind: scope === 'zones' ? 'zone' : 'root',
      phase,
      version,
      last_updated: at,
      rules,
    };
    this.entrypoints.set(key, ruleset);
    return ruleset;
  }

  /** A list as stored; the default profile's never-written exclude and fallback lists are Cloudflare's defaults. */
  getDeviceList(accountId: string, policyId: string | undefined, list: DeviceList): DeviceEntry[] {
    const stored = this.deviceLists.get(`${accountId}/${policyId ?? 'default'}/${list}`);
    if (stored) return stored;
    return policyId === undefined ? DEFAULT_DEVICE_LISTS[list].map((e) => ({ ...e })) : [];
  }

  /** Whole-list PUT: the body replaces the list. */
  putDeviceList(
    accountId: string,
    policyId: string | undefined,
    list: DeviceList,
    entries: DeviceEntry[],
  ): DeviceEntry[] {
    const copy = entries.map((e) => ({ ...e }));
    this.deviceLists.set(`${accountId}/${policyId ?? 'default'}/${list}`, copy);
    return copy;
  }
}

/**
 * What a new account's default device profile holds before anyone writes it (Cloudflare's
 * documented defaults: local and reserved ranges excluded from the tunnel, local-only domain
 * suffixes resolved by the device's own DNS). The include list starts empty.
 */
export const DEFAULT_DEVICE_LISTS: Readonly<Record<DeviceList, readonly DeviceEntry[]>> = {
  include: [],
  exclude: [
    '10.0.0.0/8',
    '100.64.0.0/10',
    '169.254.0.0/16',
    '172.16.0.0/12',
    '192.0.0.0/24',
    '192.168.0.0/16',
    '224.0.0.0/24',
    '240.0.0.0/4',
    '255.255.255.255/32',
    'fe80::/10',
    'fd00::/8',
    'ff01::/16',
    'ff02::/16',
    'ff03::/16',
    'ff04::/16',
    'ff05::/16',
  ].map((address) => ({ address })),
  fallback_domains: [
    'intranet',
    'internal',
    'private',
    'localdomain',
    'domain',
    'lan',
    'home',
    'host',
    'corp',
    'local',
    'localhost',
    'home.arpa',
    'invalid',
    'test',
  ].map((suffix) => ({ suffix })),
};

function strip(rule: Partial<Rule>): Record<string, unknown> {
  const { version: _v, last_updated: _l, ...rest } = rule;
  return Object.fromEntries(Object.entries(rest).sort(([a], [b]) => a.localeCompare(b)));
}

const PROXIABLE_TYPES: ReadonlySet<string> = new Set(['A', 'AAAA', 'CNAME']);

/** `@`, a relative name or an FQDN (any case, trailing dot) → the lower-case FQDN inside the zone. */
export function fqdn(zoneName: string, name: string): string {
  const n = name.trim().toLowerCase().replace(/\.$/, '');
  const zone = zoneName.toLowerCase();
  if (n === '@' || n === '' || n === zone) return zone;
  return n.endsWith(`.${zone}`) ? n : `${n}.${zone}`;
}

/** A new record from a create body (already validated): defaults filled, name made an FQDN. */
export function buildDnsRecord(zoneName: string, input: Record<string, unknown>, at: string, id = cfId()): DnsRecord {
  const { id: _id, zone_id: _z, zone_name: _zn, created_on: _c, modified_on: _m, ...fields } = input;
  const type = String(fields.type ?? '').toUpperCase();
  const proxiable = PROXIABLE_TYPES.has(type);
  const proxied = fields.proxied === true;
  const comment = typeof fields.comment === 'string' && fields.comment !== '' ? fields.comment : null;
  const tags = Array.isArray(fields.tags) ? fields.tags.map(String) : [];
  const record: DnsRecord = {
    ...fields,
    id,
    name: fqdn(zoneName, String(fields.name ?? '@')),
    type,
    proxied,
    proxiable,
    ttl: proxied ? 1 : typeof fields.ttl === 'number' ? fields.ttl : 1,
    comment,
    tags,
    settings: (fields.settings as Record<string, unknown> | undefined) ?? {},
    meta: {},
    created_on: at,
    modified_on: at,
  };
  if (comment !== null) record.comment_modified_on = at;
  if (tags.length) record.tags_modified_on = at;
  return record;
}
