/**
 * Sandbox fast path figures on a private local stack: CreateSandbox latency over gRPC, Fast and
 * Strong side by side at concurrency 1, 16 and 64, next to the parts a create cannot avoid,
 * each measured bare in the same run — (a) the agent's create call alone (AgentClient.create),
 * (b) a Temporal update-with-start round trip of an empty workflow (bench/workflows/empty.ts,
 * its own worker and task queue), (c) an apiserver create of a Sandbox (KubeClient.create) —
 * then sustained Fast creates/s (deletions join in once three quarters of the slots are taken), and
 * the time from the answer of a Fast create whose record the apiserver refuses until the
 * janitor has removed the orphan from its agent.
 *
 * Setup: namespace + SandboxPool; AGENTS agents × CAPACITY slots (AgentFleet: real processes,
 * Pods written as the kubelet would); sandboxes run `/bin/sleep 3600` (the process runtime runs
 * a command); tenants in the stack's tenant etcd; the watcher and the fast path each in its own
 * process (`durable-operators watcher` / `fastpath`, as the Deployments in deploy/ run them), so
 * the bench's clients never share an event loop with the server they measure; both load a
 * pre-bundled workflow bundle. Between rounds every sandbox is deleted (DeleteSandbox) and the
 * bench waits until no Sandbox record is left and every agent reports none.
 *
 * The runtime (env DO_BENCH_RUNTIME): `process` (default; `/bin/sleep 3600`), or the containerd
 * runtime on the stack's containerd — `runc`, `runc-warm`, `gvisor`, `gvisor-warm` (busybox's
 * `sleep 3600`; the warm ones keep DO_BENCH_WARM warm containers per agent, default 8, and each
 * round starts with every agent's warm pool full).
 *
 * CPU per sandbox life, per component (the stack's cgroups, src/infra/cpu-accounting.ts: runc,
 * shims and every helper that exited included; the sandboxes' containers not): from the start of
 * the sustained window until every sandbox it created is deleted and the warm pools are full
 * again, divided by the creates answered ok, less the idle rate of a quiet 10 s before. The
 * watcher and the fast path (which runs the sandbox workflows) are in their own cgroups; this
 * process (the load and the bare rounds' empty worker) is shown, not counted.
 *
 * Usage: npx tsx bench/fastpath.ts [SEQUENTIAL=40] [SUSTAIN_SECONDS=30] [AGENTS=8] [CAPACITY=32] [CONCURRENCY=1,16,64]
 * (SUSTAIN_SECONDS=0 skips the sustained and orphan rounds: a quick latency-only run.)
 */
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { ALLOCATION_ANNOTATION, SandboxKind, SandboxPoolKind, type Sandbox } from '../src/api/sandbox.js';
import { loadConfig, sandboxTaskQueue } from '../src/config.js';
import { sandboxWorkflowId } from '../src/domain/sandbox.js';
import { AgentClient } from '../src/fastpath/agent-client.js';
import { AgentPki } from '../src/fastpath/agent-pki.js';
import { fastPathClient, type FastPathGrpc } from '../src/fastpath/grpc-client.js';
import { AgentFleet } from '../src/infra/agent-fleet.js';
import { getFreePort, ManagedProcess } from '../src/infra/process.js';
import { KubeClient } from '../src/kube/client.js';
import { logger } from '../src/log.js';
import { createEtcdClient } from '../src/tenancy/etcd.js';
import { TenantPublisher } from '../src/tenancy/publisher.js';
import { connectClient, connectWorker, dataConverterOf } from '../src/temporal/connection.js';
import { writeWorkflowBundle } from '../src/workers/bundle.js';
import { installTemporalRuntime } from '../src/workers/runtime.js';
import {
  benchStack,
  cpuAccountingLine,
  cpuPerOperation,
  cpuSnapshot,
  machine,
  percentile,
  pool,
  REPO_ROOT,
  until,
  workflowTaskFailures,
} from './support.js';
import {
  bareCreateWorkflow,
  createUpdate,
  emptyWorkflow,
  pingUpdate,
  type BareAgentActivities,
} from './workflows/empty.js';

const SEQUENTIAL = Number(process.argv[2] ?? 40);
const SUSTAIN_SECONDS = Number(process.argv[3] ?? 30);
const AGENTS = Number(process.argv[4] ?? 8);
const CAPACITY = Number(process.argv[5] ?? 32);
const SLOTS = AGENTS * CAPACITY;
const CONCURRENCY = (process.argv[6] ?? '1,16,64').split(',').map(Number);
/** Creates per round at each concurrency: a few waves, never more than the slots. */
const roundSize = (c: number) => (c === 1 ? SEQUENTIAL : Math.min(c * Math.ceil(160 / c), Math.floor(SLOTS * 0.75)));
const ORPHANS = 5;
/** One-at-a-time creates: the pause after the previous one is Running, for its last hints. */
const SETTLE_MS = 100;
const NAMESPACE = 'bench-fastpath';
const POOL = 'pool-a';
const TENANT = 4242;
const RUNTIME = process.env.DO_BENCH_RUNTIME ?? 'process';
const WARM_PER_AGENT = Number(process.env.DO_BENCH_WARM ?? 8);
/** The sandboxes' spec: set once the stack (and its registry) is up. */
let SLEEP = { image: 'sleep', poolRef: POOL, command: ['/bin/sleep', '3600'] };
const DENY_POLICY = 'bench-deny-orphans';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();
const argv = process.argv.slice(2).join(' ');

if (!process.env.DO_LOG_LEVEL) logger.level = 'error';
const log = logger.child({ bench: 'fastpath' });
installTemporalRuntime(log, 'ERROR');

// ---- figures ----

interface Figure {
  label: string;
  samples: number[];
  errors: Map<string, number>;
  /** Wall time of the round (throughput = samples / seconds). */
  seconds?: number;
  /** Each answered call: its index, when it was sent (epoch ms) and how long it took. */
  calls?: { i: number; sentAt: number; ms: number }[];
}
const figures = new Map<string, Figure>();
const figure = (label: string): Figure => {
  let f = figures.get(label);
  if (!f) figures.set(label, (f = { label, samples: [], errors: new Map() }));
  return f;
};
const p = (f: Figure | undefined, q: number) =>
  f
    ? percentile(
        [...f.samples].sort((a, b) => a - b),
        q,
      )
    : NaN;
const ms = (x: number) => (Number.isNaN(x) ? '—' : x.toFixed(1));
function show(f: Figure): string {
  const errs = [...f.errors].map(([k, v]) => `${k}×${v}`).join(', ');
  const rate = f.seconds ? `, ${(f.samples.length / f.seconds).toFixed(1)}/s` : '';
  return (
    `${f.label}: n=${f.samples.length} min=${ms(Math.min(...f.samples))} p50=${ms(p(f, 50))} p90=${ms(p(f, 90))} p99=${ms(p(f, 99))} ` +
    `max=${ms(Math.max(...f.samples))} ms${rate}${errs ? `; errors: ${errs}` : ''}`
  );
}
const errorKey = (err: unknown): string => {
  const e = err as { code?: number; details?: string; message?: string };
  if (typeof e.code === 'number' && e.details !== undefined) return grpc.status[e.code] ?? String(e.code);
  return (e.message ?? String(err)).slice(0, 80);
};
const firstErrors: string[] = [];
const anatomy: string[] = [];
/** Each role's Prometheus endpoint (prom-client's default metrics: event loop lag, CPU, GC). */
const metricsUrls = new Map<string, string>();

/** One sample of a role's default metrics; the event loop lag histogram restarts at each scrape. */
async function processMetrics(role: string): Promise<Record<string, number>> {
  const text = await (await fetch(metricsUrls.get(role)!)).text();
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const m =
      /^(nodejs_eventloop_lag_(?:p50|p99|max)_seconds|process_cpu_seconds_total|nodejs_gc_duration_seconds_sum)(\{[^}]*\})? ([\d.e+-]+)$/.exec(
        line,
      );
    if (m) out[m[1]!] = (out[m[1]!] ?? 0) + Number(m[3]);
  }
  return out;
}

/** What a role's process did during a round: its event loop's delays, CPU and GC time. */
function processLine(role: string, before: Record<string, number>, after: Record<string, number>, seconds: number) {
  const ms = (k: string) => ((after[k] ?? NaN) * 1000).toFixed(1);
  const cpu = (after.process_cpu_seconds_total ?? 0) - (before.process_cpu_seconds_total ?? 0);
  const gc = (after.nodejs_gc_duration_seconds_sum ?? 0) - (before.nodejs_gc_duration_seconds_sum ?? 0);
  return (
    `${role} process: event loop delay p50 ${ms('nodejs_eventloop_lag_p50_seconds')} / p99 ${ms('nodejs_eventloop_lag_p99_seconds')} / max ${ms('nodejs_eventloop_lag_max_seconds')} ms; ` +
    `CPU ${((cpu / seconds) * 100).toFixed(0)}% of one core, GC ${(gc * 1000).toFixed(0)} ms in ${seconds.toFixed(1)} s`
  );
}
const noteError = (where: string, err: unknown) => {
  if (firstErrors.length < 12)
    firstErrors.push(`${where}: ${(err as { details?: string }).details ?? (err as Error).message ?? err}`);
};

/** Runs `count` timed calls with `concurrency` in flight; records each call's latency. */
/** Runs `count` calls; a call may return a function, run after its clock stopped (untimed clean-up). */
async function timed(label: string, count: number, concurrency: number, call: (i: number) => Promise<unknown>) {
  const f = figure(label);
  const t0 = now();
  await pool(
    Array.from({ length: count }, (_, i) => i),
    concurrency,
    async (i) => {
      const t = now();
      const sentAt = Date.now();
      try {
        const after = await call(i);
        f.samples.push(now() - t);
        (f.calls ??= []).push({ i, sentAt, ms: now() - t });
        if (typeof after === 'function') await (after as () => Promise<unknown>)();
      } catch (err) {
        const k = errorKey(err);
        f.errors.set(k, (f.errors.get(k) ?? 0) + 1);
        noteError(label, err);
      }
    },
  );
  f.seconds = (f.seconds ?? 0) + (now() - t0) / 1000;
  return f;
}

// ---- what a create's answer waited for: its workflow's history ----

type Stamp = { seconds?: unknown; nanos?: number | null } | null | undefined;
interface HistoryEvent {
  eventTime?: Stamp;
  workflowTaskScheduledEventAttributes?: unknown;
  workflowTaskStartedEventAttributes?: unknown;
  workflowTaskCompletedEventAttributes?: unknown;
  workflowTaskFailedEventAttributes?: { cause?: unknown; failure?: { message?: string | null } | null } | null;
  markerRecordedEventAttributes?: {
    markerName?: string | null;
    details?: Record<string, { payloads?: { data?: Uint8Array | null }[] | null }> | null;
  } | null;
  workflowExecutionUpdateCompletedEventAttributes?: unknown;
  workflowExecutionSignaledEventAttributes?: { signalName?: string | null } | null;
  activityTaskScheduledEventAttributes?: unknown;
  workflowExecutionCompletedEventAttributes?: unknown;
}
const stampMs = (t: Stamp) => (t ? Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6 : NaN);
/** A local activity marker's type and completion time (the SDK core's marker data, JSON). */
function markerOf(e: HistoryEvent): { type: string; completedMs: number } {
  const data = e.markerRecordedEventAttributes?.details?.data?.payloads?.[0]?.data;
  try {
    const m = JSON.parse(Buffer.from(data ?? []).toString('utf8')) as {
      activity_type?: string;
      complete_time?: { seconds?: number; nanos?: number } | string;
    };
    const done = typeof m.complete_time === 'string' ? Date.parse(m.complete_time) : stampMs(m.complete_time as Stamp);
    return { type: m.activity_type ?? '?', completedMs: done };
  } catch {
    return { type: '?', completedMs: NaN };
  }
}

/**
 * The workflow task that carried a create's answer: the local activities it ran before the
 * update completed and after (the caller gets the answer only when that task completes), with
 * their completion times from the run's start.
 */
async function answerAnatomy(client: Client, workflowId: string): Promise<string> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const events = (history.events ?? []) as HistoryEvent[];
  const start = stampMs(events[0]?.eventTime);
  const i = events.findIndex((e) => e.workflowExecutionUpdateCompletedEventAttributes);
  if (i < 0) return `${workflowId}: no completed update in its history`;
  let from = i;
  while (from > 0 && !events[from - 1]!.workflowTaskCompletedEventAttributes) from--;
  let to = i;
  while (to + 1 < events.length && !events[to + 1]!.workflowTaskScheduledEventAttributes) to++;
  const show = (list: HistoryEvent[]) =>
    list
      .filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity')
      .map(markerOf)
      .map((m) => `${m.type} @${(m.completedMs - start).toFixed(0)}`)
      .join(', ') || 'none';
  const wftCompleted = stampMs(events[from - 1]?.eventTime);
  const failed = events.filter((e) => e.workflowTaskFailedEventAttributes).length;
  const count = (f: (e: HistoryEvent) => unknown) => events.filter(f).length;
  const signals = new Map<string, number>();
  for (const e of events) {
    const name = e.workflowExecutionSignaledEventAttributes?.signalName;
    if (name) signals.set(name, (signals.get(name) ?? 0) + 1);
  }
  return (
    `${workflowId}: answering task completed ${(wftCompleted - start).toFixed(0)} ms after the run started; ` +
    `local activities before the answer: ${show(events.slice(from, i))}; in the same task after it: ${show(events.slice(i + 1, to + 1))}` +
    (failed
      ? `; ${failed} workflow task failure(s): ${events
          .filter((e) => e.workflowTaskFailedEventAttributes)
          .map(
            (e) =>
              `${String(e.workflowTaskFailedEventAttributes!.cause)} ${e.workflowTaskFailedEventAttributes!.failure?.message ?? ''}`,
          )
          .join(' | ')}`
      : '') +
    `\n    whole life (create → deleted${count((e) => e.workflowExecutionCompletedEventAttributes) ? ', run completed' : ', run still open'}): ` +
    `${events.length} events, ${count((e) => e.workflowTaskCompletedEventAttributes)} workflow tasks, ` +
    `${count((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity')} local activities, ${count((e) => e.activityTaskScheduledEventAttributes)} activities, ` +
    `signals: ${[...signals].map(([k, v]) => `${k}×${v}`).join(', ') || 'none'}`
  );
}

/**
 * Where a slow create's time went: its workflow's history events up to the answer, as ms after
 * the client sent the create (same clock: one machine). Shows whether it waited to start (the
 * fast path), for a worker to take the task (Scheduled → Started), in the task (Started →
 * Completed), or for the answer to come back.
 */
async function timeline(client: Client, workflowId: string, sentAt: number, ms: number): Promise<string> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const events = (history.events ?? []) as HistoryEvent[];
  const steps: string[] = [];
  for (const e of events) {
    const at = stampMs(e.eventTime) - sentAt;
    if (at > ms + 1) break;
    const name = (Object.keys(e).find((k) => k.endsWith('EventAttributes') && (e as Record<string, unknown>)[k]) ?? '?')
      .replace(/EventAttributes$/, '')
      .replace(/^workflowExecution|^workflow/, '');
    const marker = e.markerRecordedEventAttributes ? markerOf(e) : undefined;
    steps.push(marker ? `${marker.type} done ${(marker.completedMs - sentAt).toFixed(0)}` : `${name} ${at.toFixed(0)}`);
  }
  return `${workflowId} (${ms.toFixed(0)} ms): ${steps.join(', ')}, answered ${ms.toFixed(0)}`;
}

/** Why a sandbox's workflow task failed (the history's WorkflowTaskFailed events). */
async function taskFailures(client: Client, workflowId: string): Promise<string> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return ((history.events ?? []) as HistoryEvent[])
    .filter((e) => e.workflowTaskFailedEventAttributes)
    .map(
      (e) =>
        `cause ${String(e.workflowTaskFailedEventAttributes!.cause)}: ${e.workflowTaskFailedEventAttributes!.failure?.message ?? ''}`,
    )
    .join(' | ');
}

// ---- run ----

const stack = await benchStack('fastpath');
const warmImage = stack.info.registry?.images.busybox;
if (RUNTIME !== 'process') {
  if (!stack.info.containerd || !warmImage) throw new Error(`DO_BENCH_RUNTIME=${RUNTIME} needs the stack's containerd`);
  SLEEP = { image: warmImage, poolRef: POOL, command: ['sleep', '3600'] };
}
const stateDir = stack.info.stateDir;
const kube = KubeClient.fromKubeconfig(stack.info.kubeconfig);
const cfg = loadConfig(
  {
    temporalAddress: stack.info.temporal.address,
    namespace: stack.info.temporal.namespace,
    taskQueue: 'bench-fastpath',
    kubeconfig: stack.info.kubeconfig,
  },
  {},
);
const token = `bench-agent-token-${process.pid}`;
const etcd = createEtcdClient(stack.info.tenantEtcd.endpoint);
let fleet: AgentFleet | undefined;
let watcher: ManagedProcess | undefined;
let fastpath: ManagedProcess | undefined;
let rpc: FastPathGrpc | undefined;
let emptyWorker: { worker: Worker; running: Promise<void> } | undefined;
let temporal: Client | undefined;
const t0 = Date.now();
const stamp = () => `[${((Date.now() - t0) / 1000).toFixed(0)} s]`;
const progress = (s: string) => process.stderr.write(`${stamp()} ${s}\n`);

try {
  console.log(
    `machine: ${machine()}; runtime: ${RUNTIME}${RUNTIME.endsWith('-warm') ? ` (${WARM_PER_AGENT} warm per agent)` : ''}`,
  );
  console.log(
    `load average at start: ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  console.log(`command: npx tsx bench/fastpath.ts ${argv || '(defaults)'}`);
  console.log(cpuAccountingLine(stack));
  // The fast path's workflow bundle (the sandbox workflows), as its image carries it.
  const sandboxBundle = path.join(stateDir, 'sandbox-workflow-bundle.js');
  const bundled = writeWorkflowBundle(sandboxBundle, 'sandbox');
  await kube.core.createNamespace({ body: { metadata: { name: NAMESPACE } } });
  await kube.create({
    apiVersion: SandboxPoolKind.apiVersion,
    kind: SandboxPoolKind.kind,
    metadata: { name: POOL, namespace: NAMESPACE },
    spec: {
      capacity: { poolMin: AGENTS, poolMax: AGENTS, bufferMin: 0, bufferMax: 0 },
      maxSandboxesPerPod: CAPACITY,
      agentTemplate: {},
    },
  });
  const sandboxRef = (name: string) => ({
    apiVersion: SandboxKind.apiVersion,
    kind: SandboxKind.kind,
    namespace: NAMESPACE,
    name,
  });

  // (c) An apiserver create of a Sandbox, bare: measured before the watcher and the fast path
  // exist, so nothing reacts to these records (no finalizer: the delete is immediate).
  progress('apiserver create, bare');
  for (const c of CONCURRENCY) {
    const n = roundSize(c);
    await timed(`(c) apiserver create Sandbox, c=${c}`, n, c, (i) =>
      kube.create<Sandbox>({
        apiVersion: SandboxKind.apiVersion,
        kind: SandboxKind.kind,
        metadata: { name: `bare-c${c}-${i}`, namespace: NAMESPACE },
        spec: SLEEP,
      } as Sandbox),
    );
    await pool(
      Array.from({ length: n }, (_, i) => i),
      16,
      (i) => kube.delete(sandboxRef(`bare-c${c}-${i}`)),
    );
  }

  // A ValidatingAdmissionPolicy refusing Sandboxes named orphan-* (the orphan measurement).
  await kube.create({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: DENY_POLICY },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [
          { apiGroups: ['sandbox.fast.io'], apiVersions: ['*'], operations: ['CREATE'], resources: ['sandboxes'] },
        ],
      },
      validations: [{ expression: "!object.metadata.name.startsWith('orphan-')", message: 'bench: orphan-* refused' }],
    },
  });
  await kube.create({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: DENY_POLICY },
    spec: {
      policyName: DENY_POLICY,
      validationActions: ['Deny'],
      matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NAMESPACE } } },
    },
  });

  // Tenants, agents, watcher, fast path.
  progress(`starting ${AGENTS} agents, watcher, fast path`);
  const prefix = 'bench-fastpath/';
  await new TenantPublisher(etcd, prefix).putTenant({
    id: TENANT,
    code: `t${TENANT}`,
    name: 'Bench',
    status: 'active',
  });
  const fpDir = path.join(stateDir, 'fastpath');
  await mkdir(fpDir, { recursive: true });
  fleet = await AgentFleet.start({
    kube,
    namespace: NAMESPACE,
    pool: POOL,
    count: AGENTS,
    capacity: CAPACITY,
    agentKey: token,
    stateDir: fpDir,
    killGraceMs: 500,
    ...(RUNTIME !== 'process'
      ? {
          containerd: { ...stack.info.containerd!, runtimeType: RUNTIME.startsWith('gvisor') ? 'gvisor' : 'container' },
          ...(RUNTIME.endsWith('-warm') ? { warmImages: [{ image: warmImage!, count: WARM_PER_AGENT }] } : {}),
        }
      : {}),
  });
  const tokenFile = path.join(fpDir, 'fastpath-token');
  await writeFile(tokenFile, token, { mode: 0o600 });
  const [grpcPort, httpPort] = [await getFreePort(), await getFreePort()];
  const fpEnv = (orphanTimeout: string, janitorInterval: string): NodeJS.ProcessEnv => ({
    DO_FASTPATH_GRPC_PORT: String(grpcPort),
    DO_FASTPATH_HTTP_PORT: String(httpPort),
    DO_FASTPATH_HOST: '127.0.0.1',
    DO_FASTPATH_CONSISTENCY_MODE: 'fast',
    DO_FASTPATH_ORPHAN_TIMEOUT: orphanTimeout,
    DO_FASTPATH_JANITOR_INTERVAL: janitorInterval,
    DO_FASTPATH_NAMESPACE: NAMESPACE,
    DO_TENANT_ETCD: stack.info.tenantEtcd.endpoint,
    DO_AGENT_TOKEN_FILE: tokenFile,
    DO_TENANT_PREFIX: prefix,
  });
  /** A role of the CLI in its own process (the sources through tsx; the workflow code pre-bundled). */
  const role = async (name: string, env: NodeJS.ProcessEnv, readyPath: string) => {
    const metricsPort = await getFreePort();
    const profile = process.env.DO_BENCH_CPU_PROF
      ? [`--cpu-prof`, `--cpu-prof-dir=${path.join(stateDir, 'prof')}`]
      : [];
    const child = ManagedProcess.start({
      name: `bench-${name}`,
      component: name,
      command: process.execPath,
      args: [...profile, '--import', 'tsx', path.join(REPO_ROOT, 'src/cli/main.ts'), name],
      cwd: REPO_ROOT,
      logFile: path.join(stateDir, `${name}.log`),
      env: {
        ...process.env,
        TEMPORAL_ADDRESS: cfg.temporal.address,
        TEMPORAL_NAMESPACE: cfg.temporal.namespace,
        DO_TASK_QUEUE: cfg.temporal.taskQueue,
        KUBECONFIG: stack.info.kubeconfig,
        DO_FASTPATH_WORKFLOW_BUNDLE: sandboxBundle,
        DO_METRICS_PORT: String(metricsPort),
        DO_LOG_LEVEL: process.env.DO_LOG_LEVEL ?? 'warn',
        ...env,
      },
    });
    metricsUrls.set(name, `http://127.0.0.1:${metricsPort}/metrics`);
    await until(
      `${name} ready (see ${stateDir}/${name}.log)`,
      async () => (await fetch(`http://127.0.0.1:${metricsPort}${readyPath}`).catch(() => undefined))?.ok === true,
      120_000,
    );
    return child;
  };
  watcher = await role('watcher', {}, '/readyz');
  await bundled; // before the fast path, which loads it
  // The janitor stays out of the latency rounds (interval 1 h); it gets 3 s / 2 s for the orphans.
  fastpath = await role('fastpath', fpEnv('10s', '1h'), '/healthz');
  rpc = fastPathClient(`127.0.0.1:${grpcPort}`, String(TENANT));
  // As the fast path calls them: mutual TLS with the certificates derived from the key.
  const pki = new AgentPki(token);
  const agentClient = new AgentClient(
    { token: fleet.token, pool: fleet.poolIdentity },
    { tls: (now) => pki.fastPathTls(now) },
  );

  temporal = await connectClient(cfg.temporal);
  const emptyQueue = 'bench-empty';
  const worker = await Worker.create({
    connection: await connectWorker(cfg.temporal),
    dataConverter: dataConverterOf(cfg.temporal),
    namespace: cfg.temporal.namespace,
    taskQueue: emptyQueue,
    workflowsPath: path.join(import.meta.dirname, 'workflows', 'empty.ts'),
    activities: {
      async agentCreate(req: { url: string; sandboxId: string }) {
        const res = await agentClient.create(req.url, {
          sandboxId: req.sandboxId,
          image: SLEEP.image,
          command: SLEEP.command,
        });
        if (res.status !== 'ok') throw new Error(`${res.reason}: ${res.message}`);
      },
    } satisfies BareAgentActivities,
  });
  emptyWorker = { worker, running: worker.run() };
  progress('ready');

  /** Every agent's sandboxes, fresh. */
  const held = async () =>
    (await Promise.all(fleet!.agents.map((a) => agentClient.status(a.url)))).flatMap((r) => r.sandboxStatuses);
  /** Every agent's warm pool is full again (always, without warm containers). */
  const warmPoolsFull = async () =>
    !RUNTIME.endsWith('-warm') ||
    (await Promise.all(fleet!.agents.map((a) => agentClient.status(a.url)))).every(
      (r) => (r.warm?.[warmImage!] ?? 0) >= WARM_PER_AGENT,
    );

  const createReq = (name: string, mode: 'FAST' | 'STRONG') => ({
    namespace: NAMESPACE,
    name,
    consistencyMode: mode,
    ...SLEEP,
  });

  /** Deletes the named Sandboxes (waiting for a Fast record that is still on its way), then waits until agents are empty. */
  async function cleanup(names: string[], why: string): Promise<void> {
    const t = now();
    await pool(names, 16, async (name) => {
      for (let tries = 0; ; tries++) {
        try {
          await rpc!.call('DeleteSandbox', { sandboxName: name, namespace: NAMESPACE });
          return;
        } catch (err) {
          const code = (err as grpc.ServiceError).code;
          if (code === grpc.status.NOT_FOUND && tries < 100) {
            await sleep(100);
            continue;
          }
          if (code !== grpc.status.NOT_FOUND) noteError(`cleanup ${name}`, err);
          return;
        }
      }
    });
    const deadline = Date.now() + 60_000;
    let strays = false;
    const named = new Set(names);
    /** When each record nobody asked to delete was first listed without a deletion. */
    const unnamedSince = new Map<string, number>();
    for (;;) {
      const [records, sandboxes] = await Promise.all([
        kube.listPage<Sandbox>(SandboxKind.apiVersion, SandboxKind.kind, { namespace: NAMESPACE }),
        held(),
      ]);
      if (records.items.length === 0 && sandboxes.length === 0 && (await warmPoolsFull())) break;
      // Records nobody asked to delete (a create that failed for its caller may still have made one),
      // still not being deleted 10 s after first listed: a delete that reached a Fast create before
      // its record has the run delete the record once written, a task or two later.
      const listedAt = Date.now();
      const unnamed = records.items.filter((r) => {
        const name = r.metadata!.name!;
        if (named.has(name) || r.metadata!.deletionTimestamp) return false;
        if (!unnamedSince.has(name)) unnamedSince.set(name, listedAt);
        return listedAt - unnamedSince.get(name)! >= 10_000;
      });
      if (unnamed.length > 0 && !strays) {
        strays = true;
        firstErrors.push(
          `${why}: ${unnamed.length} Sandbox record(s) nobody deleted 10 s after the deletes: ${unnamed.map((r) => r.metadata!.name).join(', ')}`,
        );
        await pool(unnamed, 16, (r) => kube.delete(sandboxRef(r.metadata!.name!)));
      }
      if (Date.now() > deadline) {
        const msg =
          `${why}: 60 s after the deletes still ${records.items.length} Sandbox records and ${sandboxes.length} sandboxes on agents ` +
          `(${sandboxes
            .slice(0, 5)
            .map((s) => `${s.claimName || '?'} ${s.phase}`)
            .join(', ')}); removed from the agents directly`;
        console.log(`WARNING ${msg}`);
        firstErrors.push(msg);
        // What each left record and its run looked like: the next engineer's first question.
        for (const r of records.items.slice(0, 5)) {
          const m = r.metadata!;
          const run = await temporal!.workflow
            .getHandle(sandboxWorkflowId(NAMESPACE, m.name!))
            .describe()
            .then((d) => `run ${d.status.name}, ${d.historyLength} events`)
            .catch((e: Error) => `run: ${e.message}`);
          console.log(
            `  left: ${m.name} deletion ${m.deletionTimestamp ?? 'not requested'}, finalizers [${(m.finalizers ?? []).join(',')}], phase ${r.status?.phase ?? '-'}; ${run}`,
          );
        }
        for (const a of fleet!.agents)
          for (const sb of (await agentClient.status(a.url)).sandboxStatuses)
            await agentClient.delete(a.url, sb.sandboxId);
        for (const r of records.items)
          await kube
            .mergePatch(sandboxRef(r.metadata!.name!), { metadata: { finalizers: null } })
            .catch(() => undefined);
        break;
      }
      await sleep(250);
    }
    figure('cleanup: delete + agents empty, per sandbox').samples.push((now() - t) / Math.max(1, names.length));
  }

  // Warm-up (connections, the workflow bundle's first load, JIT): not measured.
  progress('warm-up');
  const warm: string[] = [];
  for (let i = 0; i < 6; i++) {
    const name = `warm-${i}`;
    await rpc.call('CreateSandbox', createReq(name, i % 2 ? 'STRONG' : 'FAST')).catch((err) => noteError(name, err));
    warm.push(name);
  }
  for (let i = 0; i < 6; i++)
    await temporal.workflow.executeUpdateWithStart(pingUpdate, {
      args: ['warm'],
      startWorkflowOperation: new WithStartWorkflowOperation(emptyWorkflow, {
        workflowId: `empty-warm-${i}`,
        taskQueue: emptyQueue,
        workflowIdConflictPolicy: 'USE_EXISTING',
      }),
    });
  await cleanup(warm, 'warm-up');

  // (a) The agent's create alone (and its delete, untimed), (b) the empty update-with-start.
  progress('agent create and Temporal round trip, bare');
  const agents = fleet.agents;
  let serial = 0;
  for (const c of CONCURRENCY) {
    const n = roundSize(c);
    const ids: { url: string; id: string }[] = [];
    // One agent at c=1 (as the brief asks); spread over all agents above, as placement spreads creates.
    await timed(`(a) agent create, c=${c}`, n, c, async (i) => {
      const url = c === 1 ? agents[0]!.url : agents[i % agents.length]!.url;
      const id = `bare${String(serial++).padStart(28, '0')}`;
      const res = await agentClient.create(url, { sandboxId: id, image: SLEEP.image, command: SLEEP.command });
      if (res.status !== 'ok') throw new Error(`${res.reason}: ${res.message}`);
      // One at a time: deleted before the next create (the one agent never fills up).
      if (c === 1) return () => agentClient.delete(url, id);
      ids.push({ url, id });
    });
    // A delete an overloaded agent drops is noted; the sweep below deletes what is left.
    await pool(ids, 16, (s) => agentClient.delete(s.url, s.id).catch((err) => noteError('(a) agent delete', err)));
    // Also those whose create answered too late for its caller (timed out) but ran, and, every
    // 5 s, terminating ones: a delete the runtime failed (a containerd call timed out under load)
    // stays terminating until sent again; one still in progress answers `already terminating`.
    for (let round = 0; (await held()).length > 0; round++) {
      if (round % 50 === 0)
        for (const a of agents)
          for (const sb of (await agentClient.status(a.url)).sandboxStatuses)
            await agentClient.delete(a.url, sb.sandboxId);
      await sleep(100);
    }
    await timed(`(b) Temporal update-with-start, empty workflow, c=${c}`, n, c, (i) =>
      temporal!.workflow.executeUpdateWithStart(pingUpdate, {
        args: ['x'],
        startWorkflowOperation: new WithStartWorkflowOperation(emptyWorkflow, {
          workflowId: `empty-c${c}-${i}-${Date.now()}`,
          taskQueue: emptyQueue,
          workflowIdConflictPolicy: 'USE_EXISTING',
        }),
      }),
    );
    // Not floors, but what shows where the floors' 5 ms go: (e) the least a durable create can
    // be — (b) with the agent create of (a) as one local activity in the update — and (d) the
    // fast path's gRPC hop.
    if (c === 1) {
      await timed(`(e) bare durable create: (b) + (a) as one local activity, c=${c}`, n, c, async (i) => {
        const sandboxId = `barewf${String(serial++).padStart(26, '0')}`;
        await temporal!.workflow.executeUpdateWithStart(createUpdate, {
          args: [{ url: agents[0]!.url, sandboxId }],
          startWorkflowOperation: new WithStartWorkflowOperation(bareCreateWorkflow, {
            workflowId: `bare-create-${i}-${Date.now()}`,
            taskQueue: emptyQueue,
            workflowIdConflictPolicy: 'USE_EXISTING',
          }),
        });
        return () => agentClient.delete(agents[0]!.url, sandboxId);
      });
      while ((await held()).length > 0) await sleep(100);
    }
    // What the 5 ms of slack has to cover first: the fast path's gRPC hop, here
    // a CreateSandbox the server refuses at validation (no image), before any workflow.
    await timed(`(d) gRPC round trip (a CreateSandbox refused at validation), c=${c}`, n, c, (i) =>
      rpc!.call('CreateSandbox', { namespace: NAMESPACE, name: `invalid-${i}`, poolRef: POOL }).then(
        () => {
          throw new Error('a create without an image was accepted');
        },
        (err: grpc.ServiceError) => {
          if (err.code !== grpc.status.INVALID_ARGUMENT) throw err;
        },
      ),
    );
  }

  /**
   * Waits until a create's after-answer work is over: its record handed off and Running, then a
   * pause for the hints that follow (the untimed part of a one-at-a-time create).
   */
  async function settled(name: string): Promise<void> {
    // Every 20 ms, not the helper's 5: these reads would otherwise be load on the apiserver the
    // next create competes with.
    await until(
      `${name} Running and handed off`,
      async () => {
        const sb = await kube.get<Sandbox>(sandboxRef(name)).catch(() => undefined);
        return sb?.status?.phase === 'Running' && !sb.metadata?.annotations?.[ALLOCATION_ANNOTATION];
      },
      60_000,
      20,
    );
    await sleep(SETTLE_MS);
  }

  // Fast and Strong, side by side, at each concurrency. At c=1 twice: back to back (the next
  // create while the previous one's record, hand-off and hints are still being written) and one
  // at a time (each create once the previous one has settled: what a lone caller sees, on a
  // machine as quiet as the one the bare parts were measured on).
  for (const c of CONCURRENCY) {
    const n = roundSize(c);
    for (const pace of c === 1 ? (['back to back', 'one at a time'] as const) : (['back to back'] as const))
      for (const mode of ['FAST', 'STRONG'] as const) {
        const alone = pace === 'one at a time';
        const label = `${mode === 'FAST' ? 'Fast' : 'Strong'} CreateSandbox, c=${c}${alone ? ', one at a time' : ''}`;
        progress(`${label}: ${n} creates`);
        const names = Array.from({ length: n }, (_, i) => `${mode.toLowerCase()}-c${c}${alone ? 'a' : ''}-${i}`);
        const failed: string[] = [];
        const before = c === 1 ? await processMetrics('fastpath').catch(() => ({})) : {};
        await timed(label, n, c, (i) =>
          rpc!.call('CreateSandbox', createReq(names[i]!, mode)).then(
            () => (alone ? () => settled(names[i]!) : undefined),
            (err: unknown) => {
              failed.push(names[i]!);
              throw err;
            },
          ),
        );
        const after = c === 1 ? await processMetrics('fastpath').catch(() => ({})) : {};
        for (const name of failed.slice(0, 3)) {
          const why = await taskFailures(temporal, sandboxWorkflowId(NAMESPACE, name)).catch((e: Error) => e.message);
          if (why) firstErrors.push(`${name}: its workflow's task failures: ${why}`);
        }
        await cleanup(names, label);
        if (c === 1) {
          anatomy.push(`  ${label}: ${processLine('fastpath', before, after, figure(label).seconds ?? 1)}`);
          const slowest = [...(figure(label).calls ?? [])].sort((x, y) => y.ms - x.ms).slice(0, 3);
          for (const call of slowest)
            anatomy.push(
              `  slow: ${await timeline(temporal, sandboxWorkflowId(NAMESPACE, names[call.i]!), call.sentAt, call.ms).catch((e: Error) => e.message)}`,
            );
          anatomy.push(
            await answerAnatomy(temporal, sandboxWorkflowId(NAMESPACE, names[Math.floor(n / 2)]!)).catch(
              (e: Error) => e.message,
            ),
          );
          // Every run of the round: a workflow task that failed is a retry the figures include.
          const failures = (
            await pool(names, 8, (name) =>
              taskFailures(temporal!, sandboxWorkflowId(NAMESPACE, name)).catch((e: Error) => e.message),
            )
          ).filter(Boolean);
          anatomy.push(
            `  ${label}: workflow task failures in ${failures.length} of ${n} runs${failures.length ? `: ${failures.join(' || ')}` : ''}`,
          );
        }
      }
  }

  let sustainedLine = '';
  const cpuLines: string[] = [];
  let orphanFig: Figure | undefined;
  if (SUSTAIN_SECONDS > 0) {
    // Sustained Fast creates at the concurrency with the best throughput, deletions alongside.
    const best = CONCURRENCY.map((c) => ({ c, f: figures.get(`Fast CreateSandbox, c=${c}`)! })).sort(
      (x, y) => y.f.samples.length / y.f.seconds! - x.f.samples.length / x.f.seconds!,
    )[0]!.c;
    progress(`sustained Fast at c=${best} for ${SUSTAIN_SECONDS} s`);
    const sustained = figure(`sustained Fast CreateSandbox, c=${best}, ${SUSTAIN_SECONDS} s`);
    const toDelete: string[] = [];
    const deleted: string[] = [];
    let creating = true;
    let made = 0;
    let createdOk = 0;
    // The stack's background with nothing to do (every sandbox deleted, warm pools full): its
    // rate is taken off the figures below, which would otherwise grow with a window's length.
    const IDLE_SECONDS = 10;
    const idle = { before: cpuSnapshot(stack), after: cpuSnapshot(stack) };
    await sleep(IDLE_SECONDS * 1000);
    idle.after = cpuSnapshot(stack);
    const cpuStart = cpuSnapshot(stack);
    const tSustain = now();
    const creators = Array.from({ length: best }, async () => {
      while (creating) {
        const name = `sus-${made++}`;
        const t = now();
        try {
          await rpc!.call('CreateSandbox', createReq(name, 'FAST'));
          createdOk++;
          if (creating) sustained.samples.push(now() - t);
          toDelete.push(name);
        } catch (err) {
          const k = errorKey(err);
          sustained.errors.set(k, (sustained.errors.get(k) ?? 0) + 1);
          if (k !== 'RESOURCE_EXHAUSTED') {
            noteError(`sustained ${name}`, err);
            toDelete.push(name); // its workflow may still create it
          } else await sleep(50);
        }
      }
    });
    let deleting = true;
    const notFoundSince = new Map<string, number>();
    // Deletions start only when three quarters of the slots are taken: below that, the window
    // measures creates alone; above it, creates/s is what creates and deletes together sustain.
    const live = () => toDelete.length + best;
    const deleters = Array.from({ length: 16 }, async () => {
      while (deleting || toDelete.length > 0) {
        if (deleting && live() < SLOTS * 0.75) {
          await sleep(20);
          continue;
        }
        const name = toDelete.shift();
        if (!name) {
          await sleep(20);
          continue;
        }
        try {
          await rpc!.call('DeleteSandbox', { sandboxName: name, namespace: NAMESPACE });
          deleted.push(name);
        } catch (err) {
          // A Fast record still on its way: try again a little later (for at most 30 s).
          if ((err as grpc.ServiceError).code !== grpc.status.NOT_FOUND) noteError(`sustained delete ${name}`, err);
          else if (Date.now() - (notFoundSince.get(name) ?? notFoundSince.set(name, Date.now()).get(name)!) < 30_000)
            toDelete.push(name);
          else noteError(`sustained delete ${name}`, new Error('no Sandbox record 30 s after the answer'));
          await sleep(20);
        }
      }
    });
    await sleep(SUSTAIN_SECONDS * 1000);
    creating = false;
    const cpuWindowEnd = cpuSnapshot(stack);
    const okInWindow = sustained.samples.length;
    sustained.seconds = (now() - tSustain) / 1000;
    const deletedInWindow = deleted.length;
    await Promise.all(creators);
    deleting = false;
    await Promise.all(deleters);
    await cleanup([], 'sustained');
    const cpuEnd = cpuSnapshot(stack);
    const bench = { name: 'bench process', inTotal: false };
    cpuLines.push(
      cpuPerOperation('idle second', idle.before, idle.after, IDLE_SECONDS, bench),
      cpuPerOperation('sandbox life (create → deleted, warm pool refilled)', cpuStart, cpuEnd, createdOk, bench, idle),
      cpuPerOperation(
        'Fast create answered in the sustained window (deletes alongside)',
        cpuStart,
        cpuWindowEnd,
        okInWindow,
        bench,
        idle,
      ),
    );
    const sustainedDeletes = deletedInWindow / sustained.seconds;
    sustainedLine =
      `sustained: ${(sustained.samples.length / sustained.seconds).toFixed(1)} Fast creates/s answered ok ` +
      `(${sustained.samples.length} in ${sustained.seconds.toFixed(1)} s at c=${best}), ` +
      `${sustainedDeletes.toFixed(1)} deletes/s alongside`;

    // Orphan removal: a Fast create whose record is refused; janitor every 2 s, orphan timeout 3 s.
    progress('orphans');
    await fastpath.stop();
    fastpath = undefined;
    fastpath = await role('fastpath', fpEnv('3s', '2s'), '/healthz');
    // The policy is in force once the apiserver refuses a dry run.
    for (let i = 0; ; i++) {
      try {
        await kube.objects.create(
          {
            apiVersion: SandboxKind.apiVersion,
            kind: SandboxKind.kind,
            metadata: { name: 'orphan-probe', namespace: NAMESPACE },
            spec: SLEEP,
          },
          undefined,
          'All',
        );
        if (i > 300) throw new Error('the ValidatingAdmissionPolicy never took effect');
        await sleep(100);
      } catch {
        break;
      }
    }
    const orphans = (orphanFig = figure('orphan: answer → agent no longer reports it'));
    await Promise.all(
      Array.from({ length: ORPHANS }, async (_, i) => {
        await sleep(i * 900); // spread over the janitor's 2 s period
        const name = `orphan-${i}`;
        try {
          const res = await rpc!.call<{ sandboxId: string; agentPod: string }>(
            'CreateSandbox',
            createReq(name, 'FAST'),
          );
          const answered = now();
          const agent = fleet!.agents.find((a) => a.podName === res.agentPod)!;
          const deadline = answered + 60_000;
          for (;;) {
            const report = await agentClient.status(agent.url);
            if (!report.sandboxStatuses.some((s) => s.sandboxId === res.sandboxId)) break;
            if (now() > deadline) throw new Error(`orphan ${name} still on ${res.agentPod} after 60 s`);
            await sleep(50);
          }
          orphans.samples.push(now() - answered);
        } catch (err) {
          orphans.errors.set(errorKey(err), (orphans.errors.get(errorKey(err)) ?? 0) + 1);
          noteError(name, err);
          const why = await taskFailures(temporal!, sandboxWorkflowId(NAMESPACE, name)).catch((e: Error) => e.message);
          if (why) firstErrors.push(`${name}: its workflow's task failures: ${why}`);
        }
      }),
    );
  }

  // ---- report ----
  console.log(
    `load average at end: ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  console.log(
    `setup: ${AGENTS} agents × ${CAPACITY} slots; sandboxes run /bin/sleep 3600; janitor off during the rounds\n`,
  );
  for (const f of figures.values()) console.log(show(f));
  if (sustainedLine) console.log(sustainedLine);
  for (const line of cpuLines) console.log(line);
  const p50 = (label: string) => p(figures.get(label), 50);
  console.log('\nfloors (p50):');
  for (const c of CONCURRENCY) {
    const agent = p50(`(a) agent create, c=${c}`);
    const wf = p50(`(b) Temporal update-with-start, empty workflow, c=${c}`);
    const api = p50(`(c) apiserver create Sandbox, c=${c}`);
    const mark = (ok: boolean) => (ok ? '✓' : '✗');
    for (const pace of c === 1 ? ['', ', one at a time'] : ['']) {
      const fast = p50(`Fast CreateSandbox, c=${c}${pace}`);
      const strong = p50(`Strong CreateSandbox, c=${c}${pace}`);
      console.log(
        `  c=${c}${pace || (c === 1 ? ', back to back' : '')}: Fast ${ms(fast)} ≤ agent ${ms(agent)} + Temporal ${ms(wf)} + 5 = ${ms(agent + wf + 5)} ${mark(fast <= agent + wf + 5)}; ` +
          `Strong ${ms(strong)} ≤ Fast + apiserver ${ms(api)} + 5 = ${ms(fast + api + 5)} ${mark(strong <= fast + api + 5)}` +
          (c === 1 ? `; Fast ≤ 50 ${mark(fast <= 50)}; Strong ≤ 80 ${mark(strong <= 80)}` : ''),
      );
    }
    if (c === 1) {
      const bare = p50(`(e) bare durable create: (b) + (a) as one local activity, c=1`);
      const alone = (mode: string) => p50(`${mode} CreateSandbox, c=1, one at a time`);
      console.log(
        `  c=1: (e) bare durable create ${ms(bare)} = agent + Temporal + ${ms(bare - agent - wf)} for the local activity; ` +
          `one at a time, Fast is (e) + ${ms(alone('Fast') - bare)}, Strong is (e) + apiserver + ${ms(alone('Strong') - bare - api)}`,
      );
    }
  }
  if (orphanFig)
    console.log(
      `  orphan removal ≈ timeout 3 s + ≤ one interval 2 s: p50 ${ms(p(orphanFig, 50))} ms, max ${ms(Math.max(...orphanFig.samples))} ms`,
    );
  if (anatomy.length)
    console.log(`\nwhat a c=1 create's answer waited for (ms from its run's start):\n  ${anatomy.join('\n  ')}`);
  if (firstErrors.length) console.log(`\nfirst errors:\n  ${firstErrors.join('\n  ')}`);
  // Every workflow of the run (sandboxes, pool, quota, janitor): workflow task failures by type and cause.
  const saved = path.join(stateDir, 'failed-histories');
  const failures = await workflowTaskFailures(temporal, `TaskQueue = '${sandboxTaskQueue(cfg.temporal.taskQueue)}'`, {
    dir: saved,
    address: cfg.temporal.address,
  });
  console.log(
    `\nworkflow task failures: ${failures.total} in ${failures.runs} of ${failures.examined} runs` +
      (failures.total
        ? ` — ${[...failures.byCause].map(([k, v]) => `${k}×${v}`).join(', ')}; histories in ${saved}`
        : ''),
  );
  for (const line of failures.examples) console.log(`  ${line}`);
} finally {
  const step = async (what: string, fn: () => unknown) => {
    try {
      await fn();
    } catch (err) {
      process.stderr.write(`stopping ${what}: ${(err as Error).message}\n`);
    }
  };
  await step('grpc client', () => rpc?.close());
  await step('fast path', () => fastpath?.stop());
  await step('empty worker', async () => {
    emptyWorker?.worker.shutdown();
    await emptyWorker?.running;
  });
  await step('temporal client', () => temporal?.connection.close());
  await step('watcher', () => watcher?.stop());
  await step('agents', () => fleet?.stop());
  await step('etcd client', () => etcd.close());
  await step('stack', () => stack.stop());
  progress('stopped');
}
