/**
 * Device settings policy lists (split-tunnel include/exclude, local domain fallback) of the
 * default profile and of a custom profile: GET the list, PUT the whole list (it replaces).
 * The SDK reads them as a `SinglePage`: `result` is the full array. A description over 100
 * characters is refused (400), as Cloudflare's schema says.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import type { Route, RouteContext } from '../router.js';
import type { DeviceList } from '../store.js';
import { checkBody } from '../validate.js';
import { accountFor } from './accounts.js';

/** Cloudflare's schema: `teams-devices_split_tunnel_include.description` and the fallback domain's, `maxLength: 100`. */
export const DEVICE_LIST_DESCRIPTION_MAX = 100;
const Description = Type.Optional(Type.String({ maxLength: DEVICE_LIST_DESCRIPTION_MAX }));

const SplitTunnelEntry = Type.Union([
  Type.Object({ address: Type.String({ minLength: 1 }), description: Description }),
  Type.Object({ host: Type.String({ minLength: 1 }), description: Description }),
]);

const FallbackDomainEntry = Type.Object({
  suffix: Type.String({ minLength: 1 }),
  description: Description,
  dns_server: Type.Optional(Type.Array(Type.String())),
});

const LIST_SCHEMAS: Record<DeviceList, TSchema> = {
  include: Type.Array(SplitTunnelEntry),
  exclude: Type.Array(SplitTunnelEntry),
  fallback_domains: Type.Array(FallbackDomainEntry),
};

function handlers(list: DeviceList): { get: Route['handler']; put: Route['handler'] } {
  return {
    get: (ctx: RouteContext) => ({
      result: ctx.store.getDeviceList(accountFor(ctx).id, ctx.params.policy_id, list),
    }),
    put: (ctx: RouteContext) => {
      const account = accountFor(ctx);
      const entries = checkBody(LIST_SCHEMAS[list], ctx.body) as Array<Record<string, unknown>>;
      return { result: ctx.store.putDeviceList(account.id, ctx.params.policy_id, list, entries) };
    },
  };
}

export const deviceRoutes: Route[] = (['include', 'exclude', 'fallback_domains'] as const).flatMap((list) => {
  const h = handlers(list);
  return [
    { method: 'GET', pattern: `/accounts/:account_id/devices/policy/${list}`, handler: h.get },
    { method: 'PUT', pattern: `/accounts/:account_id/devices/policy/${list}`, handler: h.put },
    { method: 'GET', pattern: `/accounts/:account_id/devices/policy/:policy_id/${list}`, handler: h.get },
    { method: 'PUT', pattern: `/accounts/:account_id/devices/policy/:policy_id/${list}`, handler: h.put },
  ] satisfies Route[];
});
