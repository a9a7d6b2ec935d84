/** Shared bench helpers: a private stack (and the Cloudflare benches' setup), percentiles, and a machine line for RESULTS.md. */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { mapLimited } from '../src/concurrency.js';
import type { CloudflareConfig, OperatorConfig } from '../src/config.js';
import { findBinary } from '../src/infra/binaries.js';
import { cpuDiff, type CpuByComponent } from '../src/infra/cpu-accounting.js';
import { LocalStack } from '../src/infra/stack.js';
import type { KubeClient } from '../src/kube/client.js';
import type { OperatorWorker } from '../src/workers/worker.js';
import type { EmulatorAdmin, RunningEmulator, TokenSpec } from '../test/emulators/cloudflare/index.js';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export async function benchStack(name: string, opts: { containerd?: boolean } = {}): Promise<LocalStack> {
  return LocalStack.start({
    stateDir: path.join(REPO_ROOT, '.state', `bench-${name}`),
    mode: 'test',
    log: () => {},
    ...opts,
  });
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export function summary(label: string, samples: number[], unit = 'ms'): string {
  const s = [...samples].sort((a, b) => a - b);
  const f = (n: number) => n.toFixed(1);
  return `${label}: n=${s.length} p50=${f(percentile(s, 50))}${unit} p90=${f(percentile(s, 90))}${unit} p99=${f(percentile(s, 99))}${unit} max=${f(s.at(-1) ?? NaN)}${unit}`;
}

export function machine(): string {
  return `${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), ${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}`;
}

/**
 * CPU at a moment: each component's cgroup (src/infra/cpu-accounting.ts: everything it forked,
 * exited or not) and this bench process's own (process.cpuUsage: its threads, the Temporal core's
 * among them). `components` is empty when the stack has no accounting (not root, no cgroupfs).
 */
export interface CpuSnapshot {
  at: number;
  components: CpuByComponent;
  self: number;
}

export function cpuSnapshot(stack: LocalStack): CpuSnapshot {
  const { user, system } = process.cpuUsage();
  return { at: performance.now(), components: stack.cpu?.read() ?? {}, self: (user + system) / 1000 };
}

/** What the stack's CPU accounting says it is, for a bench's header. */
export function cpuAccountingLine(stack: LocalStack): string {
  const a = stack.info.cpuAccounting;
  return a
    ? `CPU accounting: cgroup v${a.version}, one cgroup per component under ${a.dir} (exited children counted; sandbox containers not)`
    : 'CPU accounting: OFF (no writable cgroupfs: not root?) — no per-component CPU figures';
}

/**
 * CPU-ms per operation between two snapshots, per component and total, largest first. `self`:
 * how this process's CPU is named and whether it counts in the total (when it runs a component,
 * such as an in-process worker; not when it is only the load). `idle`: an earlier window with no
 * operations, whose rate is taken off (the servers' background: timers, leases, compaction).
 */
export function cpuPerOperation(
  what: string,
  before: CpuSnapshot,
  after: CpuSnapshot,
  operations: number,
  self: { name: string; inTotal: boolean },
  idle?: { before: CpuSnapshot; after: CpuSnapshot },
): string {
  const seconds = (after.at - before.at) / 1000;
  if (!Object.keys(after.components).length) return `CPU per ${what}: no cgroup accounting on this host`;
  const used = (b: CpuSnapshot, a: CpuSnapshot): CpuByComponent => ({
    ...cpuDiff(b.components, a.components),
    [self.name]: a.self - b.self,
  });
  const window = used(before, after);
  const idleRate = idle && used(idle.before, idle.after);
  const idleSeconds = idle ? (idle.after.at - idle.before.at) / 1000 : 0;
  const per = (name: string, ms: number) =>
    (ms - (idleRate ? ((idleRate[name] ?? 0) / idleSeconds) * seconds : 0)) / Math.max(1, operations);
  const rows = Object.entries(window)
    .map(([name, ms]) => ({ name, ms: per(name, ms), cores: ms / 1000 / seconds }))
    .filter((r) => Math.abs(r.ms) >= 0.05 || r.cores >= 0.005)
    .sort((a, b) => b.ms - a.ms);
  const counted = rows.filter((r) => r.name !== self.name || self.inTotal);
  const total = counted.reduce((n, r) => n + r.ms, 0);
  const cores = counted.reduce((n, r) => n + r.cores, 0);
  const f = (r: { name: string; ms: number; cores: number }) =>
    `${r.name}${r.name === self.name && !self.inTotal ? ' (not in the total)' : ''} ${r.ms.toFixed(1)} (${r.cores.toFixed(2)} cores)`;
  return (
    `CPU per ${what} (${operations} in ${seconds.toFixed(1)} s${idle ? `, less the idle rate of ${idleSeconds.toFixed(0)} s before` : ''}): ` +
    `total ${total.toFixed(1)} ms (${cores.toFixed(2)} cores in the window) = ${rows.map(f).join(', ')}`
  );
}

/** Runs `fn` over `items` with at most `limit` in flight (the project's one helper for it). */
export { mapLimited as pool } from '../src/concurrency.js';

/** mulberry32: a fixed seed gives the same inputs, hence comparable figures, on every run. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Polls `fn` every `intervalMs` until it is true; throws after `timeoutMs` naming `what`. */
export async function until(
  what: string,
  fn: () => boolean | Promise<boolean>,
  timeoutMs = 300_000,
  intervalMs = 5,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** A running Cloudflare bench: a private stack, the emulator, the operator's worker and watcher in this process. */
export interface CloudflareBench {
  stack: LocalStack;
  kube: KubeClient;
  emulator: RunningEmulator;
  admin: EmulatorAdmin;
  cfg: OperatorConfig;
  /** The worker now running (restartWorker replaces it). */
  readonly worker: OperatorWorker;
  /**
   * A Cloudflare account in the emulator whose CloudflareCredentials (`credentials`, in the
   * namespace `bench-<name>-creds`) hold `token`; `user` names the Cloudflare user (the budget).
   */
  account(token: string, user?: string): Promise<{ accountId: string; credentials: string }>;
  /** A namespace `bench-<name>` with a Tunnel, its TunnelIngressClassConfig and IngressClass, a Service `web`; waits for the tunnel's ID. */
  ingressTunnel(name: string, credentials: string, zoneName: string): Promise<{ ns: string; tunnelId: string }>;
  /** The tunnel's ingress rules, from the emulator's memory (polling them spends no API call). */
  tunnelRules(tunnelId: string): Array<{ hostname?: string; service: string }>;
  /** Stops the worker and starts another with these Cloudflare settings (its call budgets start afresh). */
  restartWorker(cloudflare: Partial<CloudflareConfig>): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The Cloudflare benches' setup: a private stack (real Temporal, apiserver, etcd), the emulator
 * in this process with `tokens` and no rate limit (a bench sets one where it measures it), the
 * worker with `cloudflare` over the default settings, and the watcher.
 */
export async function cloudflareBench(
  name: string,
  opts: { tokens: TokenSpec[]; cloudflare?: Partial<CloudflareConfig> },
): Promise<CloudflareBench> {
  // Imported here: the benches without Cloudflare do not load the worker, the watcher and the emulator.
  const [
    { CLOUDFLARE_API_VERSION, CLOUDFLARE_GROUP },
    { loadCloudflareConfig, loadConfig },
    { KubeClient },
    { logger },
  ] = await Promise.all([
    import('../src/api/cloudflare.js'),
    import('../src/config.js'),
    import('../src/kube/client.js'),
    import('../src/log.js'),
  ]);
  const [{ startWatcher }, { writeWorkflowBundle }, { createWorker }, { EmulatorAdmin, startCloudflareEmulator }] =
    await Promise.all([
      import('../src/watcher/main.js'),
      import('../src/workers/bundle.js'),
      import('../src/workers/worker.js'),
      import('../test/emulators/cloudflare/index.js'),
    ]);
  const stack = await benchStack(name);
  const kube = KubeClient.fromKubeconfig(stack.info.kubeconfig);
  const emulator = await startCloudflareEmulator({
    tokens: opts.tokens,
    rateLimit: { requests: 1_000_000, windowSeconds: 1 },
  });
  const admin = new EmulatorAdmin(emulator.url, emulator.adminToken);
  const base = loadConfig(
    {
      temporalAddress: stack.info.temporal.address,
      namespace: stack.info.temporal.namespace,
      taskQueue: `bench-${name}-${randomBytes(4).toString('hex')}`,
      kubeconfig: stack.info.kubeconfig,
    },
    {},
  );
  let cfg: OperatorConfig = {
    ...base,
    cloudflare: { ...loadCloudflareConfig({}), baseURL: emulator.baseURL, ...opts.cloudflare },
  };
  const bundle = path.join(stack.info.stateDir, 'workflow-bundle.js');
  await writeWorkflowBundle(bundle);
  logger.level = 'warn';
  process.env.DO_TEMPORAL_LOG_LEVEL = 'WARN';
  const startWorker = async () => {
    const worker = await createWorker(cfg, { workflowBundlePath: bundle });
    return { worker, running: worker.run() };
  };
  let current = await startWorker();
  const stopWorker = async () => {
    current.worker.worker.shutdown();
    await current.running.catch(() => undefined);
  };
  const watcher = await startWatcher(cfg, { log: logger.child({ role: 'watcher' }) });
  const credsNamespace = `bench-${name}-creds`;
  await kube.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: credsNamespace } });
  return {
    stack,
    kube,
    emulator,
    admin,
    get cfg() {
      return cfg;
    },
    get worker() {
      return current.worker;
    },
    async account(token, user) {
      const accountId = randomBytes(16).toString('hex');
      const credentials = `bench-${accountId.slice(0, 8)}`;
      await admin.seed({ accounts: [{ id: accountId }] });
      await kube.apply({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: credentials, namespace: credsNamespace },
        stringData: { CLOUDFLARE_API_TOKEN: token },
      } as never);
      await kube.apply({
        apiVersion: CLOUDFLARE_API_VERSION,
        kind: 'CloudflareCredentials',
        metadata: { name: credentials },
        spec: {
          accountId,
          authType: 'apiToken',
          secretRef: { name: credentials, namespace: credsNamespace },
          ...(user ? { user } : {}),
        },
      });
      return { accountId, credentials };
    },
    async ingressTunnel(name, credentials, zoneName) {
      const ns = `bench-${name}`;
      await kube.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
      await kube.apply({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'web', namespace: ns },
        spec: { ports: [{ port: 80, targetPort: 80 }] },
      } as never);
      await kube.apply({
        apiVersion: CLOUDFLARE_API_VERSION,
        kind: 'Tunnel',
        metadata: { name, namespace: ns },
        spec: {
          newTunnel: { name: `${name}-${randomBytes(3).toString('hex')}` },
          cloudflare: { credentialsRef: { name: credentials }, domain: zoneName },
        },
      });
      await kube.apply({
        apiVersion: CLOUDFLARE_API_VERSION,
        kind: 'TunnelIngressClassConfig',
        metadata: { name: 'cfg', namespace: ns },
        spec: { tunnelRef: { kind: 'Tunnel', name } },
      });
      await kube.apply({
        apiVersion: 'networking.k8s.io/v1',
        kind: 'IngressClass',
        metadata: { name: ns },
        spec: {
          controller: 'cloudflare-operator.io/tunnel-ingress-controller',
          parameters: {
            apiGroup: CLOUDFLARE_GROUP,
            kind: 'TunnelIngressClassConfig',
            name: 'cfg',
            namespace: ns,
            scope: 'Namespace',
          },
        },
      } as never);
      let tunnelId = '';
      await until(`tunnel ${name}`, async () => {
        const t = (await kube.get({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'Tunnel', namespace: ns, name })) as
          { status?: { tunnelId?: string } } | undefined;
        tunnelId = t?.status?.tunnelId ?? '';
        return !!tunnelId;
      });
      return { ns, tunnelId };
    },
    tunnelRules(tunnelId) {
      const config = emulator.store.tunnelConfigs.get(tunnelId)?.config as
        { ingress?: Array<{ hostname?: string; service: string }> } | undefined;
      return config?.ingress ?? [];
    },
    async restartWorker(cloudflare) {
      await stopWorker();
      cfg = { ...cfg, cloudflare: { ...cfg.cloudflare, ...cloudflare } };
      current = await startWorker();
    },
    async stop() {
      await watcher.stop();
      await stopWorker();
      await emulator.close();
      await stack.stop();
    },
  };
}

/** An Ingress of the IngressClass `ns` (as ingressTunnel makes it) with one host, h<i>.<zoneName>, to the Service `web`. */
export function hostIngress(ns: string, i: number, zoneName: string, port = 80) {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name: `h${i}`, namespace: ns },
    spec: {
      ingressClassName: ns,
      rules: [
        {
          host: `h${i}.${zoneName}`,
          http: {
            paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: port } } } }],
          },
        },
      ],
    },
  };
}

/**
 * The WorkflowTaskFailed events of every run a visibility query matches, counted by cause. With
 * `save`, each run that had one is exported as `temporal workflow show -o json` writes it (the
 * format the replay test's fixtures use) to `save.dir/<workflow type>-<run id>.json`.
 */
export async function workflowTaskFailures(
  client: Client,
  query: string,
  save?: { dir: string; address: string },
): Promise<{ examined: number; runs: number; total: number; byCause: Map<string, number>; examples: string[] }> {
  const out = { examined: 0, runs: 0, total: 0, byCause: new Map<string, number>(), examples: [] as string[] };
  const runs: { workflowId: string; runId: string; type: string }[] = [];
  for await (const wf of client.workflow.list({ query }))
    runs.push({ workflowId: wf.workflowId, runId: wf.runId, type: wf.type });
  out.examined = runs.length;
  await mapLimited(runs, 8, async (run) => {
    const history = await client.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
    const failed = (history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes);
    if (failed.length) out.runs++;
    if (failed.length && save) {
      const show = spawnSync(
        findBinary('temporal')!.path,
        ['workflow', 'show', '--address', save.address, '-w', run.workflowId, '-r', run.runId, '-o', 'json'],
        { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
      );
      await mkdir(save.dir, { recursive: true });
      await writeFile(path.join(save.dir, `${run.type}-${run.runId}.json`), show.stdout);
    }
    for (const e of failed) {
      const a = e.workflowTaskFailedEventAttributes!;
      const cause = proto.temporal.api.enums.v1.WorkflowTaskFailedCause[a.cause ?? 0] ?? String(a.cause);
      const key = `${run.type} ${cause.replace(/^WORKFLOW_TASK_FAILED_CAUSE_/, '')}`;
      out.total++;
      out.byCause.set(key, (out.byCause.get(key) ?? 0) + 1);
      if (out.examples.length < 10)
        out.examples.push(`${run.workflowId} (${run.runId}) event ${e.eventId}: ${key}: ${a.failure?.message ?? ''}`);
    }
  });
  return out;
}

/**
 * Replays each history `copies` times with `bundle` (no server): CPU (every thread of this process)
 * and wall time per replayed workflow — what a worker's workflow thread spends on those runs.
 */
export async function replayCost(
  bundle: WorkflowBundleWithSourceMap,
  histories: unknown[],
  copies: number,
): Promise<{ cpuMs: number; wallMs: number }> {
  async function* all() {
    for (let i = 0; i < copies; i++)
      for (const [j, history] of histories.entries()) yield { workflowId: `replay-${i}-${j}`, history };
  }
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  const options = {
    workflowBundle: bundle,
    replayName: 'bench',
    // The sink the tracing interceptors export to; a worker with tracing off drops the spans too.
    sinks: { exporter: { export: { fn: () => undefined } } },
  };
  for await (const r of Worker.runReplayHistories(options, all())) if (r.error) throw r.error;
  const used = process.cpuUsage(cpu);
  const n = copies * histories.length;
  return { cpuMs: (used.user + used.system) / 1000 / n, wallMs: (performance.now() - t0) / n };
}
