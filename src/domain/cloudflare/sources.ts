/**
 * The source kinds, decided purely: is a spec valid (with a message a user can act on), which
 * targets does it feed, and what does it contribute to each, in Cloudflare's wire shape. The
 * source's workflow uses this to register; the target's sync re-derives the contribution from
 * a fresh read of the source, with the same functions.
 */
import ipaddr from 'ipaddr.js';
import {
  REDIRECT_PHASE,
  TRANSFORM_PHASES,
  type DeviceSettingsPolicySpec,
  type RedirectRuleSpec,
  type TransformRuleSpec,
  type ZoneRulesetSpec,
} from '../../api/cloudflare.js';
import type { Contribution } from './aggregate.js';
import type { FallbackDomain, RulesetRule, SplitTunnelEntry } from './items.js';
import type { DeviceListName, SyncTarget } from './targets.js';

export const SOURCE_KINDS = ['DeviceSettingsPolicy', 'ZoneRuleset', 'TransformRule', 'RedirectRule'] as const;
export type SourceKind = (typeof SOURCE_KINDS)[number];

export type SourceSpec = DeviceSettingsPolicySpec | ZoneRulesetSpec | TransformRuleSpec | RedirectRuleSpec;

export function isSourceKind(kind: string): kind is SourceKind {
  return (SOURCE_KINDS as readonly string[]).includes(kind);
}

/** Device policies are cluster-scoped; the ruleset kinds are namespaced. */
export function isClusterScoped(kind: SourceKind): boolean {
  return kind === 'DeviceSettingsPolicy';
}

/** The source's priority (lower wins; the original's default is 100). */
export function priorityOf(spec: SourceSpec): number {
  return spec.priority ?? 100;
}

/** The CloudflareCredentials the spec names; undefined = the default credentials. */
export function credentialsRefOf(kind: SourceKind, spec: SourceSpec): string | undefined {
  if (kind === 'DeviceSettingsPolicy') return (spec as DeviceSettingsPolicySpec).cloudflare?.credentialsRef?.name;
  return (spec as ZoneRulesetSpec).credentialsRef?.name;
}

/** The zone name a ruleset source writes to (undefined for device policies). */
export function zoneOf(kind: SourceKind, spec: SourceSpec): string | undefined {
  return kind === 'DeviceSettingsPolicy' ? undefined : (spec as ZoneRulesetSpec).zone.trim().toLowerCase();
}

/** The ruleset phase a ruleset source writes to. */
export function phaseOf(kind: SourceKind, spec: SourceSpec): string | undefined {
  switch (kind) {
    case 'ZoneRuleset':
      return (spec as ZoneRulesetSpec).phase;
    case 'TransformRule':
      return TRANSFORM_PHASES[(spec as TransformRuleSpec).type];
    case 'RedirectRule':
      return REDIRECT_PHASE;
    default:
      return undefined;
  }
}

/**
 * What places the source on its targets, as the spec says it: the zone name for ruleset kinds,
 * the credentials name (`''` = default) for device policies. A fresh read with another anchor
 * means the source moved and must register again before it counts.
 */
export function anchorOf(kind: SourceKind, spec: SourceSpec): string {
  const zone = zoneOf(kind, spec);
  return zone !== undefined ? `zone:${zone}` : `credentials:${credentialsRefOf(kind, spec) ?? ''}`;
}

// --- validation ------------------------------------------------------------------------------

const HOSTNAME = /^(?=.{1,253}$)(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i;

function validAddress(address: string): boolean {
  if (address.includes('/')) {
    try {
      ipaddr.parseCIDR(address);
      return true;
    } catch {
      return false;
    }
  }
  return ipaddr.isValid(address);
}

/** Every problem of the spec, each naming the field (empty = valid). */
export function validateSource(kind: SourceKind, spec: SourceSpec): string[] {
  const problems: string[] = [];
  if (kind === 'DeviceSettingsPolicy') {
    const s = spec as DeviceSettingsPolicySpec;
    for (const [field, list] of [
      ['splitTunnelInclude', s.splitTunnelInclude],
      ['splitTunnelExclude', s.splitTunnelExclude],
    ] as const) {
      (list ?? []).forEach((e, i) => {
        const at = `spec.${field}[${i}]`;
        if (!!e.address === !!e.host) problems.push(`${at}: set exactly one of address and host`);
        else if (e.address && !validAddress(e.address))
          problems.push(`${at}.address: ${JSON.stringify(e.address)} is not a valid IP address or CIDR`);
        else if (e.host && !HOSTNAME.test(e.host))
          problems.push(`${at}.host: ${JSON.stringify(e.host)} is not a valid host name`);
      });
    }
    (s.fallbackDomains ?? []).forEach((d, i) => {
      const at = `spec.fallbackDomains[${i}]`;
      if (!HOSTNAME.test(d.suffix)) problems.push(`${at}.suffix: ${JSON.stringify(d.suffix)} is not a valid domain`);
      (d.dnsServer ?? []).forEach((ip, j) => {
        if (!ipaddr.isValid(ip)) problems.push(`${at}.dnsServer[${j}]: ${JSON.stringify(ip)} is not an IP address`);
      });
    });
    return problems;
  }
  const zone = (spec as ZoneRulesetSpec).zone ?? '';
  if (!HOSTNAME.test(zone.trim())) problems.push(`spec.zone: ${JSON.stringify(zone)} is not a domain name`);
  const rules: { expression?: string }[] =
    kind === 'RedirectRule' ? ((spec as RedirectRuleSpec).rules ?? []) : ((spec as ZoneRulesetSpec).rules ?? []);
  rules.forEach((r, i) => {
    if (!r.expression?.trim()) problems.push(`spec.rules[${i}].expression: must not be empty`);
  });
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

// --- targets and contributions ---------------------------------------------------------------

/** Where the source's items go, once its account (and zone) are known. */
export function targetsOf(
  kind: SourceKind,
  spec: SourceSpec,
  resolved: { accountId: string; zoneId?: string },
): SyncTarget[] {
  if (kind === 'DeviceSettingsPolicy') {
    const s = spec as DeviceSettingsPolicySpec;
    const lists: DeviceListName[] = [];
    if ((s.splitTunnelInclude ?? []).length) lists.push('include');
    if ((s.splitTunnelExclude ?? []).length) lists.push('exclude');
    if ((s.fallbackDomains ?? []).length) lists.push('fallback_domains');
    return lists.map((list) => ({ resourceType: 'DeviceSettingsPolicy', accountId: resolved.accountId, list }));
  }
  if (!resolved.zoneId) return [];
  return [
    {
      resourceType: 'ZoneRuleset',
      accountId: resolved.accountId,
      zoneId: resolved.zoneId,
      phase: phaseOf(kind, spec)!,
    },
  ];
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

function rulesetRulesOf(kind: SourceKind, spec: SourceSpec): RulesetRule[] {
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

/** What the source contributes to one target (empty when it does not feed that target). */
export function contributionFor(kind: SourceKind, spec: SourceSpec, target: SyncTarget): Contribution {
  if (target.resourceType === 'ZoneRuleset') {
    if (kind === 'DeviceSettingsPolicy' || phaseOf(kind, spec) !== target.phase) return { rules: [] };
    return { rules: rulesetRulesOf(kind, spec) };
  }
  if (kind !== 'DeviceSettingsPolicy') return { entries: [] };
  const s = spec as DeviceSettingsPolicySpec;
  if (target.list === 'fallback_domains')
    return {
      entries: (s.fallbackDomains ?? []).map((d): FallbackDomain => ({
        suffix: d.suffix,
        ...(d.description ? { description: d.description } : {}),
        ...(d.dnsServer?.length ? { dns_server: d.dnsServer } : {}),
      })),
    };
  const list = target.list === 'include' ? s.splitTunnelInclude : s.splitTunnelExclude;
  return {
    entries: (list ?? []).map((e): SplitTunnelEntry => ({
      ...(e.address ? { address: e.address } : { host: e.host }),
      description: e.description ?? '',
    })),
  };
}
