/** The table of source kinds: each kind's rules (see ./types.ts). A new kind is a module and a line here. */
import { accessGroupRules } from './access-group.js';
import { accessIdentityProviderRules } from './access-identity-provider.js';
import { cloudflareDomainRules } from './cloudflare-domain.js';
import { deviceSettingsPolicyRules } from './device-settings-policy.js';
import { dnsRecordRules } from './dns-record.js';
import { gatewayConfigurationRules } from './gateway-configuration.js';
import { redirectRuleRules, transformRuleRules, zoneRulesetRules } from './rulesets.js';
import {
  clusterTunnelRules,
  tunnelBindingRules,
  tunnelGatewayClassConfigRules,
  tunnelIngressClassConfigRules,
  tunnelRules,
} from './tunnels.js';
import type { SourceKindRules } from './types.js';
import { virtualNetworkRules } from './virtual-network.js';

export const SOURCE_KIND_RULES = {
  DeviceSettingsPolicy: deviceSettingsPolicyRules,
  ZoneRuleset: zoneRulesetRules,
  TransformRule: transformRuleRules,
  RedirectRule: redirectRuleRules,
  VirtualNetwork: virtualNetworkRules,
  DNSRecord: dnsRecordRules,
  CloudflareDomain: cloudflareDomainRules,
  GatewayConfiguration: gatewayConfigurationRules,
  AccessGroup: accessGroupRules,
  AccessIdentityProvider: accessIdentityProviderRules,
  Tunnel: tunnelRules,
  ClusterTunnel: clusterTunnelRules,
  TunnelBinding: tunnelBindingRules,
  TunnelIngressClassConfig: tunnelIngressClassConfigRules,
  TunnelGatewayClassConfig: tunnelGatewayClassConfigRules,
} as const satisfies Record<string, SourceKindRules<never>>;

export type {
  RegistrationHints,
  ResolvedPlace,
  SourceKindRules,
  SourceObjectMeta,
  ValidationContext,
} from './types.js';
