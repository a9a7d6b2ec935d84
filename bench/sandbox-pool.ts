/**
 * SandboxPool scale-up on a private local stack: the time from a demand step (STEP Sandboxes
 * created at once with kubectl's API, each needing a slot) until the pool's new agent Pods are
 * Ready (status.readyPods at the size the formula asks for), and until every one of the
 * sandboxes is Running; then, after they are deleted, until the pool is back at its size for no
 * load (idle agents drained and removed).
 *
 * Setup: namespace + SandboxPool (poolMin 1, poolMax ceil(STEP / CAPACITY), bufferMin 0, bufferMax
 * 0, maxSandboxesPerPod CAPACITY); no agent of its own: the pool's workflow creates the Pods and
 * AgentFleet's kubelet half runs a real agent process for each (a real kubelet would also pull
 * the image and start a container: not measured here); watcher and fast path in this process.
 * Each round starts from one Ready agent.
 *
 * Usage: npx tsx bench/sandbox-pool.ts [ROUNDS=5] [STEP=12] [CAPACITY=4]
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { SandboxKind, SandboxPoolKind, type Sandbox, type SandboxPool } from '../src/api/sandbox.js';
import { loadConfig, loadFastPathConfig } from '../src/config.js';
import { startFastPath, type RunningFastPath } from '../src/fastpath/main.js';
import { AgentFleet } from '../src/infra/agent-fleet.js';
import { getFreePort } from '../src/infra/process.js';
import { KubeClient } from '../src/kube/client.js';
import { logger } from '../src/log.js';
import { createEtcdClient } from '../src/tenancy/etcd.js';
import { TenantProvider } from '../src/tenancy/provider.js';
import { startWatcher, type RunningWatcher } from '../src/watcher/main.js';
import { writeWorkflowBundle } from '../src/workers/bundle.js';
import { installTemporalRuntime } from '../src/workers/runtime.js';
import { benchStack, machine, summary } from './support.js';

const ROUNDS = Number(process.argv[2] ?? 5);
const STEP = Number(process.argv[3] ?? 12);
const CAPACITY = Number(process.argv[4] ?? 4);
const NAMESPACE = 'bench-pool';
const POOL = 'pool-a';
const argv = process.argv.slice(2).join(' ');

if (!process.env.DO_LOG_LEVEL) logger.level = 'error';
const log = logger.child({ bench: 'sandbox-pool' });
installTemporalRuntime(log, 'ERROR');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();

const stack = await benchStack('sandbox-pool');
const kube = KubeClient.fromKubeconfig(stack.info.kubeconfig);
const cfg = loadConfig(
  {
    temporalAddress: stack.info.temporal.address,
    namespace: stack.info.temporal.namespace,
    taskQueue: 'bench-pool',
    kubeconfig: stack.info.kubeconfig,
  },
  {},
);
const token = `bench-agent-token-${process.pid}`;
const etcd = createEtcdClient(stack.info.tenantEtcd.endpoint);
let tenants: TenantProvider | undefined;
let fleet: AgentFleet | undefined;
let watcher: RunningWatcher | undefined;
let fastpath: RunningFastPath | undefined;

const poolRef = {
  apiVersion: SandboxPoolKind.apiVersion,
  kind: SandboxPoolKind.kind,
  namespace: NAMESPACE,
  name: POOL,
};
const sandboxRef = (name: string) => ({
  apiVersion: SandboxKind.apiVersion,
  kind: SandboxKind.kind,
  namespace: NAMESPACE,
  name,
});

async function until(what: string, fn: () => Promise<boolean>, timeoutMs = 180_000): Promise<number> {
  const start = now();
  while (!(await fn())) {
    if (now() - start > timeoutMs) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
    await sleep(50);
  }
  return now() - start;
}

try {
  console.log(`machine: ${machine()}`);
  console.log(`command: npx tsx bench/sandbox-pool.ts ${argv || '(defaults)'}`);
  const bundle = path.join(stack.info.stateDir, 'sandbox-workflow-bundle.js');
  const bundled = writeWorkflowBundle(bundle, 'sandbox');
  const port = await getFreePort();
  await kube.core.createNamespace({ body: { metadata: { name: NAMESPACE } } });
  const target = Math.max(1, Math.ceil(STEP / CAPACITY));
  await kube.create({
    apiVersion: SandboxPoolKind.apiVersion,
    kind: SandboxPoolKind.kind,
    metadata: { name: POOL, namespace: NAMESPACE },
    spec: {
      capacity: { poolMin: 1, poolMax: target, bufferMin: 0, bufferMax: 0 },
      maxSandboxesPerPod: CAPACITY,
      agentTemplate: {
        spec: {
          containers: [
            { name: 'agent', image: 'durable-operators:dev', ports: [{ name: 'agent', containerPort: port }] },
          ],
        },
      },
    },
  });
  const fpDir = path.join(stack.info.stateDir, 'fastpath');
  await mkdir(fpDir, { recursive: true });
  fleet = await AgentFleet.start({
    kube,
    namespace: NAMESPACE,
    pool: POOL,
    count: 0,
    capacity: CAPACITY,
    agentKey: token,
    stateDir: fpDir,
    killGraceMs: 500,
  });
  fleet.runKubelet(100);
  const tokenFile = path.join(fpDir, 'fastpath-token');
  await writeFile(tokenFile, token, { mode: 0o600 });
  tenants = await TenantProvider.start({
    endpoints: stack.info.tenantEtcd.endpoint,
    prefix: 'bench-pool/',
    logger: log,
  });
  watcher = await startWatcher(cfg, { log });
  await watcher.watcher.waitForSync();
  await bundled;
  fastpath = await startFastPath(
    cfg,
    loadFastPathConfig({
      DO_FASTPATH_GRPC_PORT: String(await getFreePort()),
      DO_FASTPATH_HTTP_PORT: String(await getFreePort()),
      DO_FASTPATH_HOST: '127.0.0.1',
      DO_FASTPATH_JANITOR_INTERVAL: '1h',
      DO_FASTPATH_NAMESPACE: NAMESPACE,
      DO_TENANT_ETCD: stack.info.tenantEtcd.endpoint,
      DO_AGENT_TOKEN_FILE: tokenFile,
      DO_TENANT_PREFIX: 'bench-pool/',
    }),
    { tenants, workflowBundlePath: bundle },
  );
  const status = async () => (await kube.get<SandboxPool>(poolRef))?.status;
  const readyAt = (n: number) => async () => {
    const s = await status();
    return s?.readyPods === n && s.currentPods === n && s.totalAgents === n;
  };
  await until('the pool at one ready agent', readyAt(1));

  const ready: number[] = [];
  const running: number[] = [];
  const down: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const names = Array.from({ length: STEP }, (_, i) => `r${round}-sb${i}`);
    const t = now();
    await Promise.all(
      names.map((name) =>
        kube.create({
          apiVersion: SandboxKind.apiVersion,
          kind: SandboxKind.kind,
          metadata: { name, namespace: NAMESPACE },
          spec: { image: 'sleep', poolRef: POOL, command: ['/bin/sleep', '3600'] },
        } as never),
      ),
    );
    await until(`round ${round}: ${target} agents ready`, readyAt(target));
    ready.push(now() - t);
    await until(`round ${round}: every sandbox Running`, async () => {
      const phases = await Promise.all(names.map(async (n) => (await kube.get<Sandbox>(sandboxRef(n)))?.status?.phase));
      return phases.every((p) => p === 'Running');
    });
    running.push(now() - t);
    const d = now();
    await Promise.all(names.map((n) => kube.delete(sandboxRef(n))));
    await until(`round ${round}: back at one agent`, readyAt(1));
    down.push(now() - d);
    process.stderr.write(`round ${round + 1}/${ROUNDS} done\n`);
  }
  console.log(`demand step of ${STEP} sandboxes on 1 agent × ${CAPACITY} slots → ${target} agents:`);
  console.log(`  ${summary('step → agents Ready', ready)}`);
  console.log(`  ${summary('step → every sandbox Running', running)}`);
  console.log(`  ${summary('sandboxes deleted → back at 1 agent', down)}`);
} finally {
  const step = async (what: string, fn: () => unknown) => {
    try {
      await fn();
    } catch (err) {
      process.stderr.write(`stopping ${what}: ${(err as Error).message}\n`);
    }
  };
  await step('fast path', () => fastpath?.close());
  await step('watcher', () => watcher?.stop());
  await step('agents', () => fleet?.stop());
  await step('tenants', () => tenants?.stop());
  await step('etcd client', () => etcd.close());
  await step('stack', () => stack.stop());
}
