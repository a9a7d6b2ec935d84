/**
 * Sync targets: the Cloudflare objects the operator actually writes, one workflow and one
 * CloudflareSyncState each. Rulesets are keyed by (zone, phase) — every ZoneRuleset,
 * TransformRule and RedirectRule of one zone and phase aggregates into the same entrypoint (the
 * original gave each its own state and they overwrote each other); device policy lists by
 * (account, list); virtual networks by (account, network name); DNS records by (zone, name,
 * type) — the record set, so every DNSRecord of one name and type meets in one place; zone
 * settings by zone; Zero Trust gateway settings by account; Access groups and identity providers
 * by (account, name); a tunnel's remote configuration by (account, tunnel id); the CNAMEs of
 * every tunnel hostname in a zone by zone (one target per zone, so two tunnels wanting one
 * hostname meet in one place).
 */
import { type SourceRef, refString } from './markers.js';

export const DEVICE_LISTS = ['include', 'exclude', 'fallback_domains'] as const;
export type DeviceListName = (typeof DEVICE_LISTS)[number];

export type SyncTarget =
  | { resourceType: 'ZoneRuleset'; accountId: string; zoneId: string; phase: string }
  | { resourceType: 'DeviceSettingsPolicy'; accountId: string; list: DeviceListName }
  | { resourceType: 'VirtualNetwork'; accountId: string; name: string }
  | { resourceType: 'CloudflareDomain'; accountId: string; zoneId: string }
  | { resourceType: 'GatewayConfiguration'; accountId: string }
  | { resourceType: 'AccessGroup'; accountId: string; name: string }
  | { resourceType: 'AccessIdentityProvider'; accountId: string; name: string }
  | { resourceType: 'TunnelConfiguration'; accountId: string; tunnelId: string }
  | { resourceType: 'TunnelDNS'; accountId: string; zoneId: string; zone: string }
  | {
      resourceType: 'DNSRecord';
      accountId: string;
      zoneId: string;
      /** The zone's name (not part of the key: the zone id is). */
      zone: string;
      /** The record's fully qualified name, lower case. */
      name: string;
      type: string;
    };

export type SyncResourceType = SyncTarget['resourceType'];

/**
 * `ZoneRuleset/<zoneId>/<phase>`, `DeviceSettingsPolicy/<accountId>/<list>`,
 * `VirtualNetwork/<accountId>/<network name>`, `DNSRecord/<zoneId>/<fqdn>/<type>` or
 * `CloudflareDomain/<zoneId>` (the zone's settings), `GatewayConfiguration/<accountId>` or
 * `AccessGroup/<accountId>/<group name>`, `AccessIdentityProvider/<accountId>/<name>`,
 * `TunnelConfiguration/<accountId>/<tunnelId>` or `TunnelDNS/<zoneId>`.
 */
export function targetKey(t: SyncTarget): string {
  return `${t.resourceType}/${targetTail(t, '/')}`;
}

function targetTail(t: SyncTarget, sep: string): string {
  switch (t.resourceType) {
    case 'ZoneRuleset':
      return `${t.zoneId}${sep}${t.phase}`;
    case 'DeviceSettingsPolicy':
      return `${t.accountId}${sep}${t.list}`;
    case 'VirtualNetwork':
      return `${t.accountId}${sep}${t.name}`;
    case 'DNSRecord':
      return `${t.zoneId}${sep}${t.name}${sep}${t.type}`;
    case 'CloudflareDomain':
      return t.zoneId;
    case 'GatewayConfiguration':
      return t.accountId;
    case 'AccessGroup':
    case 'AccessIdentityProvider':
      return `${t.accountId}${sep}${t.name}`;
    case 'TunnelConfiguration':
      return `${t.accountId}${sep}${t.tunnelId}`;
    case 'TunnelDNS':
      return t.zoneId;
  }
}

/** The Cloudflare object a target is, in words (the sync workflow's details in the Web UI). */
export function targetObjectName(t: SyncTarget): string {
  switch (t.resourceType) {
    case 'ZoneRuleset':
      return `entrypoint ruleset (phase ${t.phase})`;
    case 'DeviceSettingsPolicy':
      return `device policy list (${t.list})`;
    case 'VirtualNetwork':
      return `virtual network (${JSON.stringify(t.name)})`;
    case 'DNSRecord':
      return `DNS record set (${t.type} ${t.name})`;
    case 'CloudflareDomain':
      return 'set of zone settings';
    case 'GatewayConfiguration':
      return 'Zero Trust gateway configuration';
    case 'AccessGroup':
      return `Access group (${JSON.stringify(t.name)})`;
    case 'AccessIdentityProvider':
      return `Access identity provider (${JSON.stringify(t.name)})`;
    case 'TunnelConfiguration':
      return `tunnel configuration (${t.tunnelId})`;
    case 'TunnelDNS':
      return `set of tunnel CNAME records (zone ${t.zone})`;
  }
}

export function sameTarget(a: SyncTarget, b: SyncTarget): boolean {
  return targetKey(a) === targetKey(b);
}

/** The target's sync workflow: `cloudflare-sync/<resourceType>/<target>`. */
export function syncWorkflowId(t: SyncTarget): string {
  return `cloudflare-sync/${targetKey(t)}`;
}

/** A source's workflow: `cloudflare-source/<Kind>/<namespace>/<name>` (no namespace when cluster-scoped). */
export function sourceWorkflowId(ref: SourceRef): string {
  return `cloudflare-source/${refString(ref)}`;
}

/** What `spec.cloudflareId` of the SyncState says before the object's own id is known. */
export function targetCloudflareId(t: SyncTarget, cloudflareId?: string): string {
  if (t.resourceType === 'ZoneRuleset') return cloudflareId ?? `pending-${t.zoneId}-${t.phase}`;
  if (t.resourceType === 'VirtualNetwork') return cloudflareId ?? `pending-${t.accountId}-${t.name}`;
  if (t.resourceType === 'DNSRecord') return cloudflareId ?? `pending-${t.zoneId}-${t.name}-${t.type}`;
  if (t.resourceType === 'CloudflareDomain') return t.zoneId;
  if (t.resourceType === 'GatewayConfiguration') return `gateway-${t.accountId}`;
  if (t.resourceType === 'AccessGroup' || t.resourceType === 'AccessIdentityProvider')
    return cloudflareId ?? `pending-${t.accountId}-${t.name}`;
  if (t.resourceType === 'TunnelConfiguration') return t.tunnelId;
  if (t.resourceType === 'TunnelDNS') return `tunnel-dns-${t.zoneId}`;
  return `account-${t.accountId}-${t.list}`;
}

/** 32-bit FNV-1a as 8 hex digits: a short, deterministic suffix (workflow-safe, no crypto needed). */
export function fnv1a(s: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}

function kebab(s: string): string {
  return s
    .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/-+/g, '-')
    .replace(/^-|-$/g, '');
}

/**
 * The CloudflareSyncState's name: `kebab(resourceType)-<target>` as the original names it, and
 * when that is longer than 63 characters, cut to 54 plus a hash of the whole key, so two
 * targets never share a name.
 */
export function syncStateName(t: SyncTarget): string {
  const full = kebab(`${kebab(t.resourceType)}-${targetTail(t, '-')}`);
  // A network or group name is the user's text: one that kebab-case would change (`Prod` vs `prod`) gets
  // the hash too, so two networks never share a name.
  const lossy =
    (t.resourceType === 'VirtualNetwork' ||
      t.resourceType === 'AccessGroup' ||
      t.resourceType === 'AccessIdentityProvider') &&
    kebab(t.name) !== t.name;
  if (full.length <= 63 && !lossy) return full;
  return `${full.slice(0, 54).replace(/-+$/, '')}-${fnv1a(targetKey(t))}`;
}

/**
 * The task queue of an account's periodic observations, beside its changes' queue: a backlog of
 * observations waits on the Temporal server, behind no change (issue 23, D7).
 */
export function observeTaskQueue(accountQueue: string): string {
  return `${accountQueue}-observe`;
}
