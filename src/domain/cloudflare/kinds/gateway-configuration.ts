/**
 * GatewayConfiguration (cluster-scoped): an account's Zero Trust gateway settings. Every
 * GatewayConfiguration of one account feeds the target `GatewayConfiguration/<accountId>`,
 * merged per top-level setting (`tls_decrypt`, `antivirus`, `block_page`, …) by priority
 * (../settings.ts) and written with one PATCH of the changed keys only, so keys nobody here sets
 * are never touched. The original took the first GatewayConfiguration only and ignored priority.
 */
import { GatewayConfigurationKind, type GatewayConfigurationSpec } from '../../../api/cloudflare-zerotrust.js';
import type { SettingItem } from '../settings.js';
import type { SourceKindRules } from './types.js';

/** Field names whose Cloudflare name is not the plain snake_case of ours. */
const RENAMED: Record<string, string> = { antiVirus: 'antivirus', message: 'msg', supportUrl: 'support_url' };
const snake = (k: string) => RENAMED[k] ?? k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** A spec object in Cloudflare's field names, recursively; unset fields are absent. */
function wire(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(wire);
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => [snake(k), wire(v)]),
    );
  return value;
}

/** The spec's gateway settings as Cloudflare's top-level keys and values, in the spec's order. */
export function gatewaySettingsOf(spec: GatewayConfigurationSpec): SettingItem[] {
  const { nonIdentityBrowserIsolation, ...rest } = spec.settings ?? {};
  const items = Object.entries(rest)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => ({ id: snake(k), value: wire(v) }));
  // The original's separate toggle is a field of Cloudflare's `browser_isolation`.
  if (nonIdentityBrowserIsolation) {
    const bi = items.find((i) => i.id === 'browser_isolation');
    const value = { non_identity_enabled: nonIdentityBrowserIsolation.enabled };
    if (!bi) items.push({ id: 'browser_isolation', value });
    else bi.value = { ...value, ...(bi.value as object) };
  }
  return items;
}

export const gatewayConfigurationRules: SourceKindRules<GatewayConfigurationSpec> = {
  definition: GatewayConfigurationKind,
  clusterScoped: true,
  // An account has a handful of GatewayConfigurations: the sync GETs each (no `list` on the kind).
  oneSourcePerTarget: true,
  priority: (spec) => spec.priority ?? 100,
  credentialsRef: (spec) => spec.cloudflare?.credentialsRef?.name,
  zone: () => undefined,
  validate(spec) {
    const problems: string[] = [];
    const mode = spec.settings?.bodyScanning?.inspectionMode;
    if (mode !== undefined && mode !== 'deep' && mode !== 'shallow')
      problems.push(`spec.settings.bodyScanning.inspectionMode: ${JSON.stringify(mode)} is not deep or shallow`);
    if (spec.settings?.customCertificate?.enabled && !spec.settings.customCertificate.id)
      problems.push('spec.settings.customCertificate.id: an enabled custom certificate needs its id');
    return problems;
  },
  targets: (_spec, place) => [{ resourceType: 'GatewayConfiguration', accountId: place.accountId }],
  contribution: (spec, target) =>
    target.resourceType === 'GatewayConfiguration' ? { entries: gatewaySettingsOf(spec) } : { entries: [] },
};
