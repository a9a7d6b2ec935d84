/**
 * The local Cloudflare API emulator: node:http, routes under `/client/v4` (point the SDK's
 * `baseURL` at `<url>/client/v4`), test hooks under `/__emulator`. Per request: log → injected
 * fault → auth (token or Global API Key) → the credential's user's budget → route → token permission → envelope.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  CLOUDFLARE_DEFAULT_BUDGET,
  RateLimiter,
  TokenAuth,
  authorizeMethod,
  type RateLimitBudget,
  type TokenRecord,
  type TokenSpec,
} from './auth.js';
import { ApiError, CfErrors, failure, success, type Envelope } from './envelope.js';
import { FaultInjector } from './faults.js';
import { handleHook, HOOK_PREFIX, type HookDeps } from './hooks.js';
import { authorizePermission } from './permissions.js';
import { RequestLog } from './request-log.js';
import { apiRouter as router } from './routes/index.js';
import { EmulatorStore, type SeedDocument } from './store.js';

export const API_PREFIX = '/client/v4';
const MAX_BODY_BYTES = 8 * 1024 * 1024;

export interface EmulatorOptions {
  host?: string;
  /** 0 = any free port. */
  port?: number;
  tokens: TokenSpec[];
  /** Token of the `/__emulator` hooks; generated when absent. */
  adminToken?: string;
  rateLimit?: RateLimitBudget;
  seed?: SeedDocument;
}

/** The running emulator: its addresses and the parts the hooks act on. */
export interface RunningEmulator extends HookDeps {
  /** `http://host:port` */
  url: string;
  /** What to pass as the SDK's `baseURL`. */
  baseURL: string;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new ApiError(413, [{ code: 10413, message: 'Request body too large' }]);
    chunks.push(chunk as Buffer);
  }
  if (size === 0) return undefined;
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw CfErrors.malformedJson();
  }
}

function send(res: ServerResponse, status: number, body: Envelope, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** A header's value (the first, when sent twice); undefined when not sent. */
function oneHeader(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startCloudflareEmulator(options: EmulatorOptions): Promise<RunningEmulator> {
  const store = new EmulatorStore();
  const log = new RequestLog();
  const faults = new FaultInjector();
  const limiter = new RateLimiter(options.rateLimit ?? CLOUDFLARE_DEFAULT_BUDGET);
  const auth = new TokenAuth(options.tokens);
  const adminToken = options.adminToken ?? randomBytes(24).toString('base64url');
  if (options.seed) store.seed(options.seed);

  async function handleApi(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const method = (req.method ?? 'GET').toUpperCase();
    const path = url.pathname.slice(API_PREFIX.length) || '/';
    let status = 500;
    let token: TokenRecord | undefined;
    let body: unknown;
    try {
      body = await readBody(req);
      const fault = faults.apply(method, path);
      if (fault?.latencyMs) await sleep(fault.latencyMs);
      if (fault?.error) {
        const e = CfErrors.injected(fault.error.status, fault.error.code, fault.error.message);
        throw new ApiError(e.status, e.errors, fault.error.headers);
      }
      if (path === '/user/tokens/verify') {
        const found = auth.lookup(req.headers.authorization);
        if (!found || found.status !== 'active') throw CfErrors.invalidToken();
        token = found;
      } else {
        token = auth.authenticate({
          authorization: req.headers.authorization,
          key: oneHeader(req, 'x-auth-key'),
          email: oneHeader(req, 'x-auth-email'),
        });
      }
      const decision = limiter.take(token.user);
      const rateHeaders = limiter.headers(decision);
      if (!decision.allowed) throw CfErrors.rateLimited(decision.retryAfterSeconds, rateHeaders);
      const { route, params } = router.match(method, path);
      authorizeMethod(token, method);
      authorizePermission(token, method, path);
      const out = route.handler({ method, path, params, query: url.searchParams, body, token, store });
      status = 200;
      send(res, status, success(out.result, out.result_info), rateHeaders);
    } catch (err) {
      const apiErr =
        err instanceof ApiError ? err : new ApiError(500, [{ code: 10000, message: `Internal error: ${String(err)}` }]);
      status = apiErr.status;
      send(res, status, failure(apiErr.errors), apiErr.headers);
    } finally {
      log.record({
        method,
        path,
        query: url.search,
        status,
        ...(method !== 'GET' && body !== undefined ? { body } : {}),
        ...(token ? { tokenId: token.id } : {}),
      });
    }
  }

  async function handleHooks(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const method = (req.method ?? 'GET').toUpperCase();
    try {
      const body = await readBody(req);
      const result = handleHook(
        { adminToken, store, log, faults, limiter, auth },
        method,
        url.pathname,
        url.searchParams,
        req.headers.authorization,
        body,
      );
      send(res, 200, success(result));
    } catch (err) {
      const apiErr = err instanceof ApiError ? err : new ApiError(500, [{ code: 10000, message: String(err) }]);
      send(res, apiErr.status, failure(apiErr.errors));
    }
  }

  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://emulator');
    const handler =
      url.pathname === API_PREFIX || url.pathname.startsWith(`${API_PREFIX}/`)
        ? handleApi
        : url.pathname.startsWith(HOOK_PREFIX)
          ? handleHooks
          : async () => send(res, 404, failure(CfErrors.noRoute().errors));
    handler(req, res, url).catch((err: unknown) => {
      if (!res.headersSent) send(res, 500, failure([{ code: 10000, message: String(err) }]));
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 5_000;

  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return {
    url,
    baseURL: `${url}${API_PREFIX}`,
    adminToken,
    store,
    log,
    faults,
    limiter,
    auth,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}
