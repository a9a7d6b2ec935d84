/**
 * Test hooks under `/__emulator/` (the SDK never calls them), behind their own admin token:
 *
 *   POST   /__emulator/reset          empty the store, request log, faults and rate windows
 *   POST   /__emulator/seed           add accounts and zones: {accounts:[{id,name}], zones:[{id?,name,account_id,plan?}]}
 *                                     and "dashboard-made" DNS records: {dns_records:[{zone_id,name,type,content,…}]}
 *   GET    /__emulator/requests       the request log (?method=PUT&path=regex); DELETE clears it
 *   POST   /__emulator/faults         inject a fault (see FaultSpec); GET lists; DELETE clears
 *   PUT    /__emulator/rate-limit     the per-user budget: {requests, windowSeconds}
 *   POST   /__emulator/tokens         add a token: {token, id?, status?, accounts?, readOnly?, permissions?, user?}
 *                                     (with `email`: a Global API Key of that account email)
 *   POST   /__emulator/tunnels/{id}/connectors   a cloudflared starts running the tunnel: {client_id?} (it
 *                                     holds a connection, and opens it again after a connections DELETE)
 *   DELETE /__emulator/tunnels/{id}/connectors   every connector of the tunnel stops (its connections close)
 */
import { Type } from '@sinclair/typebox';
import type { RateLimiter, TokenAuth } from './auth.js';
import { ApiError } from './envelope.js';
import { FaultSpec, type FaultInjector } from './faults.js';
import type { RequestLog } from './request-log.js';
import type { EmulatorStore } from './store.js';
import { startConnector, stopConnectors } from './routes/tunnels.js';
import { checkBody } from './validate.js';

export const HOOK_PREFIX = '/__emulator';

const SeedBody = Type.Object({
  accounts: Type.Optional(
    Type.Array(Type.Object({ id: Type.String({ minLength: 1 }), name: Type.Optional(Type.String()) })),
  ),
  zones: Type.Optional(
    Type.Array(
      Type.Object({
        id: Type.Optional(Type.String({ minLength: 1 })),
        name: Type.String({ minLength: 1 }),
        account_id: Type.String({ minLength: 1 }),
        status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('pending')])),
        plan: Type.Optional(
          Type.Union([Type.Literal('free'), Type.Literal('pro'), Type.Literal('business'), Type.Literal('enterprise')]),
        ),
      }),
    ),
  ),
  dns_records: Type.Optional(
    Type.Array(
      Type.Object(
        { zone_id: Type.String({ minLength: 1 }), name: Type.String(), type: Type.String({ minLength: 1 }) },
        { additionalProperties: true },
      ),
    ),
  ),
});

const BudgetBody = Type.Object({
  requests: Type.Integer({ minimum: 1 }),
  windowSeconds: Type.Number({ exclusiveMinimum: 0 }),
});

const TokenBody = Type.Object({
  token: Type.String({ minLength: 1 }),
  id: Type.Optional(Type.String()),
  status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('disabled'), Type.Literal('expired')])),
  accounts: Type.Optional(Type.Array(Type.String())),
  readOnly: Type.Optional(Type.Boolean()),
  permissions: Type.Optional(Type.Array(Type.String())),
  user: Type.Optional(Type.String({ minLength: 1 })),
  email: Type.Optional(Type.String({ minLength: 1 })),
});

const ConnectorBody = Type.Object({ client_id: Type.Optional(Type.String({ minLength: 1 })) });

export interface HookDeps {
  adminToken: string;
  store: EmulatorStore;
  log: RequestLog;
  faults: FaultInjector;
  limiter: RateLimiter;
  auth: TokenAuth;
}

/** Answers a hook request: the JSON result, or throws an ApiError. */
export function handleHook(
  deps: HookDeps,
  method: string,
  path: string,
  query: URLSearchParams,
  authorization: string | undefined,
  body: unknown,
): unknown {
  if (authorization !== `Bearer ${deps.adminToken}`) {
    throw new ApiError(401, [{ code: 10000, message: 'emulator admin token required' }]);
  }
  const route = `${method} ${path.slice(HOOK_PREFIX.length).replace(/\/$/, '')}`;
  const connectors = /^(POST|DELETE) \/tunnels\/([^/]+)\/connectors$/.exec(route);
  if (connectors) {
    const tunnelId = decodeURIComponent(connectors[2]!);
    if (connectors[1] === 'POST') {
      const spec = checkBody(ConnectorBody, body ?? {});
      return { client_id: startConnector(deps.store, tunnelId, spec.client_id) };
    }
    stopConnectors(deps.store, tunnelId);
    return { stopped: true };
  }
  switch (route) {
    case 'POST /reset':
      deps.store.reset();
      deps.log.clear();
      deps.faults.clear();
      deps.limiter.reset();
      return { reset: true };
    case 'POST /seed': {
      const doc = checkBody(SeedBody, body);
      try {
        return deps.store.seed(doc);
      } catch (err) {
        throw new ApiError(400, [{ code: 9207, message: `invalid seed: ${String(err)}` }]);
      }
    }
    case 'GET /requests': {
      const m = query.get('method');
      const p = query.get('path');
      return deps.log.list({ ...(m ? { method: m } : {}), ...(p ? { path: p } : {}) });
    }
    case 'DELETE /requests':
      deps.log.clear();
      return { cleared: true };
    case 'POST /faults':
      try {
        return deps.faults.add(checkBody(FaultSpec, body));
      } catch (err) {
        if (err instanceof ApiError) throw err;
        throw new ApiError(400, [{ code: 9207, message: `invalid fault: ${String(err)}` }]);
      }
    case 'GET /faults':
      return deps.faults.list();
    case 'DELETE /faults':
      deps.faults.clear();
      return { cleared: true };
    case 'PUT /rate-limit': {
      const budget = checkBody(BudgetBody, body);
      deps.limiter.setBudget(budget);
      return budget;
    }
    case 'POST /tokens': {
      const spec = checkBody(TokenBody, body);
      try {
        deps.auth.add(spec);
      } catch (err) {
        throw new ApiError(400, [{ code: 9207, message: `invalid token: ${String(err)}` }]);
      }
      return { added: true };
    }
    default:
      throw new ApiError(404, [{ code: 7000, message: 'No route for that URI' }]);
  }
}
