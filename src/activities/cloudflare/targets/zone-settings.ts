/**
 * A zone's settings: one GET of all of them (`/zones/{zone}/settings`) and one PATCH per setting
 * that changes (`zones.settings.edit`), each under its own Cloudflare name. Who holds which
 * setting is remembered on the SyncState (src/domain/cloudflare/settings.ts).
 */
import type Cloudflare from 'cloudflare';
import { ApplicationFailure } from '@temporalio/common';
import { desiredSettings } from '../../../domain/cloudflare/aggregate.js';
import { settingCodec } from '../../../domain/cloudflare/items.js';
import { planSettings, type SettingItem } from '../../../domain/cloudflare/settings.js';
import type { SyncTarget } from '../../../domain/cloudflare/targets.js';
import { CLOUDFLARE_FAILURE_TYPES, cloudflareFailure } from '../errors.js';
import type { TargetAdapter } from './adapter.js';

type ZoneTarget = Extract<SyncTarget, { resourceType: 'CloudflareDomain' }>;

/** The SDK's setting names and edit body (a setting's value is whatever Cloudflare gave us for it). */
type SettingId = Parameters<Cloudflare['zones']['settings']['edit']>[0];
type SettingEdit = Parameters<Cloudflare['zones']['settings']['edit']>[1];

/** What every settings target does the same way: compare by value, plan from the remembered holdings. */
export const settingsPlanning: Pick<TargetAdapter<SettingItem>, 'codec' | 'desired' | 'planHeld'> = {
  codec: settingCodec,
  desired: (sources) => desiredSettings(sources),
  planHeld: (live, desired, held, frozen) => planSettings(live, desired, held, frozen),
};

export const zoneSettingsAdapter: TargetAdapter<SettingItem> = {
  ...settingsPlanning,
  async read(cf, target) {
    const t = target as ZoneTarget;
    // The SDK has no typed call for the list of every setting; its generic GET keeps the client's
    // auth, base URL and error classes. The answer is the usual envelope.
    const body = (await cf.get(`/zones/${t.zoneId}/settings`)) as { result?: { id: string; value: unknown }[] };
    return { items: (body.result ?? []).map((s) => ({ id: s.id, value: s.value })), cloudflareId: t.zoneId };
  },
  async write(cf, target, plan) {
    const t = target as ZoneTarget;
    // A setting Cloudflare refuses (e.g. one the zone's plan lacks) does not hold back the others:
    // they are written, and the refusal names each refused setting with Cloudflare's reason.
    const refused: string[] = [];
    const applied: string[] = [];
    for (const s of plan.items) {
      try {
        await cf.zones.settings.edit(s.id as SettingId, { zone_id: t.zoneId, value: s.value } as SettingEdit);
        applied.push(s.id);
      } catch (err) {
        const failure = cloudflareFailure(err, `setting ${s.id}`);
        if (failure.type !== CLOUDFLARE_FAILURE_TYPES.invalid) throw err;
        refused.push(failure.message);
      }
    }
    if (refused.length)
      throw ApplicationFailure.nonRetryable(
        `Cloudflare refused ${refused.length} of ${plan.items.length} zone setting(s): ${refused.join('; ')}${
          applied.length ? `; written: ${applied.join(', ')}` : ''
        }`,
        CLOUDFLARE_FAILURE_TYPES.invalid,
      );
    return { cloudflareId: t.zoneId };
  },
};
