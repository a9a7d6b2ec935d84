/**
 * CPU per component of the local stack, including what exits: each component runs in a cgroup
 * of its own (`<hierarchy>/durable-operators/<stack id>/<component>`), joined right after spawn,
 * so everything it forks — containerd's shims and runc, the agents' `ip`/nft helpers, a short
 * script — is counted in the cgroup's usage even after it has exited, which sampling
 * /proc/<pid>/stat of the live processes never sees. cgroup v1's `cpuacct` hierarchy where one is
 * mounted (cpuacct.usage, ns), else the unified hierarchy's cpu.stat `usage_usec` (v2 counts it
 * without the cpu controller). Best effort: without cgroupfs or root, the stack runs unaccounted
 * and says why once.
 *
 * The sandboxes' containers are not in a component's figure: runc puts each in the absolute
 * cgroup the agent names (`/fast-sandbox/<id>`), outside this tree — their CPU is the sandbox's.
 * The process runtime's sandboxes are the agent's children and stay in its cgroup.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** Names the stack's cgroup directory to every process started under the stack (as DO_STACK_LEDGER does the ledger). */
export const CPU_ACCOUNTING_ENV = 'DO_STACK_CGROUP';

/** The directory under the hierarchy's root that holds every stack's cgroups. */
const PARENT = 'durable-operators';

export interface CpuHierarchy {
  version: 1 | 2;
  /** Where the hierarchy is mounted, e.g. /sys/fs/cgroup/cpuacct (v1) or /sys/fs/cgroup (v2). */
  mountPoint: string;
}

/**
 * The hierarchy that accounts CPU, from a /proc/self/mountinfo text: a v1 hierarchy carrying the
 * `cpuacct` controller (alone or with `cpu`) first — where one is mounted, the controller is not
 * v2's — else a cgroup2 mount; else the reason there is none.
 */
export function cpuHierarchyOf(mountinfo: string): CpuHierarchy | { reason: string } {
  let v2: string | undefined;
  for (const line of mountinfo.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const mountPoint = unescapeMount(left.split(' ')[4] ?? '');
    const [fstype, , superOptions = ''] = right.split(' ');
    if (fstype === 'cgroup' && superOptions.split(',').includes('cpuacct')) return { version: 1, mountPoint };
    if (fstype === 'cgroup2' && v2 === undefined) v2 = mountPoint;
  }
  return v2 !== undefined
    ? { version: 2, mountPoint: v2 }
    : { reason: 'no cgroup filesystem with CPU accounting is mounted' };
}

function unescapeMount(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

/** A component's name as a cgroup directory name. */
export function cgroupName(component: string): string {
  return component.replace(/[^A-Za-z0-9._-]/g, '-').replace(/^\.+/, '') || 'unnamed';
}

/** CPU-ms per component: cumulative at a moment, or a difference of two such. */
export type CpuByComponent = Record<string, number>;

export class CpuAccounting {
  private constructor(
    /** `<mount>/durable-operators/<stack id>`: one directory per component below it. */
    readonly dir: string,
    readonly version: 1 | 2,
  ) {}

  /**
   * The accounting of the stack whose state is in `stateDir` (its id: the directory's name and a
   * hash of its path, so a rerun finds what a crashed run left): what that left is removed, the
   * directory made. `unavailable` says why there is none (no cgroupfs, not root).
   */
  static forStack(stateDir: string, mountinfo = readMountinfo()): CpuAccounting | { unavailable: string } {
    const hierarchy = cpuHierarchyOf(mountinfo);
    if ('reason' in hierarchy) return { unavailable: hierarchy.reason };
    const id = `${cgroupName(path.basename(stateDir))}-${createHash('sha256').update(path.resolve(stateDir)).digest('hex').slice(0, 8)}`;
    const dir = path.join(hierarchy.mountPoint, PARENT, id);
    try {
      removeCgroupTree(dir, { evict: true }); // an earlier run's, its processes reaped by now
      mkdirSync(dir, { recursive: true });
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      return {
        unavailable: `cannot create ${dir}: ${e.code ?? e.message}${e.code === 'EACCES' || e.code === 'EROFS' ? ' (not root?)' : ''}`,
      };
    }
    return new CpuAccounting(dir, hierarchy.version);
  }

  /** The accounting a stack made (its `dir`), from another process (`version` matters to read() only). */
  static open(dir: string, version: 1 | 2): CpuAccounting {
    return new CpuAccounting(dir, version);
  }

  /** Moves `pid` (the whole process, and what it forks from now on) into `component`'s cgroup. */
  join(component: string, pid: number): void {
    joinCgroup(this.dir, component, pid);
  }

  /** Cumulative CPU-ms of each component since its cgroup was made. */
  read(): CpuByComponent {
    const out: CpuByComponent = {};
    if (!existsSync(this.dir)) return out;
    for (const entry of readdirSync(this.dir, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const ms = usageMs(path.join(this.dir, entry.name), this.version);
      if (ms !== undefined) out[entry.name] = ms;
    }
    return out;
  }

  /**
   * Removes the stack's cgroups once its processes are gone (a process still in one — a straggler
   * the ledger missed — is moved to the root first: rmdir refuses a cgroup with members).
   */
  async remove(): Promise<void> {
    for (let i = 0; i < 50; i++) {
      try {
        removeCgroupTree(this.dir);
        this.removeParentIfEmpty();
        return;
      } catch {
        await sleep(100); // members still exiting
      }
    }
    removeCgroupTree(this.dir, { evict: true });
    this.removeParentIfEmpty();
  }

  /** The parent shared by every stack goes too once the last stack's directory is gone. */
  private removeParentIfEmpty(): void {
    try {
      rmdirSync(path.dirname(this.dir));
    } catch {
      /* another stack's cgroups are in it */
    }
  }
}

/** Best effort: a process of the stack that cannot join runs unaccounted (said once per process). */
export function joinCgroup(stackDir: string, component: string, pid: number): void {
  try {
    const dir = path.join(stackDir, cgroupName(component));
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'cgroup.procs'), String(pid));
  } catch (err) {
    if (joinFailureSaid) return;
    joinFailureSaid = true;
    process.stderr.write(`CPU accounting: ${component} (pid ${pid}) not accounted: ${(err as Error).message}\n`);
  }
}
let joinFailureSaid = false;

/** Cumulative CPU-ms of one cgroup (its descendants included); undefined if it is gone. */
export function usageMs(cgroupDir: string, version: 1 | 2): number | undefined {
  try {
    if (version === 1) return Number(readFileSync(path.join(cgroupDir, 'cpuacct.usage'), 'utf8').trim()) / 1e6;
    const usec = /^usage_usec (\d+)$/m.exec(readFileSync(path.join(cgroupDir, 'cpu.stat'), 'utf8'))?.[1];
    return usec === undefined ? undefined : Number(usec) / 1e3;
  } catch {
    return undefined;
  }
}

/** after − before per component (a component that appeared meanwhile counts from zero). */
export function cpuDiff(before: CpuByComponent, after: CpuByComponent): CpuByComponent {
  const out: CpuByComponent = {};
  for (const [name, ms] of Object.entries(after)) out[name] = ms - (before[name] ?? 0);
  return out;
}

/** rmdir, deepest first; `evict` moves members to the hierarchy's root first. Absent: nothing to do. */
function removeCgroupTree(dir: string, opts: { evict?: boolean } = {}): void {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir, { withFileTypes: true }))
    if (entry.isDirectory()) removeCgroupTree(path.join(dir, entry.name), opts);
  if (opts.evict) {
    const root = dir.slice(0, dir.lastIndexOf(`/${PARENT}/`));
    for (const pid of readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean))
      try {
        writeFileSync(path.join(root, 'cgroup.procs'), pid);
      } catch {
        /* exited meanwhile */
      }
  }
  rmdirSync(dir);
}

function readMountinfo(): string {
  try {
    return readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return '';
  }
}
