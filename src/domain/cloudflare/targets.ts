/**
 * Sync targets: the Cloudflare objects the operator actually writes, one workflow and one
 * CloudflareSyncState each. Rulesets are keyed by (zone, phase) — every ZoneRuleset,
 * TransformRule and RedirectRule of one zone and phase aggregates into the same entrypoint (the
 * original gave each its own state and they overwrote each other); device policy lists by
 * (account, list); virtual networks by (account, network name).
 */
import { type SourceRef, refString } from './markers.js';

export const DEVICE_LISTS = ['include', 'exclude', 'fallback_domains'] as const;
export type DeviceListName = (typeof DEVICE_LISTS)[number];

export type SyncTarget =
  | { resourceType: 'ZoneRuleset'; accountId: string; zoneId: string; phase: string }
  | { resourceType: 'DeviceSettingsPolicy'; accountId: string; list: DeviceListName }
  | { resourceType: 'VirtualNetwork'; accountId: string; name: string };

export type SyncResourceType = SyncTarget['resourceType'];

/**
 * `ZoneRuleset/<zoneId>/<phase>`, `DeviceSettingsPolicy/<accountId>/<list>` or
 * `VirtualNetwork/<accountId>/<network name>`.
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

/** What `spec.cloudflareId` of the SyncState says before the ruleset's own id is known. */
export function targetCloudflareId(t: SyncTarget, rulesetId?: string): string {
  if (t.resourceType === 'ZoneRuleset') return rulesetId ?? `pending-${t.zoneId}-${t.phase}`;
  if (t.resourceType === 'VirtualNetwork') return rulesetId ?? `pending-${t.accountId}-${t.name}`;
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
  // A network name is the user's text: one that kebab-case would change (`Prod` vs `prod`) gets
  // the hash too, so two networks never share a name.
  const lossy = t.resourceType === 'VirtualNetwork' && kebab(t.name) !== t.name;
  if (full.length <= 63 && !lossy) return full;
  return `${full.slice(0, 54).replace(/-+$/, '')}-${fnv1a(targetKey(t))}`;
}
