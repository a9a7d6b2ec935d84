/**
 * The container runtime's CPU per sandbox life (create → delete, warm runc), per process group,
 * on a private local stack — the figure issue 35 asks for, which holds on a busy machine where
 * latency does not. Counted with cgroup v1 `cpuacct` (so processes that exit — runc, the shims'
 * `start`/`delete` commands, mkfifo — are counted too):
 *   - containerd: its own threads (/proc/<pid>/stat), and the rest of its cgroup: the shims it
 *     starts (they stay in its cgroup) and the runc processes they run;
 *   - the sandboxes' cgroups (`--cgroup-parent`): `runc init`, sandbox-init and the command;
 *   - the agent (Node): its own threads, its reaped children (cutime/cstime: mkfifo), and the
 *     rest of its cgroup: sandbox-netd, its long-lived network helper.
 * Phases: `bare` lives (container + snapshot + task create + start, kill, delete through the gRPC
 * client, no agent, no network: the runtime's own floor), with a shim per container and with the
 * runc v2 shim's grouping (`io.containerd.runc.v2.group`), in alternating blocks; then LIVES lives through an agent with
 * a warm pool (the warm hand-off, the delete and the pool's refill: a life's whole cost). The
 * bench's own polling of the agent's status costs CPU too: it is measured idle, at the same rate,
 * and subtracted (both are printed).
 *
 * Usage: npx tsx bench/runtime-cpu.ts [LIVES=40] [WARM=4] [CONCURRENCY=2]
 * (env DO_BENCH_CPU_PROF=<dir>: the agent's CPU profile, written there when it stops)
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { AgentStatusReport } from '../src/agent/api.js';
import { ContainerdClient, jsonAny, OCI_TYPE_URL, runcOptions } from '../src/agent/containerd/client.js';
import { ImageStore } from '../src/agent/containerd/images.js';
import { containerSpec } from '../src/agent/containerd/oci-spec.js';
import { AgentClient } from '../src/fastpath/agent-client.js';
import { getFreePort, ManagedProcess } from '../src/infra/process.js';
import { benchStack, machine, pool, REPO_ROOT, until } from './support.js';

const LIVES = Number(process.argv[2] ?? 40);
const WARM = Number(process.argv[3] ?? 4);
const CONCURRENCY = Number(process.argv[4] ?? 2);
const TOKEN = randomBytes(16).toString('hex');
const agents = new AgentClient(TOKEN, { timeoutMs: 60_000, insecurePlainHttp: true });
const TICK_MS = 10; // CLK_TCK 100: /proc/<pid>/stat counts in 10 ms ticks
const POLL_MS = 100;

const CPUACCT = '/sys/fs/cgroup/cpuacct';
if (!existsSync(path.join(CPUACCT, 'cpuacct.usage')))
  throw new Error(`this bench needs cgroup v1 cpuacct at ${CPUACCT}`);
const benchCg = `do-bench-rtcpu-${randomBytes(3).toString('hex')}`;
const cg = (name: string) => path.join(CPUACCT, benchCg, name);
for (const name of ['containerd', 'agent', 'sandboxes']) mkdirSync(cg(name), { recursive: true });
const usageMs = (name: string) => Number(readFileSync(path.join(cg(name), 'cpuacct.usage'), 'utf8')) / 1e6;
const join = (name: string, pid: number) => writeFileSync(path.join(cg(name), 'cgroup.procs'), String(pid));

/** A process's own CPU (all threads) and its reaped children's, in ms. */
function procMs(pid: number): { self: number; children: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number);
  // Fields 14–17 of stat (utime stime cutime cstime); f[0] is field 3.
  return { self: (f[11]! + f[12]!) * TICK_MS, children: (f[13]! + f[14]!) * TICK_MS };
}

function containerdPid(configFile: string): number {
  for (const p of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const argv = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
      if (path.basename(argv[0] ?? '') === 'containerd' && argv.includes(configFile)) return Number(p);
    } catch {
      // gone
    }
  }
  throw new Error(`no containerd running with ${configFile}`);
}

const stack = await benchStack('runtime-cpu');
const info = stack.info;
const ctd = info.containerd!;
if (!ctd) throw new Error('this bench needs the stack with containerd (root, the host tools)');
const image = info.registry!.images.busybox;
const stateDir = path.join(info.stateDir, 'bench');
await mkdir(stateDir, { recursive: true });
const tokenFile = path.join(stateDir, 'token');
await writeFile(tokenFile, TOKEN, { mode: 0o600 });
const ctdPid = containerdPid(path.join(info.stateDir, 'containerd', 'config.toml'));
join('containerd', ctdPid);
const procs: ManagedProcess[] = [];
const lines: string[] = [];
const out = (l: string) => {
  lines.push(l);
  console.log(l);
};

interface Counters {
  containerdSelf: number;
  containerdCg: number;
  sandboxes: number;
  agentSelf?: number;
  agentChildren?: number;
  agentCg: number;
  wallMs: number;
}
function counters(agentPid?: number): Counters {
  const c = procMs(ctdPid);
  const a = agentPid ? procMs(agentPid) : undefined;
  return {
    containerdSelf: c.self,
    containerdCg: usageMs('containerd'),
    sandboxes: usageMs('sandboxes'),
    agentSelf: a?.self,
    agentChildren: a?.children,
    agentCg: usageMs('agent'),
    wallMs: performance.now(),
  };
}
function diff(a: Counters, b: Counters): Counters {
  const d = (k: keyof Counters) => (b[k] ?? 0) - (a[k] ?? 0);
  return {
    containerdSelf: d('containerdSelf'),
    containerdCg: d('containerdCg'),
    sandboxes: d('sandboxes'),
    agentSelf: d('agentSelf'),
    agentChildren: d('agentChildren'),
    agentCg: d('agentCg'),
    wallMs: d('wallMs'),
  };
}
/** Per life, in CPU-ms, with the idle rate (per ms of wall time) taken off when given. */
function report(label: string, d: Counters, lives: number, idle?: Counters): void {
  const net = (k: keyof Counters) => ((d[k] ?? 0) - (idle ? ((idle[k] ?? 0) * d.wallMs) / idle.wallMs : 0)) / lives;
  const parts: [string, number][] = [
    ['containerd', net('containerdSelf')],
    ['shims+runc', net('containerdCg') - net('containerdSelf')],
    ['in-container (runc init, init, command)', net('sandboxes')],
  ];
  if (d.agentSelf !== undefined && d.agentCg > 0)
    parts.push(
      ['agent Node', net('agentSelf')],
      ['agent helpers (network, mkfifo)', net('agentChildren')],
      // Children that have not exited: sandbox-netd, the network helper.
      ['agent long-lived helper (sandbox-netd)', net('agentCg') - net('agentSelf') - net('agentChildren')],
    );
  const runtime = net('containerdCg') + net('sandboxes');
  const total = runtime + (d.agentCg > 0 ? net('agentCg') : 0);
  out(
    `${label}: n=${lives} CPU-ms per life: ${parts.map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ')}` +
      ` | runtime (containerd+shims+runc+in-container) ${runtime.toFixed(1)}` +
      (d.agentCg > 0 ? ` | agent cgroup ${net('agentCg').toFixed(1)} | total ${total.toFixed(1)}` : '') +
      ` → ceiling ${(2000 / total).toFixed(1)} lives/s on 2 cores` +
      ` (wall ${(d.wallMs / 1000).toFixed(1)} s)`,
  );
}

/**
 * Bare lives: the runtime alone, through the same gRPC client, with a shim per container and with
 * every container in one shim (`group`), in alternating blocks so both see the same machine.
 */
async function bareLives(client: ContainerdClient, n: number, blocks = 4): Promise<void> {
  const img = await new ImageStore(client).ensure(image);
  const group = `bench-${randomBytes(3).toString('hex')}`;
  const one = async (grouped: boolean) => {
    const id = `bare-${randomBytes(6).toString('hex')}`;
    const spec = containerSpec({
      image: img.config,
      request: { command: ['sleep', '3600'] },
      extraEnv: {},
      hostname: id,
      netnsPath: `/proc/${process.pid}/ns/net`,
      cgroupsPath: `/${benchCg}/sandboxes/${id}`,
      limits: { pids: 1024 },
    });
    if (grouped) spec.annotations = { 'io.containerd.runc.v2.group': group };
    await client.createContainer({
      id,
      image: img.id,
      labels: {},
      runtime: { name: 'io.containerd.runc.v2', options: runcOptions({ root: ctd.runcRoot }) },
      spec: jsonAny(OCI_TYPE_URL.spec, spec),
      snapshotter: 'overlayfs',
      snapshotKey: id,
    });
    const mounts = await client.prepareSnapshot('overlayfs', id, img.chainId);
    await client.createTask({ containerId: id, rootfs: mounts, stdout: '', stderr: '' });
    await client.startTask(id);
    await client.kill(id, 9, { all: true });
    await client.wait(id, '', AbortSignal.timeout(30_000));
    await client.deleteTask(id);
    await client.deleteContainer(id);
    await client.removeSnapshot('overlayfs', id).catch(() => undefined);
  };
  // A grouped shim lives while any of its containers does: one long-lived container holds it,
  // as the agent's warm pool does.
  const holder = `bare-holder-${randomBytes(4).toString('hex')}`;
  await startHolder(client, img, holder, group);
  await one(false); // the first of a kind warms caches
  await one(true);
  const zero = diff(counters(), counters());
  const sum = { perContainer: { ...zero }, grouped: { ...zero } };
  const per = Math.ceil(n / blocks);
  for (let b = 0; b < blocks; b++)
    for (const grouped of b % 2 ? [true, false] : [false, true]) {
      const before = counters();
      await pool(
        Array.from({ length: per }, (_, i) => i),
        CONCURRENCY,
        () => one(grouped),
      );
      await new Promise((r) => setTimeout(r, 500)); // exiting shims finish
      const d = diff(before, counters());
      const acc = grouped ? sum.grouped : sum.perContainer;
      for (const k of Object.keys(d) as (keyof Counters)[]) acc[k] = (acc[k] ?? 0) + (d[k] ?? 0);
    }
  report('bare containerd life, a shim per container', sum.perContainer, per * blocks);
  report('bare containerd life, one shim for all (grouped)', sum.grouped, per * blocks);
  await client.kill(holder, 9, { all: true });
  await client.wait(holder, '', AbortSignal.timeout(30_000));
  await client.deleteTask(holder);
  await client.deleteContainer(holder);
}

async function startHolder(
  client: ContainerdClient,
  img: Awaited<ReturnType<ImageStore['ensure']>>,
  id: string,
  group: string,
): Promise<void> {
  const spec = containerSpec({
    image: img.config,
    request: { command: ['sleep', '3600'] },
    extraEnv: {},
    hostname: id,
    netnsPath: `/proc/${process.pid}/ns/net`,
    cgroupsPath: `/${benchCg}/sandboxes/${id}`,
    limits: { pids: 1024 },
  });
  spec.annotations = { 'io.containerd.runc.v2.group': group };
  await client.createContainer({
    id,
    image: img.id,
    labels: {},
    runtime: { name: 'io.containerd.runc.v2', options: runcOptions({ root: ctd.runcRoot }) },
    spec: jsonAny(OCI_TYPE_URL.spec, spec),
    snapshotter: 'overlayfs',
    snapshotKey: id,
  });
  const mounts = await client.prepareSnapshot('overlayfs', id, img.chainId);
  await client.createTask({ containerId: id, rootfs: mounts, stdout: '', stderr: '' });
  await client.startTask(id);
}

async function startAgent(name: string, args: string[]): Promise<{ url: string; proc: ManagedProcess }> {
  const port = await getFreePort();
  const proc = ManagedProcess.start({
    name,
    command: process.execPath,
    args: [
      ...['--import', 'tsx', path.join(REPO_ROOT, 'src/cli/main.ts'), 'agent'],
      ...['--host', '127.0.0.1', '--port', String(port), '--agent-id', `${name}-${randomBytes(3).toString('hex')}`],
      ...['--capacity', '200', '--token-file', tokenFile, '--kill-grace', '200', '--insecure-plain-http'],
      ...args,
    ],
    cwd: REPO_ROOT,
    logFile: path.join(stateDir, `${name}.log`),
    env: {
      ...process.env,
      DO_LOG_LEVEL: 'warn',
      // The agent's own CPU by function, written when it exits (open in Chrome's DevTools).
      ...(process.env.DO_BENCH_CPU_PROF
        ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${path.resolve(process.env.DO_BENCH_CPU_PROF)}` }
        : {}),
    },
  });
  procs.push(proc);
  const url = `http://127.0.0.1:${port}`;
  await until(
    `${name} up`,
    async () => (await fetch(`${url}/healthz`).catch(() => undefined))?.ok === true,
    60_000,
    100,
  );
  return { url, proc };
}

const status = (url: string) => agents.status(url) as Promise<AgentStatusReport>;
async function emptyAndWarm(url: string): Promise<void> {
  await until(
    'sandboxes gone and the warm pool full',
    async () => {
      const s = await status(url);
      return s.sandboxStatuses.length === 0 && (s.warm?.[image] ?? 0) >= WARM;
    },
    300_000,
    POLL_MS,
  );
}

try {
  out(`# runtime CPU per sandbox life — ${new Date().toISOString()}`);
  out(`machine: ${machine()}; command: npx tsx bench/runtime-cpu.ts ${process.argv.slice(2).join(' ')}`);
  const client = new ContainerdClient(ctd.socket, ctd.namespace);
  await bareLives(client, Math.max(16, LIVES));

  const agent = await startAgent('runc-warm', [
    ...['--runtime', 'containerd', '--containerd-socket', ctd.socket, '--containerd-namespace', ctd.namespace],
    ...['--io-dir', path.join(stateDir, 'io'), '--runtime-root', ctd.runcRoot, '--init-binary', ctd.initBinary],
    ...['--cgroup-parent', `/${benchCg}/sandboxes`, '--warm-images', `${image}=${WARM}`],
  ]);
  join('agent', agent.proc.pid);
  await emptyAndWarm(agent.url);
  await new Promise((r) => setTimeout(r, 2000));
  // The bench's polling alone, for as long as a few rounds take.
  const i0 = counters(agent.proc.pid);
  for (let t = 0; t < 5000; t += POLL_MS) {
    await status(agent.url);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  const idle = diff(i0, counters(agent.proc.pid));
  const sleepCmd = { command: ['sleep', '3600'] }; // no exposed ports, as bench/fastpath.ts
  const before = counters(agent.proc.pid);
  let done = 0;
  while (done < LIVES) {
    const ids = Array.from({ length: Math.min(WARM, LIVES - done) }, () => `sb-${randomBytes(6).toString('hex')}`);
    await pool(ids, CONCURRENCY, async (sandboxId) => {
      const r = await agents.create(agent.url, { sandboxId, image, ...sleepCmd } as never);
      if (r.status !== 'ok') throw new Error(`create refused: ${r.message}`);
    });
    await pool(ids, CONCURRENCY, (id) => agents.delete(agent.url, id));
    done += ids.length;
    await emptyAndWarm(agent.url);
  }
  await new Promise((r) => setTimeout(r, 1000));
  const lives = diff(before, counters(agent.proc.pid));
  report('agent warm runc life (hand-off, delete, refill), raw', lives, LIVES);
  report('agent warm runc life (hand-off, delete, refill), idle polling taken off', lives, LIVES, idle);
  client.close();
  await writeFile(path.join(REPO_ROOT, '.state', 'bench-runtime-cpu.txt'), `${lines.join('\n')}\n`);
} finally {
  await Promise.all(procs.map((p) => p.stop(30_000)));
  await stack.stop();
  // The bench's cgroups, deepest first (runc made `sandboxes` in every hierarchy).
  for (const root of readdirSync('/sys/fs/cgroup').map((h) => path.join('/sys/fs/cgroup', h, benchCg))) {
    if (!existsSync(root)) continue;
    const dirs = [
      root,
      ...readdirSync(root, { recursive: true, withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => path.join(d.parentPath, d.name)),
    ];
    for (const d of dirs.sort((a, b) => b.length - a.length))
      try {
        rmdirSync(d);
      } catch {
        // still has a process: the stack's stop took it, or it goes with its shim
      }
  }
}
