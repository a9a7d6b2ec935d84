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
import type { IncomingMessage } from 'node:http';
import { TLSSocket, type PeerCertificate } from 'node:tls';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { MAX_EXEC_STDIN_BYTES, decodeBase64 } from '../agent/api.js';
import { writeWithBackpressure } from '../concurrency.js';
import { closeHttpApp, httpApp, listen, startStream, streaming, tooLargeMessage } from '../http/server.js';
import type { Logger } from '../log.js';
import { inServerSpan } from '../tracing/server-spans.js';
import { decodeJson } from './proto.js';
import type { ApiFaceOptions, RunningApiFace } from './api-face.js';
import type { SandboxIo } from './sandbox-io.js';
import { FastPathError, type CreateRequest, type UpdateRequest } from './service.js';
import { tenantOf } from './tenant.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The tenant the call acts as, once authenticated (src/fastpath/tenant.ts). */
    fastPathTenant: string;
  }
}

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
const ITEM = /^\/api\/v1\/namespaces\/[^/]+\/sandboxes(?:\/[^/]+)?$/;
const IO = /^\/api\/v1\/namespaces\/[^/]+\/sandboxes\/[^/]+\/(logs|exec)$/;
const SANDBOX = '/api/v1/namespaces/:namespace/sandboxes/:name';
type AtSandbox = { Params: { namespace: string; name: string } };
const at = (req: FastifyRequest<AtSandbox>) => ({ namespace: req.params.namespace, sandboxName: req.params.name });

/** The refusal an error is answered with: grpc-gateway's status for its gRPC code. */
function refusal(err: unknown, req: FastifyRequest): FastPathError {
  if (err instanceof FastPathError) return err;
  const tooLarge = tooLargeMessage(err as FastifyError, req);
  if (tooLarge) return new FastPathError('InvalidArgument', tooLarge);
  // The framework's own refusals of a malformed request (a bad Content-Length…).
  const status = (err as FastifyError).statusCode;
  if (status && status >= 400 && status < 500) return new FastPathError('InvalidArgument', (err as Error).message);
  return new FastPathError('Internal', (err as Error).message);
}

/**
 * `GET …/logs[?follow=true]`: the output as text/plain, chunked while it follows.
 * `POST …/exec {command, stdin?, stdinBase64?}`: NDJSON, `{"stdout"|"stderr": text}` lines as the
 * output comes, then `{"exitCode": n, "signal"?}`. The command reads `stdin` (text, sent as UTF-8)
 * or `stdinBase64` (bytes), then EOF; neither: EOF at once. An error before the first byte is the
 * usual JSON error; a client that disconnects ends the agent call (and kills the command).
 */
function ioRoutes(app: ReturnType<typeof httpApp>, io: SandboxIo, traced: Traced, log: Logger): void {
  const cut = (err: unknown) => log.error({ err }, 'fast-path HTTP stream failed; connection cut');
  app.get<AtSandbox & { Querystring: { follow?: string | string[] } }>(
    `${SANDBOX}/logs`,
    traced(async (req, reply) => {
      const abort = new AbortController();
      reply.raw.once('close', () => abort.abort());
      const follow = [req.query.follow].flat()[0];
      const chunks = await io.logs(
        { ...at(req), follow: ['true', '1', 'yes'].includes((follow ?? '').toLowerCase()) },
        req.fastPathTenant,
        abort.signal,
      );
      const res = startStream(reply, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
      // At the client's pace: the agent's stream is read only as fast as the client reads this one.
      await streaming(reply, cut, async () => {
        for await (const c of chunks) await writeWithBackpressure(res, c);
        res.end();
      });
    }),
  );
  app.post<AtSandbox>(
    `${SANDBOX}/exec`,
    { bodyLimit: MAX_EXEC_BODY_BYTES, config: { bodyLimitWhy: `: stdin is at most ${MAX_EXEC_STDIN_BYTES} bytes` } },
    traced(async (req, reply) => {
      const abort = new AbortController();
      reply.raw.once('close', () => abort.abort());
      const body = req.body as { command?: unknown; stdin?: unknown; stdinBase64?: unknown };
      if (!Array.isArray(body.command) || !body.command.every((c) => typeof c === 'string'))
        throw new FastPathError('InvalidArgument', 'command must be an array of strings');
      const events = await io.exec(
        { ...at(req), command: body.command as string[], stdin: execStdin(body) },
        req.fastPathTenant,
        abort.signal,
      );
      const res = startStream(reply, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
      await streaming(reply, cut, async () => {
        for await (const e of events)
          await writeWithBackpressure(
            res,
            `${JSON.stringify('stdout' in e ? { stdout: e.stdout.toString('utf8') } : 'stderr' in e ? { stderr: e.stderr.toString('utf8') } : e)}\n`,
          );
        res.end();
      });
    }),
  );
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

function message<T>(body: unknown, name: string): T {
  const decoded = decodeJson(name, body);
  if (!decoded.ok) throw new FastPathError('InvalidArgument', decoded.message);
  return decoded.value as T;
}

/** The client certificate of an HTTPS request, only when the TLS layer verified it against the client CA. */
function verifiedPeer(req: IncomingMessage): PeerCertificate | undefined {
  const socket = req.socket;
  if (!(socket instanceof TLSSocket) || !socket.authorized) return undefined;
  const cert = socket.getPeerCertificate();
  return cert.raw ? cert : undefined;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each route's own request type
type Handler<R = any> = (req: FastifyRequest<R & {}>, reply: FastifyReply) => Promise<unknown>;
type Traced = <R>(handler: Handler<R>) => Handler<R>;

export async function startHttpServer(opts: ApiFaceOptions): Promise<RunningApiFace> {
  const s = opts.service;
  const app = httpApp({
    tls: opts.tls,
    bodyLimit: MAX_BODY_BYTES,
    keepAliveTimeoutMs: 65_000,
    json: {
      empty: () => ({}),
      notJson: (reason) => new FastPathError('InvalidArgument', `body is not JSON: ${reason}`),
    },
    badUrl: (path, reply) =>
      void send(
        reply,
        new FastPathError('InvalidArgument', `malformed percent-escape in the path ${JSON.stringify(path)}`),
      ),
  });
  const send = (reply: FastifyReply, err: FastPathError) => {
    // A refusal that will pass (a pool scaling up from zero) says when to try again.
    if (err.retryAfterSeconds !== undefined) reply.header('retry-after', String(err.retryAfterSeconds));
    return reply.code(HTTP_STATUS[err.code]).send({ error: err.code, message: err.message });
  };
  app.setErrorHandler((err, req, reply) => {
    const refused = refusal(err, req);
    if (refused.code === 'Internal' && !(err instanceof FastPathError))
      opts.log.error({ err }, 'fast-path HTTP call failed');
    return send(reply, refused);
  });

  /** The call in a server span named by its route template (`{namespace}`), continuing the caller's trace. */
  const traced: Traced = (handler) => (req, reply) => {
    const route = (req.routeOptions.url ?? 'unknown').replace(/:(\w+)/g, '{$1}');
    return inServerSpan(
      `${req.method} ${route}`,
      req.headers,
      { 'http.request.method': req.method, 'http.route': route },
      () => handler(req, reply),
      (r) => {
        const status = 'err' in r ? HTTP_STATUS[refusal(r.err, req).code] : reply.statusCode;
        return { error: status >= 500, attributes: { 'http.response.status_code': status } };
      },
    );
  };
  app.decorateRequest('fastPathTenant', '');
  // Before any body is read: the tenant, and whether the caller may act as it.
  app.addHook('onRequest', async (req, reply) => {
    if (req.routeOptions.url === '/healthz') return;
    try {
      req.fastPathTenant = tenantOf(opts.tenants, req.raw, verifiedPeer(req.raw));
    } catch (err) {
      await traced(() => Promise.reject(err))(req, reply);
    }
  });
  app.all('/healthz', async (_req, reply) => reply.send({ ok: true }));
  app.post(
    '/api/v1/sandboxes',
    traced(async (req, reply) =>
      reply.code(201).send(await s.create(message<CreateRequest>(req.body, 'CreateRequest'), req.fastPathTenant)),
    ),
  );
  app.get<{ Params: { namespace: string } }>(
    '/api/v1/namespaces/:namespace/sandboxes',
    traced(async (req) => s.list({ namespace: req.params.namespace }, req.fastPathTenant)),
  );
  app.get<AtSandbox>(
    SANDBOX,
    traced(async (req) => s.get(at(req), req.fastPathTenant)),
  );
  app.delete<AtSandbox>(
    SANDBOX,
    traced(async (req) => s.delete(at(req), req.fastPathTenant)),
  );
  app.patch<AtSandbox>(
    SANDBOX,
    traced(async (req) =>
      s.update({ ...message<UpdateRequest>(req.body, 'UpdateRequest'), ...at(req) }, req.fastPathTenant),
    ),
  );
  if (opts.io) ioRoutes(app, opts.io, traced, opts.log);
  app.setNotFoundHandler(
    traced(async (req) => {
      const path = req.url.split('?')[0]!;
      // A route of the API asked with another method.
      if (ITEM.test(path) || (opts.io && IO.test(path)))
        throw new FastPathError('InvalidArgument', `${req.method} is not allowed here`);
      throw new FastPathError('NotFound', `no route ${req.method} ${path}`);
    }),
  );
  const port = await listen(app, opts.port, opts.host);
  return { port, close: () => closeHttpApp(app) };
}
