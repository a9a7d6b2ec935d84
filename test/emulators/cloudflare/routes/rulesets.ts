/**
 * Phase entrypoint rulesets of a zone or an account: GET (404/10003 before the first PUT), PUT
 * (creates or replaces `rules[]`, assigns rule ids, bumps `version`; a rule whose expression is
 * obviously malformed is refused with 400/20021 "filter parsing error", an action the phase does
 * not take, a duplicate rule ref or more rules than the zone's plan allows with 400/20200
 * (ruleset-limits.ts); `dry_run=true` validates and persists nothing), and `rulesets.list` (cursor).
 */
import { Type } from '@sinclair/typebox';
import { CfErrors } from '../envelope.js';
import { paginateCursor } from '../pagination.js';
import type { Route, RouteContext } from '../router.js';
import type { Scope } from '../store.js';
import { planOf, ruleProblem } from '../ruleset-limits.js';
import { checkBody } from '../validate.js';
import { accountFor } from './accounts.js';
import { zoneFor } from './zones.js';

/** The phases the SDK names (`Phase` in cloudflare/resources/rulesets). */
export const RULESET_PHASES: ReadonlySet<string> = new Set([
  'ddos_l4',
  'ddos_l7',
  'http_config_settings',
  'http_custom_errors',
  'http_log_custom_fields',
  'http_ratelimit',
  'http_request_cache_settings',
  'http_request_dynamic_redirect',
  'http_request_firewall_custom',
  'http_request_firewall_managed',
  'http_request_late_transform',
  'http_request_origin',
  'http_request_redirect',
  'http_request_sanitize',
  'http_request_sbfm',
  'http_request_transform',
  'http_response_cache_settings',
  'http_response_compression',
  'http_response_firewall_managed',
  'http_response_headers_transform',
  'magic_transit',
  'magic_transit_ids_managed',
  'magic_transit_managed',
  'magic_transit_ratelimit',
]);

const RuleBody = Type.Object(
  {
    id: Type.Optional(Type.String()),
    action: Type.String({ minLength: 1 }),
    expression: Type.String({ minLength: 1 }),
    description: Type.Optional(Type.String()),
    enabled: Type.Optional(Type.Boolean()),
    ref: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

const EntrypointBody = Type.Object(
  {
    name: Type.Optional(Type.String()),
    description: Type.Optional(Type.String()),
    kind: Type.Optional(Type.String()),
    phase: Type.Optional(Type.String()),
    rules: Type.Optional(Type.Array(RuleBody)),
  },
  { additionalProperties: true },
);

const CLOSERS: Record<string, string> = { '(': ')', '{': '}', '[': ']' };

/**
 * The obvious syntax errors of a rule expression, as the real parser reports them: empty,
 * unbalanced parentheses, braces or brackets, an unterminated string. Not a parser of the Rules
 * language (a wrong field or operator passes); position is 1-based `line:column`.
 */
export function expressionError(expression: string): { line: number; column: number; detail: string } | undefined {
  const at = (index: number) => {
    const before = expression.slice(0, index).split('\n');
    return { line: before.length, column: before[before.length - 1]!.length + 1 };
  };
  if (!expression.trim()) return { ...at(expression.length), detail: 'expected a filter expression, found nothing' };
  const open: { char: string; index: number }[] = [];
  let quote: number | undefined;
  for (let i = 0; i < expression.length; i++) {
    const c = expression[i]!;
    if (quote !== undefined) {
      if (c === '\\') i++;
      else if (c === '"') quote = undefined;
      continue;
    }
    if (c === '"') quote = i;
    else if (CLOSERS[c]) open.push({ char: c, index: i });
    else if (c === ')' || c === '}' || c === ']') {
      const top = open.pop();
      if (!top || CLOSERS[top.char] !== c)
        return { ...at(i), detail: `unexpected '${c}'${top ? ` (expected '${CLOSERS[top.char]}')` : ''}` };
    }
  }
  if (quote !== undefined) return { ...at(quote), detail: 'unterminated string literal' };
  const unclosed = open.pop();
  if (unclosed) return { ...at(unclosed.index), detail: `unclosed '${unclosed.char}'` };
  return undefined;
}

export const RULESET_PAGE_LIMITS = { defaultPerPage: 20, minPerPage: 1, maxPerPage: 50 };

function scopeOf(ctx: RouteContext): { scope: Scope; id: string; plan?: ReturnType<typeof planOf> } {
  if (ctx.params.zone_id !== undefined) {
    const zone = zoneFor(ctx);
    return { scope: 'zones', id: zone.id, plan: planOf(zone.plan) };
  }
  return { scope: 'accounts', id: accountFor(ctx).id };
}

function phaseOf(ctx: RouteContext): string {
  const phase = ctx.params.phase ?? '';
  if (!RULESET_PHASES.has(phase)) throw CfErrors.invalidIdentifier(`/client/v4${ctx.path}`);
  return phase;
}

function getEntrypoint(ctx: RouteContext) {
  const { scope, id } = scopeOf(ctx);
  const phase = phaseOf(ctx);
  const ruleset = ctx.store.getEntrypoint(scope, id, phase);
  if (!ruleset) throw CfErrors.entrypointNotFound(phase);
  return { result: ruleset };
}

function putEntrypoint(ctx: RouteContext) {
  const { scope, id, plan } = scopeOf(ctx);
  const phase = phaseOf(ctx);
  const body = checkBody(EntrypointBody, ctx.body ?? {});
  if (body.phase !== undefined && body.phase !== phase) {
    throw CfErrors.invalidBody([`phase must be ${phase} for this entrypoint`]);
  }
  for (const rule of body.rules ?? []) {
    const bad = expressionError(rule.expression);
    if (bad) throw CfErrors.filterParsing(bad.line, bad.column, `${bad.detail} in ${JSON.stringify(rule.expression)}`);
  }
  const problem = ruleProblem(phase, body.rules ?? [], plan);
  if (problem) throw CfErrors.rulesetInvalid(problem.pointer, problem.message);
  // `?dry_run=true`: validated as a real update, nothing persisted, `result: null`.
  if (ctx.query.get('dry_run') === 'true') return { result: null };
  const ruleset = ctx.store.putEntrypoint(scope, id, phase, {
    ...(body.name !== undefined ? { name: body.name } : {}),
    ...(body.description !== undefined ? { description: body.description } : {}),
    rules: body.rules ?? [],
  });
  return { result: ruleset };
}

function listRulesets(ctx: RouteContext) {
  const { scope, id } = scopeOf(ctx);
  const summaries = ctx.store.rulesetsOf(scope, id).map(({ rules: _rules, ...summary }) => summary);
  return paginateCursor(summaries, ctx.query, RULESET_PAGE_LIMITS);
}

export const rulesetRoutes: Route[] = [
  { method: 'GET', pattern: '/zones/:zone_id/rulesets', handler: listRulesets },
  { method: 'GET', pattern: '/accounts/:account_id/rulesets', handler: listRulesets },
  { method: 'GET', pattern: '/zones/:zone_id/rulesets/phases/:phase/entrypoint', handler: getEntrypoint },
  { method: 'PUT', pattern: '/zones/:zone_id/rulesets/phases/:phase/entrypoint', handler: putEntrypoint },
  { method: 'GET', pattern: '/accounts/:account_id/rulesets/phases/:phase/entrypoint', handler: getEntrypoint },
  { method: 'PUT', pattern: '/accounts/:account_id/rulesets/phases/:phase/entrypoint', handler: putEntrypoint },
];
