/**
 * The HTTP/JSON face of the same five operations, for clients without gRPC (curl, scripts).
 * Bodies and answers are the proto's messages in proto3 JSON (camelCase), checked against the
 * .proto itself; errors are `{"error": <code>, "message": …}` with the HTTP status grpc-gateway
 * gives the matching gRPC code.
 *
 *   POST   /api/v1/sandboxes                               CreateSandbox (201)
 *   GET    /api/v1/namespaces/{namespace}/sandboxes        ListSandboxes
 *   GET    /api/v1/namespaces/{namespace}/sandboxes/{name} GetSandbox
 *   PATCH  /api/v1/namespaces/{namespace}/sandboxes/{name} UpdateSandbox (one of expireTimeSeconds,
 *                                                          resetRevision, failurePolicy, recoveryTimeoutSeconds; labels)
 *   DELETE /api/v1/namespaces/{namespace}/sandboxes/{name} DeleteSandbox
 *   GET    /api/v1/namespaces/{namespace}/sandboxes/{name}/logs[?follow=true]   its output (added)
 *   POST   /api/v1/namespaces/{namespace}/sandboxes/{name}/exec {command, stdin?|stdinBase64?}  run a command (added)
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { TLSSocket, type PeerCertificate } from 'node:tls';
import type { AddressInfo } from 'node:net';
import { MAX_EXEC_STDIN_BYTES, decodeBase64 } from '../agent/api.js';
import { writeWithBackpressure } from '../concurrency.js';
import type { Logger } from '../log.js';
import type { HoldsTenantSnapshot } from '../tenancy/index.js';
import { inServerSpan } from '../tracing/server-spans.js';
import { decodeJson } from './proto.js';
import type { SandboxIo } from './sandbox-io.js';
import { FastPathError, type CreateRequest, type FastPathService, type UpdateRequest } from './service.js';
import { tenantOf } from './tenant.js';
import type { ServingTls } from './tls.js';

const HTTP_STATUS: Record<FastPathError['code'], number> = {
  InvalidArgument: 400,
  NotFound: 404,
  AlreadyExists: 409,
  ResourceExhausted: 429,
  FailedPrecondition: 400,
  Unavailable: 503,
  Internal: 500,
  Unauthenticated: 401,
  PermissionDenied: 403,
};
const MAX_BODY_BYTES = 1024 * 1024;
/** An exec's body also carries its stdin: room for it as base64 or as escaped JSON text (a bigger stdin is named as such). */
const MAX_EXEC_BODY_BYTES = MAX_BODY_BYTES + 2 * MAX_EXEC_STDIN_BYTES;
const ITEM = /^\/api\/v1\/namespaces\/([^/]+)\/sandboxes(?:\/([^/]+))?$/;
const IO = /^\/api\/v1\/namespaces\/([^/]+)\/sandboxes\/([^/]+)\/(logs|exec)$/;

/** The route template of an API path (the server span's name), or undefined for /healthz. */
function routeOf(pathname: string): string | undefined {
  if (pathname === '/healthz') return undefined;
  if (pathname === '/api/v1/sandboxes') return pathname;
  const io = IO.exec(pathname);
  if (io) return `/api/v1/namespaces/{namespace}/sandboxes/{name}/${io[3]}`;
  const m = ITEM.exec(pathname);
  if (m)
    return m[2] === undefined
      ? '/api/v1/namespaces/{namespace}/sandboxes'
      : '/api/v1/namespaces/{namespace}/sandboxes/{name}';
  return 'unknown';
}

/**
 * `GET …/logs[?follow=true]`: the output as text/plain, chunked while it follows.
 * `POST …/exec {command, stdin?, stdinBase64?}`: NDJSON, `{"stdout"|"stderr": text}` lines as the
 * output comes, then `{"exitCode": n, "signal"?}`. The command reads `stdin` (text, sent as UTF-8)
 * or `stdinBase64` (bytes), then EOF; neither: EOF at once. An error before the first byte is the
 * usual JSON error; a client that disconnects ends the agent call (and kills the command).
 */
async function streamIo(
  io: SandboxIo,
  req: IncomingMessage,
  res: ServerResponse,
  tenant: string,
  at: { namespace: string; sandboxName: string; what: 'logs' | 'exec'; follow: boolean },
): Promise<void> {
  const abort = new AbortController();
  res.once('close', () => abort.abort());
  if (at.what === 'logs') {
    if (req.method !== 'GET') throw new FastPathError('InvalidArgument', `${req.method} is not allowed here`);
    const chunks = await io.logs({ ...at }, tenant, abort.signal);
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
    // At the client's pace: the agent's stream is read only as fast as the client reads this one.
    for await (const c of chunks) await writeWithBackpressure(res, c);
    return void res.end();
  }
  if (req.method !== 'POST') throw new FastPathError('InvalidArgument', `${req.method} is not allowed here`);
  const body = (await readBody(req, MAX_EXEC_BODY_BYTES, `: stdin is at most ${MAX_EXEC_STDIN_BYTES} bytes`)) as {
    command?: unknown;
    stdin?: unknown;
    stdinBase64?: unknown;
  };
  if (!Array.isArray(body.command) || !body.command.every((c) => typeof c === 'string'))
    throw new FastPathError('InvalidArgument', 'command must be an array of strings');
  const events = await io.exec(
    { ...at, command: body.command as string[], stdin: execStdin(body) },
    tenant,
    abort.signal,
  );
  res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
  for await (const e of events)
    await writeWithBackpressure(
      res,
      `${JSON.stringify('stdout' in e ? { stdout: e.stdout.toString('utf8') } : 'stderr' in e ? { stderr: e.stderr.toString('utf8') } : e)}\n`,
    );
  res.end();
}

/** An exec body's input: `stdin` as UTF-8 text or `stdinBase64` as bytes, not both; refused rather than altered. */
function execStdin(body: { stdin?: unknown; stdinBase64?: unknown }): Buffer | undefined {
  if (body.stdin !== undefined && body.stdinBase64 !== undefined)
    throw new FastPathError('InvalidArgument', 'give stdin (text) or stdinBase64 (bytes), not both');
  if (body.stdin !== undefined) {
    if (typeof body.stdin !== 'string') throw new FastPathError('InvalidArgument', 'stdin must be a string');
    // A lone surrogate has no UTF-8: encoding would put U+FFFD in its place.
    if (/\p{Cs}/u.test(body.stdin))
      throw new FastPathError('InvalidArgument', 'stdin is not valid Unicode text; send bytes as stdinBase64');
    return Buffer.from(body.stdin, 'utf8');
  }
  if (body.stdinBase64 === undefined) return undefined;
  const bytes = typeof body.stdinBase64 === 'string' ? decodeBase64(body.stdinBase64) : undefined;
  if (!bytes) throw new FastPathError('InvalidArgument', 'stdinBase64 must be base64 (standard alphabet, padded)');
  return bytes;
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/** `why`: what the limit is for, said with the refusal. */
async function readBody(req: IncomingMessage, limit = MAX_BODY_BYTES, why = ''): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > limit) throw new FastPathError('InvalidArgument', `body over ${limit} bytes${why}`);
    chunks.push(c);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new FastPathError('InvalidArgument', `body is not JSON: ${(err as Error).message}`);
  }
}

async function message<T>(req: IncomingMessage, name: string): Promise<T> {
  const decoded = decodeJson(name, await readBody(req));
  if (!decoded.ok) throw new FastPathError('InvalidArgument', decoded.message);
  return decoded.value as T;
}

export interface RunningHttp {
  port: number;
  close(): Promise<void>;
}

/** A path segment, percent-decoded; a malformed escape (`%zz`) is the caller's error, not a 500. */
function pathSegment(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new FastPathError('InvalidArgument', `malformed percent-escape in the path segment ${JSON.stringify(raw)}`);
  }
}

/** The client certificate of an HTTPS request, only when the TLS layer verified it against the client CA. */
function verifiedPeer(req: IncomingMessage): PeerCertificate | undefined {
  const socket = req.socket;
  if (!(socket instanceof TLSSocket) || !socket.authorized) return undefined;
  const cert = socket.getPeerCertificate();
  return cert.raw ? cert : undefined;
}

export async function startHttpServer(opts: {
  service: FastPathService;
  tenants: HoldsTenantSnapshot;
  host: string;
  port: number;
  log: Logger;
  /** Logs and exec routes; without it only the five operations are served. */
  io?: SandboxIo;
  /** Serve HTTPS (reloaded certificate, optional client certificates); plain HTTP without it. */
  tls?: ServingTls;
}): Promise<RunningHttp> {
  const s = opts.service;
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://fastpath');
    if (url.pathname === '/healthz') return send(res, 200, { ok: true });
    const tenant = tenantOf(opts.tenants, req, verifiedPeer(req));
    if (url.pathname === '/api/v1/sandboxes' && req.method === 'POST')
      return send(res, 201, await s.create(await message<CreateRequest>(req, 'CreateRequest'), tenant));
    const io = IO.exec(url.pathname);
    if (io && opts.io)
      return streamIo(opts.io, req, res, tenant, {
        namespace: pathSegment(io[1]!),
        sandboxName: pathSegment(io[2]!),
        what: io[3] as 'logs' | 'exec',
        follow: ['true', '1', 'yes'].includes((url.searchParams.get('follow') ?? '').toLowerCase()),
      });
    const m = ITEM.exec(url.pathname);
    if (!m) throw new FastPathError('NotFound', `no route ${req.method} ${url.pathname}`);
    const namespace = pathSegment(m[1]!);
    const sandboxName = m[2] === undefined ? undefined : pathSegment(m[2]);
    if (sandboxName === undefined) {
      if (req.method !== 'GET') throw new FastPathError('InvalidArgument', `${req.method} is not allowed here`);
      return send(res, 200, await s.list({ namespace }, tenant));
    }
    switch (req.method) {
      case 'GET':
        return send(res, 200, await s.get({ namespace, sandboxName }, tenant));
      case 'DELETE':
        return send(res, 200, await s.delete({ namespace, sandboxName }, tenant));
      case 'PATCH': {
        const body = await message<UpdateRequest>(req, 'UpdateRequest');
        return send(res, 200, await s.update({ ...body, namespace, sandboxName }, tenant));
      }
      default:
        throw new FastPathError('InvalidArgument', `${req.method} is not allowed here`);
    }
  };
  const answer = (req: IncomingMessage, res: ServerResponse) =>
    handle(req, res).catch((err: unknown) => {
      // A stream that failed after its first byte can only be cut.
      if (res.headersSent) return void res.destroy();
      if (err instanceof FastPathError) {
        // A refusal that will pass (a pool scaling up from zero) says when to try again.
        const retry: Record<string, string> =
          err.retryAfterSeconds !== undefined ? { 'retry-after': String(err.retryAfterSeconds) } : {};
        return send(res, HTTP_STATUS[err.code], { error: err.code, message: err.message }, retry);
      }
      opts.log.error({ err }, 'fast-path HTTP call failed');
      send(res, 500, { error: 'Internal', message: (err as Error).message });
    });
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    // The path as sent (no URL parsing here: a malformed one must reach handle(), which refuses it).
    const route = routeOf((req.url ?? '/').split('?')[0]!);
    if (!route) return void answer(req, res);
    void inServerSpan(
      `${req.method} ${route}`,
      req.headers,
      { 'http.request.method': req.method ?? '', 'http.route': route },
      () => answer(req, res),
      () => ({ error: res.statusCode >= 500, attributes: { 'http.response.status_code': res.statusCode } }),
    );
  };
  let server;
  if (opts.tls) {
    const https = createHttpsServer(opts.tls.httpsOptions(), onRequest);
    opts.tls.serveHttps(https);
    server = https;
  } else server = createServer(onRequest);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
