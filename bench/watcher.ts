/**
 * Watcher benchmarks on a private real stack (no worker needed: we measure starts).
 *   1. event → workflow started: N keepers created one stream; latency = Temporal's execution
 *      start time − the moment the apiserver acknowledged the create.
 *   2. re-list: M keepers created while no watcher runs; time from watcher start until every
 *      workflow is started; then a second watcher start must start nothing (zero duplicates).
 * Usage: npx tsx bench/watcher.ts [N=1000] [M=10000] [creates per second=50]
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { loadConfig } from '../src/config.js';
import { KubeClient } from '../src/kube/client.js';
import { logger } from '../src/log.js';
import { connectClient } from '../src/temporal/connection.js';
import { startWatcher } from '../src/watcher/main.js';
import { benchStack, machine, pool, summary } from './support.js';

const N = Number(process.argv[2] ?? 1000);
const M = Number(process.argv[3] ?? 10_000);
/** Creates per second for the latency run (objects arriving at a steady pace, below capacity). */
const RATE = Number(process.argv[4] ?? 50);

const stack = await benchStack('watcher');
const log = logger.child({ bench: 'watcher' });
log.level = 'error';
try {
  const kube = KubeClient.fromKubeconfig(stack.info.kubeconfig);
  const cfg = loadConfig(
    { temporalAddress: stack.info.temporal.address, kubeconfig: stack.info.kubeconfig, taskQueue: 'bench' },
    {},
  );
  const temporal = await connectClient(cfg.temporal);
  const keeper = (name: string): KubernetesObject =>
    ({
      apiVersion: 'deckhouse.io/v1alpha1',
      kind: 'ObjectKeeper',
      metadata: { name },
      spec: { mode: 'TTL', ttl: '24h' },
    }) as KubernetesObject;

  console.log(`machine: ${machine()}`);

  // 1. Latency, watcher running.
  const w1 = await startWatcher(cfg, { log });
  await w1.watcher.waitForSync();
  const sent = new Map<string, number>();
  const acked = new Map<string, number>();
  const pace = 1000 / RATE;
  const paceStart = Date.now();
  await pool(
    Array.from({ length: N }, (_, i) => i),
    8,
    async (i) => {
      const due = paceStart + i * pace;
      if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
      const t = Date.now();
      const obj = await kube.create(keeper(`lat-${i}`));
      sent.set(obj.metadata!.uid!, t);
      acked.set(obj.metadata!.uid!, Date.now());
    },
  );
  await w1.watcher.idle();
  await waitForCount(`K8sName STARTS_WITH "lat-"`, N);
  const fromAck: number[] = [];
  const fromSend: number[] = [];
  for await (const wf of temporal.workflow.list({ query: `K8sName STARTS_WITH "lat-"` })) {
    const uid = wf.workflowId.split('/')[2]!;
    fromAck.push(wf.startTime.getTime() - acked.get(uid)!);
    fromSend.push(wf.startTime.getTime() - sent.get(uid)!);
  }
  console.log(summary(`create acknowledged → workflow started (${N} objects at ${RATE}/s)`, fromAck));
  console.log(summary(`create sent → workflow started`, fromSend));
  const lag = (await w1.metrics.dispatchLag.get()).values.filter((v) => v.metricName?.endsWith('_bucket'));
  const le = (limit: number) => lag.find((v) => (v.labels as Record<string, unknown>).le === limit)?.value ?? 0;
  console.log(
    `  watcher event received → start acknowledged: ${le(0.01)}/${N} ≤10ms, ${le(0.05)}/${N} ≤50ms, ${le(0.25)}/${N} ≤250ms`,
  );
  await w1.stop();

  // 2. Re-list of M objects created while no watcher runs.
  const t0 = Date.now();
  await pool(
    Array.from({ length: M }, (_, i) => `relist-${i}`),
    16,
    async (name) => kube.create(keeper(name)),
  );
  console.log(`created ${M} keepers in ${((Date.now() - t0) / 1000).toFixed(1)}s (watcher down)`);
  const startedAt = Date.now();
  const w2 = await startWatcher(cfg, { log });
  await w2.watcher.waitForSync();
  await w2.watcher.idle();
  const relistSeconds = (Date.now() - startedAt) / 1000;
  const started2 = (await w2.metrics.workflowsStarted.get()).values.reduce((a, v) => a + v.value, 0);
  await w2.stop();
  const total = await waitForCount(`K8sName STARTS_WITH "relist-"`, M);
  console.log(
    `re-list of ${M + N} existing objects → ${started2} workflows started in ${relistSeconds.toFixed(1)}s; executions in Temporal: ${total}`,
  );

  const w3 = await startWatcher(cfg, { log });
  await w3.watcher.waitForSync();
  await w3.watcher.idle();
  const started3 = (await w3.metrics.workflowsStarted.get()).values.reduce((a, v) => a + v.value, 0);
  const dedup3 = (await w3.metrics.workflowsDeduplicated.get()).values.reduce((a, v) => a + v.value, 0);
  await w3.stop();
  const after = await temporal.workflow.count(`K8sKind = "ObjectKeeper"`);
  console.log(
    `second re-list: started ${started3}, deduplicated ${dedup3}; total executions ${after.count} for ${M + N} objects`,
  );

  async function waitForCount(query: string, want: number): Promise<number> {
    for (;;) {
      const { count } = await temporal.workflow.count(query);
      if (count >= want) return count;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  await temporal.connection.close();
} finally {
  await stack.stop();
}
