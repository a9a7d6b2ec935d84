/**
 * The API token permission a target's calls need, by the name Cloudflare's dashboard gives it
 * (https://developers.cloudflare.com/fundamentals/api/reference/permissions/). Cloudflare
 * answers a missing permission as it answers a bad token (403, "Authentication error"), so the
 * source's status names the one to grant: the user of a read-only token sees "DNS Edit", not a
 * guess.
 */
import type { SyncTarget } from './targets.js';

export type Access = 'Read' | 'Edit';

/** Zone-level permission groups of the ruleset phases the sources write. */
const PHASE_GROUPS: Record<string, string> = {
  http_request_firewall_custom: 'Zone WAF',
  http_request_firewall_managed: 'Zone WAF',
  http_response_firewall_managed: 'Zone WAF',
  http_ratelimit: 'Zone WAF',
  http_request_transform: 'Transform Rules',
  http_request_late_transform: 'Transform Rules',
  http_response_headers_transform: 'Transform Rules',
  http_request_dynamic_redirect: 'Dynamic URL Redirects',
  http_config_settings: 'Config Settings',
  http_request_cache_settings: 'Cache Settings',
  http_request_origin: 'Origin',
  http_response_compression: 'Response Compression',
};

/** `<group> <Read|Edit>` (zone- or account-level) for the target's calls; undefined when not known. */
export function permissionFor(t: SyncTarget, access: Access): string | undefined {
  const group = groupOf(t);
  return group && `${group.name} ${access} (${group.level}-level)`;
}

function groupOf(t: SyncTarget): { name: string; level: 'zone' | 'account' } | undefined {
  switch (t.resourceType) {
    case 'DNSRecord':
    case 'TunnelDNS':
      return { name: 'DNS', level: 'zone' };
    case 'CloudflareDomain':
      return { name: 'Zone Settings', level: 'zone' };
    case 'ZoneRuleset': {
      const name = PHASE_GROUPS[t.phase];
      return name ? { name, level: 'zone' } : undefined;
    }
    case 'DeviceSettingsPolicy':
    case 'GatewayConfiguration':
      return { name: 'Zero Trust', level: 'account' };
    case 'VirtualNetwork':
    case 'TunnelConfiguration':
      return { name: 'Cloudflare Tunnel', level: 'account' };
    case 'AccessGroup':
    case 'AccessIdentityProvider':
      return { name: 'Access: Organizations, Identity Providers, and Groups', level: 'account' };
  }
}
