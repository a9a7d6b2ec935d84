/** What the tests ask Linux about processes: which live (non-zombie) ones are in given process groups. */
import { readFileSync, readdirSync } from 'node:fs';

/** Every live process whose process group is one of `groups` (children included), read from /proc. */
export function processesInGroups(groups: readonly number[]): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (state !== 'Z' && groups.includes(Number(pgrp))) found.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return found;
}

/**
 * Every live process of the stack under `stateDir`: those whose command line or environment
 * names it (the servers' data and cert dirs, the roles' KUBECONFIG and ledger, the containerd
 * shims' socket), never the caller. Confined to that directory, so other stacks on the machine
 * never count.
 */
export function processesOfStack(stateDir: string): { pid: number; cmdline: string }[] {
  const found: { pid: number; cmdline: string }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      const environ = readFileSync(`/proc/${entry}/environ`, 'utf8');
      if (cmdline.includes(stateDir) || environ.includes(stateDir)) found.push({ pid: Number(entry), cmdline });
    } catch {
      // exited meanwhile, or not ours to read
    }
  }
  return found;
}
