/**
 * DeviceSettingsPolicy (cluster-scoped): split-tunnel include/exclude entries and fallback
 * domains, each list its own target per account.
 */
import { DeviceSettingsPolicyKind, type DeviceSettingsPolicySpec } from '../../../api/cloudflare.js';
import type { FallbackDomain, SplitTunnelEntry } from '../items.js';
import type { DeviceListName } from '../targets.js';
import type { SourceKindRules } from './types.js';
import { describe, marker } from '../markers.js';
import { HOSTNAME, cidrOf, validAddress, validIp } from './validation.js';

/** Cloudflare's limit on a split-tunnel entry's or fallback domain's description. */
export const DEVICE_LIST_DESCRIPTION_MAX = 100;

export const deviceSettingsPolicyRules: SourceKindRules<DeviceSettingsPolicySpec> = {
  definition: DeviceSettingsPolicyKind,
  clusterScoped: true,
  priority: (spec) => spec.priority ?? 100,
  credentialsRef: (spec) => spec.cloudflare?.credentialsRef?.name,
  zone: () => undefined,
  validate(s, object, context) {
    const problems: string[] = [];
    // Cloudflare's 100 characters hold the description and our marker: refused before the call.
    const clusterId = context?.clusterId;
    const tooLong = (at: string, description: string | undefined) => {
      if (clusterId === undefined) return;
      const written = describe(description, clusterId, { kind: DeviceSettingsPolicyKind.kind, name: object.name });
      if (written.length > DEVICE_LIST_DESCRIPTION_MAX)
        problems.push(
          `${at}.description: with the ownership marker it would be ${written.length} characters, over Cloudflare's ${DEVICE_LIST_DESCRIPTION_MAX} (the marker takes ${marker(clusterId, { kind: DeviceSettingsPolicyKind.kind, name: object.name }).length}; shorten the description or the object's name)`,
        );
    };
    for (const [field, list] of [
      ['splitTunnelInclude', s.splitTunnelInclude],
      ['splitTunnelExclude', s.splitTunnelExclude],
    ] as const) {
      (list ?? []).forEach((e, i) => {
        const at = `spec.${field}[${i}]`;
        if (!!e.address === !!e.host) problems.push(`${at}: set exactly one of address and host`);
        else if (e.address && !validAddress(e.address))
          problems.push(`${at}.address: ${JSON.stringify(e.address)} is not a valid IP address or CIDR`);
        else if (e.host && !HOSTNAME.test(e.host))
          problems.push(`${at}.host: ${JSON.stringify(e.host)} is not a valid host name`);
        tooLong(at, e.description);
      });
    }
    (s.fallbackDomains ?? []).forEach((d, i) => {
      const at = `spec.fallbackDomains[${i}]`;
      if (!HOSTNAME.test(d.suffix)) problems.push(`${at}.suffix: ${JSON.stringify(d.suffix)} is not a valid domain`);
      tooLong(at, d.description);
      (d.dnsServer ?? []).forEach((ip, j) => {
        if (!validIp(ip)) problems.push(`${at}.dnsServer[${j}]: ${JSON.stringify(ip)} is not an IP address`);
      });
    });
    return problems;
  },
  targets(s, place) {
    const lists: DeviceListName[] = [];
    if ((s.splitTunnelInclude ?? []).length) lists.push('include');
    if ((s.splitTunnelExclude ?? []).length) lists.push('exclude');
    if ((s.fallbackDomains ?? []).length) lists.push('fallback_domains');
    return lists.map((list) => ({ resourceType: 'DeviceSettingsPolicy', accountId: place.accountId, list }));
  },
  contribution(s, target) {
    if (target.resourceType !== 'DeviceSettingsPolicy') return { entries: [] };
    if (target.list === 'fallback_domains')
      return {
        entries: (s.fallbackDomains ?? []).map((d): FallbackDomain => ({
          suffix: d.suffix,
          ...(d.description ? { description: d.description } : {}),
          ...(d.dnsServer?.length ? { dns_server: d.dnsServer } : {}),
        })),
      };
    const list = target.list === 'include' ? s.splitTunnelInclude : s.splitTunnelExclude;
    return {
      entries: (list ?? []).map((e): SplitTunnelEntry => ({
        // In CIDR form, as Cloudflare's schema asks and answers it.
        ...(e.address ? { address: cidrOf(e.address) } : { host: e.host }),
        description: e.description ?? '',
      })),
    };
  },
};
