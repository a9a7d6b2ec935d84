/**
 * The floor under issue 35's figures: what the parts a sandbox life and a request cannot do
 * without cost alone, per component, on the same stack and CPU accounting as bench/fastpath.ts
 * and bench/requests.ts (src/infra/cpu-accounting.ts; each less the idle rate of a quiet window):
 *
 *   (a) a durable entity's life: update-with-start answered in the first workflow task, a
 *       deletion signal, the end in the second task — no activity, no search attribute;
 *   (b) a Kubernetes record's life: a Sandbox created with a finalizer, its status written once,
 *       deleted, the finalizer removed — no Event, no annotation;
 *   (c) a request's least workflow: started and completed in its first task;
 *   (d) the same with a request run's visibility work: started with its K8s search attributes,
 *       two patch markers (each upserts TemporalChangeVersion), its phase upserted once.
 *
 * Nothing of the product runs: the worker is this process's, on bench/workflows/floor.ts, so its
 * CPU (with the load's client calls) is "this process". The container runtime's own share is
 * bench/runtime-cpu.ts's (bare containerd lives); containerd is not started here.
 *
 * Usage: npx tsx bench/life-floor.ts [lives=300] [concurrency=16]
 */
import path from 'node:path';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { pino } from 'pino';
import { SANDBOX_FINALIZER, SandboxKind, type Sandbox } from '../src/api/sandbox.js';
import { loadConfig } from '../src/config.js';
import { KubeClient } from '../src/kube/client.js';
import { connectClient, connectWorker, dataConverterOf } from '../src/temporal/connection.js';
import { installTemporalRuntime } from '../src/workers/runtime.js';
import {
  benchStack,
  cpuAccountingLine,
  cpuPerOperation,
  cpuSnapshot,
  machine,
  pool,
  type CpuSnapshot,
} from './support.js';
import { K8sKind, K8sName, K8sNamespace, OperationPhase } from '../src/temporal/search-attributes.js';
import {
  answerUpdate,
  deletingSignal,
  floorIndexedRequestWorkflow,
  floorLifeWorkflow,
  floorRequestWorkflow,
} from './workflows/floor.js';

const LIVES = Number(process.argv[2] ?? 300);
const C = Number(process.argv[3] ?? 16);
const NAMESPACE = 'bench-floor';
const IDLE_SECONDS = 10;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const stack = await benchStack('floor', { containerd: false });
const log = pino(
  { level: 'warn' },
  pino.destination({ dest: path.join(stack.info.stateDir, 'bench.log'), mkdir: true }),
);
installTemporalRuntime(log);
try {
  const kube = KubeClient.fromKubeconfig(stack.info.kubeconfig);
  const cfg = loadConfig({ temporalAddress: stack.info.temporal.address, kubeconfig: stack.info.kubeconfig }, {});
  const client = await connectClient(cfg.temporal);
  const taskQueue = 'bench-floor';
  const worker = await Worker.create({
    connection: await connectWorker(cfg.temporal),
    dataConverter: dataConverterOf(cfg.temporal),
    namespace: cfg.temporal.namespace,
    taskQueue,
    workflowsPath: path.join(import.meta.dirname, 'workflows', 'floor.ts'),
  });
  const running = worker.run();
  await kube.core.createNamespace({ body: { metadata: { name: NAMESPACE } } });
  console.log(`machine: ${machine()}`);
  console.log(cpuAccountingLine(stack));
  console.log(`${LIVES} lives of each kind, ${C} in flight; npx tsx bench/life-floor.ts ${LIVES} ${C}\n`);

  let serial = 0;
  const entityLife = async () => {
    const workflowId = `floor-life-${serial++}`;
    await client.workflow.executeUpdateWithStart(answerUpdate, {
      args: ['created'],
      startWorkflowOperation: new WithStartWorkflowOperation(floorLifeWorkflow, {
        workflowId,
        taskQueue,
        workflowIdConflictPolicy: 'USE_EXISTING',
      }),
    });
    const handle = client.workflow.getHandle(workflowId);
    await handle.signal(deletingSignal);
    await handle.result();
  };
  const sandboxRef = (name: string) => ({ ...SandboxKind, namespace: NAMESPACE, name });
  const recordLife = async () => {
    const name = `floor-record-${serial++}`;
    const created = await kube.create<Sandbox>({
      apiVersion: SandboxKind.apiVersion,
      kind: SandboxKind.kind,
      metadata: { name, namespace: NAMESPACE, finalizers: [SANDBOX_FINALIZER] },
      spec: { image: 'sleep', poolRef: 'floor', command: ['sleep', '3600'] },
    } as Sandbox);
    const uid = created.metadata!.uid!;
    await kube.patchCustomStatus(sandboxRef(name), { phase: 'Running', sandboxID: uid, assignedPod: 'agent-0' }, uid);
    await kube.delete(sandboxRef(name), { uid });
    await kube.mergePatch(sandboxRef(name), { metadata: { finalizers: null } }, { uid });
  };
  const requestWorkflow = async () => {
    await client.workflow.execute(floorRequestWorkflow, { workflowId: `floor-request-${serial++}`, taskQueue });
  };

  const indexedRequestWorkflow = async () => {
    const name = `floor-indexed-${serial++}`;
    await client.workflow.execute(floorIndexedRequestWorkflow, {
      workflowId: name,
      taskQueue,
      typedSearchAttributes: [
        { key: K8sKind, value: 'ManifestCaptureRequest' },
        { key: K8sNamespace, value: NAMESPACE },
        { key: K8sName, value: name },
        { key: OperationPhase, value: 'pending' },
      ],
    });
  };

  // Warm-up (connections, the bundle's first load, JIT): not measured.
  for (let i = 0; i < 10; i++)
    await Promise.all([entityLife(), recordLife(), requestWorkflow(), indexedRequestWorkflow()]);

  const idle = { before: cpuSnapshot(stack), after: cpuSnapshot(stack) };
  await sleep(IDLE_SECONDS * 1000);
  idle.after = cpuSnapshot(stack);
  const self = { name: 'this process (worker + load)', inTotal: true };
  const measure = async (what: string, one: () => Promise<void>, counted = self): Promise<string> => {
    const before: CpuSnapshot = cpuSnapshot(stack);
    const t0 = performance.now();
    await pool(
      Array.from({ length: LIVES }, (_, i) => i),
      C,
      () => one(),
    );
    const after = cpuSnapshot(stack);
    const rate = (LIVES / ((performance.now() - t0) / 1000)).toFixed(1);
    return `${cpuPerOperation(what, before, after, LIVES, counted, idle)}; ${rate}/s at c=${C}`;
  };
  console.log(cpuPerOperation('idle second', idle.before, idle.after, IDLE_SECONDS, self));
  console.log(
    await measure('(a) durable entity life: update-with-start answered, a deletion signal, the end', entityLife),
  );
  console.log(
    await measure(
      '(b) Kubernetes record life: create with a finalizer, one status write, delete, finalizer removed',
      recordLife,
      { name: 'this process (the client)', inTotal: false },
    ),
  );
  console.log(await measure('(c) request workflow: started and completed in its first task', requestWorkflow));
  console.log(
    await measure('(d) (c) with K8s search attributes, two patch markers and one phase upsert', indexedRequestWorkflow),
  );
  worker.shutdown();
  await running;
} finally {
  await stack.stop();
}
