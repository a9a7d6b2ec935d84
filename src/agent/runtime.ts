/**
 * How the agent runs a sandbox. The default is the process runtime (`process-runtime.ts`);
 * containerd or gVisor runtimes can implement the same interface later.
 */
import type { AgentSandboxSpec } from './api.js';
import type { LogBuffer } from './log-buffer.js';

/** How a sandbox ended: by itself (`code`/`signal`), or because the agent stopped it. */
export interface SandboxExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** True when the exit followed `stop` (a delete or the agent's shutdown). */
  stopped: boolean;
}

/** Where an exec's output goes, as it comes. */
export interface ExecSink {
  stdout(chunk: Buffer): void;
  stderr(chunk: Buffer): void;
}

/** How an exec ended: its exit code, or the signal that ended it. */
export interface ExecExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** The sandbox cannot run commands now (it is not running); the agent answers 409. */
export class SandboxNotRunningError extends Error {}

export interface RuntimeStatus {
  running: boolean;
  pid?: number;
  exit?: SandboxExit;
}

export interface SandboxRuntime {
  readonly name: string;
  /** Why this runtime cannot run the spec (e.g. no command), or undefined. Checked before any reservation. */
  validate(spec: AgentSandboxSpec): string | undefined;
  /** Starts the sandbox; resolves once it runs, rejects (leaving nothing behind) if it cannot start. */
  start(spec: AgentSandboxSpec, onExit: (exit: SandboxExit) => void): Promise<void>;
  /** Stops it (gracefully, then forcibly after `graceMs`); resolves when nothing of it runs. Unknown id: no-op. */
  stop(sandboxId: string, graceMs: number): Promise<void>;
  status(sandboxId: string): RuntimeStatus | undefined;
  logs(sandboxId: string): LogBuffer | undefined;
  /**
   * Runs `command` in the sandbox's environment (its env and working directory) while it runs,
   * streaming its output to `sink`; resolves with how it ended. `abort` kills it (the caller left).
   */
  exec(sandboxId: string, command: string[], sink: ExecSink, abort: AbortSignal): Promise<ExecExit>;
  /** Forgets a sandbox that has exited (its logs go with it). */
  remove(sandboxId: string): void;
  /** Stops every sandbox; resolves when none runs. */
  stopAll(graceMs: number): Promise<void>;
  /** Last resort (process `exit`): SIGKILL everything now, synchronously. */
  killAllNow(): void;
}
