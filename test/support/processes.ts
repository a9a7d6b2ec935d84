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
