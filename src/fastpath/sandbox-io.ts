/**
 * A sandbox's output and commands run in it, through the fast path (sandbox_io.proto, and the
 * HTTP routes `…/sandboxes/{name}/logs` and `…/exec`). The caller must own the sandbox (the same
 * tenant check as GetSandbox: another tenant's sandbox is NOT_FOUND); the call goes to the agent
 * that runs it, with the fast path's agent token, and streams back as it comes.
 */
import { MAX_EXEC_STDIN_BYTES } from '../agent/api.js';
import { AgentCallError, type AgentClient, type AgentExecEvent } from './agent-client.js';
import type { SandboxRegistry } from './registry.js';
import { FastPathError, type FastPathService } from './service.js';

export interface SandboxIoRequest {
  sandboxName?: string;
  namespace?: string;
}

/** An agent's refusal as the fast path's status: the caller's mistake, or the agent out of reach. */
function fromAgent(err: unknown): unknown {
  if (!(err instanceof AgentCallError) || (err as { name?: string }).name === 'AbortError') return err;
  if (err.status === 400) return new FastPathError('InvalidArgument', err.message);
  if (err.status === 404 || err.status === 409) return new FastPathError('FailedPrecondition', err.message);
  return new FastPathError('Unavailable', err.message);
}

async function* guarded<T>(it: AsyncIterable<T>): AsyncGenerator<T> {
  try {
    yield* it;
  } catch (err) {
    throw fromAgent(err);
  }
}

export class SandboxIo {
  constructor(private readonly opts: { service: FastPathService; registry: SandboxRegistry; agents: AgentClient }) {}

  /** The agent and the sandbox ID of the caller's sandbox, or why there is none to reach. */
  private async locate(req: SandboxIoRequest, tenant: string): Promise<{ url: string; sandboxId: string }> {
    const sb = await this.opts.service.ownSandbox({ sandboxName: req.sandboxName, namespace: req.namespace }, tenant);
    const namespace = sb.metadata!.namespace!;
    const pod = sb.status?.assignedPod;
    const sandboxId = sb.status?.sandboxID;
    if (!pod || !sandboxId)
      throw new FastPathError(
        'FailedPrecondition',
        `Sandbox ${sb.metadata!.name} is not on an agent (phase ${sb.status?.phase ?? 'Pending'})`,
      );
    const agent = this.opts.registry.agent(namespace, pod);
    if (!agent)
      throw new FastPathError('Unavailable', `agent ${pod} of Sandbox ${sb.metadata!.name} is not reachable now`);
    return { url: agent.url, sandboxId };
  }

  async logs(
    req: SandboxIoRequest & { follow?: boolean },
    tenant: string,
    abort: AbortSignal,
  ): Promise<AsyncIterable<Buffer>> {
    const { url, sandboxId } = await this.locate(req, tenant);
    return guarded(this.opts.agents.logs(url, sandboxId, req.follow ?? false, abort));
  }

  /** `stdin` is what the command reads, then EOF (empty or none: EOF at once), at most MAX_EXEC_STDIN_BYTES. */
  async exec(
    req: SandboxIoRequest & { command?: string[]; stdin?: Buffer },
    tenant: string,
    abort: AbortSignal,
  ): Promise<AsyncIterable<AgentExecEvent>> {
    if (!req.command?.length || !req.command[0]) throw new FastPathError('InvalidArgument', 'command is required');
    // Refused here, before the agent is called; the agent holds the same bound.
    if (req.stdin && req.stdin.length > MAX_EXEC_STDIN_BYTES)
      throw new FastPathError(
        'InvalidArgument',
        `stdin is ${req.stdin.length} bytes; at most ${MAX_EXEC_STDIN_BYTES} are accepted`,
      );
    const { url, sandboxId } = await this.locate(req, tenant);
    return guarded(this.opts.agents.exec(url, sandboxId, req.command, abort, req.stdin));
  }
}
