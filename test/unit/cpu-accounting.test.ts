/**
 * The stack's CPU accounting (src/infra/cpu-accounting.ts) on the real cgroupfs: a child that
 * burned CPU and exited is still in its component's figure, where sampling the live processes'
 * /proc/<pid>/stat (what the benches did) misses it. Where the host has no cgroupfs for us, the
 * accounting says why; on a root Linux host with /sys/fs/cgroup (this machine, CI) it must work.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, expect, it } from 'vitest';
import { CPU_ACCOUNTING_ENV, CpuAccounting, cpuDiff, cpuHierarchyOf } from '../../src/infra/cpu-accounting.js';
import { LEDGER_ENV, recordCgroups } from '../../src/infra/ledger.js';
import { reapLedger } from '../../src/infra/lifeline.js';
import { ManagedProcess, isAlive } from '../../src/infra/process.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** utime + stime of the process's own threads (fields 14, 15), in ms: what /proc sampling sees. */
function procCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const [utime, stime] = stat
      .slice(stat.lastIndexOf(')') + 2)
      .split(' ')
      .slice(11, 13)
      .map(Number);
    return ((utime! + stime!) * 1000) / 100; // USER_HZ is 100 on Linux
  } catch {
    return 0; // gone: nothing left to sample
  }
}

it('counts the CPU of a child that exited in its component, where /proc sampling of the live processes misses it', async () => {
  const stateDir = mkdtempSync(path.join(os.tmpdir(), 'cpu-accounting-'));
  cleanups.push(() => rmSync(stateDir, { recursive: true, force: true }));
  const accounting = CpuAccounting.forStack(stateDir);
  if ('unavailable' in accounting) {
    // Only where the host cannot give us cgroups: not root, or no cgroupfs.
    const mounted = 'mountPoint' in cpuHierarchyOf(readFileSync('/proc/self/mountinfo', 'utf8'));
    expect(process.getuid?.() === 0 && mounted).toBe(false);
    expect(accounting.unavailable).toMatch(/cgroup|not root/);
    return;
  }
  cleanups.push(() => accounting.remove());
  expect(accounting.dir).toContain('/durable-operators/');

  // The component: a shell that, once told, runs a Node child burning ≥ 200 ms of CPU, then idles.
  const burn =
    'const t = process.cpuUsage(); for (;;) { const u = process.cpuUsage(t); if (u.user + u.system >= 200000) break; }';
  const outer = process.env[CPU_ACCOUNTING_ENV];
  process.env[CPU_ACCOUNTING_ENV] = accounting.dir; // as the stack sets it: ManagedProcess joins the cgroup
  const proc = ManagedProcess.start({
    name: 'burner-1',
    component: 'burner',
    command: 'sh',
    args: [
      '-c',
      `while [ ! -e go ]; do sleep 0.02; done; ${JSON.stringify(process.execPath)} -e '${burn}'; touch burnt; exec sleep 60`,
    ],
    cwd: stateDir,
    logFile: path.join(stateDir, 'burner.log'),
  });
  if (outer === undefined) delete process.env[CPU_ACCOUNTING_ENV];
  else process.env[CPU_ACCOUNTING_ENV] = outer;
  cleanups.push(() => proc.stop(1000));

  const members = () =>
    readFileSync(path.join(accounting.dir, 'burner', 'cgroup.procs'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map(Number);
  expect(members()).toContain(proc.pid);
  const before = accounting.read();
  writeFileSync(path.join(stateDir, 'go'), '');
  for (let i = 0; !existsSync(path.join(stateDir, 'burnt')); i++) {
    if (i > 300) throw new Error(`the child never finished burning: ${proc.logTail()}`);
    await sleep(50);
  }
  // The child has exited: only the shell-turned-sleep is left in the cgroup.
  expect(members()).toEqual([proc.pid]);
  const used = cpuDiff(before, accounting.read());
  const sampled = members().reduce((ms, pid) => ms + procCpuMs(pid), 0);
  expect(used.burner).toBeGreaterThanOrEqual(200);
  expect(sampled).toBeLessThan(100); // the live process's own CPU: the exited child's is not there

  // Stopped, then removed: nothing of the stack's cgroups is left.
  await proc.stop(1000);
  await accounting.remove();
  expect(existsSync(accounting.dir)).toBe(false);
});

it("the lifeline's reaping of a ledger (an owner that died) kills the stack's processes and removes its cgroups", async () => {
  const stateDir = mkdtempSync(path.join(os.tmpdir(), 'cpu-accounting-'));
  cleanups.push(() => rmSync(stateDir, { recursive: true, force: true }));
  const accounting = CpuAccounting.forStack(stateDir);
  if ('unavailable' in accounting) {
    expect(accounting.unavailable).toMatch(/cgroup|not root/);
    return;
  }
  cleanups.push(() => accounting.remove());
  const ledger = path.join(stateDir, 'processes.jsonl');
  recordCgroups(ledger, accounting.dir);
  const saved = { cgroup: process.env[CPU_ACCOUNTING_ENV], ledger: process.env[LEDGER_ENV] };
  Object.assign(process.env, { [CPU_ACCOUNTING_ENV]: accounting.dir, [LEDGER_ENV]: ledger });
  const proc = ManagedProcess.start({
    name: 'idler',
    command: 'sleep',
    args: ['60'],
    logFile: path.join(stateDir, 'idler.log'),
  });
  for (const [name, value] of [
    [CPU_ACCOUNTING_ENV, saved.cgroup],
    [LEDGER_ENV, saved.ledger],
  ] as const)
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  cleanups.push(() => proc.kill());
  expect(existsSync(path.join(accounting.dir, 'idler'))).toBe(true);

  expect(await reapLedger(ledger)).toEqual(['idler']);
  expect(isAlive(proc.pid)).toBe(false);
  expect(existsSync(accounting.dir)).toBe(false);
});

it('finds the hierarchy that accounts CPU in mountinfo: v1 cpuacct first, else v2, else says none', () => {
  const v1 = [
    '30 25 0:26 / /sys/fs/cgroup/cpu rw,relatime shared:8 - cgroup cgroup rw,cpu',
    '31 25 0:27 / /sys/fs/cgroup/cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpuacct',
    '39 25 0:35 / /sys/fs/cgroup/unified rw,relatime shared:17 - cgroup2 cgroup2 rw',
  ].join('\n');
  expect(cpuHierarchyOf(v1)).toEqual({ version: 1, mountPoint: '/sys/fs/cgroup/cpuacct' });
  const combined = '31 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct';
  expect(cpuHierarchyOf(combined)).toEqual({ version: 1, mountPoint: '/sys/fs/cgroup/cpu,cpuacct' });
  const v2 = '29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate';
  expect(cpuHierarchyOf(v2)).toEqual({ version: 2, mountPoint: '/sys/fs/cgroup' });
  expect(cpuHierarchyOf('22 1 0:21 / /proc rw - proc proc rw')).toEqual({
    reason: 'no cgroup filesystem with CPU accounting is mounted',
  });
});

it('says why when there is no accounting: no cgroupfs, or a hierarchy it cannot write', () => {
  expect(CpuAccounting.forStack('/tmp/x', '')).toEqual({
    unavailable: 'no cgroup filesystem with CPU accounting is mounted',
  });
  const unwritable = CpuAccounting.forStack('/tmp/x', '29 23 0:26 / /dev/null rw - cgroup2 cgroup2 rw');
  expect(unwritable).toEqual({
    unavailable: expect.stringMatching(/^cannot create \/dev\/null\/durable-operators\/x-[0-9a-f]{8}: ENOTDIR$/),
  });
});

it('reads a difference per component, a component that appeared meanwhile counted from zero', () => {
  expect(cpuDiff({ temporal: 100, etcd: 5 }, { temporal: 160, etcd: 5, agents: 30 })).toEqual({
    temporal: 60,
    etcd: 0,
    agents: 30,
  });
});
