/**
 * Aggregation: the sources registered with one target, in a stable order — priority (lower
 * first; lower wins conflicts), then the source's creation time, then its ref — so identical
 * inputs always give identical output (the original's `sort.Slice` was not stable). Each
 * source's items get the ownership marker of that source.
 */
import { type SourceRef, describe, refString } from './markers.js';
import type { DesiredItem } from './merge.js';
import type { SettingItem } from './settings.js';
import type {
  IdentityProviderItem,
  AccessGroupItem,
  DnsRecordItem,
  FallbackDomain,
  RulesetRule,
  SplitTunnelEntry,
  VirtualNetworkItem,
} from './items.js';
import type { TunnelContribution } from './tunnels.js';

/** What one source contributes to a ruleset target. */
export interface RulesetContribution {
  rules: RulesetRule[];
}
/** What one source contributes to a device policy list target. */
export interface DeviceListContribution {
  entries: SplitTunnelEntry[] | FallbackDomain[];
}
/** What one source contributes to a virtual network target: the one network it wants (or none). */
export interface VirtualNetworkContribution {
  entries: VirtualNetworkItem[];
}
/** What one source contributes to a DNS record set: its record, and whether it may adopt an unmarked one. */
export interface DnsRecordContribution {
  entries: DnsRecordItem[];
  adoptExisting?: boolean;
}
/** What one source contributes to a settings target: the settings it sets (Cloudflare names). */
export interface SettingsContribution {
  entries: SettingItem[];
}
/** What one source contributes to an Access group target: the one group it wants (or none). */
export interface AccessGroupContribution {
  entries: AccessGroupItem[];
}
/** What one source contributes to an identity provider target (the Secret by reference only). */
export interface IdentityProviderContribution {
  entries: IdentityProviderItem[];
}
export type Contribution =
  | TunnelContribution
  | IdentityProviderContribution
  | AccessGroupContribution
  | RulesetContribution
  | DeviceListContribution
  | VirtualNetworkContribution
  | DnsRecordContribution
  | SettingsContribution;

export interface RegisteredSource<C extends Contribution = Contribution> {
  ref: SourceRef;
  /** Lower first; the original's default is 100. */
  priority: number;
  /** The source object's creationTimestamp (RFC 3339). */
  createdAt: string;
  /** The source's metadata.generation this contribution was built from. */
  generation: number;
  /** The source object's UID (a recreated source is a new registration). */
  uid: string;
  config: C;
}

export function compareSources(a: RegisteredSource, b: RegisteredSource): number {
  if (a.priority !== b.priority) return a.priority - b.priority;
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? -1 : 1;
  const ra = refString(a.ref);
  const rb = refString(b.ref);
  return ra < rb ? -1 : ra > rb ? 1 : 0;
}

export function orderSources<C extends Contribution>(sources: Iterable<RegisteredSource<C>>): RegisteredSource<C>[] {
  return [...sources].sort(compareSources);
}

/** Every source's rules, in aggregation order, each described with its source's marker. */
export function desiredRules(sources: Iterable<RegisteredSource>, clusterId: string): DesiredItem<RulesetRule>[] {
  return orderSources(sources).flatMap((s) =>
    ((s.config as RulesetContribution).rules ?? []).map((rule) => ({
      owner: s.ref,
      item: { ...rule, description: describe(rule.description, clusterId, s.ref) },
    })),
  );
}

/** Every source's list entries, in aggregation order, each described with its source's marker. */
export function desiredEntries<E extends SplitTunnelEntry | FallbackDomain>(
  sources: Iterable<RegisteredSource>,
  clusterId: string,
): DesiredItem<E>[] {
  return orderSources(sources).flatMap((s) =>
    ((s.config as DeviceListContribution).entries ?? []).map((entry) => ({
      owner: s.ref,
      item: { ...(entry as E), description: describe(entry.description, clusterId, s.ref) },
    })),
  );
}

/** Every source's virtual network, in aggregation order, its comment carrying its source's marker. */
export function desiredNetworks(
  sources: Iterable<RegisteredSource>,
  clusterId: string,
): DesiredItem<VirtualNetworkItem>[] {
  return orderSources(sources).flatMap((s) =>
    ((s.config as VirtualNetworkContribution).entries ?? []).map((network) => ({
      owner: s.ref,
      item: {
        name: network.name,
        comment: describe(network.comment, clusterId, s.ref),
        is_default_network: network.is_default_network ?? false,
      },
    })),
  );
}

/**
 * Every source's DNS records, in aggregation order, each comment carrying its source's marker;
 * a source that opted in (`adoptExisting`) may take over an unmarked record with the same key.
 */
export function desiredRecords(sources: Iterable<RegisteredSource>, clusterId: string): DesiredItem<DnsRecordItem>[] {
  return orderSources(sources).flatMap((s) => {
    const c = s.config as DnsRecordContribution;
    return (c.entries ?? []).map((record) => ({
      owner: s.ref,
      item: { ...record, comment: describe(record.comment ?? undefined, clusterId, s.ref) },
      ...(c.adoptExisting ? { adopt: true } : {}),
    }));
  });
}

/** Every source's settings, in aggregation order (per setting, the first one wins: ./settings.ts). */
export function desiredSettings(sources: Iterable<RegisteredSource>): DesiredItem<SettingItem>[] {
  return orderSources(sources).flatMap((s) =>
    ((s.config as SettingsContribution).entries ?? []).map((item) => ({ owner: s.ref, item })),
  );
}

/**
 * Every source's object of a kind owned by its remembered ID (Access groups, identity
 * providers), in aggregation order, each marked with its source (a marker kept by the operator,
 * not a Cloudflare field).
 */
export function desiredOwnedObjects<I extends AccessGroupItem | IdentityProviderItem>(
  sources: Iterable<RegisteredSource>,
  clusterId: string,
): DesiredItem<I>[] {
  return orderSources(sources).flatMap((s) =>
    ((s.config as { entries?: I[] }).entries ?? []).map((object) => ({
      owner: s.ref,
      item: { ...object, marker: describe(undefined, clusterId, s.ref) },
    })),
  );
}
