/**
 * What isolation costs a create, at the agent (the part of a fast-path create the runtime
 * decides), every runtime in one run on a private local stack:
 *   - bare: a containerd container create + snapshot + task create + start through the same gRPC
 *     client, nothing else (the floor a cold container create cannot go below);
 *   - process: the process runtime (no isolation; the baseline the issue compares with);
 *   - runc cold / runc warm: the containerd runtime without and with warm containers;
 *   - gvisor cold / gvisor warm: the same with runsc;
 *   - the network namespace a cold create wires (and a delete removes), alone.
 * Each create is timed from the agent's HTTP request to its answer (the sandbox runs), at
 * concurrency 1, then 4 and 16 (warm pools refill between rounds, as a pool would between
 * bursts; a round never takes more creates than the warm pool holds). Also: the first pull of an
 * image against a cached one, and the agent's memory with 0 and 50 sandboxes.
 *
 * Usage: npx tsx bench/sandbox-runtime.ts [ROUNDS=30] [CONCURRENCY=1,4,16]
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { AgentStatusReport } from '../src/agent/api.js';
import { ContainerdClient, jsonAny, OCI_TYPE_URL } from '../src/agent/containerd/client.js';
import { sandboxNetwork } from '../src/agent/containerd/setup.js';
import { ImageStore } from '../src/agent/containerd/images.js';
import { containerSpec } from '../src/agent/containerd/oci-spec.js';
import { AgentClient } from '../src/fastpath/agent-client.js';
import { getFreePort, ManagedProcess } from '../src/infra/process.js';
import { ensureSandboxNetd } from '../src/infra/go-programs.js';
import { benchStack, machine, pool, REPO_ROOT, summary, until } from './support.js';

const ROUNDS = Number(process.argv[2] ?? 30);
const CONCURRENCY = (process.argv[3] ?? '1,4,16').split(',').map(Number);
const WARM = Math.max(...CONCURRENCY);
const TOKEN = randomBytes(16).toString('hex');
// Plain HTTP on loopback: this bench measures the runtime at the agent, not the fast path's TLS hop.
const agents = new AgentClient(TOKEN, { timeoutMs: 60_000, insecurePlainHttp: true });
const now = () => performance.now();

const stack = await benchStack('sandbox-runtime');
const info = stack.info;
const ctd = info.containerd!;
const image = info.registry!.images.busybox;
const stateDir = path.join(info.stateDir, 'bench');
await mkdir(stateDir, { recursive: true });
const tokenFile = path.join(stateDir, 'token');
await writeFile(tokenFile, TOKEN, { mode: 0o600 });
const procs: ManagedProcess[] = [];
const lines: string[] = [];
const out = (l: string) => {
  lines.push(l);
  console.log(l);
};

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
    env: { ...process.env, DO_LOG_LEVEL: 'warn' },
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

const containerdArgs = (extra: string[] = []) => [
  ...['--runtime', 'containerd', '--containerd-socket', ctd.socket, '--containerd-namespace', ctd.namespace],
  ...['--io-dir', path.join(stateDir, 'io'), '--runtime-root', ctd.runcRoot],
  ...['--init-binary', ctd.initBinary],
  ...extra,
];
const warmArgs = ['--warm-images', `${image}=${WARM}`];
const gvisorArgs = ['--runtime-type', 'gvisor', '--runsc-binary', ctd.runscBinary!];

const status = (url: string) => agents.status(url) as Promise<AgentStatusReport>;
async function emptyAndWarm(url: string, warm: boolean): Promise<void> {
  await until(
    'sandboxes gone and the warm pool full',
    async () => {
      const s = await status(url);
      return s.sandboxStatuses.length === 0 && (!warm || (s.warm?.[image] ?? 0) >= WARM);
    },
    300_000,
    50,
  );
}

/** One round: `count` creates with `c` in flight, then every sandbox deleted. */
async function round(url: string, c: number, count: number, spec: Record<string, unknown>): Promise<number[]> {
  const samples: number[] = [];
  const ids: string[] = [];
  await pool(
    Array.from({ length: count }, (_, i) => i),
    c,
    async () => {
      const sandboxId = `sb-${randomBytes(6).toString('hex')}`;
      const t = now();
      const r = await agents.create(url, { sandboxId, image, ...spec } as never);
      if (r.status !== 'ok') throw new Error(`create refused: ${r.message}`);
      samples.push(now() - t);
      ids.push(sandboxId);
    },
  );
  await Promise.all(ids.map((id) => agents.delete(url, id)));
  return samples;
}

async function measure(label: string, url: string, warm: boolean, spec: Record<string, unknown>): Promise<void> {
  for (const c of CONCURRENCY) {
    const samples: number[] = [];
    // Warm: each round takes at most what the pool holds, then waits for the refill.
    const per = warm ? WARM : Math.max(c, ROUNDS);
    while (samples.length < Math.max(ROUNDS, c * 2)) {
      await emptyAndWarm(url, warm);
      samples.push(...(await round(url, c, Math.min(per, Math.max(ROUNDS, c * 2) - samples.length), spec)));
    }
    await emptyAndWarm(url, warm);
    out(summary(`${label} c=${c}`, samples));
  }
}

/** The floor: container + snapshot + task create + start, and nothing else. */
async function bare(client: ContainerdClient, images: ImageStore, c: number, runscBinary?: string): Promise<number[]> {
  const img = await images.ensure(image);
  const samples: number[] = [];
  const { runcOptions } = await import('../src/agent/containerd/client.js');
  await pool(
    Array.from({ length: Math.max(ROUNDS, c * 2) }, (_, i) => i),
    c,
    async () => {
      const id = `bare-${randomBytes(6).toString('hex')}`;
      const spec = containerSpec({
        image: img.config,
        request: { command: ['sleep', '3600'] },
        extraEnv: {},
        hostname: id,
        netnsPath: `/proc/${process.pid}/ns/net`,
        cgroupsPath: `/fast-sandbox-bench/${id}`,
        limits: { pids: 1024 },
      });
      const t = now();
      await client.createContainer({
        id,
        image: img.id,
        labels: {},
        runtime: {
          name: 'io.containerd.runc.v2',
          options: runcOptions({ binaryName: runscBinary, root: ctd.runcRoot }),
        },
        spec: jsonAny(OCI_TYPE_URL.spec, spec),
        snapshotter: 'overlayfs',
        snapshotKey: id,
      });
      const mounts = await client.prepareSnapshot('overlayfs', id, img.chainId);
      await client.createTask({ containerId: id, rootfs: mounts, stdout: '', stderr: '' });
      await client.startTask(id);
      samples.push(now() - t);
      await client.kill(id, 9, { all: true });
      await client.wait(id, '', AbortSignal.timeout(30_000));
      await client.deleteTask(id);
      await client.deleteContainer(id);
      await client.removeSnapshot('overlayfs', id).catch(() => undefined); // GC may have taken it with the container
    },
  );
  return samples;
}

const rssOf = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;

try {
  out(`# sandbox runtime bench — ${new Date().toISOString()}`);
  out(`machine: ${machine()}; command: npx tsx bench/sandbox-runtime.ts ${process.argv.slice(2).join(' ')}`);
  const client = new ContainerdClient(ctd.socket, ctd.namespace);
  const images = new ImageStore(client);

  // First pull vs cached: a fresh tag of the same image is a pull (its layers are cached, so this is the pull protocol plus unpack check).
  const t0 = now();
  await client.pullImage(info.registry!.images.busyboxUser);
  out(`first pull of ${info.registry!.images.busyboxUser}: ${(now() - t0).toFixed(1)} ms`);
  const t1 = now();
  await client.call('cri', 'imageStatus', { image: { image: info.registry!.images.busyboxUser } });
  out(`cached (image status): ${(now() - t1).toFixed(1)} ms`);

  for (const c of CONCURRENCY) out(summary(`bare containerd runc create+start c=${c}`, await bare(client, images, c)));
  if (ctd.runscBinary)
    for (const c of CONCURRENCY)
      out(summary(`bare containerd runsc create+start c=${c}`, await bare(client, images, c, ctd.runscBinary)));

  const sleepCmd = { command: ['sleep', '3600'] };
  const proc = await startAgent('process', ['--runtime', 'process', '--allow-unisolated']);
  await measure('process', proc.url, false, { command: ['/bin/sleep', '3600'] });
  const cold = await startAgent('runc-cold', containerdArgs());
  await measure('runc cold', cold.url, false, sleepCmd);
  const warm = await startAgent('runc-warm', containerdArgs(warmArgs));
  await measure('runc warm', warm.url, true, sleepCmd);
  if (ctd.runscBinary) {
    const gcold = await startAgent('gvisor-cold', containerdArgs(gvisorArgs));
    await measure('gvisor cold', gcold.url, false, sleepCmd);
    const gwarm = await startAgent('gvisor-warm', containerdArgs([...gvisorArgs, ...warmArgs]));
    await measure('gvisor warm', gwarm.url, true, sleepCmd);
  }

  // What a cold create pays for its own network namespace: the wiring alone (namespace, veth,
  // address, the agent's rules), then its removal, one at a time, as the agent does it.
  const network = sandboxNetwork({
    socket: ctd.socket,
    namespace: ctd.namespace,
    runtimeType: 'container',
    subnet: 'auto',
    netdBinary: await ensureSandboxNetd(),
    ioDir: path.join(stateDir, 'network-bench'),
    agentName: `network-bench-${randomBytes(3).toString('hex')}`,
    host: '127.0.0.1',
  });
  await network.start(new Map());
  const wire: number[] = [];
  const unwire: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const id = `net-${randomBytes(6).toString('hex')}`;
    const t = now();
    await network.wire(id, [8080]);
    wire.push(now() - t);
    const u = now();
    await network.unwire(id);
    unwire.push(now() - u);
  }
  await network.close();
  out(summary('network namespace wired (ptp + host-local + rules, one exposed port)', wire));
  out(summary('network namespace removed', unwire));

  // The agent's memory: idle, then holding 50 sandboxes.
  await emptyAndWarm(cold.url, false);
  const idle = rssOf(cold.proc.pid);
  const ids = Array.from({ length: 50 }, () => `mem-${randomBytes(6).toString('hex')}`);
  await pool(ids, 8, async (sandboxId) => {
    await agents.create(cold.url, { sandboxId, image, ...sleepCmd } as never);
  });
  out(`agent RSS (runc): ${idle.toFixed(0)} MiB with 0 sandboxes, ${rssOf(cold.proc.pid).toFixed(0)} MiB with 50`);
  await Promise.all(ids.map((id) => agents.delete(cold.url, id)));
  await emptyAndWarm(cold.url, false);
  client.close();
  await writeFile(path.join(REPO_ROOT, '.state', 'bench-sandbox-runtime.txt'), `${lines.join('\n')}\n`);
} finally {
  await Promise.all(procs.map((p) => p.stop(30_000)));
  await stack.stop();
}
