/**
 * Zero Trust Gateway configuration, one per account: GET (an empty `settings` until written;
 * `created_at` is the first access), PUT replaces `settings`, PATCH merges its top-level keys.
 * All answer `{settings, created_at, updated_at}`.
 */
import { Type } from '@sinclair/typebox';
import type { Route, RouteContext } from '../router.js';
import type { GatewayConfiguration } from '../store.js';
import { checkBody } from '../validate.js';
import { accountFor } from './accounts.js';

const Body = Type.Object(
  { settings: Type.Optional(Type.Record(Type.String(), Type.Unknown())) },
  { additionalProperties: true },
);

function configOf(ctx: RouteContext): GatewayConfiguration {
  const account = accountFor(ctx);
  let config = ctx.store.gatewayConfigs.get(account.id);
  if (!config) {
    const at = ctx.store.timestamp();
    config = { settings: {}, created_at: at, updated_at: at };
    ctx.store.gatewayConfigs.set(account.id, config);
  }
  return config;
}

function write(ctx: RouteContext, mode: 'put' | 'patch') {
  const config = configOf(ctx);
  const body = checkBody(Body, ctx.body ?? {});
  const settings = structuredClone(body.settings ?? {});
  config.settings = mode === 'put' ? settings : { ...config.settings, ...settings };
  config.updated_at = ctx.store.timestamp();
  return { result: config };
}

export const gatewayRoutes: Route[] = [
  {
    method: 'GET',
    pattern: '/accounts/:account_id/gateway/configuration',
    handler: (ctx) => ({ result: configOf(ctx) }),
  },
  { method: 'PUT', pattern: '/accounts/:account_id/gateway/configuration', handler: (ctx) => write(ctx, 'put') },
  { method: 'PATCH', pattern: '/accounts/:account_id/gateway/configuration', handler: (ctx) => write(ctx, 'patch') },
];
