/**
 * The fast path's client of the agents' HTTPS API (src/agent/server.ts): create, delete, status,
 * logs, exec, drain. Mutual TLS (src/fastpath/agent-pki.ts): the agent must present a
 * certificate chained to the agent CA and naming the pool its address was admitted for; the fast
 * path presents its own client certificate. The bearer token is the agent's pool's
 * (src/fastpath/agent-credentials.ts), sent only inside that TLS connection, and never logged.
 *
 * node:https with one keep-alive Agent per pool (Node's fetch takes no client certificate per
 * call): a create costs one request on a warm connection, and a connection made for pool A's
 * agent is never reused for pool B's. An `http://` address is never sent a request unless the
 * client was made with `insecurePlainHttp` (tests that run plain agents).
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type {
  AgentSandboxSpec,
  AgentStatusReport,
  CreateSandboxResponse,
  DeleteSandboxResponse,
  ReapResponse,
} from '../agent/api.js';
import { AGENT_API_PREFIX } from '../agent/api.js';
import { agentIdentity, agentIdentityProblem, type PoolIdentity } from '../domain/agent-identity.js';
import type { TlsMaterial } from './agent-pki.js';

/** The original's controller gave each agent call 5 s. */
export const AGENT_CALL_TIMEOUT_MS = 5_000;

export class AgentCallError extends Error {
  constructor(
    message: string,
    /** HTTP status, or undefined when the agent could not be reached. */
    readonly status?: number,
  ) {
    super(message);
  }
}

export type AgentCreateResult =
  | { status: 'ok'; createdAt: number }
  /** The agent refused it (409): CapacityExceeded, PortInUse, SandboxIdConflict, Terminating, ShuttingDown, Draining; or 400/500. */
  | { status: 'refused'; reason: string; message: string; httpStatus: number };

/** One event of an exec on an agent. */
export type AgentExecEvent = { stdout: Buffer } | { stderr: Buffer } | { exitCode: number | null; signal?: string };

/** Who an agent address is: its pool's token, and the pool its certificate must name. */
export interface AgentTarget {
  token: string;
  pool: PoolIdentity;
}

export interface AgentClientOptions {
  /** The fast path's client certificate, key and the agent CA (for the window of `now`). */
  tls?: (now: number) => Promise<TlsMaterial>;
  /** Send requests (and the token) to `http://` agents in clear: tests with plain agents only. */
  insecurePlainHttp?: boolean;
  timeoutMs?: number;
}

/** An agent's answer: its status, and its body (read once). */
export interface AgentResponse {
  status: number;
  ok: boolean;
  json(): Promise<unknown>;
  body: AsyncIterable<Buffer>;
  /** Discards the rest of the body (the connection is kept for the next call). */
  discard(): void;
}

function answerOf(res: IncomingMessage): AgentResponse {
  const status = res.statusCode ?? 0;
  return {
    status,
    ok: status >= 200 && status < 300,
    async json() {
      const chunks: Buffer[] = [];
      for await (const c of res as AsyncIterable<Buffer>) chunks.push(c);
      return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
    },
    body: res as AsyncIterable<Buffer>,
    discard: () => void res.resume(),
  };
}

export class AgentClient {
  private readonly timeoutMs: number;
  /** Keep-alive connections per pool (and per client certificate: a renewed one starts new ones). */
  private readonly httpsAgents = new Map<string, { agent: HttpsAgent; material: TlsMaterial }>();
  private readonly httpAgent = new HttpAgent({ keepAlive: true });

  constructor(
    /**
     * Who an agent's address is: one target for every agent (tests, benches: a token, or a token
     * and the pool), or per address (the fast path: its pool's, only for admitted agents).
     */
    private readonly targetFor: string | AgentTarget | ((url: string) => AgentTarget | undefined),
    private readonly opts: AgentClientOptions = {},
  ) {
    this.timeoutMs = opts.timeoutMs ?? AGENT_CALL_TIMEOUT_MS;
  }

  /** Closes the kept connections. */
  close(): void {
    for (const { agent } of this.httpsAgents.values()) agent.destroy();
    this.httpsAgents.clear();
    this.httpAgent.destroy();
  }

  private target(url: string): AgentTarget | { token: string; pool?: undefined } | undefined {
    const t = this.targetFor;
    return typeof t === 'string' ? { token: t } : typeof t === 'function' ? t(url) : t;
  }

  /** The pool's keep-alive HTTPS agent, verifying that the agent's certificate names the pool. */
  private async httpsAgentFor(pool: PoolIdentity): Promise<HttpsAgent> {
    if (!this.opts.tls) throw new Error('no TLS material for agent calls');
    const material = await this.opts.tls(Date.now());
    const id = agentIdentity(pool);
    const kept = this.httpsAgents.get(id);
    if (kept?.material === material) return kept.agent;
    kept?.agent.destroy();
    const agent = new HttpsAgent({
      keepAlive: true,
      ca: material.ca,
      cert: material.cert,
      key: material.key,
      rejectUnauthorized: true,
      // In place of the host name check (agents are reached by Pod IP): the pool's identity.
      checkServerIdentity: (_host, cert) => agentIdentityProblem(cert, pool),
    });
    this.httpsAgents.set(id, { agent, material });
    return agent;
  }

  /** Forgets the connections of pools not in `pools` (identities: src/domain/agent-identity.ts). */
  retainPools(pools: ReadonlySet<string>): void {
    for (const [id, { agent }] of this.httpsAgents)
      if (!pools.has(id)) {
        agent.destroy();
        this.httpsAgents.delete(id);
      }
  }

  /** One request to an agent; an agent that cannot be reached is an AgentCallError without a status. */
  private async send(url: string, route: string, signal: AbortSignal, body?: unknown): Promise<AgentResponse> {
    const target = this.target(url);
    // Never a request (and so never a token) to an address no pool's agent Pod has.
    if (!target) throw new AgentCallError(`${url} is not an agent of any SandboxPool: not called`);
    const secure = url.startsWith('https://');
    if (!secure && !(url.startsWith('http://') && this.opts.insecurePlainHttp))
      throw new AgentCallError(`${url}: agents are called over HTTPS only: not called`);
    if (secure && !target.pool)
      throw new AgentCallError(`${url}: no pool to verify the agent's certificate against: not called`);
    const data = body !== undefined ? JSON.stringify(body) : undefined;
    try {
      const agent = secure ? await this.httpsAgentFor(target.pool!) : this.httpAgent;
      const res = await new Promise<IncomingMessage>((resolve, reject) => {
        const req = (secure ? httpsRequest : httpRequest)(
          `${url}${AGENT_API_PREFIX}/${route}`,
          {
            method: data === undefined ? 'GET' : 'POST',
            agent,
            signal,
            headers: {
              authorization: `Bearer ${target.token}`,
              ...(data !== undefined
                ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) }
                : {}),
            },
          },
          resolve,
        );
        req.once('error', reject);
        req.end(data);
      });
      return answerOf(res);
    } catch (err) {
      const code = (err as { code?: string }).code;
      throw new AgentCallError(`agent ${url} unreachable: ${(err as Error).message}${code ? ` (${code})` : ''}`);
    }
  }

  /** A call answered at once: bounded by the client's timeout. */
  private call(url: string, route: string, body?: unknown): Promise<AgentResponse> {
    return this.send(url, route, AbortSignal.timeout(this.timeoutMs), body);
  }

  async create(url: string, spec: AgentSandboxSpec): Promise<AgentCreateResult> {
    const res = await this.call(url, 'create', { sandbox: spec });
    const body = (await res.json().catch(() => ({}))) as Partial<CreateSandboxResponse>;
    if (res.ok && body.success) return { status: 'ok', createdAt: body.createdAt ?? 0 };
    if (res.status === 401) throw new AgentCallError(`agent ${url} refused the fast path's credentials (401)`, 401);
    if (res.status > 500)
      throw new AgentCallError(`agent ${url}: HTTP ${res.status} ${body.message ?? ''}`.trim(), res.status);
    return {
      status: 'refused',
      reason: body.reason ?? (res.status === 400 ? 'InvalidSpec' : 'RuntimeFailed'),
      message: body.message ?? `HTTP ${res.status}`,
      httpStatus: res.status,
    };
  }

  /**
   * Deletes a sandbox on the agent (unknown IDs succeed). With `waitMs` the agent answers once the
   * sandbox is gone or the wait ends: true when gone, false when still terminating; undefined
   * without `waitMs`, or from an agent that does not wait (it answered at once).
   */
  async delete(url: string, sandboxId: string, waitMs?: number): Promise<boolean | undefined> {
    const res = await this.call(url, 'delete', { sandboxId, waitMs }); // an undefined waitMs is not sent
    if (!res.ok) {
      res.discard();
      throw new AgentCallError(`agent ${url}: delete ${sandboxId}: HTTP ${res.status}`, res.status);
    }
    if (waitMs === undefined) {
      res.discard();
      return undefined;
    }
    return ((await res.json()) as DeleteSandboxResponse).gone;
  }

  /**
   * A streamed call (logs, exec): no timeout once the answer starts, since it lasts as long as the
   * sandbox or the command; `abort` ends it (the caller left). Returns the open response.
   */
  private async stream(url: string, route: string, abort: AbortSignal, body?: unknown): Promise<AgentResponse> {
    const res = await this.send(url, route, abort, body);
    if (!res.ok) {
      const answer = (await res.json().catch(() => ({}))) as { message?: string };
      throw new AgentCallError(`agent ${url}: ${answer.message ?? `HTTP ${res.status}`}`, res.status);
    }
    return res;
  }

  /** The sandbox's output (and, with `follow`, what comes until it ends), as raw chunks. */
  async *logs(url: string, sandboxId: string, follow: boolean, abort: AbortSignal): AsyncGenerator<Buffer> {
    const q = new URLSearchParams({ sandboxId, follow: String(follow) });
    const res = await this.stream(url, `logs?${q}`, abort);
    for await (const chunk of res.body) yield chunk;
  }

  /** Runs a command in the sandbox, `stdin` its input (none: EOF at once): its output as it comes, then how it ended. */
  async *exec(
    url: string,
    sandboxId: string,
    command: string[],
    abort: AbortSignal,
    stdin?: Buffer,
  ): AsyncGenerator<AgentExecEvent> {
    const res = await this.stream(url, 'exec', abort, {
      sandboxId,
      command,
      ...(stdin?.length ? { stdin: stdin.toString('base64') } : {}),
    });
    let pending = '';
    for await (const chunk of res.body) {
      pending += chunk.toString('utf8');
      let nl: number;
      while ((nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        if (!line.trim()) continue;
        const o = JSON.parse(line) as { stdout?: string; stderr?: string; exitCode?: number | null; signal?: string };
        if (o.stdout !== undefined) yield { stdout: Buffer.from(o.stdout, 'base64') };
        else if (o.stderr !== undefined) yield { stderr: Buffer.from(o.stderr, 'base64') };
        else yield { exitCode: o.exitCode ?? null, ...(o.signal ? { signal: o.signal } : {}) };
      }
    }
  }

  /** Drains (`on`) or undrains the agent; its status report right after the change. */
  async drain(url: string, on: boolean): Promise<AgentStatusReport> {
    const res = await this.call(url, 'drain', { drain: on });
    if (!res.ok) {
      res.discard();
      throw new AgentCallError(`agent ${url}: drain: HTTP ${res.status}`, res.status);
    }
    return (await res.json()) as AgentStatusReport;
  }

  /** Asks the agent to remove its node's containers of its namespace's agents not in `liveAgentUids`. */
  async reap(url: string, liveAgentUids: string[], listedMsAgo: number): Promise<ReapResponse> {
    const res = await this.call(url, 'reap', { liveAgentUids, listedMsAgo: Math.max(0, Math.round(listedMsAgo)) });
    if (!res.ok) {
      const body = (await res.json().catch(() => ({}))) as { message?: string };
      throw new AgentCallError(`agent ${url}: reap: ${body.message ?? `HTTP ${res.status}`}`, res.status);
    }
    return (await res.json()) as ReapResponse;
  }

  async status(url: string): Promise<AgentStatusReport> {
    const res = await this.call(url, 'status');
    if (!res.ok) {
      res.discard();
      throw new AgentCallError(`agent ${url}: status: HTTP ${res.status}`, res.status);
    }
    return (await res.json()) as AgentStatusReport;
  }
}
