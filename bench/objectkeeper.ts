/**
 * Followed object deleted → ObjectKeeper gone, on a private real stack with watcher and worker.
 * Latency = the keeper's DELETED watch event − the moment the followed object's delete returned.
 * The original design polls every 2 minutes. Usage: npx tsx bench/objectkeeper.ts [N=50]
 */
import type { KubernetesObject, V1ConfigMap } from '@kubernetes/client-node';
import { Worker } from '@temporalio/worker';
import { createActivities } from '../src/activities/index.js';
import type { ObjectKeeper } from '../src/api/objectkeeper.js';
import { loadConfig } from '../src/config.js';
import { followRefTo } from '../src/domain/objectkeeper.js';
import { KubeClient } from '../src/kube/client.js';
import { logger } from '../src/log.js';
import { connectWorker, dataConverterOf } from '../src/temporal/connection.js';
import { startWatcher } from '../src/watcher/main.js';
import { workflowsEntry } from '../src/workers/bundle.js';
import { installTemporalRuntime } from '../src/workers/runtime.js';
import { benchStack, machine, pool, summary } from './support.js';

const N = Number(process.argv[2] ?? 50);
const stack = await benchStack('objectkeeper');
const log = logger.child({ bench: 'objectkeeper' });
log.level = 'error';
installTemporalRuntime(log);
try {
  const kube = KubeClient.fromKubeconfig(stack.info.kubeconfig);
  const cfg = {
    ...loadConfig(
      { temporalAddress: stack.info.temporal.address, kubeconfig: stack.info.kubeconfig, taskQueue: 'bench' },
      {},
    ),
    keeperVerifyIntervalMs: 60 * 60_000, // measure the event path, not the backstop
  };
  const worker = await Worker.create({
    connection: await connectWorker(cfg.temporal),
    dataConverter: dataConverterOf(cfg.temporal),
    taskQueue: 'bench',
    workflowsPath: workflowsEntry(),
    activities: createActivities({ kube, requests: cfg.requests }),
  });
  const running = worker.run();
  const watcher = await startWatcher(cfg, { log });
  await watcher.watcher.waitForSync();
  console.log(`machine: ${machine()}`);

  const pairs = await pool(
    Array.from({ length: N }, (_, i) => i),
    4,
    async (i) => {
      const cm = await kube.create<V1ConfigMap>({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: `followed-${i}`, namespace: 'default' },
      });
      const keeper = await kube.create<ObjectKeeper>({
        apiVersion: 'deckhouse.io/v1alpha1',
        kind: 'ObjectKeeper',
        metadata: { name: `keeper-${i}` },
        spec: {
          mode: 'FollowObject',
          followObjectRef: followRefTo(cm),
        },
      });
      return { cm, keeper };
    },
  );
  // Wait until every keeper is Tracking (its workflow is running).
  for (;;) {
    const list = await kube.listPage<ObjectKeeper>('deckhouse.io/v1alpha1', 'ObjectKeeper');
    if (list.items.filter((k) => k.status?.phase === 'Tracking').length === N) break;
    await new Promise((r) => setTimeout(r, 200));
  }

  // Watch keeper deletions and time them against the followed object's delete.
  const goneAt = new Map<string, number>();
  const watch = await kube.newWatch().watch(
    await kube.collectionPath('deckhouse.io/v1alpha1', 'ObjectKeeper'),
    {},
    (type: string, obj: KubernetesObject) => {
      if (type === 'DELETED') goneAt.set(obj.metadata!.name!, Date.now());
    },
    () => {},
  );
  const latencies: number[] = [];
  for (const { cm, keeper } of pairs) {
    await kube.delete({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: cm.metadata!.name! });
    const deletedAt = Date.now();
    while (!goneAt.has(keeper.metadata!.name!)) await new Promise((r) => setTimeout(r, 5));
    latencies.push(goneAt.get(keeper.metadata!.name!)! - deletedAt);
  }
  watch.abort();
  console.log(summary(`followed object deleted → keeper gone (${N} keepers, one at a time)`, latencies));
  await watcher.stop();
  worker.shutdown();
  await running;
} finally {
  await stack.stop();
}
