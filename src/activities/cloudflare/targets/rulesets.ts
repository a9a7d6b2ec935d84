/** Zone phase entrypoint rulesets: one GET and one whole-`rules[]` PUT per sync. */
import type Cloudflare from 'cloudflare';
import { desiredRules } from '../../../domain/cloudflare/aggregate.js';
import { rulesetRuleCodec, type RulesetRule } from '../../../domain/cloudflare/items.js';
import type { SyncTarget } from '../../../domain/cloudflare/targets.js';
import { unlessNotFound } from '../errors.js';
import type { TargetAdapter } from './adapter.js';

type RulesetTarget = Extract<SyncTarget, { resourceType: 'ZoneRuleset' }>;

/** The SDK's names for a phase and for the rules it takes (our items carry the same fields, loosely typed). */
type Phase = Parameters<Cloudflare['rulesets']['phases']['update']>[0];
type PhaseRules = Parameters<Cloudflare['rulesets']['phases']['update']>[1]['rules'];

/** Rules keep their id (so Cloudflare keeps them); the fields it computes are not sent back. */
function writableRule(r: RulesetRule): RulesetRule {
  const { version: _v, last_updated: _l, categories: _c, ...rest } = r;
  return rest;
}

export const rulesetAdapter: TargetAdapter<RulesetRule> = {
  codec: rulesetRuleCodec,
  desired: desiredRules,
  async read(cf, target) {
    const t = target as RulesetTarget;
    // No entrypoint (404) before the first PUT.
    const rs = (await unlessNotFound(cf.rulesets.phases.get(t.phase as Phase, { zone_id: t.zoneId }))) as unknown as
      { id?: string; rules?: RulesetRule[] } | undefined;
    return rs ? { items: rs.rules ?? [], cloudflareId: rs.id } : { items: [] };
  },
  async check(cf, target, plan) {
    const t = target as RulesetTarget;
    await cf.rulesets.phases.update(t.phase as Phase, {
      zone_id: t.zoneId,
      rules: plan.items.map(writableRule) as PhaseRules,
      dry_run: true,
    });
  },
  async write(cf, target, plan) {
    const t = target as RulesetTarget;
    const rs = (await cf.rulesets.phases.update(t.phase as Phase, {
      zone_id: t.zoneId,
      rules: plan.items.map(writableRule) as PhaseRules,
    })) as { id?: string };
    return { cloudflareId: rs.id };
  },
};
