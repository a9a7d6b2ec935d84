/**
 * Supervised child processes for the local stack: each runs in its own process group (so a
 * stop takes its children with it), logs to a file, is written to the stack's ledger so
 * nothing of it outlives the stack (see lifeline.ts), and joins its component's cgroup when the
 * stack accounts CPU (see cpu-accounting.ts).
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, readdirSync } from 'node:fs';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { CPU_ACCOUNTING_ENV, joinCgroup } from './cpu-accounting.js';
import { recordProcess } from './ledger.js';

export interface ProcessSpec {
  name: string;
  command: string;
  args: string[];
  logFile: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** The cgroup its CPU is accounted in (default `name`): processes of one kind (the agents) share one. */
  component?: string;
}

export class ManagedProcess {
  readonly exited: Promise<number | null>;
  private exitCode: number | null | undefined;

  private constructor(
    readonly spec: ProcessSpec,
    readonly pid: number,
    exited: Promise<number | null>,
  ) {
    this.exited = exited.then((code) => {
      this.exitCode = code;
      return code;
    });
  }

  static start(spec: ProcessSpec): ManagedProcess {
    const fd = openSync(spec.logFile, 'a');
    try {
      const child = spawn(spec.command, spec.args, {
        cwd: spec.cwd,
        env: spec.env ?? process.env,
        stdio: ['ignore', fd, fd],
        detached: true, // own process group: stop() signals the whole group
      });
      if (child.pid === undefined) throw new Error(`failed to spawn ${spec.command}`);
      const exited = new Promise<number | null>((resolve) => {
        child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : null)));
        child.once('error', () => resolve(-1));
      });
      child.unref();
      recordProcess(spec.name, child.pid);
      // Before it can have forked much (a server forks on requests, after it is ready).
      const cgroups = process.env[CPU_ACCOUNTING_ENV];
      if (cgroups) joinCgroup(cgroups, spec.component ?? spec.name, child.pid);
      return new ManagedProcess(spec, child.pid, exited);
    } finally {
      closeSync(fd);
    }
  }

  get running(): boolean {
    return this.exitCode === undefined && isAlive(this.pid);
  }

  /** The last lines of the process log, for error messages. */
  logTail(lines = 15): string {
    if (!existsSync(this.spec.logFile)) return '';
    return readFileSync(this.spec.logFile, 'utf8').split('\n').slice(-lines).join('\n');
  }

  /** SIGTERM the group, then SIGKILL after the grace period. Resolves when the process is gone. */
  async stop(graceMs = 10_000): Promise<void> {
    if (!this.running) return;
    // The child is unref'd: without this, a caller with nothing else pending (dev shutting down)
    // would see Node exit in the middle of the wait, before the child is gone.
    const keepAlive = setInterval(() => {}, 1 << 30);
    try {
      signalGroup(this.pid, 'SIGTERM');
      const done = await Promise.race([this.exited.then(() => true), sleep(graceMs).then(() => false)]);
      if (!done) {
        signalGroup(this.pid, 'SIGKILL');
        await this.exited;
      }
      // The leader may exit before its group; make sure nothing of the group survives.
      signalGroup(this.pid, 'SIGKILL');
    } finally {
      clearInterval(keepAlive);
    }
  }

  /** Immediate SIGKILL of the whole group (crash simulation). */
  async kill(): Promise<void> {
    const keepAlive = setInterval(() => {}, 1 << 30);
    signalGroup(this.pid, 'SIGKILL');
    await this.exited.finally(() => clearInterval(keepAlive));
  }
}

export function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      /* already gone */
    }
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    // A zombie still answers kill(0); /proc tells the truth on Linux.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z /.test(stat);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Polls `check` until it returns true; fails early (with the log tail) if the process exits. */
export async function waitUntilReady(
  what: string,
  check: () => Promise<boolean>,
  opts: { timeoutMs: number; process?: ManagedProcess; intervalMs?: number },
): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (opts.process && !opts.process.running) {
      throw new Error(
        `${what} exited before becoming ready. Log tail (${opts.process.spec.logFile}):\n${opts.process.logTail()}`,
      );
    }
    try {
      if (await check()) return;
    } catch (err) {
      lastError = err;
    }
    await sleep(opts.intervalMs ?? 200);
  }
  const tail = opts.process ? `\nLog tail (${opts.process.spec.logFile}):\n${opts.process.logTail()}` : '';
  throw new Error(`${what} not ready after ${opts.timeoutMs} ms (last error: ${String(lastError)})${tail}`);
}

/**
 * A free port for a server the stack starts later, chosen below the kernel's ephemeral range:
 * a port the kernel handed out (`listen(0)`) is also one it hands to outgoing connections, so
 * between the choice and the server's bind another process's client could take it (an etcd
 * start failed so, "bind: address already in use", with four test stacks starting at once).
 */
export async function getFreePort(): Promise<number> {
  const ephemeralLow = ephemeralRangeStart();
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = FIRST_CHOSEN_PORT + Math.floor(Math.random() * (ephemeralLow - FIRST_CHOSEN_PORT));
    if (await isPortFree(port)) return port;
  }
  return kernelChosenPort();
}

/** Where chosen ports start: above the well-known and common registered service ports. */
const FIRST_CHOSEN_PORT = 10_000;

/** The first port of the kernel's ephemeral range (net.ipv4.ip_local_port_range; Linux's default 32768). */
export function ephemeralRangeStart(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > FIRST_CHOSEN_PORT + 1_000 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

function kernelChosenPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/**
 * The process groups of every descendant of `pid` (detached children, such as an agent's
 * sandboxes, each run in their own group), read from /proc. Killing `pid`'s group alone does not
 * reach them.
 */
export function descendantGroups(pid: number): number[] {
  const procs: { pid: number; ppid: number; pgrp: number }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [, ppid, pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      procs.push({ pid: Number(entry), ppid: Number(ppid), pgrp: Number(pgrp) });
    } catch {
      // exited meanwhile
    }
  }
  const tree = new Set([pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const p of procs)
      if (tree.has(p.ppid) && !tree.has(p.pid)) {
        tree.add(p.pid);
        grew = true;
      }
  }
  return [...new Set(procs.filter((p) => tree.has(p.pid) && p.pid !== pid).map((p) => p.pgrp))];
}

/** SIGKILL of `pid`'s group and of every group its descendants run in. Synchronous. */
export function killTree(pid: number): void {
  const groups = descendantGroups(pid);
  signalGroup(pid, 'SIGKILL');
  for (const g of groups) signalGroup(g, 'SIGKILL');
}
