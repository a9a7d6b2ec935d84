/**
 * How the agent runs a sandbox: as a containerd container (`containerd/runtime.ts`, runc or
 * gVisor's runsc), or, by explicit choice on machines without containerd, as a plain process
 * group (`process-runtime.ts`, which isolates nothing).
 */
import type { AgentSandboxSpec, ReapResponse } from './api.js';
import type { LogBuffer } from './log-buffer.js';
import type { RuntimeEndReason } from '../domain/sandbox.js';

/** How a sandbox ended: by itself (`code`/`signal`), or because the agent stopped it. */
export interface SandboxExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** True when the exit followed `stop` (a delete or the agent's shutdown). */
  stopped: boolean;
  /** Why it ended when the runtime knows more than the code (RUNTIME_END_REASONS says which). */
  reason?: RuntimeEndReason;
}

/** Where an exec's output goes, as it comes; the runtime reads no more until a returned promise settles. */
export interface ExecSink {
  stdout(chunk: Buffer): void | Promise<void>;
  stderr(chunk: Buffer): void | Promise<void>;
}

/** How an exec ended: its exit code, or the signal that ended it. */
export interface ExecExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** The sandbox cannot run commands now (it is not running); the agent answers 409. */
export class SandboxNotRunningError extends Error {}

/**
 * The request cannot run as asked (an image that cannot be pulled, an image with nothing to run,
 * a user the runtime cannot resolve): the caller's to fix, so the agent answers 400, not 500.
 */
export class SandboxSpecError extends Error {}

/** What the agent knows of a sandbox beyond its spec. */
export interface StartedAs {
  createdAt: number;
  /** `specFingerprint` of its spec: a replayed create must match it. */
  fingerprint: string;
}

/** A sandbox the runtime found still there when the agent started (containerd keeps them across agent restarts). */
export interface AdoptedSandbox extends StartedAs {
  /** Its spec as far as the runtime kept it (no env, command or limits: only what status and placement need). */
  spec: AgentSandboxSpec;
  exit?: SandboxExit;
}

export interface RuntimeStatus {
  running: boolean;
  pid?: number;
  exit?: SandboxExit;
}

export interface SandboxRuntime {
  /** `containerd` or `process`: reported in the agent's status and on each Sandbox. */
  readonly name: string;
  /** Why this runtime cannot run what the pool asks for (e.g. gvisor without runsc): every create is refused with it. */
  readonly unsupported?: string;
  /**
   * The sandboxes this runtime still holds from an earlier run of the agent, reattached (logs,
   * exit watch), so a restarted agent keeps serving them. Called once, before the agent serves.
   */
  /** Warm containers waiting, by image (runtimes that keep them). */
  warmCounts?(): Record<string, number>;
  adopt?(onExit: (sandboxId: string, exit: SandboxExit) => void): Promise<AdoptedSandbox[]>;
  /** Why this runtime cannot run the spec (e.g. no command), or undefined. Checked before any reservation. */
  validate(spec: AgentSandboxSpec): string | undefined;
  /**
   * Starts the sandbox; resolves once it runs, rejects (leaving nothing behind) if it cannot
   * start. `held` is what the agent keeps of it (kept with the sandbox where the runtime can, for
   * `adopt`).
   */
  start(spec: AgentSandboxSpec, onExit: (exit: SandboxExit) => void, held: StartedAs): Promise<void>;
  /**
   * Stops it (gracefully, then forcibly after `graceMs`) and removes what it was made of;
   * resolves when nothing of it runs. Also for a sandbox that exited by itself. Unknown id: no-op.
   */
  stop(sandboxId: string, graceMs: number): Promise<void>;
  status(sandboxId: string): RuntimeStatus | undefined;
  logs(sandboxId: string): LogBuffer | undefined;
  /**
   * Runs `command` in the sandbox's environment (its env and working directory) while it runs,
   * streaming its output to `sink`; resolves with how it ended. `abort` kills it (the caller left).
   * The command reads `stdin` and then EOF; without it, EOF at once. Input it leaves unread is
   * dropped when it exits (as in a shell pipeline), not an error.
   */
  exec(sandboxId: string, command: string[], sink: ExecSink, abort: AbortSignal, stdin?: Buffer): Promise<ExecExit>;
  /** Forgets a sandbox that has exited (its logs go with it). */
  remove(sandboxId: string): void;
  /** Stops every sandbox; resolves when none runs. */
  stopAll(graceMs: number): Promise<void>;
  /**
   * Removes what agents that are gone left on this node (their Pod UIDs are not in
   * `liveAgentUids`; only what was made before `createdBefore`, ms since the epoch). Runtimes whose
   * sandboxes die with their agent have none.
   */
  reapDeadAgents?(liveAgentUids: ReadonlySet<string>, createdBefore: number): Promise<ReapResponse>;
  /** Lets go of what the runtime holds open (connections), after `stopAll`. */
  close?(): void;
  /** Last resort (process `exit`): SIGKILL everything now, synchronously. */
  killAllNow(): void;
}
