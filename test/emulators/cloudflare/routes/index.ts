/** Every API route of the emulator, and an in-process dispatcher (the server's core, used by unit tests). */
import type { TokenRecord } from '../auth.js';
import { Router, type Route, type RouteResult } from '../router.js';
import type { EmulatorStore } from '../store.js';
import { accessRoutes } from './access.js';
import { deviceRoutes } from './devices.js';
import { dnsRoutes } from './dns.js';
import { gatewayRoutes } from './gateway.js';
import { networkRouteRoutes } from './network-routes.js';
import { rulesetRoutes } from './rulesets.js';
import { settingRoutes } from './settings.js';
import { tunnelRoutes } from './tunnels.js';
import { userRoutes } from './user.js';
import { vnetRoutes } from './vnets.js';
import { zoneRoutes } from './zones.js';

export const allRoutes: readonly Route[] = [
  ...zoneRoutes,
  ...rulesetRoutes,
  ...deviceRoutes,
  ...userRoutes,
  ...dnsRoutes,
  ...settingRoutes,
  ...gatewayRoutes,
  ...vnetRoutes,
  ...tunnelRoutes,
  ...networkRouteRoutes,
  ...accessRoutes,
];

export const apiRouter = new Router(allRoutes);

/** Runs one API request (path below `/client/v4`) against a store; throws the ApiError the server would answer. */
export function dispatch(
  store: EmulatorStore,
  token: TokenRecord,
  method: string,
  pathAndQuery: string,
  body?: unknown,
): RouteResult {
  const url = new URL(pathAndQuery, 'http://emulator');
  const { route, params } = apiRouter.match(method, url.pathname);
  return route.handler({ method, path: url.pathname, params, query: url.searchParams, body, token, store });
}
