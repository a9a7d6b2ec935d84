/**
 * The fast path's client of the agents' HTTP API (src/agent/server.ts): create, delete, status.
 * Node's fetch keeps connections to each agent alive, so a create costs one request on a warm
 * connection. The bearer token is the agent's pool's (src/fastpath/agent-credentials.ts); it is
 * never logged.
 */
import type { AgentSandboxSpec, AgentStatusReport, CreateSandboxResponse, ReapResponse } from '../agent/api.js';
import { AGENT_API_PREFIX } from '../agent/api.js';

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

export class AgentClient {
  constructor(
    /**
     * The bearer token for a call to an agent's address: one token for every agent (tests,
     * benches), or per address (the fast path: its pool's token, only for admitted agents).
     */
    private readonly tokenFor: string | ((url: string) => string | undefined),
    private readonly timeoutMs = AGENT_CALL_TIMEOUT_MS,
  ) {}

  /** One request to an agent; an agent that cannot be reached is an AgentCallError without a status. */
  private async send(url: string, route: string, signal: AbortSignal, body?: unknown): Promise<Response> {
    const token = typeof this.tokenFor === 'string' ? this.tokenFor : this.tokenFor(url);
    // Never a request (and so never a token) to an address no pool's agent Pod has.
    if (!token) throw new AgentCallError(`${url} is not an agent of any SandboxPool: not called`);
    try {
      return await fetch(`${url}${AGENT_API_PREFIX}/${route}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        body: body !== undefined ? JSON.stringify(body) : undefined,
        signal,
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code;
      throw new AgentCallError(`agent ${url} unreachable: ${cause ?? (err as Error).message}`);
    }
  }

  /** A call answered at once: bounded by the client's timeout. */
  private call(url: string, route: string, body?: unknown): Promise<Response> {
    return this.send(url, route, AbortSignal.timeout(this.timeoutMs), body);
  }

  async create(url: string, spec: AgentSandboxSpec): Promise<AgentCreateResult> {
    const res = await this.call(url, 'create', { sandbox: spec });
    const body = (await res.json().catch(() => ({}))) as Partial<CreateSandboxResponse>;
    if (res.ok && body.success) return { status: 'ok', createdAt: body.createdAt ?? 0 };
    if (res.status === 401) throw new AgentCallError(`agent ${url} refused the fast path's token (401)`, 401);
    if (res.status > 500)
      throw new AgentCallError(`agent ${url}: HTTP ${res.status} ${body.message ?? ''}`.trim(), res.status);
    return {
      status: 'refused',
      reason: body.reason ?? (res.status === 400 ? 'InvalidSpec' : 'RuntimeFailed'),
      message: body.message ?? `HTTP ${res.status}`,
      httpStatus: res.status,
    };
  }

  /** Deletes a sandbox on the agent; unknown IDs succeed. */
  async delete(url: string, sandboxId: string): Promise<void> {
    const res = await this.call(url, 'delete', { sandboxId });
    if (!res.ok) throw new AgentCallError(`agent ${url}: delete ${sandboxId}: HTTP ${res.status}`, res.status);
    await res.body?.cancel();
  }

  /**
   * A streamed call (logs, exec): no timeout once the answer starts, since it lasts as long as the
   * sandbox or the command; `abort` ends it (the caller left). Returns the open response.
   */
  private async stream(url: string, route: string, abort: AbortSignal, body?: unknown): Promise<Response> {
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
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) yield Buffer.from(chunk);
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
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      pending += Buffer.from(chunk).toString('utf8');
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
      await res.body?.cancel();
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
      await res.body?.cancel();
      throw new AgentCallError(`agent ${url}: status: HTTP ${res.status}`, res.status);
    }
    return (await res.json()) as AgentStatusReport;
  }
}
