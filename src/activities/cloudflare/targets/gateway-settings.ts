/**
 * An account's Zero Trust gateway configuration: one GET and, when something changed, one PATCH
 * carrying only the changed top-level keys (Cloudflare merges a PATCH's keys into the
 * configuration, so everyone else's keys stay as they are). Who holds which key is remembered on
 * the SyncState (src/domain/cloudflare/settings.ts).
 */
import type Cloudflare from 'cloudflare';
import type { SettingItem } from '../../../domain/cloudflare/settings.js';
import type { SyncTarget } from '../../../domain/cloudflare/targets.js';
import type { TargetAdapter } from './adapter.js';
import { settingsPlanning } from './zone-settings.js';

type GatewayTarget = Extract<SyncTarget, { resourceType: 'GatewayConfiguration' }>;

/** The SDK's gateway settings body (ours is the same object, setting by setting). */
type GatewaySettings = Parameters<Cloudflare['zeroTrust']['gateway']['configurations']['edit']>[0]['settings'];

export const gatewaySettingsAdapter: TargetAdapter<SettingItem> = {
  ...settingsPlanning,
  async read(cf, target) {
    const t = target as GatewayTarget;
    const config = await cf.zeroTrust.gateway.configurations.get({ account_id: t.accountId });
    const settings = (config.settings ?? {}) as Record<string, unknown>;
    return { items: Object.entries(settings).map(([id, value]) => ({ id, value })) };
  },
  async write(cf, target, plan) {
    const t = target as GatewayTarget;
    await cf.zeroTrust.gateway.configurations.edit({
      account_id: t.accountId,
      settings: Object.fromEntries(plan.items.map((s) => [s.id, s.value])) as GatewaySettings,
    });
    return {};
  },
};
