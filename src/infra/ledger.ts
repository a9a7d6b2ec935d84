/**
 * The stack's ledger: one JSON line per process any part of a local stack started (the servers,
 * dev's roles and agents, processes a test starts), and per containerd directory, so whatever
 * ends the stack's owner, all of it can be found and killed. The file is named by
 * DO_STACK_LEDGER, so children started by other processes (dev's roles, test files in vitest's
 * forks) land in the same ledger. Each line carries the process's start time, so a pid reused
 * by something else is never killed.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';

export const LEDGER_ENV = 'DO_STACK_LEDGER';

export type LedgerEntry =
  | { name: string; pid: number; startTime: string }
  | { containerdDir: string }
  | { nodeDir: string }
  | { cgroupDir: string };

/** The start time of `pid` in clock ticks since boot (field 22 of /proc/<pid>/stat); undefined once gone. */
export function startTimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/** Adds a process just started to the ledger of the stack this process belongs to, if any. */
export function recordProcess(name: string, pid: number, file = process.env[LEDGER_ENV]): void {
  const startTime = startTimeOf(pid);
  if (!file || startTime === undefined) return;
  appendFileSync(file, `${JSON.stringify({ name, pid, startTime } satisfies LedgerEntry)}\n`);
}

/** Adds a containerd directory: its shims outlive containerd, and their containers' mounts with them. */
export function recordContainerd(file: string, containerdDir: string): void {
  appendFileSync(file, `${JSON.stringify({ containerdDir } satisfies LedgerEntry)}\n`);
}

export function readLedger(file: string): LedgerEntry[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim())
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as LedgerEntry];
      } catch {
        return []; // a line cut short by a crash mid-append
      }
    });
}

/** Adds a node directory: what its kubelet, kube-proxy and CNI added to the host (node.ts). */
export function recordNode(file: string, nodeDir: string): void {
  appendFileSync(file, `${JSON.stringify({ nodeDir } satisfies LedgerEntry)}\n`);
}

/** Adds the stack's cgroup directory (cpu-accounting.ts): removed once its processes are gone. */
export function recordCgroups(file: string, cgroupDir: string): void {
  appendFileSync(file, `${JSON.stringify({ cgroupDir } satisfies LedgerEntry)}\n`);
}
