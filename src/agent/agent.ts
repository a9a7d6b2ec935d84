/**
 * The agent's state: which sandboxes it holds, and the one place that decides whether another
 * fits. It is the authority on its capacity and ports: the check and the reservation happen in
 * one synchronous step before any await, so concurrent creates can never overfill it.
 *
 * A sandbox holds its slot and its exposed ports from the moment it is accepted until it is
 * deleted and its processes are gone; a sandbox that stopped or failed by itself keeps them
 * (and stays in the status report) until it is deleted, as in the original.
 */
import { randomUUID } from 'node:crypto';
import {
  MAX_DELETE_WAIT_MS,
  specFingerprint,
  type AgentPhase,
  type AgentSandboxSpec,
  type AgentStatusReport,
  type CreateSandboxResponse,
  type DeleteSandboxResponse,
  type ReapRequest,
  type ReapResponse,
} from './api.js';
import type { LogBuffer } from './log-buffer.js';
import { SandboxSpecError, type ExecExit, type ExecSink, type SandboxExit, type SandboxRuntime } from './runtime.js';

/** Containers made within this long before the caller's listing are spared (its latency, clock steps). */
export const REAP_MARGIN_MS = 5_000;

/** HTTP status of a refused create (no room, a port taken, an id reused for another spec). */
export const REFUSED_STATUS = 409;

export interface AgentOptions {
  agentId: string;
  nodeName: string;
  capacity: number;
  runtime: SandboxRuntime;
  /** What the status reports as the runtime (e.g. `containerd/runc`); the runtime's name by default. */
  runtimeLabel?: string;
  /** How long a deleted sandbox has between SIGTERM and SIGKILL. */
  killGraceMs: number;
  /** Where a failed delete is reported (it is also in the sandbox's status message). */
  onDeleteFailed?: (sandboxId: string, err: unknown) => void;
}

interface Held {
  spec: AgentSandboxSpec;
  fingerprint: string;
  createdAt: number;
  phase: AgentPhase;
  message: string;
  reason?: string;
  /** The first create's answer; replays while it starts wait for it. */
  created: Promise<Answer<CreateSandboxResponse>>;
  deleting?: Promise<void>;
}

export interface Answer<T> {
  status: number;
  body: T;
}

export function exitMessage(exit: SandboxExit): string {
  if (exit.stopped) return 'stopped by the agent';
  if (exit.reason === 'OOMKilled') return 'OOMKilled: killed for going over its memory limit';
  if (exit.reason === 'EphemeralStorageExceeded')
    return 'EphemeralStorageExceeded: killed for writing more than its ephemeral-storage limit to its filesystem';
  if (exit.signal) return `killed by signal ${exit.signal}`;
  return `exited with code ${exit.code}`;
}

export class SandboxAgent {
  private readonly held = new Map<string, Held>();
  private readonly ports = new Map<number, string>();
  /** Where the agent itself listens: a sandbox exposing it would take over the agent's endpoint. */
  private readonly ownPorts = new Set<number>();
  private readonly images = new Set<string>();
  private shuttingDown = false;
  private draining = false;
  /** New at every start of the agent process (see AgentStatusReport.bootId). */
  private readonly bootId = randomUUID();

  constructor(readonly opts: AgentOptions) {}

  /** The port the agent serves on: refused to every sandbox's exposedPorts. */
  reserveOwnPort(port: number): void {
    this.ownPorts.add(port);
  }

  create(spec: AgentSandboxSpec): Promise<Answer<CreateSandboxResponse>> {
    const id = spec.sandboxId;
    const refuse = (reason: string, message: string): Promise<Answer<CreateSandboxResponse>> =>
      Promise.resolve({
        status: REFUSED_STATUS,
        body: { success: false, reason, message, sandboxId: id, createdAt: 0 },
      });
    if (this.opts.runtime.unsupported) return refuse('RuntimeUnsupported', this.opts.runtime.unsupported);
    const invalid = this.opts.runtime.validate(spec);
    if (invalid)
      return Promise.resolve({ status: 400, body: { success: false, message: invalid, sandboxId: id, createdAt: 0 } });
    const own = (spec.exposedPorts ?? []).find((p) => this.ownPorts.has(p));
    if (own !== undefined)
      return Promise.resolve({
        status: 400,
        body: {
          success: false,
          message: `sandbox.exposedPorts: port ${own} is the agent's own port; a sandbox may not expose it`,
          sandboxId: id,
          createdAt: 0,
        },
      });
    if (this.shuttingDown) return refuse('ShuttingDown', `agent ${this.opts.agentId} is shutting down`);
    if (this.draining && !this.held.has(id))
      return refuse('Draining', `agent ${this.opts.agentId} is draining: its pool is removing it`);

    // From here to the reservation: no await.
    const existing = this.held.get(id);
    if (existing) {
      if (existing.fingerprint !== specFingerprint(spec))
        return refuse('SandboxIdConflict', `sandbox ${id} already exists on this agent with another spec`);
      if (existing.deleting) return refuse('Terminating', `sandbox ${id} is being deleted`);
      return existing.created.then((a) =>
        a.body.success ? { status: 200, body: { ...a.body, message: 'already exists' } } : a,
      );
    }
    if (this.held.size >= this.opts.capacity)
      return refuse(
        'CapacityExceeded',
        `agent ${this.opts.agentId} is full: ${this.held.size} of ${this.opts.capacity} sandboxes`,
      );
    for (const p of spec.exposedPorts ?? []) {
      const user = this.ports.get(p);
      if (user !== undefined)
        return refuse('PortInUse', `port ${p} is already used by sandbox ${user} on agent ${this.opts.agentId}`);
    }
    const createdAt = Math.floor(Date.now() / 1000);
    const fingerprint = specFingerprint(spec);
    const held: Held = {
      spec,
      fingerprint,
      createdAt,
      phase: 'creating',
      message: '',
      created: undefined as unknown as Promise<Answer<CreateSandboxResponse>>,
    };
    this.held.set(id, held);
    for (const p of spec.exposedPorts ?? []) this.ports.set(p, id);
    // Reserved; now start it. The Promise constructor turns a synchronous throw (e.g. spawn refusing a NUL byte) into a rejection.
    held.created = new Promise<void>((resolve, reject) => {
      this.opts.runtime
        .start(spec, (exit) => this.exited(id, held, exit), { createdAt, fingerprint })
        .then(resolve, reject);
    }).then(
      () => {
        if (held.phase === 'creating') held.phase = 'running';
        this.images.add(spec.image);
        return { status: 200, body: { success: true, sandboxId: id, createdAt } };
      },
      (err: unknown) => {
        this.release(id, held);
        const message = err instanceof Error ? err.message : String(err);
        // The request's fault (an image that cannot be pulled, nothing to run): 400, not retried elsewhere.
        const status = err instanceof SandboxSpecError ? 400 : 500;
        return { status, body: { success: false, message, sandboxId: id, createdAt } };
      },
    );
    return held.created;
  }

  /**
   * A delete that answers once the sandbox is gone from this agent, or after `waitMs` (bounded by
   * the API's maximum), saying which.
   */
  async deleteAndWait(id: string, waitMs: number): Promise<Answer<DeleteSandboxResponse>> {
    const answer = this.delete(id);
    const held = this.held.get(id);
    if (held?.deleting) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        held.deleting,
        new Promise((r) => (timer = setTimeout(r, Math.min(waitMs, MAX_DELETE_WAIT_MS)))),
      ]);
      clearTimeout(timer);
    }
    const gone = held === undefined || this.held.get(id) !== held;
    return { status: answer.status, body: { ...answer.body, gone, ...(gone ? { message: 'gone' } : {}) } };
  }

  /** Deletes a sandbox: SIGTERM, SIGKILL after the grace period; gone from status once its processes are. */
  delete(id: string): Answer<DeleteSandboxResponse> {
    const held = this.held.get(id);
    if (!held) return { status: 200, body: { success: true, message: `sandbox ${id} is not on this agent` } };
    if (held.deleting) return { status: 200, body: { success: true, message: 'already terminating' } };
    held.deleting = this.terminate(id, held).catch((err: unknown) => {
      // Reported, never thrown (it would end the agent and every sandbox on it); the fast path
      // and the janitor send the delete again while the agent still reports the sandbox.
      held.message = `delete failed, retried on the next delete: ${(err as Error).message}`;
      held.deleting = undefined;
      this.opts.onDeleteFailed?.(id, err);
    });
    return { status: 200, body: { success: true, message: 'terminating' } };
  }

  private async terminate(id: string, held: Held): Promise<void> {
    held.phase = 'terminating';
    await held.created;
    if (!this.held.has(id)) return; // never started
    // Also for one that exited by itself: the runtime removes what it was made of.
    await this.opts.runtime.stop(id, this.opts.killGraceMs);
    this.release(id, held);
  }

  private exited(id: string, held: Held, exit: SandboxExit): void {
    held.message = exitMessage(exit);
    // One being deleted stays `terminating` until terminate() releases it: a reader between its
    // exit and its release would otherwise take the delete's SIGKILL for the sandbox's own end
    // (Failed/Stopped) instead of seeing it go (the run's AgentLostSandbox).
    if (held.phase === 'terminating') return;
    held.phase = exit.stopped || exit.code === 0 ? 'stopped' : 'failed';
    if (exit.reason && !exit.stopped) held.reason = exit.reason;
  }

  private release(id: string, held: Held): void {
    if (this.held.get(id) !== held) return;
    this.held.delete(id);
    for (const p of held.spec.exposedPorts ?? []) if (this.ports.get(p) === id) this.ports.delete(p);
    this.opts.runtime.remove(id);
  }

  /**
   * Takes back the sandboxes the runtime kept while the agent was down (containerd keeps them),
   * under their IDs, creation times and slots, before the agent serves: a restart is not a loss.
   */
  async restore(): Promise<number> {
    const adopted =
      (await this.opts.runtime.adopt?.((id, exit) => {
        const h = this.held.get(id);
        if (h) this.exited(id, h, exit);
      })) ?? [];
    for (const a of adopted) {
      const held: Held = {
        spec: a.spec,
        fingerprint: a.fingerprint,
        createdAt: a.createdAt,
        phase: 'running',
        message: '',
        created: Promise.resolve({
          status: 200,
          body: { success: true, sandboxId: a.spec.sandboxId, createdAt: a.createdAt },
        }),
      };
      this.held.set(a.spec.sandboxId, held);
      for (const p of a.spec.exposedPorts ?? []) this.ports.set(p, a.spec.sandboxId);
      if (a.spec.image) this.images.add(a.spec.image);
      if (a.exit) this.exited(a.spec.sandboxId, held, a.exit);
    }
    return adopted.length;
  }

  /**
   * Draining (the pool's scale-down): from this call on, creates of new sandboxes are refused
   * (`Draining`), so the caller can read `allocated` in the answer and know the agent stays
   * empty until it is deleted — or undrain it when it is not. Synchronous, like the create check.
   */
  drain(on: boolean): AgentStatusReport {
    this.draining = on;
    return this.status();
  }

  status(): AgentStatusReport {
    return {
      agentId: this.opts.agentId,
      nodeName: this.opts.nodeName,
      capacity: this.opts.capacity,
      allocated: this.held.size,
      draining: this.draining,
      images: [...this.images],
      runtime: this.opts.runtimeLabel ?? this.opts.runtime.name,
      ...(this.opts.runtime.unsupported ? { runtimeUnsupported: this.opts.runtime.unsupported } : {}),
      ...(this.opts.runtime.warmCounts ? { warm: this.opts.runtime.warmCounts() } : {}),
      bootId: this.bootId,
      sandboxStatuses: [...this.held.entries()].map(([sandboxId, h]) => ({
        sandboxId,
        claimUid: h.spec.claimUid ?? '',
        claimName: h.spec.claimName ?? '',
        exposedPorts: h.spec.exposedPorts ?? [],
        phase: h.phase,
        message: h.message,
        ...(h.reason ? { reason: h.reason } : {}),
        createdAt: h.createdAt,
      })),
    };
  }

  /** The sandbox's log, or undefined when the agent does not hold it. */
  logs(id: string): LogBuffer | undefined {
    return this.held.has(id) ? this.opts.runtime.logs(id) : undefined;
  }

  /** Runs a command in a sandbox this agent holds (undefined when it does not hold it). */
  exec(
    id: string,
    command: string[],
    sink: ExecSink,
    abort: AbortSignal,
    stdin?: Buffer,
  ): Promise<ExecExit> | undefined {
    return this.held.has(id) ? this.opts.runtime.exec(id, command, sink, abort, stdin) : undefined;
  }

  /**
   * Removes the containers of the namespace's agents that are gone (review N4): the caller listed
   * the agent Pods that exist `listedMsAgo` before it sent this; containers made since (less a
   * margin for the call's latency) are spared, their agent may be newer than the listing.
   */
  async reap(req: ReapRequest): Promise<ReapResponse> {
    const r = this.opts.runtime;
    if (!r.reapDeadAgents) return { removed: [], skipped: `the ${r.name} runtime leaves nothing behind a dead agent` };
    return r.reapDeadAgents(new Set(req.liveAgentUids), Date.now() - req.listedMsAgo - REAP_MARGIN_MS);
  }

  /** Refuses new creates and stops every sandbox; resolves when none runs. */
  async shutdown(): Promise<void> {
    this.shuttingDown = true;
    await Promise.allSettled([...this.held.values()].map((h) => h.created));
    await this.opts.runtime.stopAll(this.opts.killGraceMs);
  }
}
