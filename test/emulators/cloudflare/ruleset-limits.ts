/**
 * What Cloudflare's Ruleset Engine accepts in a phase entrypoint beyond the body's shape: the
 * actions each phase takes, unique rule refs, and the number of rules a zone's plan allows.
 * Sources: developers.cloudflare.com/ruleset-engine (phases and their products) and each
 * product's "Availability" table (WAF custom rules: Free 5, Pro 20, Business 100, Enterprise
 * 1,000, every action but `log` below Enterprise; rate limiting rules: Free 1; Transform, Single
 * Redirect, Origin, Cache and Configuration Rules: Free 10). Numbers for paid plans of the other
 * phases are not modelled (no limit).
 */

/** The actions a rule of each phase may have; a phase not listed takes any action. */
export const PHASE_ACTIONS: Readonly<Record<string, readonly string[]>> = {
  http_request_firewall_custom: ['block', 'challenge', 'js_challenge', 'managed_challenge', 'log', 'skip', 'execute'],
  http_ratelimit: ['block', 'challenge', 'js_challenge', 'managed_challenge', 'log'],
  http_request_firewall_managed: ['execute', 'skip', 'log'],
  http_response_firewall_managed: ['execute', 'skip', 'log'],
  http_request_transform: ['rewrite'],
  http_request_late_transform: ['rewrite'],
  http_response_headers_transform: ['rewrite'],
  http_request_dynamic_redirect: ['redirect'],
  http_request_redirect: ['redirect'],
  http_request_origin: ['route'],
  http_request_cache_settings: ['set_cache_settings'],
  http_config_settings: ['set_config'],
  http_response_compression: ['compress_response'],
  http_custom_errors: ['serve_error'],
  http_log_custom_fields: ['log_custom_field'],
};

export type ZonePlan = 'free' | 'pro' | 'business' | 'enterprise';

/** A zone's `plan` as the API answers it, by plan (the Free plan's id is Cloudflare's; the others' are placeholders). */
export const ZONE_PLANS: Readonly<Record<ZonePlan, { id: string; name: string }>> = {
  free: { id: '0feeeeeeeeeeeeeeeeeeeeeeeeeeeeee', name: 'Free Website' },
  pro: { id: 'p'.repeat(32), name: 'Pro Website' },
  business: { id: 'b'.repeat(32), name: 'Business Website' },
  enterprise: { id: 'e'.repeat(32), name: 'Enterprise Website' },
};

/** Which plan a zone's `plan` is. */
export function planOf(plan: { name: string }): ZonePlan {
  return (Object.keys(ZONE_PLANS) as ZonePlan[]).find((k) => ZONE_PLANS[k].name === plan.name) ?? 'free';
}

/** Rules a zone entrypoint of a phase may hold, by plan (absent: not modelled, no limit). */
export const ZONE_RULE_QUOTAS: Readonly<Record<string, Partial<Record<ZonePlan, number>>>> = {
  http_request_firewall_custom: { free: 5, pro: 20, business: 100, enterprise: 1000 },
  http_ratelimit: { free: 1 },
  http_request_transform: { free: 10 },
  http_request_late_transform: { free: 10 },
  http_response_headers_transform: { free: 10 },
  http_request_dynamic_redirect: { free: 10 },
  http_request_origin: { free: 10 },
  http_request_cache_settings: { free: 10 },
  http_config_settings: { free: 10 },
};

/** Actions of a phase a plan does not have (WAF custom rules: `log` is Enterprise only). */
export const PLAN_EXCLUDED_ACTIONS: Readonly<Record<string, Partial<Record<ZonePlan, readonly string[]>>>> = {
  http_request_firewall_custom: { free: ['log'], pro: ['log'], business: ['log'] },
};

export interface RuleProblem {
  /** JSON pointer into the body, as Cloudflare's `source.pointer`. */
  pointer: string;
  message: string;
}

/**
 * The first thing Cloudflare refuses in the rules of a phase entrypoint PUT (undefined: none).
 * `plan` is the zone's; account entrypoints pass undefined (no plan quota modelled).
 */
export function ruleProblem(
  phase: string,
  rules: ReadonlyArray<{ action: string; ref?: string }>,
  plan: ZonePlan | undefined,
): RuleProblem | undefined {
  const allowed = PHASE_ACTIONS[phase];
  const excluded = plan ? (PLAN_EXCLUDED_ACTIONS[phase]?.[plan] ?? []) : [];
  const refs = new Map<string, number>();
  for (const [i, rule] of rules.entries()) {
    if ((allowed && !allowed.includes(rule.action)) || excluded.includes(rule.action)) {
      return {
        pointer: `/rules/${i}/action`,
        message: `'${rule.action}' is not a valid value for action because it's not allowed in phase '${phase}'${
          excluded.includes(rule.action) ? ' on this plan' : ''
        }`,
      };
    }
    if (rule.ref) {
      const first = refs.get(rule.ref);
      if (first !== undefined)
        return {
          pointer: `/rules/${i}/ref`,
          message: `rule ref '${rule.ref}' is already used by rule ${first}: refs must be unique within a ruleset`,
        };
      refs.set(rule.ref, i);
    }
  }
  const quota = plan ? ZONE_RULE_QUOTAS[phase]?.[plan] : undefined;
  if (quota !== undefined && rules.length > quota) {
    return {
      pointer: '/rules',
      message: `exceeded maximum number of rules in the phase ${phase}: ${rules.length} rules, the zone's plan allows ${quota}`,
    };
  }
  return undefined;
}
