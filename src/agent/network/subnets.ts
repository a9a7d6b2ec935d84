/**
 * `--sandbox-subnet auto`: the agent takes a /24 of 198.18.0.0/16 that no other agent on the same
 * network namespace holds. In a cluster each agent Pod has a namespace of its own and takes the
 * first; agents that share one (the local stack's, all on the node) must not hand out the same
 * addresses, so each holds a lock file per subnet in a directory of the node's tmpfs, naming its
 * pid and start time — a lock whose process is gone is free again. A restarted agent prefers the
 * subnet it had (its surviving sandboxes hold addresses of it).
 */
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { startTimeOf } from '../../infra/ledger.js';

export const SUBNET_LOCK_DIR = '/run/durable-operators/sandbox-subnets';
const CANDIDATES = Array.from({ length: 256 }, (_, i) => `198.18.${i}.0/24`);

export interface ClaimedSubnet {
  subnet: string;
  release(): void;
}

function holderAlive(lock: string): boolean {
  try {
    const [pid, start] = readFileSync(lock, 'utf8').trim().split(' ');
    return startTimeOf(Number(pid)) === start;
  } catch {
    return false;
  }
}

/**
 * The /24s of 198.18.0.0/16 some route of this namespace already uses: a dead agent's sandboxes
 * keep their addresses (and routes) until they are reaped, so its subnet is not free yet.
 */
function routedSubnets(): Set<string> {
  try {
    const out = execFileSync('ip', ['-4', '-o', 'route', 'show', 'root', '198.18.0.0/16'], { encoding: 'utf8' });
    return new Set([...out.matchAll(/^198\.18\.(\d+)\./gm)].map((m) => `198.18.${m[1]}.0/24`));
  } catch {
    return new Set();
  }
}

/** Claims a free subnet, `remembered` (a file of the agent's state) first. */
export function claimSubnet(remembered: string, lockDir = SUBNET_LOCK_DIR): ClaimedSubnet {
  mkdirSync(lockDir, { recursive: true, mode: 0o700 });
  const before = existsSync(remembered) ? readFileSync(remembered, 'utf8').trim() : undefined;
  const inUse = routedSubnets();
  const free = CANDIDATES.filter((c) => c === before || !inUse.has(c));
  const order = before && free.includes(before) ? [before, ...free.filter((c) => c !== before)] : free;
  const me = `${process.pid} ${startTimeOf(process.pid)}\n`;
  for (const subnet of order) {
    const lock = path.join(lockDir, subnet.replace('/', '_'));
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const fd = openSync(lock, 'wx', 0o600);
        writeSync(fd, me);
        closeSync(fd);
        mkdirSync(path.dirname(remembered), { recursive: true });
        writeFileSync(remembered, `${subnet}\n`);
        return {
          subnet,
          release: () => {
            if (readFileSync(lock, 'utf8') === me) rmSync(lock, { force: true });
          },
        };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        if (holderAlive(lock)) break;
        rmSync(lock, { force: true }); // its agent is gone: free
      }
    }
  }
  throw new Error(`no free sandbox subnet in 198.18.0.0/16: every /24 is held by an agent (${lockDir})`);
}
