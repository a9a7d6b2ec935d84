/**
 * A tunnel's remote configuration (`cfd_tunnel/{id}/configurations`): one GET and, when the
 * aggregated configuration differs from Cloudflare's, one PUT of the whole of it. Ingress rules
 * have no field for a marker, so the configuration of a tunnel the operator manages is the
 * operator's entirely (src/domain/cloudflare/tunnels.ts decides what it is).
 *
 * An orphaned source (deleted with deletion policy Orphan) is left in Cloudflare as it is, not
 * held for ever: its rules stay while Cloudflare has them, one removed (by hand) is never written
 * back, and a live source wanting one of its hostnames takes it.
 */
import type Cloudflare from 'cloudflare';
import type { RegisteredSource } from '../../../domain/cloudflare/aggregate.js';
import { canonical, type ItemCodec, type WritePlan } from '../../../domain/cloudflare/merge.js';
import type { SyncTarget } from '../../../domain/cloudflare/targets.js';
import {
  aggregateTunnelConfig,
  keepRules,
  ruleKey,
  type TunnelContribution,
  type TunnelConfig,
  type TunnelIngressRule,
} from '../../../domain/cloudflare/tunnels.js';
import { orderSources } from '../../../domain/cloudflare/aggregate.js';
import type { TargetAdapter } from './adapter.js';
import { unlessNotFound } from '../errors.js';

type ConfigTarget = Extract<SyncTarget, { resourceType: 'TunnelConfiguration' }>;

/** The SDK's configuration body (our item is the configuration Cloudflare gave, with our rules). */
type TunnelConfigBody = Parameters<
  Cloudflare['zeroTrust']['tunnels']['cloudflared']['configurations']['update']
>[1]['config'];

const nonEmpty = (fields: Record<string, unknown> | undefined) =>
  fields && Object.keys(fields).length ? fields : undefined;

/** The configuration as compared: absent and empty mean the same. */
function normalised(c: TunnelConfig): unknown {
  return {
    ingress: c.ingress.map((r) => ({
      hostname: r.hostname || undefined,
      path: r.path || undefined,
      service: r.service,
      originRequest: nonEmpty(r.originRequest),
    })),
    originRequest: nonEmpty(c.originRequest),
  };
}

/** An orphan's recorded rules that Cloudflare still has, behind every live source. */
function asLeft(source: RegisteredSource, have: TunnelConfig | undefined): RegisteredSource {
  if (!(source as { orphaned?: boolean }).orphaned) return source;
  const present = new Set((have?.ingress ?? []).map((r) => canonical(normalised({ ingress: [r] }))));
  return {
    ...source,
    priority: Number.MAX_SAFE_INTEGER,
    config: keepRules(source.config as TunnelContribution, (r) => present.has(canonical(normalised({ ingress: [r] })))),
  };
}

const label = (r: TunnelIngressRule) => `${r.hostname ? ruleKey(r) : 'catch-all'} → ${r.service}`;

export const tunnelConfigCodec: ItemCodec<TunnelConfig> = {
  descriptionOf: () => undefined,
  comparable: normalised,
  label: (c) => `tunnel configuration (${c.ingress.length} rules)`,
};

/** What differs, rule by rule (for the SyncState's Drifted condition and the Web UI). */
function differences(want: TunnelConfig, have: TunnelConfig | undefined): string[] {
  if (!have) return ['no configuration in Cloudflare yet'];
  const w = want.ingress.map((r) => canonical(normalised({ ingress: [r] })));
  const h = have.ingress.map((r) => canonical(normalised({ ingress: [r] })));
  const out = [
    ...want.ingress.filter((_, i) => !h.includes(w[i]!)).map((r) => `missing in Cloudflare: ${label(r)}`),
    ...have.ingress.filter((_, i) => !w.includes(h[i]!)).map((r) => `not wanted or changed in Cloudflare: ${label(r)}`),
  ];
  if (canonical(normalised({ ...want, ingress: [] })) !== canonical(normalised({ ...have, ingress: [] })))
    out.push('originRequest differs');
  return out.length ? out : ['rules in another order'];
}

export const tunnelConfigurationAdapter: TargetAdapter<TunnelConfig> = {
  codec: tunnelConfigCodec,
  desired: () => [], // planWhole decides
  planWhole(live, all: RegisteredSource[]) {
    const have = live[0];
    const sources = all.map((s) => asLeft(s, have));
    const agg = aggregateTunnelConfig(sources);
    const first = orderSources(sources)[0];
    const same = have !== undefined && canonical(normalised(have)) === canonical(normalised(agg.config));
    const plan: WritePlan<TunnelConfig> = {
      items: [agg.config],
      write: !same,
      differences: same ? [] : differences(agg.config, have),
      conflicts: agg.conflicts,
      counts: {
        ours: have ? have.ingress.length : 0,
        external: 0,
        otherClusters: 0,
        legacy: 0,
        frozen: 0,
        desired: agg.config.ingress.length,
        adopted: 0,
      },
    };
    return { plan, desired: first ? [{ owner: first.ref, item: agg.config }] : [] };
  },
  async read(cf, target) {
    const t = target as ConfigTarget;
    // A deleted tunnel (404) has no configuration: nothing of ours is left there (its Tunnel and
    // sources are being deleted together, or the Tunnel makes a new one and they move there).
    const res = (await unlessNotFound(
      cf.zeroTrust.tunnels.cloudflared.configurations.get(t.tunnelId, { account_id: t.accountId }),
    )) as { config?: TunnelConfig | null } | undefined;
    const config = res?.config && Array.isArray(res.config.ingress) ? res.config : undefined;
    return { items: config ? [config] : [], cloudflareId: t.tunnelId };
  },
  async write(cf, target, plan) {
    const t = target as ConfigTarget;
    // A tunnel deleted meanwhile (404): see read.
    await unlessNotFound(
      cf.zeroTrust.tunnels.cloudflared.configurations.update(t.tunnelId, {
        account_id: t.accountId,
        config: plan.items[0] as TunnelConfigBody,
      }),
    );
    return { cloudflareId: t.tunnelId };
  },
};
