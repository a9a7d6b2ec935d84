/**
 * ZoneRuleset, TransformRule and RedirectRule (namespaced): rules of one zone's phase entrypoint.
 * All three aggregate into the same target per (zone, phase); TransformRule and RedirectRule are
 * written in the rules' Cloudflare shape for their phase.
 */
import {
  REDIRECT_PHASE,
  RedirectRuleKind,
  TRANSFORM_PHASES,
  TransformRuleKind,
  ZoneRulesetKind,
  type RedirectRuleSpec,
  type TransformRuleSpec,
  type ZoneRulesetSpec,
} from '../../../api/cloudflare.js';
import type { RulesetRule } from '../items.js';
import type { SourceKindRules } from './types.js';
import { HOSTNAME } from './validation.js';

type RulesetKind = 'ZoneRuleset' | 'TransformRule' | 'RedirectRule';
type RulesetSourceSpec = ZoneRulesetSpec | TransformRuleSpec | RedirectRuleSpec;

/** The ruleset phase a ruleset source writes to. */
export function phaseOf(kind: RulesetKind, spec: RulesetSourceSpec): string {
  switch (kind) {
    case 'ZoneRuleset':
      return (spec as ZoneRulesetSpec).phase;
    case 'TransformRule':
      return TRANSFORM_PHASES[(spec as TransformRuleSpec).type];
    case 'RedirectRule':
      return REDIRECT_PHASE;
  }
}

/**
 * The actions Cloudflare's Ruleset Engine takes in each phase (developers.cloudflare.com/ruleset-engine);
 * any other is a 400 on the PUT, refused here with the reason before it can freeze the source.
 */
const PHASE_ACTIONS: Partial<Record<string, readonly string[]>> = {
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
};

/** A ZoneRuleset's rules: actions its phase takes, refs unique (Cloudflare refuses a duplicate). */
function zoneRulesetProblems(spec: ZoneRulesetSpec): string[] {
  const problems: string[] = [];
  const allowed = PHASE_ACTIONS[spec.phase];
  const refs = new Set<string>();
  (spec.rules ?? []).forEach((r, i) => {
    if (allowed && !allowed.includes(r.action))
      problems.push(
        `spec.rules[${i}].action: ${r.action} is not an action of phase ${spec.phase} (${allowed.join(', ')})`,
      );
    if (r.ref && refs.has(r.ref)) problems.push(`spec.rules[${i}].ref: ${JSON.stringify(r.ref)} is used twice`);
    if (r.ref) refs.add(r.ref);
  });
  return problems;
}

function validate(kind: RulesetKind, spec: RulesetSourceSpec): string[] {
  const problems: string[] = [];
  const zone = spec.zone ?? '';
  if (!HOSTNAME.test(zone.trim())) problems.push(`spec.zone: ${JSON.stringify(zone)} is not a domain name`);
  const rules: { expression?: string }[] =
    kind === 'RedirectRule' ? ((spec as RedirectRuleSpec).rules ?? []) : ((spec as ZoneRulesetSpec).rules ?? []);
  rules.forEach((r, i) => {
    if (!r.expression?.trim()) problems.push(`spec.rules[${i}].expression: must not be empty`);
  });
  if (kind === 'ZoneRuleset') problems.push(...zoneRulesetProblems(spec as ZoneRulesetSpec));
  if (kind === 'TransformRule') {
    const s = spec as TransformRuleSpec;
    s.rules.forEach((r, i) => {
      if (s.type === 'url_rewrite' && !r.urlRewrite?.path && !r.urlRewrite?.query)
        problems.push(`spec.rules[${i}].urlRewrite: a url_rewrite rule needs a path or query rewrite`);
      if (s.type !== 'url_rewrite' && !(r.headers ?? []).length)
        problems.push(`spec.rules[${i}].headers: a ${s.type} rule needs at least one header`);
      (r.headers ?? []).forEach((h, j) => {
        if (h.operation !== 'remove' && h.value === undefined && h.expression === undefined)
          problems.push(`spec.rules[${i}].headers[${j}]: operation ${h.operation} needs a value or an expression`);
      });
    });
  }
  if (kind === 'RedirectRule') {
    const s = spec as RedirectRuleSpec;
    if (!(s.rules ?? []).length && !(s.wildcardRules ?? []).length) problems.push('spec: set rules or wildcardRules');
    (s.rules ?? []).forEach((r, i) => {
      if (!!r.target?.url === !!r.target?.expression)
        problems.push(`spec.rules[${i}].target: set exactly one of url and expression`);
    });
    (s.wildcardRules ?? []).forEach((r, i) => {
      if (r.sourceUrl.includes('"') || r.targetUrl.includes('"'))
        problems.push(`spec.wildcardRules[${i}]: URLs must not contain a double quote`);
    });
  }
  return problems;
}

const camelToSnake = (k: string) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** Deep camelCase → snake_case of object keys, except below keys whose children are names (headers). */
function snake(value: unknown, keepChildKeys = false): unknown {
  if (Array.isArray(value)) return value.map((v) => snake(v));
  if (!value || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([k, v]) => {
      const key = keepChildKeys ? k : camelToSnake(k);
      if (keepChildKeys) return [key, snake(v)];
      return [key, snake(v, k === 'headers' && !Array.isArray(v))];
    }),
  );
}

function rulesetRulesOf(kind: RulesetKind, spec: RulesetSourceSpec): RulesetRule[] {
  if (kind === 'ZoneRuleset') {
    return (spec as ZoneRulesetSpec).rules.map((r) => {
      const { actionParameters, rateLimit, ...rest } = r;
      const out: RulesetRule = { ...(rest as RulesetRule), enabled: r.enabled ?? true };
      if (actionParameters) {
        const { redirect, ...params } = actionParameters as Record<string, unknown> & {
          redirect?: Record<string, unknown>;
        };
        const converted = snake(params) as Record<string, unknown>;
        if (redirect) {
          const { sourceUrl: _s, ...fromValue } = redirect;
          converted.from_value = snake(fromValue);
        }
        out.action_parameters = converted;
      }
      if (rateLimit) out.ratelimit = snake(rateLimit) as Record<string, unknown>;
      return out;
    });
  }
  if (kind === 'TransformRule') {
    const s = spec as TransformRuleSpec;
    return s.rules.map((r) => {
      const value = (v?: { static?: string; expression?: string }) =>
        v ? (v.expression !== undefined ? { expression: v.expression } : { value: v.static ?? '' }) : undefined;
      const action_parameters: Record<string, unknown> =
        s.type === 'url_rewrite'
          ? {
              uri: {
                ...(r.urlRewrite?.path ? { path: value(r.urlRewrite.path) } : {}),
                ...(r.urlRewrite?.query ? { query: value(r.urlRewrite.query) } : {}),
              },
            }
          : {
              headers: Object.fromEntries(
                (r.headers ?? []).map((h) => [
                  h.name,
                  {
                    operation: h.operation,
                    ...(h.expression !== undefined ? { expression: h.expression } : {}),
                    ...(h.expression === undefined && h.value !== undefined ? { value: h.value } : {}),
                  },
                ]),
              ),
            };
      return {
        action: 'rewrite',
        expression: r.expression,
        description: r.name,
        enabled: r.enabled ?? true,
        action_parameters,
      };
    });
  }
  const s = spec as RedirectRuleSpec;
  const plain = (s.rules ?? []).map((r): RulesetRule => ({
    action: 'redirect',
    expression: r.expression,
    description: r.name,
    enabled: r.enabled ?? true,
    action_parameters: {
      from_value: {
        target_url: r.target.expression !== undefined ? { expression: r.target.expression } : { value: r.target.url },
        status_code: r.statusCode ?? 302,
        preserve_query_string: r.preserveQueryString ?? false,
      },
    },
  }));
  const wildcard = (s.wildcardRules ?? []).map((r): RulesetRule => ({
    action: 'redirect',
    expression: `http.request.full_uri wildcard "${r.sourceUrl}"`,
    description: r.name,
    enabled: r.enabled ?? true,
    action_parameters: {
      from_value: {
        target_url: { expression: `wildcard_replace(http.request.full_uri, "${r.sourceUrl}", "${r.targetUrl}")` },
        status_code: r.statusCode ?? 301,
        preserve_query_string: r.preserveQueryString ?? false,
      },
    },
  }));
  return [...plain, ...wildcard];
}

function rulesetKind<S extends RulesetSourceSpec>(
  kind: RulesetKind,
  definition: SourceKindRules['definition'],
): SourceKindRules<S> {
  return {
    definition,
    clusterScoped: false,
    priority: (spec) => spec.priority ?? 100,
    credentialsRef: (spec) => spec.credentialsRef?.name,
    zone: (spec) => spec.zone.trim().toLowerCase(),
    validate: (spec) => validate(kind, spec),
    targets: (spec, place) =>
      place.zoneId
        ? [
            {
              resourceType: 'ZoneRuleset',
              accountId: place.accountId,
              zoneId: place.zoneId,
              phase: phaseOf(kind, spec),
            },
          ]
        : [],
    contribution: (spec, target) =>
      target.resourceType === 'ZoneRuleset' && phaseOf(kind, spec) === target.phase
        ? { rules: rulesetRulesOf(kind, spec) }
        : { rules: [] },
  };
}

export const zoneRulesetRules = rulesetKind<ZoneRulesetSpec>('ZoneRuleset', ZoneRulesetKind);
export const transformRuleRules = rulesetKind<TransformRuleSpec>('TransformRule', TransformRuleKind);
export const redirectRuleRules = rulesetKind<RedirectRuleSpec>('RedirectRule', RedirectRuleKind);
