/**
 * The process runtime: each sandbox is a local process group started from the spec's command,
 * args, env and workingDir (`detached`, so the whole group can be signalled). Stop sends SIGTERM
 * to the group, then SIGKILL after the grace period. Output goes to a bounded ring buffer.
 *
 * It isolates nothing: sandboxes share the agent's filesystem, network namespace, user and
 * resources (no CPU/memory limits; `cpu`/`memory` are recorded, not enforced; `image` is a label,
 * nothing is pulled). The environment is NOT inherited from the agent (so the agent's token does
 * not leak): a sandbox gets PATH, the spec's env, SANDBOX_ID, SANDBOX_PORTS and SANDBOX_HOST (the
 * address its exposed ports are reached at: the agent's, i.e. the Pod IP).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { AgentSandboxSpec } from './api.js';
import { DEFAULT_LOG_LIMIT_BYTES, LogBuffer } from './log-buffer.js';
import {
  SandboxNotRunningError,
  type ExecExit,
  type ExecSink,
  type RuntimeStatus,
  type SandboxExit,
  type SandboxRuntime,
} from './runtime.js';

interface Entry {
  child: ChildProcess;
  /** What commands run in it with (exec): the sandbox's own environment and directory. */
  env: Record<string, string>;
  cwd: string | undefined;
  pid: number;
  logs: LogBuffer;
  exit?: SandboxExit;
  exited: Promise<void>;
  stopping: boolean;
}

/** How long a sandbox's output may still come after its leader exited (from what it left behind). */
const PIPE_DRAIN_MS = 1000;

function signalGroup(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pid, sig);
  } catch {
    // the group is gone already
  }
}

function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class ProcessRuntime implements SandboxRuntime {
  readonly name = 'process';
  private readonly entries = new Map<string, Entry>();

  readonly unsupported?: string;

  constructor(
    private readonly opts: {
      logLimitBytes?: number;
      host?: string;
      /** The pool's runtimeType (the agent's RUNTIME_TYPE); undefined only when embedded (tests). */
      runtimeType?: string;
      /** Serve `runtimeType: container` anyway (`--allow-unisolated`: development machines without containerd). */
      allowUnisolated?: boolean;
      /** The pool's sandboxSecurityContext.capabilities: not honoured here, so every create is refused. */
      capabilities?: { add?: string[]; drop?: string[] };
    } = {},
  ) {
    if (opts.runtimeType === 'gvisor')
      this.unsupported =
        'runtimeType gvisor needs the containerd runtime with runsc; this agent runs the process runtime, which isolates nothing';
    else if (opts.capabilities?.add?.length || opts.capabilities?.drop?.length)
      this.unsupported =
        "the pool's sandboxSecurityContext.capabilities need the containerd runtime; this agent runs the process runtime, which sets no capabilities";
    // A pool asking for containers is never served without isolation unless its agent was told
    // to (review N6): the agent reports why, and its pool shows Ready=False RuntimeUnsupported.
    else if (opts.runtimeType !== undefined && !opts.allowUnisolated)
      this.unsupported =
        `runtimeType ${opts.runtimeType || 'container'} needs the containerd runtime; this agent runs the process runtime, ` +
        "which isolates nothing (sandboxes would run as the agent's user, with its files and network). Run the agent " +
        'with --runtime containerd, or pass --allow-unisolated to serve the pool without isolation (development only)';
  }

  validate(spec: AgentSandboxSpec): string | undefined {
    if (!spec.command?.length || !spec.command[0])
      return 'sandbox.command is required by the process runtime (it runs a command, not an image)';
    if (spec.cpu || spec.memory)
      return 'sandbox.cpu/memory cannot be enforced by the process runtime (it isolates nothing): use the containerd runtime';
    return undefined;
  }

  start(spec: AgentSandboxSpec, onExit: (exit: SandboxExit) => void): Promise<void> {
    const [cmd, ...rest] = spec.command!;
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
      ...spec.env,
      SANDBOX_ID: spec.sandboxId,
      SANDBOX_PORTS: (spec.exposedPorts ?? []).join(','),
      SANDBOX_HOST: this.opts.host ?? '0.0.0.0',
    };
    const child = spawn(cmd!, [...rest, ...(spec.args ?? [])], {
      cwd: spec.workingDir || undefined,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const logs = new LogBuffer(this.opts.logLimitBytes ?? DEFAULT_LOG_LIMIT_BYTES);
    child.stdout!.on('data', (c: Buffer) => logs.append(c));
    child.stderr!.on('data', (c: Buffer) => logs.append(c));
    return new Promise<void>((resolve, reject) => {
      // Kept for the child's life: an 'error' without a listener would take the agent down.
      child.on('error', (err) => {
        if (child.pid === undefined) reject(new Error(`cannot start ${cmd}: ${err.message}`));
      });
      child.once('spawn', () => {
        const pid = child.pid!;
        let resolveExited!: () => void;
        const entry: Entry = {
          child,
          env,
          cwd: spec.workingDir || undefined,
          pid,
          logs,
          stopping: false,
          exited: new Promise((r) => (resolveExited = r)),
        };
        this.entries.set(spec.sandboxId, entry);
        const finish = (code: number | null, signal: NodeJS.Signals | null) => {
          if (entry.exit) return;
          entry.exit = { code, signal, stopped: entry.stopping };
          logs.end();
          resolveExited();
          onExit(entry.exit);
        };
        child.once('exit', (code, signal) => {
          // The leader is gone: whatever it left in the group goes too (it would otherwise hold
          // the output pipes open, and outlive its sandbox).
          signalGroup(pid, 'SIGKILL');
          // 'close' (stdout/stderr drained) makes the log complete — but a process that left the
          // group (setsid, a daemon) can hold the pipes forever: the sandbox ends a moment after
          // its leader regardless, and its pipes are closed (this runtime cannot kill what left).
          const drain = setTimeout(() => {
            child.stdout?.destroy();
            child.stderr?.destroy();
            finish(code, signal);
          }, PIPE_DRAIN_MS);
          child.once('close', () => {
            clearTimeout(drain);
            finish(code, signal);
          });
        });
        resolve();
      });
    });
  }

  async stop(sandboxId: string, graceMs: number): Promise<void> {
    const e = this.entries.get(sandboxId);
    if (!e || e.exit) return;
    e.stopping = true;
    signalGroup(e.pid, 'SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const killed = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        signalGroup(e.pid, 'SIGKILL');
        resolve();
      }, graceMs);
    });
    await Promise.race([e.exited, killed]);
    clearTimeout(timer);
    await e.exited;
    // Wait for stragglers of the group (rarely any: 'close' already SIGKILLed the group).
    for (let i = 0; i < 50 && groupAlive(e.pid); i++) await new Promise((r) => setTimeout(r, 20));
  }

  status(sandboxId: string): RuntimeStatus | undefined {
    const e = this.entries.get(sandboxId);
    if (!e) return undefined;
    return { running: !e.exit, pid: e.pid, exit: e.exit };
  }

  logs(sandboxId: string): LogBuffer | undefined {
    return this.entries.get(sandboxId)?.logs;
  }

  exec(sandboxId: string, command: string[], sink: ExecSink, abort: AbortSignal, stdin?: Buffer): Promise<ExecExit> {
    const e = this.entries.get(sandboxId);
    if (!e || e.exit) throw new SandboxNotRunningError(`sandbox ${sandboxId} is not running`);
    const [cmd, ...args] = command;
    if (!cmd) throw new Error('command is empty');
    // Its own process group, so an abort (the caller left) or the sandbox's stop takes all of it.
    // No stdin: /dev/null, EOF at once.
    const child = spawn(cmd, args, {
      cwd: e.cwd,
      env: e.env,
      detached: true,
      stdio: [stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    });
    if (stdin) {
      // A command that exits without reading it all closes the pipe: EPIPE, its choice, not a failure.
      child.stdin!.on('error', () => undefined);
      child.stdin!.end(stdin);
    }
    // Pulled at the sink's pace: a slow client fills the pipe and pauses the command.
    const pump = async (from: AsyncIterable<Buffer>, to: (c: Buffer) => void | Promise<void>) => {
      for await (const c of from) await to(c);
    };
    void pump(child.stdout!, (c) => sink.stdout(c)).catch(() => child.stdout!.destroy());
    void pump(child.stderr!, (c) => sink.stderr(c)).catch(() => child.stderr!.destroy());
    let done = false;
    // Only while it runs: after it ended, its group id may be another process's.
    const kill = () => !done && child.pid !== undefined && signalGroup(child.pid, 'SIGKILL');
    abort.addEventListener('abort', kill, { once: true });
    void e.exited.then(kill); // the sandbox stopped: nothing of it may outlive it
    return new Promise<ExecExit>((resolve, reject) => {
      child.once('error', (err) => {
        done = true;
        abort.removeEventListener('abort', kill);
        reject(new Error(`cannot run ${cmd}: ${err.message}`));
      });
      child.once('close', (code, signal) => {
        done = true;
        abort.removeEventListener('abort', kill);
        resolve({ code, signal });
      });
    });
  }

  remove(sandboxId: string): void {
    const e = this.entries.get(sandboxId);
    if (e?.exit) this.entries.delete(sandboxId);
  }

  async stopAll(graceMs: number): Promise<void> {
    await Promise.all([...this.entries.keys()].map((id) => this.stop(id, graceMs)));
  }

  killAllNow(): void {
    for (const e of this.entries.values()) if (!e.exit) signalGroup(e.pid, 'SIGKILL');
  }
}
