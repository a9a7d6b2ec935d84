/**
 * Device settings policy lists (split-tunnel include/exclude, local domain fallback) of the
 * default profile and of a custom profile: GET the list, PUT the whole list (it replaces).
 * The SDK reads them as a `SinglePage`: `result` is the full array. A description over 100
 * characters is refused (400), as Cloudflare's schema says (it is optional there); an address is
 * stored in CIDR form. The default profile's exclude and fallback lists start with Cloudflare's
 * defaults (store.ts), as a new account's do.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import ipaddr from 'ipaddr.js';
import { CfErrors } from '../envelope.js';
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

/**
 * A split-tunnel address as Cloudflare stores it: "the address in CIDR format" (its schema). A bare
 * IP is taken as its one-host block (`/32`, `/128`) — what the dashboard does with one; whether the
 * API refuses it instead is unverified — and anything else is refused (400).
 */
export function cidrOf(address: string): string | undefined {
  try {
    if (address.includes('/')) {
      const [ip, bits] = ipaddr.parseCIDR(address);
      return `${ip.toString()}/${bits}`;
    }
    const ip = ipaddr.parse(address);
    return `${ip.toString()}/${ip.kind() === 'ipv4' ? 32 : 128}`;
  } catch {
    return undefined;
  }
}

function normalised(list: DeviceList, entries: Array<Record<string, unknown>>): Array<Record<string, unknown>> {
  if (list === 'fallback_domains') return entries;
  return entries.map((e, i) => {
    if (typeof e.address !== 'string') return e;
    const address = cidrOf(e.address);
    if (!address)
      throw CfErrors.invalidBody([`/${i}/address: ${JSON.stringify(e.address)} is not an address in CIDR format`]);
    return { ...e, address };
  });
}

function handlers(list: DeviceList): { get: Route['handler']; put: Route['handler'] } {
  return {
    get: (ctx: RouteContext) => ({
      result: ctx.store.getDeviceList(accountFor(ctx).id, ctx.params.policy_id, list),
    }),
    put: (ctx: RouteContext) => {
      const account = accountFor(ctx);
      const entries = normalised(list, checkBody(LIST_SCHEMAS[list], ctx.body) as Array<Record<string, unknown>>);
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
