/**
 * The sandbox agent's HTTPS server (node:https: a few routes need no framework), on port 5758 by
 * default as in the original. Every route but `/healthz` needs a client certificate of the fast
 * path (chained to the pool's CA file, naming the fast path: src/fastpath/agent-pki.ts) and
 * `Authorization: Bearer <token>`, which therefore only ever travels inside TLS. `/healthz`
 * answers without a client certificate, for the kubelet's probe. The certificate, key and CA are
 * files (the pool's Secret, mounted), re-read when they change: a renewed certificate is served
 * without a restart. Plain HTTP only with `insecurePlainHttp` (tests, the local process runtime),
 * never by default: without TLS files the agent does not start.
 *
 *   POST /api/v1/agent/create  {"sandbox":{sandboxId, image, command[], ...}}  → {success, sandboxId, createdAt}
 *   POST /api/v1/agent/delete  {"sandboxId"}                                   → {success, message}
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
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { TLSSocket } from 'node:tls';
import { isFastPathCertificate } from '../domain/agent-identity.js';
import { ServingTls } from '../fastpath/tls.js';
import { writeWithBackpressure } from '../concurrency.js';
import { logger as rootLogger, type Logger } from '../log.js';
import {
  AGENT_API_PREFIX,
  MAX_EXEC_STDIN_BYTES,
  parseCreateRequest,
  parseDeleteRequest,
  parseDrainRequest,
  parseExecRequest,
  parseReapRequest,
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

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const data = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) });
  res.end(data);
}

/** `why`: what the limit is for, said with the 413. */
async function readJson(req: IncomingMessage, limit = MAX_BODY_BYTES, why = ''): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > limit) throw new HttpError(413, `body over ${limit} bytes${why}`);
    chunks.push(c);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') throw new HttpError(400, 'body is empty; a JSON object is required');
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new HttpError(400, `body is not JSON: ${(err as Error).message}`);
  }
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

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://agent');
    if (url.pathname === '/healthz') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    if (tls && !fromFastPath(req))
      throw new HttpError(
        401,
        "a client certificate of the fast path is required (verified against the pool's CA, naming the fast path)",
      );
    if (!authorized(req.headers.authorization)) {
      res.setHeader('www-authenticate', 'Bearer');
      throw new HttpError(401, req.headers.authorization ? 'wrong agent token' : 'missing bearer token');
    }
    const route = `${req.method} ${url.pathname}`;
    switch (route) {
      case `POST ${AGENT_API_PREFIX}/create`: {
        const parsed = parseCreateRequest(await readJson(req));
        if (!parsed.ok) throw new HttpError(400, parsed.message);
        const answer = await agent.create(parsed.value.sandbox);
        if (!answer.body.success)
          log.info(
            { sandboxId: parsed.value.sandbox.sandboxId, status: answer.status, why: answer.body.message },
            'create refused',
          );
        else log.debug({ sandboxId: parsed.value.sandbox.sandboxId }, 'sandbox created');
        return sendJson(res, answer.status, answer.body);
      }
      case `POST ${AGENT_API_PREFIX}/delete`: {
        const parsed = parseDeleteRequest(await readJson(req));
        if (!parsed.ok) throw new HttpError(400, parsed.message);
        const answer = agent.delete(parsed.value.sandboxId);
        return sendJson(res, answer.status, answer.body);
      }
      case `GET ${AGENT_API_PREFIX}/status`:
        return sendJson(res, 200, agent.status());
      case `POST ${AGENT_API_PREFIX}/drain`: {
        const parsed = parseDrainRequest(await readJson(req));
        if (!parsed.ok) throw new HttpError(400, parsed.message);
        const report = agent.drain(parsed.value.drain ?? true);
        log.info({ draining: report.draining, allocated: report.allocated }, 'drain changed');
        return sendJson(res, 200, report);
      }
      case `POST ${AGENT_API_PREFIX}/reap`: {
        // The janitor: the namespace's agent Pods that exist; the node's containers of the others go.
        const parsed = parseReapRequest(await readJson(req, 16 * MAX_BODY_BYTES));
        if (!parsed.ok) throw new HttpError(400, parsed.message);
        const answer = await agent.reap(parsed.value);
        for (const c of answer.removed)
          log.warn(
            { containerId: c.containerId, deadAgent: c.agentName, deadAgentUid: c.agentUid },
            'removed a container of an agent whose Pod is gone',
          );
        return sendJson(res, 200, answer);
      }
      case `GET ${AGENT_API_PREFIX}/logs`: {
        const id = url.searchParams.get('sandboxId');
        if (!id) throw new HttpError(400, 'sandboxId is required (query parameter)');
        const follow = ['true', '1', 'yes'].includes((url.searchParams.get('follow') ?? '').toLowerCase());
        const logs = agent.logs(id);
        if (!logs) throw new HttpError(404, `sandbox ${id} is not on this agent`);
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
        // Pulled from the bounded log at the client's pace: one that stops reading falls behind
        // (and is told what it missed), the agent buffers nothing more for it.
        const gone = new AbortController();
        res.once('close', () => gone.abort());
        for (let pos = logs.dropped; !gone.signal.aborted;) {
          const { data, next, missed } = logs.read(pos);
          pos = next;
          if (missed)
            await writeWithBackpressure(res, `\n[… ${missed} bytes of output dropped: the reader fell behind]\n`);
          if (data.length) await writeWithBackpressure(res, data);
          else if (!follow || logs.isEnded) break;
          else await logs.changed(gone.signal);
        }
        return void res.end();
      }
      case `POST ${AGENT_API_PREFIX}/exec`: {
        const parsed = parseExecRequest(
          await readJson(req, MAX_EXEC_BODY_BYTES, `: stdin is at most ${MAX_EXEC_STDIN_BYTES} bytes`),
        );
        if (!parsed.ok) throw new HttpError(400, parsed.message);
        const body = parsed.value;
        // Output as it comes, one JSON object per line; the last line says how it ended. A client
        // that stops reading pauses the command's output (the runtime awaits each line).
        const line = (o: unknown) => writeWithBackpressure(res, `${JSON.stringify(o)}\n`);
        const abort = new AbortController();
        res.once('close', () => abort.abort());
        let started = false;
        const start = () => {
          if (started) return;
          started = true;
          res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
        };
        let running: Promise<ExecExit> | undefined;
        try {
          running = agent.exec(
            body.sandboxId,
            body.command,
            {
              stdout: (c) => (start(), line({ stdout: c.toString('base64') })),
              stderr: (c) => (start(), line({ stderr: c.toString('base64') })),
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
          if (!started) throw new HttpError(400, (err as Error).message);
          throw err;
        });
        start();
        await line({ exitCode: exit.code, ...(exit.signal ? { signal: exit.signal } : {}) });
        return void res.end();
      }
      default:
        if (
          url.pathname.startsWith(`${AGENT_API_PREFIX}/`) &&
          ['create', 'delete', 'status', 'logs', 'exec', 'drain', 'reap'].includes(
            url.pathname.slice(AGENT_API_PREFIX.length + 1),
          )
        )
          throw new HttpError(405, `${req.method} is not allowed on ${url.pathname}`);
        throw new HttpError(404, `no route ${req.method} ${url.pathname}`);
    }
  }

  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch((err: unknown) => {
      const status = err instanceof HttpError ? err.status : 500;
      const message = err instanceof Error ? err.message : String(err);
      if (status >= 500) log.error({ err, path: req.url }, 'agent request failed');
      if (res.headersSent) return void res.destroy();
      sendJson(res, status, { success: false, message });
    });
  };
  const server = tls ? createHttpsServer(tls.httpsOptions(), onRequest) : createHttpServer(onRequest);
  if (tls) tls.serveHttps(server as import('node:https').Server);
  else log.warn('serving plain HTTP (--insecure-plain-http): the agent token travels in clear');
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? DEFAULT_AGENT_PORT, opts.host ?? '0.0.0.0', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
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
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        await agent.shutdown();
        runtime.close?.();
        tls?.close();
        clearInterval(tokenTimer);
        server.closeAllConnections();
        await closed;
        log.info('sandbox agent stopped');
      })();
      return closing;
    },
  };
}
