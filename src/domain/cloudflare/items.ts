/**
 * The items of the shared Cloudflare objects this system writes, in Cloudflare's wire shape
 * (snake_case, as the API and the `cloudflare` SDK take them), and how each is compared, keyed
 * and marked (src/domain/cloudflare/merge.ts).
 */
import { cidrOf } from './kinds/validation.js';
import { canonical, type ItemCodec } from './merge.js';

/** A rule of a phase entrypoint ruleset, as written. `id` only on rules read back (or carried). */
export interface RulesetRule {
  id?: string;
  action: string;
  expression: string;
  description?: string;
  enabled?: boolean;
  ref?: string;
  action_parameters?: Record<string, unknown>;
  ratelimit?: Record<string, unknown>;
  logging?: Record<string, unknown>;
  [field: string]: unknown;
}

/** Fields Cloudflare adds on its own; never part of what we compare or write back for ours. */
const SERVER_FIELDS = new Set(['id', 'version', 'last_updated', 'categories']);

export const rulesetRuleCodec: ItemCodec<RulesetRule> = {
  descriptionOf: (r) => r.description,
  comparable: (r) => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(r)) if (!SERVER_FIELDS.has(k) && v !== undefined) out[k] = v;
    out.enabled = r.enabled ?? true;
    // Cloudflare fills `ref` with the rule id when none is given: only a ref we set counts.
    if (r.ref && r.id && r.ref === r.id) delete out.ref;
    return out;
  },
  carryIdentity: (desired, live) => ({ ...desired, id: live.id, ...(desired.ref ? {} : { ref: live.ref }) }),
  // Refs are unique in a ruleset; one the user set (not Cloudflare's default, the id) names its rule.
  identityOf: (r) => (r.ref && r.ref !== r.id ? r.ref : undefined),
  label: (r) => `rule ${JSON.stringify(r.description ?? r.expression)}`,
};

/** A split-tunnel entry (include or exclude list): an address (CIDR/IP) or a host. */
export interface SplitTunnelEntry {
  address?: string;
  host?: string;
  description?: string;
}

/** Cloudflare answers addresses in CIDR form (a bare IP as `/32`, `/128`): compared as such. */
export const splitTunnelCodec: ItemCodec<SplitTunnelEntry> = {
  descriptionOf: (e) => e.description,
  comparable: (e) => ({
    address: e.address && cidrOf(e.address),
    host: e.host?.toLowerCase(),
    description: e.description ?? '',
  }),
  keyOf: (e) => (e.address ? `address:${cidrOf(e.address)}` : e.host ? `host:${e.host.toLowerCase()}` : undefined),
  label: (e) => `entry ${e.address ?? e.host}`,
};

/** A local (fallback) domain entry. */
export interface FallbackDomain {
  suffix: string;
  description?: string;
  dns_server?: string[];
}

export const fallbackDomainCodec: ItemCodec<FallbackDomain> = {
  descriptionOf: (e) => e.description,
  comparable: (e) => ({
    suffix: e.suffix.toLowerCase(),
    description: e.description ?? '',
    dns_server: e.dns_server ?? [],
  }),
  keyOf: (e) => `suffix:${e.suffix.toLowerCase()}`,
  label: (e) => `domain ${e.suffix}`,
};

/**
 * A Zero Trust virtual network. The network is the item: its name is its key (names are unique
 * per account), so a network of that name made by hand is held by someone else — never adopted.
 */
export interface VirtualNetworkItem {
  /** Cloudflare's id; on networks read back, and carried onto ours so they are patched in place. */
  id?: string;
  name: string;
  comment?: string;
  is_default_network?: boolean;
}

export const virtualNetworkCodec: ItemCodec<VirtualNetworkItem> = {
  descriptionOf: (n) => n.comment,
  comparable: (n) => ({ name: n.name, comment: n.comment ?? '', is_default_network: n.is_default_network ?? false }),
  keyOf: (n) => `virtual network ${JSON.stringify(n.name)}`,
  carryIdentity: (desired, live) => ({ ...desired, id: live.id }),
  label: (n) => `virtual network ${JSON.stringify(n.name)}`,
};

/** A DNS record, in the shape `dns.records.create/edit` take and `list` answers. */
export interface DnsRecordItem {
  /** Cloudflare's id; on records read back, and carried onto ours so they are patched in place. */
  id?: string;
  /** The fully qualified name. */
  name: string;
  type: string;
  content?: string;
  ttl?: number;
  proxied?: boolean;
  /** MX/SRV/URI priority. */
  priority?: number;
  comment?: string | null;
  tags?: string[];
  /** Type-specific data (SRV, CAA, CERT, SSHFP, TLSA, LOC, URI), snake_case as Cloudflare has it. */
  data?: Record<string, unknown>;
}

/**
 * Record types where one name holds one answer as far as this operator is concerned: a record
 * set of these types that holds a record not ours is someone else's name, so ours is never added
 * next to it (round-robin with a stranger's address is not what a DNSRecord asks for). Other
 * types (TXT, MX, SRV, CAA, …) hold independent values: only an identical record is in the way.
 */
const EXCLUSIVE_TYPES = new Set(['A', 'AAAA', 'CNAME']);
/** Types Cloudflare can proxy; on the others `proxied` is always false. */
const PROXIABLE_TYPES = EXCLUSIVE_TYPES;

const hasData = (r: DnsRecordItem) => r.data !== undefined && Object.keys(r.data).length > 0;

/** What the record answers: its data when it has type-specific data, else its content. */
function answerOf(r: DnsRecordItem): unknown {
  return hasData(r) ? { data: r.data, priority: r.priority } : { content: r.content ?? '', priority: r.priority };
}

export const dnsRecordCodec: ItemCodec<DnsRecordItem> = {
  descriptionOf: (r) => r.comment ?? undefined,
  comparable: (r) => ({
    name: r.name.toLowerCase(),
    type: r.type,
    answer: answerOf(r),
    ttl: r.ttl ?? 1,
    proxied: PROXIABLE_TYPES.has(r.type) ? (r.proxied ?? false) : false,
    comment: r.comment ?? '',
    tags: [...(r.tags ?? [])].sort(),
  }),
  keyOf: (r) =>
    EXCLUSIVE_TYPES.has(r.type)
      ? `${r.type} record ${r.name.toLowerCase()}`
      : `${r.type} record ${r.name.toLowerCase()} ${canonical(answerOf(r))}`,
  carryIdentity: (desired, live) => ({ ...desired, id: live.id }),
  label: (r) => `${r.type} record ${r.name} → ${hasData(r) ? canonical(r.data) : JSON.stringify(r.content ?? '')}`,
};

/**
 * A named setting (zone settings, gateway configuration): it carries no marker, so who holds it
 * is what the SyncState remembers (./settings.ts); this codec only compares and names.
 */
export const settingCodec: ItemCodec<{ id: string; value: unknown }> = {
  descriptionOf: () => undefined,
  comparable: (s) => ({ id: s.id, value: s.value }),
  keyOf: (s) => `setting ${s.id}`,
  label: (s) => `setting ${s.id} = ${JSON.stringify(s.value)}`,
};

/**
 * A Zero Trust Access group. It has no description or comment: `marker` is not a Cloudflare
 * field but the ownership the operator remembers for the group's ID (the SyncState's
 * `status.resultData`), set on the desired item and on a live one only when its ID is ours.
 */
export interface AccessGroupItem {
  id?: string;
  name: string;
  include: Record<string, unknown>[];
  exclude: Record<string, unknown>[];
  require: Record<string, unknown>[];
  marker?: string;
}

export const accessGroupCodec: ItemCodec<AccessGroupItem> = {
  descriptionOf: (g) => g.marker,
  comparable: (g) => ({ name: g.name, include: g.include, exclude: g.exclude, require: g.require, marker: g.marker }),
  keyOf: (g) => `Access group ${JSON.stringify(g.name)}`,
  carryIdentity: (desired, live) => ({ ...desired, id: live.id }),
  label: (g) => `Access group ${JSON.stringify(g.name)}`,
};

/**
 * A Zero Trust identity provider. `marker` (ownership by remembered ID, as for Access groups),
 * `secret_ref` and `secret_digest` are not Cloudflare fields: the client secret is never in an
 * item — only the reference to its Secret, and a digest of its value to notice a rotation.
 */
export interface IdentityProviderItem {
  id?: string;
  name: string;
  type: string;
  config: Record<string, unknown>;
  scim_config?: Record<string, unknown>;
  marker?: string;
  secret_ref?: { namespace?: string; name: string; key: string };
  secret_digest?: string;
}

/** What Cloudflare answers for a SCIM setting nobody set. */
const SCIM_DEFAULTS = {
  enabled: false,
  identity_update_behavior: 'no_action',
  seat_deprovision: false,
  user_deprovision: false,
};

/**
 * Config fields Cloudflare fills in when they are left out, by provider type (seen coming back
 * in Terraform's drift reports, cloudflare/terraform-provider-cloudflare#5650, #5532, #4497), and
 * the ones only Cloudflare sets (`redirect_url`): a provider read back with them is unchanged.
 */
const IDP_CONFIG_DEFAULTS: Readonly<Record<string, Readonly<Record<string, unknown>>>> = {
  azureAD: { claims: [], conditional_access_enabled: false, support_groups: false, pkce_enabled: false },
  oidc: { claims: [], scopes: ['openid', 'email', 'profile'], email_claim_name: 'email', pkce_enabled: false },
  okta: { claims: [], pkce_enabled: false },
  onelogin: { claims: [], pkce_enabled: false },
  pingone: { claims: [], pkce_enabled: false },
  'google-apps': { claims: [], pkce_enabled: false },
  google: { claims: [], pkce_enabled: false },
  saml: { attributes: [], header_attributes: [], sign_request: false },
};
const IDP_SERVER_CONFIG = new Set(['redirect_url']);

function comparableIdpConfig(type: string, config: Record<string, unknown>): Record<string, unknown> {
  const set = Object.entries(config).filter(([k, v]) => !IDP_SERVER_CONFIG.has(k) && v !== undefined);
  return { ...IDP_CONFIG_DEFAULTS[type], ...Object.fromEntries(set) };
}

export const identityProviderCodec: ItemCodec<IdentityProviderItem> = {
  descriptionOf: (p) => p.marker,
  comparable: (p) => ({
    name: p.name,
    type: p.type,
    config: comparableIdpConfig(p.type, p.config),
    scim_config: { ...SCIM_DEFAULTS, ...(p.scim_config ?? {}) },
    marker: p.marker,
    secret_digest: p.secret_digest,
  }),
  keyOf: (p) => `identity provider ${JSON.stringify(p.name)}`,
  carryIdentity: (desired, live) => ({ ...desired, id: live.id }),
  label: (p) => `identity provider ${JSON.stringify(p.name)}`,
};
