/**
 * Fire-and-forget request figures on the real local stack (watcher → Temporal → worker →
 * kube-apiserver → garbage collector):
 *
 *   1. capture of a namespace with N ConfigMaps (~1 KiB each): create → Ready, bytes stored;
 *   2. M requests created at once: time until all terminal, then zero orphans after TTL + GC;
 *   3. request deleted → checkpoint and chunks garbage-collected, p50;
 *   4. workflow task failures of every workflow the bench ran, by cause (none expected).
 *
 * The TTL is applied as in production, by the sweep Schedule (DO_BENCH_TTL, default 60s; swept
 * every DO_BENCH_TTL_SWEEP, default 10s). The worker's and watcher's logs (warn and above, the
 * SDK's task failures among them) go to .state/bench-requests/bench.log.
 *
 * CPU per request, per component: the stack's cgroups (src/infra/cpu-accounting.ts) and this
 * process, which runs the worker and the watcher (and the load, a small share) — for the burst
 * (created → all terminal) and for the reaping (TTL + GC until no orphan), each less the idle
 * rate of a quiet window before the burst.
 *
 * Usage: npx tsx bench/requests.ts [configMaps=1000] [requests=1000] [deletions=20]
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { KubernetesObject } from '@kubernetes/client-node';
import { Worker } from '@temporalio/worker';
import { pino } from 'pino';
import { CHECKPOINT_LABEL, type ManifestCaptureRequest, type ManifestCheckpoint } from '../src/api/manifests.js';
import { createActivities } from '../src/activities/index.js';
import { loadConfig } from '../src/config.js';
import { isTerminal } from '../src/domain/requests.js';
import { KubeClient } from '../src/kube/client.js';
import { connectClient, connectWorker, dataConverterOf } from '../src/temporal/connection.js';
import { workflowSource } from '../src/workers/bundle.js';
import { installTemporalRuntime } from '../src/workers/runtime.js';
import { ensureRequestTtlSweep } from '../src/workers/schedules.js';
import { startWatcher } from '../src/watcher/main.js';
import {
  benchStack,
  cpuAccountingLine,
  cpuPerOperation,
  cpuSnapshot,
  machine,
  percentile,
  pool,
  summary,
  workflowTaskFailures,
} from './support.js';

const CONFIG_MAPS = Number(process.argv[2] ?? 1000);
const REQUESTS = Number(process.argv[3] ?? 1000);
const DELETIONS = Number(process.argv[4] ?? 20);
const TTL = process.env.DO_BENCH_TTL ?? '60s';
const SWEEP = process.env.DO_BENCH_TTL_SWEEP ?? '10s';
const GV = 'state-snapshotter.deckhouse.io/v1alpha1';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const stack = await benchStack('requests');
const logFile = path.join(stack.info.stateDir, 'bench.log');
const log = pino({ level: 'warn', base: { bench: 'requests' } }, pino.destination({ dest: logFile, mkdir: true }));
installTemporalRuntime(log);
try {
  const kube = KubeClient.fromKubeconfig(stack.info.kubeconfig);
  const cfg = loadConfig(
    { temporalAddress: stack.info.temporal.address, kubeconfig: stack.info.kubeconfig, taskQueue: 'bench' },
    { DO_REQUEST_TTL: TTL, DO_REQUEST_TTL_SWEEP_INTERVAL: SWEEP },
  );
  const client = await connectClient(cfg.temporal);
  await ensureRequestTtlSweep(client, cfg);
  const worker = await Worker.create({
    connection: await connectWorker(cfg.temporal),
    dataConverter: dataConverterOf(cfg.temporal),
    taskQueue: 'bench',
    ...workflowSource(),
    activities: createActivities({ kube, requests: cfg.requests }),
    maxConcurrentActivityTaskExecutions: 64,
  });
  const running = worker.run();
  const watcher = await startWatcher(cfg, { log });
  await watcher.watcher.waitForSync();
  console.log(`machine: ${machine()}`);
  console.log(cpuAccountingLine(stack));
  console.log(
    `command: npx tsx bench/requests.ts ${process.argv.slice(2).join(' ')} (TTL ${TTL}, swept every ${SWEEP})`,
  );

  const createMcr = (namespace: string, name: string, targets: string[]) =>
    kube.create<ManifestCaptureRequest>({
      apiVersion: GV,
      kind: 'ManifestCaptureRequest',
      metadata: { name, namespace },
      spec: { targets: targets.map((t) => ({ apiVersion: 'v1', kind: 'ConfigMap', name: t })) },
    });
  const listAll = async <T extends KubernetesObject>(apiVersion: string, kind: string, namespace?: string) => {
    const out: T[] = [];
    for await (const obj of kube.listAll<T>(apiVersion, kind, { namespace })) out.push(obj);
    return out;
  };
  const namespace = async (name: string) => kube.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });

  // 1. One capture of N ConfigMaps of ~1 KiB (random text, so compression is realistic, not ideal).
  await namespace('bench-capture');
  const names = Array.from({ length: CONFIG_MAPS }, (_, i) => `cm-${String(i).padStart(5, '0')}`);
  await pool(names, 16, (name) =>
    kube.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: 'bench-capture', labels: { app: 'bench' } },
      data: {
        'settings.json': JSON.stringify({ name, blob: randomBytes(300).toString('hex'), note: 'x'.repeat(300) }),
      },
    }),
  );
  const jsonBytes = (await listAll<KubernetesObject>('v1', 'ConfigMap', 'bench-capture'))
    .filter((o) => o.metadata!.name!.startsWith('cm-'))
    .reduce((n, o) => n + JSON.stringify(o).length, 0);
  const t0 = Date.now();
  const big = await createMcr('bench-capture', 'capture-all', names);
  let done: ManifestCaptureRequest | undefined;
  while (!done) {
    const now = await kube.get<ManifestCaptureRequest>({
      apiVersion: GV,
      kind: big.kind,
      namespace: 'bench-capture',
      name: 'capture-all',
    });
    if (now && isTerminal(now.status?.conditions)) done = now;
    else await sleep(50);
  }
  const captureMs = Date.now() - t0;
  const mcp = (await kube.get<ManifestCheckpoint>({
    apiVersion: GV,
    kind: 'ManifestCheckpoint',
    name: done.status!.checkpointName!,
  }))!;
  const chunks = await kube.listPage<KubernetesObject & { spec: { data: string } }>(
    GV,
    'ManifestCheckpointContentChunk',
    {
      labelSelector: `${CHECKPOINT_LABEL}=${mcp.metadata!.name!}`,
    },
  );
  const encoded = chunks.items.reduce((n, c) => n + c.spec.data.length, 0);
  console.log(
    `capture of ${CONFIG_MAPS} ConfigMaps (${(jsonBytes / 1024).toFixed(0)} KiB as JSON): create → Ready ${captureMs} ms; ` +
      `${mcp.status!.totalObjects} objects in ${chunks.items.length} chunk(s), ${mcp.status!.totalSizeBytes} gzip bytes, ` +
      `${encoded} base64 chars stored (${((100 * encoded) / jsonBytes).toFixed(1)}% of the JSON)`,
  );

  // 2. M requests at once (one ConfigMap each, spread over 10 namespaces).
  const spaces = Array.from({ length: 10 }, (_, i) => `bench-burst-${i}`);
  for (const ns of spaces) {
    await namespace(ns);
    await kube.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'cm', namespace: ns },
      data: { a: 'b' },
    });
  }
  // The servers' background with nothing to do: taken off the windows below.
  const idle = { before: cpuSnapshot(stack), after: cpuSnapshot(stack) };
  await sleep(10_000);
  idle.after = cpuSnapshot(stack);
  const inProcess = { name: 'worker + watcher (this process)', inTotal: true };
  const cpuBurst = cpuSnapshot(stack);
  const tBurst = Date.now();
  const burst = await pool(
    Array.from({ length: REQUESTS }, (_, i) => i),
    32,
    (i) => createMcr(spaces[i % spaces.length]!, `burst-${i}`, ['cm']),
  );
  const createdMs = Date.now() - tBurst;
  const burstUids = new Set(burst.map((r) => r.metadata!.uid!));
  // Terminal = seen with a terminal Ready condition, or already gone (reaped after its TTL).
  const terminalAt = new Map<string, number>();
  let completed = 0;
  while (terminalAt.size < REQUESTS) {
    const live = new Map(
      (await listAll<ManifestCaptureRequest>(GV, 'ManifestCaptureRequest'))
        .filter((r) => burstUids.has(r.metadata!.uid!))
        .map((r) => [r.metadata!.uid!, r]),
    );
    for (const uid of burstUids) {
      if (terminalAt.has(uid)) continue;
      const r = live.get(uid);
      if (r && !isTerminal(r.status?.conditions)) continue;
      const ts = r?.status?.completionTimestamp;
      terminalAt.set(uid, ts ? Date.parse(ts) : Date.now());
      if (r?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) completed++;
    }
    if (terminalAt.size < REQUESTS) await sleep(2000);
  }
  const cpuTerminal = cpuSnapshot(stack);
  // completionTimestamp has second precision: the last one bounds the burst from above.
  const terminalMs = Math.max(...terminalAt.values()) + 1000 - tBurst;
  console.log(
    `${REQUESTS} requests created at once (creates took ${createdMs} ms): all terminal after ≤ ${terminalMs} ms ` +
      `(${completed} seen Completed before their TTL), ${(REQUESTS / (terminalMs / 1000)).toFixed(1)} requests/s`,
  );
  // TTL → workflows delete the requests → keepers follow → GC removes checkpoints and chunks.
  const tReap = Date.now();
  const orphans = async () => {
    const requests = (await listAll<ManifestCaptureRequest>(GV, 'ManifestCaptureRequest')).filter((r) =>
      burstUids.has(r.metadata!.uid!),
    );
    const keepers = (
      await listAll<KubernetesObject & { spec: { followObjectRef?: { uid: string } } }>(
        'deckhouse.io/v1alpha1',
        'ObjectKeeper',
      )
    ).filter((k) => burstUids.has(k.spec.followObjectRef?.uid ?? ''));
    const checkpoints = (await listAll<ManifestCheckpoint>(GV, 'ManifestCheckpoint')).filter((c) =>
      burstUids.has(c.spec.manifestCaptureRequestRef.uid),
    );
    const mcpNames = new Set(burst.map((r) => `mcp-${r.metadata!.uid!}`));
    const chunks = (
      await listAll<KubernetesObject & { spec: { checkpointName: string } }>(GV, 'ManifestCheckpointContentChunk')
    ).filter((c) => mcpNames.has(c.spec.checkpointName));
    return {
      requests: requests.length,
      keepers: keepers.length,
      checkpoints: checkpoints.length,
      chunks: chunks.length,
    };
  };
  let left = await orphans();
  while (left.requests + left.keepers + left.checkpoints + left.chunks > 0 && Date.now() - tReap < 15 * 60_000) {
    await sleep(5000);
    left = await orphans();
  }
  const cpuReaped = cpuSnapshot(stack);
  console.log(cpuPerOperation('request, created → terminal', cpuBurst, cpuTerminal, REQUESTS, inProcess, idle));
  console.log(cpuPerOperation('request, TTL → reaped by GC', cpuTerminal, cpuReaped, REQUESTS, inProcess, idle));
  console.log(cpuPerOperation('request, whole life', cpuBurst, cpuReaped, REQUESTS, inProcess, idle));
  console.log(
    `after TTL ${TTL} + GC: ${JSON.stringify(left)} left of ${REQUESTS} requests (all zero = no orphans), ` +
      `${((Date.now() - tReap) / 1000).toFixed(0)} s after the last became terminal`,
  );

  // 3. Request deleted → checkpoint gone (keeper deleted by its workflow, then one GC hop) → chunks gone.
  await namespace('bench-delete');
  await kube.create({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'cm', namespace: 'bench-delete' },
    data: { a: 'b' },
  });
  const toCheckpoint: number[] = [];
  const toChunks: number[] = [];
  for (let i = 0; i < DELETIONS; i++) {
    const r = await createMcr('bench-delete', `del-${i}`, ['cm']);
    let cp: string | undefined;
    while (!cp) {
      const now = await kube.get<ManifestCaptureRequest>({
        apiVersion: GV,
        kind: r.kind,
        namespace: 'bench-delete',
        name: `del-${i}`,
      });
      if (now && isTerminal(now.status?.conditions)) cp = now.status!.checkpointName!;
      else await sleep(20);
    }
    const tDel = Date.now();
    await kube.delete({ apiVersion: GV, kind: r.kind, namespace: 'bench-delete', name: `del-${i}` });
    while (await kube.get({ apiVersion: GV, kind: 'ManifestCheckpoint', name: cp })) await sleep(20);
    toCheckpoint.push(Date.now() - tDel);
    while (
      (await kube.listPage(GV, 'ManifestCheckpointContentChunk', { labelSelector: `${CHECKPOINT_LABEL}=${cp}` })).items
        .length
    )
      await sleep(20);
    toChunks.push(Date.now() - tDel);
  }
  console.log(summary(`request deleted → checkpoint garbage-collected (${DELETIONS}, one at a time)`, toCheckpoint));
  console.log(summary(`request deleted → chunks garbage-collected`, toChunks));
  console.log(
    `p50 request deleted → all artifacts gone: ${percentile(
      [...toChunks].sort((a, b) => a - b),
      50,
    )} ms`,
  );

  // 4. Every workflow task that failed, by cause: each is a retry, and a nondeterminism one is a bug.
  const saved = path.join(stack.info.stateDir, 'failed-histories');
  const failures = await workflowTaskFailures(client, `TaskQueue = 'bench'`, {
    dir: saved,
    address: stack.info.temporal.address,
  });
  console.log(
    `workflow task failures: ${failures.total} in ${failures.runs} of ${failures.examined} runs` +
      (failures.total ? ` — ${[...failures.byCause].map(([k, v]) => `${k}×${v}`).join(', ')}` : '') +
      `; logs in ${logFile}${failures.runs ? `, histories in ${saved}` : ''}`,
  );
  for (const line of failures.examples) console.log(`  ${line}`);

  await watcher.stop();
  worker.shutdown();
  await running;
  await client.connection.close();
} finally {
  await stack.stop();
}
