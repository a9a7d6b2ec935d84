/**
 * Nothing outlives the stack. The process that starts a local stack (dev, the test harness)
 * holds a pipe to a small watchdog process in its own session; whatever ends that owner — Ctrl-C,
 * SIGTERM, SIGKILL, a crash — the kernel closes the pipe, and the watchdog kills everything in
 * the stack's ledger (ledger.ts) and cleans up its containerd and its cgroups. Node has no PR_SET_PDEATHSIG, and
 * that would reach direct children only, not the agents' sandboxes or the containerd shims. The
 * next start reaps the ledger again, for what a lost watchdog left behind.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { cleanupContainerd } from './containerd.js';
import { CpuAccounting } from './cpu-accounting.js';
import { readLedger, startTimeOf } from './ledger.js';
import { cleanupNode } from './node.js';
import { isAlive, killTree } from './process.js';

/**
 * Kills every process of the ledger still running (with its descendants' groups) and cleans up
 * its containerd directories (shims, containers, mounts). Returns the names of the processes it killed.
 */
export async function reapLedger(file: string): Promise<string[]> {
  const entries = readLedger(file);
  const killed: { name: string; pid: number }[] = [];
  for (const e of entries) {
    if (!('pid' in e) || startTimeOf(e.pid) !== e.startTime) continue; // gone, or the pid is someone else's now
    killTree(e.pid);
    killed.push(e);
  }
  for (let i = 0; i < 50 && killed.some((k) => isAlive(k.pid)); i++) await sleep(100);
  for (const e of entries) if ('containerdDir' in e) await cleanupContainerd(e.containerdDir);
  // After containerd's: the Pods' containers are gone, their mounts and network namespaces may go.
  for (const e of entries) if ('nodeDir' in e) await cleanupNode(e.nodeDir);
  for (const e of entries) if ('cgroupDir' in e) await CpuAccounting.open(e.cgroupDir, 1).remove();
  return killed.map((k) => k.name);
}

const here = path.dirname(fileURLToPath(import.meta.url));

export class Lifeline {
  private constructor(private readonly watchdog: ChildProcess) {}

  /** Starts the watchdog of `ledgerFile`; it acts once this process ends or close() is called. */
  static start(ledgerFile: string, logFile: string): Lifeline {
    // From the sources (dev, tests) the watchdog is TypeScript too: run it under tsx, as dev runs.
    const fromSources = import.meta.url.endsWith('.ts');
    const script = path.join(here, `lifeline-watchdog.${fromSources ? 'ts' : 'js'}`);
    const fd = openSync(logFile, 'a');
    try {
      const watchdog = spawn(process.execPath, [...(fromSources ? ['--import', 'tsx'] : []), script, ledgerFile], {
        cwd: path.resolve(here, '../..'), // where `tsx` resolves
        stdio: ['pipe', fd, fd],
        detached: true, // its own session: Ctrl-C in the owner's terminal does not reach it
      });
      watchdog.stdin!.on('error', () => {}); // the watchdog gone first: nothing to tell it
      // Neither the process nor the pipe keeps the owner's event loop alive.
      watchdog.unref();
      (watchdog.stdin as unknown as { unref(): void }).unref();
      return new Lifeline(watchdog);
    } finally {
      closeSync(fd);
    }
  }

  /** Ends the watchdog (after a clean stop it finds nothing left to kill). */
  async close(): Promise<void> {
    if (this.watchdog.exitCode !== null || this.watchdog.signalCode !== null) return;
    const exited = new Promise((resolve) => this.watchdog.once('exit', resolve));
    const keepAlive = setInterval(() => {}, 1 << 30); // the watchdog is unref'd
    try {
      this.watchdog.stdin!.end();
      // An unref'd timer: once the watchdog has exited, nothing may keep this process alive for the rest of it.
      await Promise.race([exited, sleep(30_000, undefined, { ref: false })]);
    } finally {
      clearInterval(keepAlive);
    }
  }
}
