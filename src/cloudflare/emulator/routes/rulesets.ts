/**
 * Phase entrypoint rulesets of a zone or an account: GET (404/10003 before the first PUT), PUT
 * (creates or replaces `rules[]`, assigns rule ids, bumps `version`), and `rulesets.list` (cursor).
 */
import { Type } from '@sinclair/typebox';
import { CfErrors } from '../envelope.js';
import { paginateCursor } from '../pagination.js';
import type { Route, RouteContext } from '../router.js';
import type { Scope } from '../store.js';
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

export const RULESET_PAGE_LIMITS = { defaultPerPage: 20, minPerPage: 1, maxPerPage: 50 };

function scopeOf(ctx: RouteContext): { scope: Scope; id: string } {
  if (ctx.params.zone_id !== undefined) return { scope: 'zones', id: zoneFor(ctx).id };
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
  const { scope, id } = scopeOf(ctx);
  const phase = phaseOf(ctx);
  const body = checkBody(EntrypointBody, ctx.body ?? {});
  if (body.phase !== undefined && body.phase !== phase) {
    throw CfErrors.invalidBody([`phase must be ${phase} for this entrypoint`]);
  }
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
