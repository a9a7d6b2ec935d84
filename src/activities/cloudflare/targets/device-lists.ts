/** Device policy lists (split-tunnel include/exclude, fallback domains): one GET and one whole-list PUT. */
import type Cloudflare from 'cloudflare';
import { desiredEntries } from '../../../domain/cloudflare/aggregate.js';
import {
  fallbackDomainCodec,
  splitTunnelCodec,
  type FallbackDomain,
  type SplitTunnelEntry,
} from '../../../domain/cloudflare/items.js';
import type { SyncTarget } from '../../../domain/cloudflare/targets.js';
import type { TargetAdapter } from './adapter.js';

type DeviceTarget = Extract<SyncTarget, { resourceType: 'DeviceSettingsPolicy' }>;

/** The SDK's list bodies (an entry needs an address or a host; ours always has one). */
type SplitTunnelBody = Parameters<
  Cloudflare['zeroTrust']['devices']['policies']['default']['includes']['update']
>[0]['body'];
type FallbackDomainsBody = Parameters<
  Cloudflare['zeroTrust']['devices']['policies']['default']['fallbackDomains']['update']
>[0]['domains'];

export const splitTunnelAdapter: TargetAdapter<SplitTunnelEntry> = {
  codec: splitTunnelCodec,
  desired: (sources, clusterId) => desiredEntries<SplitTunnelEntry>(sources, clusterId),
  async read(cf, target) {
    const t = target as DeviceTarget;
    const policy = cf.zeroTrust.devices.policies.default;
    const page =
      t.list === 'include'
        ? await policy.includes.get({ account_id: t.accountId })
        : await policy.excludes.get({ account_id: t.accountId });
    return { items: (page.result ?? []) as SplitTunnelEntry[] };
  },
  async write(cf, target, plan) {
    const t = target as DeviceTarget;
    const policy = cf.zeroTrust.devices.policies.default;
    if (t.list === 'include')
      await policy.includes.update({ account_id: t.accountId, body: plan.items as SplitTunnelBody });
    else await policy.excludes.update({ account_id: t.accountId, body: plan.items as SplitTunnelBody });
    return {};
  },
};

export const fallbackDomainAdapter: TargetAdapter<FallbackDomain> = {
  codec: fallbackDomainCodec,
  desired: (sources, clusterId) => desiredEntries<FallbackDomain>(sources, clusterId),
  async read(cf, target) {
    const t = target as DeviceTarget;
    const page = await cf.zeroTrust.devices.policies.default.fallbackDomains.get({ account_id: t.accountId });
    return { items: (page.result ?? []) as FallbackDomain[] };
  },
  async write(cf, target, plan) {
    const t = target as DeviceTarget;
    await cf.zeroTrust.devices.policies.default.fallbackDomains.update({
      account_id: t.accountId,
      domains: plan.items as FallbackDomainsBody,
    });
    return {};
  },
};
