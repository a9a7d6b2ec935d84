/** The adapter of each kind of target (see adapter.ts). */
import type { SyncTarget } from '../../../domain/cloudflare/targets.js';
import { accessGroupAdapter } from './access-groups.js';
import type { TargetAdapter } from './adapter.js';
import { fallbackDomainAdapter, splitTunnelAdapter } from './device-lists.js';
import { dnsRecordAdapter } from './dns-records.js';
import { gatewaySettingsAdapter } from './gateway-settings.js';
import { identityProviderAdapter } from './identity-providers.js';
import { rulesetAdapter } from './rulesets.js';
import { virtualNetworkAdapter } from './virtual-networks.js';
import { tunnelConfigurationAdapter } from './tunnel-configuration.js';
import { tunnelDnsAdapter } from './tunnel-dns.js';
import { zoneSettingsAdapter } from './zone-settings.js';

export type { TargetAdapter, TargetContext } from './adapter.js';

export function adapterFor(target: SyncTarget): TargetAdapter<unknown> {
  switch (target.resourceType) {
    case 'ZoneRuleset':
      return rulesetAdapter as TargetAdapter<unknown>;
    case 'DeviceSettingsPolicy':
      return (
        target.list === 'fallback_domains' ? fallbackDomainAdapter : splitTunnelAdapter
      ) as TargetAdapter<unknown>;
    case 'VirtualNetwork':
      return virtualNetworkAdapter as TargetAdapter<unknown>;
    case 'DNSRecord':
      return dnsRecordAdapter as TargetAdapter<unknown>;
    case 'CloudflareDomain':
      return zoneSettingsAdapter as TargetAdapter<unknown>;
    case 'GatewayConfiguration':
      return gatewaySettingsAdapter as TargetAdapter<unknown>;
    case 'AccessGroup':
      return accessGroupAdapter as TargetAdapter<unknown>;
    case 'AccessIdentityProvider':
      return identityProviderAdapter as TargetAdapter<unknown>;
    case 'TunnelConfiguration':
      return tunnelConfigurationAdapter as TargetAdapter<unknown>;
    case 'TunnelDNS':
      return tunnelDnsAdapter as TargetAdapter<unknown>;
  }
}
