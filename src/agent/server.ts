/**
 * The sandbox agent's HTTPS server (fastify, src/http/server.ts; each body checked by its TypeBox
 * route schema's parser, src/agent/api.ts), on port 5758 by default as in the original. Every route but `/healthz` needs a client certificate of the fast
 * path (chained to the pool's CA file, naming the fast path: src/fastpath/agent-pki.ts) and
 * `Authorization: Bearer <token>`, which therefore only ever travels inside TLS. `/healthz`
 * answers without a client certificate, for the kubelet's probe. The certificate, key and CA are
 * files (the pool's Secret, mounted), re-read when they change: a renewed certificate is served
 * without a restart. Plain HTTP only with `insecurePlainHttp` (tests, the local process runtime),
 * never by default: without TLS files the agent does not start.
 *
 *   POST /api/v1/agent/create  {"sandbox":{sandboxId, image, command[], ...}}  → {success, sandboxId, createdAt}
 *   POST /api/v1/agent/delete  {"sandboxId", waitMs?}                          → {success, message, gone?}
 *   GET  /api/v1/agent/status                                                  → {agentId, nodeName, capacity, ...}
 *   GET  /api/v1/agent/logs?sandboxId=&follow=true                             → text/plain (chunked when following)
 *   POST /api/v1/agent/exec {sandboxId, command[], stdin?: base64}             → NDJSON {stdout|stderr: base64}…, {exitCode, signal?}
 *   POST /api/v1/agent/drain {drain: true|false}                               → the status report, after the change
 *   POST /api/v1/agent/reap  {liveAgentUids[], listedMsAgo}                    → {removed: [{containerId, agentName, agentUid, sandboxId?}], skipped?}
 *
 * 400: a bad body (the message names the field); 401: no or wrong token; 404: unknown route or
 * (logs) sandbox; 409: a create refused (`reason`: CapacityExceeded, PortInUse,
 * SandboxIdConflict, Terminating, ShuttingDown, Draining); 413: a body over 1 MiB (exec: 1 MiB
 * besides the base64 of its stdin, itself at most 1 MiB decoded: more is a 400); 500: the runtime
 * could not start it.
 */
import type { IncomingMessage } from 'node:http';
import { TLSSocket } from 'node:tls';
import type { TSchema } from '@sinclair/typebox';
import type { FastifyError, FastifyReply } from 'fastify';
import { isFastPathCertificate } from '../domain/agent-identity.js';
import { ServingTls } from '../fastpath/tls.js';
import { writeWithBackpressure } from '../concurrency.js';
import { HttpError, answerOf, closeHttpApp, httpApp, listen, startStream, streaming } from '../http/server.js';
import { logger as rootLogger, type Logger } from '../log.js';
import {
  AGENT_API_PREFIX,
  CreateSandboxRequest,
  DeleteSandboxRequest,
  DrainRequest,
  ExecRequest,
  LogsQuery,
  MAX_EXEC_STDIN_BYTES,
  ReapRequest,
  agentRequestValidator,
} from './api.js';
import { SandboxAgent } from './agent.js';
import { bearerChecker, loadAgentToken } from './auth.js';
import { ProcessRuntime } from './process-runtime.js';
import { SandboxNotRunningError, type ExecExit, type SandboxRuntime } from './runtime.js';

export const DEFAULT_AGENT_PORT = 5758;
export const DEFAULT_KILL_GRACE_MS = 10_000;
const MAX_BODY_BYTES = 1024 * 1024;

/** The request came with a client certificate the TLS layer verified, and it is the fast path's. */
function fromFastPath(req: IncomingMessage): boolean {
  const socket = req.socket;
  return socket instanceof TLSSocket && socket.authorized && isFastPathCertificate(socket.getPeerCertificate());
}
/** An exec's body may also carry its stdin, base64 (4 characters per 3 bytes). */
const MAX_EXEC_BODY_BYTES = MAX_BODY_BYTES + Math.ceil(MAX_EXEC_STDIN_BYTES / 3) * 4;

/** The agent's TLS files: the pool's Secret, mounted (src/domain/sandbox-pool.ts agentPod). */
export interface AgentTlsFiles {
  certFile: string;
  keyFile: string;
  /** The CA the fast path's client certificate must chain to. */
  caFile: string;
  /** How often the files are re-read (default 10 s). */
  reloadIntervalMs?: number;
}

export interface AgentServerOptions {
  token: string;
  /**
   * Where `token` was read from: re-read with the TLS files (a key rotation rewrites the pool's
   * Secret, token and certificate together), a new non-empty token replacing the old one.
   */
  tokenFile?: string;
  /** HTTPS with these files; required unless `insecurePlainHttp`. */
  tls?: AgentTlsFiles;
  /**
   * Serve plain HTTP: the token travels in clear. Tests and the local process runtime only; the
   * pool's agent Pods never get it, and the fast path never calls an `http://` agent.
   */
  insecurePlainHttp?: boolean;
  host?: string;
  /** 0 = any free port. */
  port?: number;
  agentId: string;
  nodeName?: string;
  capacity: number;
  killGraceMs?: number;
  runtime?: SandboxRuntime;
  /** What the status reports as the runtime (`containerd/runc`…); the runtime's name by default. */
  runtimeLabel?: string;
  logger?: Logger;
}

export interface RunningAgent {
  /** `https://host:port` (`http://` with insecurePlainHttp). */
  readonly url: string;
  readonly port: number;
  readonly agent: SandboxAgent;
  readonly runtime: SandboxRuntime;
  /** Stops listening and stops every sandbox (SIGTERM, SIGKILL after the grace period). */
  close(): Promise<void>;
}

function sendJson(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return reply.code(status).type('application/json').send(body);
}

export async function startAgentServer(opts: AgentServerOptions): Promise<RunningAgent> {
  const log = (opts.logger ?? rootLogger).child({ component: 'sandbox-agent', agentId: opts.agentId });
  if (!opts.tls && !opts.insecurePlainHttp)
    throw new Error(
      'the agent serves HTTPS only: give its certificate, key and CA files (--tls-cert-file, --tls-key-file, --tls-ca-file), or --insecure-plain-http to serve the token in clear (tests only)',
    );
  // Read first: a missing or mismatched file fails the start with its reason, before any sandbox.
  const tls =
    opts.tls &&
    new ServingTls(
      {
        certFile: opts.tls.certFile,
        keyFile: opts.tls.keyFile,
        clientCaFile: opts.tls.caFile,
        // Asked for, not required at the handshake: /healthz serves the kubelet without one.
        requireClientCert: false,
        reloadIntervalMs: opts.tls.reloadIntervalMs ?? 10_000,
      },
      log,
    );
  // Sandboxes listen where the agent is reached (its Pod IP when it listens on every address).
  const sandboxHost = !opts.host || opts.host === '0.0.0.0' ? (process.env.POD_IP ?? '0.0.0.0') : opts.host;
  const runtime: SandboxRuntime = opts.runtime ?? new ProcessRuntime({ host: sandboxHost });
  const agent = new SandboxAgent({
    agentId: opts.agentId,
    nodeName: opts.nodeName ?? '',
    capacity: opts.capacity,
    runtime,
    runtimeLabel: opts.runtimeLabel,
    killGraceMs: opts.killGraceMs ?? DEFAULT_KILL_GRACE_MS,
    onDeleteFailed: (sandboxId, err) =>
      log.warn({ err, sandboxId }, 'sandbox delete failed; retried on the next delete'),
  });
  // Before serving: the sandboxes an earlier run of this agent left running are its own again.
  const restored = await agent.restore();
  if (restored) log.info({ restored }, 'sandboxes re-adopted from the runtime');
  let authorized = bearerChecker(opts.token);
  let token = opts.token;
  const tokenTimer =
    opts.tokenFile && opts.tls
      ? setInterval(() => {
          let next: string;
          try {
            next = loadAgentToken({ tokenFile: opts.tokenFile });
          } catch {
            return; // mid-rewrite or gone: the last good token stays
          }
          if (next === token) return;
          token = next;
          authorized = bearerChecker(next);
          log.info('agent token reloaded');
        }, opts.tls.reloadIntervalMs ?? 10_000).unref()
      : undefined;

  const app = httpApp({
    tls,
    bodyLimit: MAX_BODY_BYTES,
    json: {
      empty: () => {
        throw new HttpError(400, 'body is empty; a JSON object is required');
      },
      notJson: (reason) => new HttpError(400, `body is not JSON: ${reason}`),
    },
  });
  app.setValidatorCompiler(({ schema }) =>
    agentRequestValidator(schema as TSchema, (message) => new HttpError(400, message)),
  );
  app.setErrorHandler((err: FastifyError, req, reply) => {
    const { status, message } = answerOf(err, req, 500);
    if (status >= 500) log.error({ err, path: req.url }, 'agent request failed');
    return sendJson(reply, status, { success: false, message });
  });
  // Before any body is read: who calls, then with what token.
  app.addHook('onRequest', async (req, reply) => {
    if (req.routeOptions.url === '/healthz') return;
    if (tls && !fromFastPath(req.raw))
      throw new HttpError(
        401,
        "a client certificate of the fast path is required (verified against the pool's CA, naming the fast path)",
      );
    if (!authorized(req.headers.authorization)) {
      reply.header('www-authenticate', 'Bearer');
      throw new HttpError(401, req.headers.authorization ? 'wrong agent token' : 'missing bearer token');
    }
  });
  app.all('/healthz', async (_req, reply) => reply.code(200).type('text/plain').send('ok'));

  app.post(`${AGENT_API_PREFIX}/create`, { schema: { body: CreateSandboxRequest } }, async (req, reply) => {
    const { sandbox } = req.body;
    const answer = await agent.create(sandbox);
    if (!answer.body.success)
      log.info({ sandboxId: sandbox.sandboxId, status: answer.status, why: answer.body.message }, 'create refused');
    else log.debug({ sandboxId: sandbox.sandboxId }, 'sandbox created');
    return sendJson(reply, answer.status, answer.body);
  });
  app.post(`${AGENT_API_PREFIX}/delete`, { schema: { body: DeleteSandboxRequest } }, async (req, reply) => {
    const { sandboxId, waitMs } = req.body;
    const answer = waitMs === undefined ? agent.delete(sandboxId) : await agent.deleteAndWait(sandboxId, waitMs);
    return sendJson(reply, answer.status, answer.body);
  });
  app.get(`${AGENT_API_PREFIX}/status`, async (_req, reply) => sendJson(reply, 200, agent.status()));
  app.post(`${AGENT_API_PREFIX}/drain`, { schema: { body: DrainRequest } }, async (req, reply) => {
    const report = agent.drain(req.body.drain ?? true);
    log.info({ draining: report.draining, allocated: report.allocated }, 'drain changed');
    return sendJson(reply, 200, report);
  });
  // The janitor: the namespace's agent Pods that exist; the node's containers of the others go.
  app.post(
    `${AGENT_API_PREFIX}/reap`,
    { schema: { body: ReapRequest }, bodyLimit: 16 * MAX_BODY_BYTES },
    async (req, reply) => {
      const answer = await agent.reap(req.body);
      for (const c of answer.removed)
        log.warn(
          { containerId: c.containerId, deadAgent: c.agentName, deadAgentUid: c.agentUid },
          'removed a container of an agent whose Pod is gone',
        );
      return sendJson(reply, 200, answer);
    },
  );
  const streamCut = (err: unknown, path: string) => log.error({ err, path }, 'agent stream failed; connection cut');

  app.get(`${AGENT_API_PREFIX}/logs`, { schema: { querystring: LogsQuery } }, async (req, reply) => {
    const { sandboxId: id, follow } = req.query;
    const logs = agent.logs(id);
    if (!logs) throw new HttpError(404, `sandbox ${id} is not on this agent`);
    const res = startStream(reply, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
    // Pulled from the bounded log at the client's pace: one that stops reading falls behind
    // (and is told what it missed), the agent buffers nothing more for it.
    const gone = new AbortController();
    res.once('close', () => gone.abort());
    await streaming(
      reply,
      (err) => streamCut(err, req.url),
      async () => {
        for (let pos = logs.dropped; !gone.signal.aborted;) {
          const { data, next, missed } = logs.read(pos);
          pos = next;
          if (missed)
            await writeWithBackpressure(res, `\n[… ${missed} bytes of output dropped: the reader fell behind]\n`);
          if (data.length) await writeWithBackpressure(res, data);
          else if (!follow || logs.isEnded) break;
          else await logs.changed(gone.signal);
        }
        res.end();
      },
    );
  });
  app.post(
    `${AGENT_API_PREFIX}/exec`,
    {
      schema: { body: ExecRequest },
      bodyLimit: MAX_EXEC_BODY_BYTES,
      config: { bodyLimitWhy: `: stdin is at most ${MAX_EXEC_STDIN_BYTES} bytes` },
    },
    async (req, reply) => {
      const body = req.body;
      // Output as it comes, one JSON object per line; the last line says how it ended. A client
      // that stops reading pauses the command's output (the runtime awaits each line). The head
      // goes with the first line: a command that cannot start is answered as an error.
      const start = () => startStream(reply, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
      const line = (message: unknown) => writeWithBackpressure(start(), `${JSON.stringify(message)}\n`);
      const abort = new AbortController();
      reply.raw.once('close', () => abort.abort());
      await streaming(
        reply,
        (err) => streamCut(err, req.url),
        async () => {
          let running: Promise<ExecExit> | undefined;
          try {
            running = agent.exec(
              body.sandboxId,
              body.command,
              {
                stdout: (c) => line({ stdout: c.toString('base64') }),
                stderr: (c) => line({ stderr: c.toString('base64') }),
              },
              abort.signal,
              body.stdin,
            );
          } catch (err) {
            if (err instanceof SandboxNotRunningError) throw new HttpError(409, err.message);
            throw err;
          }
          if (!running) throw new HttpError(404, `sandbox ${body.sandboxId} is not on this agent`);
          const exit = await running.catch((err: unknown) => {
            // Before any output: the command could not start (no such file…), the caller's mistake.
            if (!reply.raw.headersSent) throw new HttpError(400, (err as Error).message);
            throw err;
          });
          await line({ exitCode: exit.code, ...(exit.signal ? { signal: exit.signal } : {}) });
          reply.raw.end();
        },
      );
    },
  );
  const ROUTES = ['create', 'delete', 'status', 'logs', 'exec', 'drain', 'reap'];
  app.setNotFoundHandler(async (req) => {
    const path = req.url.split('?')[0]!;
    if (path.startsWith(`${AGENT_API_PREFIX}/`) && ROUTES.includes(path.slice(AGENT_API_PREFIX.length + 1)))
      throw new HttpError(405, `${req.method} is not allowed on ${path}`);
    throw new HttpError(404, `no route ${req.method} ${path}`);
  });
  if (!tls) log.warn('serving plain HTTP (--insecure-plain-http): the agent token travels in clear');
  const port = await listen(app, opts.port ?? DEFAULT_AGENT_PORT, opts.host ?? '0.0.0.0');
  agent.reserveOwnPort(port);
  const host = opts.host && opts.host !== '0.0.0.0' ? opts.host : '127.0.0.1';
  log.info({ port, capacity: opts.capacity, runtime: opts.runtimeLabel ?? runtime.name }, 'sandbox agent listening');

  let closing: Promise<void> | undefined;
  return {
    url: `${tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    agent,
    runtime,
    close() {
      closing ??= (async () => {
        await closeHttpApp(app, async () => {
          await agent.shutdown();
          runtime.close?.();
          tls?.close();
          clearInterval(tokenTimer);
        });
        log.info('sandbox agent stopped');
      })();
      return closing;
    },
  };
}
