/**
 * The worker is SIGKILLed in the middle of keeper workflows; after a restart the operations
 * complete, each exactly once.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { objectKeeperRef, type ObjectKeeper } from '../../src/api/objectkeeper.js';
import { followRefTo, objectKeeperWorkflowId, ownedByKeeper } from '../../src/domain/objectkeeper.js';
import { getFreePort, type ManagedProcess } from '../../src/infra/process.js';
import type { RunningWatcher } from '../../src/watcher/main.js';
import {
  eventually,
  kube,
  listWorkflows,
  spawnRole,
  startTestWatcher,
  temporal,
  uniq,
  waitForWorker,
} from '../support/env.js';

const TASK_QUEUE = uniq('tq-crash');
const k = kube();
const ns = uniq('crash');
let watcher: RunningWatcher;
let worker: ManagedProcess | undefined;

const cmRef = (name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name });

async function ownedConfigMap(owner: ObjectKeeper): Promise<V1ConfigMap> {
  return k.create<V1ConfigMap>({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: uniq('owned'),
      namespace: ns,
      ownerReferences: [ownedByKeeper(owner)],
    },
  });
}

async function phase(name: string): Promise<string | undefined> {
  return (await k.get<ObjectKeeper>(objectKeeperRef(name)))?.status?.phase;
}

async function activityCount(workflowId: string, activityType: string): Promise<number> {
  const history = await (await temporal()).workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).filter(
    (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === activityType,
  ).length;
}

beforeAll(async () => {
  await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  watcher = await startTestWatcher(TASK_QUEUE, { keeperVerifyIntervalMs: 30 * 60_000 });
  await watcher.watcher.waitForSync();
});

afterAll(async () => {
  await worker?.stop();
  await watcher?.stop();
});

it('completes timers and signals that span a worker SIGKILL, without duplicates', async () => {
  const metricsPort = await getFreePort();
  worker = spawnRole('worker', TASK_QUEUE, 'worker-crash-1', { DO_WORKER_METRICS_ADDRESS: `127.0.0.1:${metricsPort}` });
  await waitForWorker(TASK_QUEUE, worker);
  // The worker's SDK metrics are scrapeable (what the Deployment's metrics port serves).
  const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  expect(metrics).toMatch(/temporal_worker_task_slots_available\{/);

  // A TTL keeper whose timer is pending when the worker dies…
  const ttlKeeper = await k.create<ObjectKeeper>({
    apiVersion: 'deckhouse.io/v1alpha1',
    kind: 'ObjectKeeper',
    metadata: { name: uniq('crash-ttl') },
    spec: { mode: 'TTL', ttl: '20s' },
  });
  const ttlOwned = await ownedConfigMap(ttlKeeper);
  // …and a following keeper whose followed object is deleted while the worker is dead.
  const followed = await k.create<V1ConfigMap>({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: uniq('followed'), namespace: ns },
  });
  const followKeeper = await k.create<ObjectKeeper>({
    apiVersion: 'deckhouse.io/v1alpha1',
    kind: 'ObjectKeeper',
    metadata: { name: uniq('crash-follow') },
    spec: {
      mode: 'FollowObject',
      followObjectRef: followRefTo(followed),
    },
  });
  const followOwned = await ownedConfigMap(followKeeper);

  await eventually('TTL keeper waiting', async () => (await phase(ttlKeeper.metadata!.name!)) === 'WaitingTTL', {
    timeoutMs: 180_000,
  });
  await eventually('follow keeper tracking', async () => (await phase(followKeeper.metadata!.name!)) === 'Tracking');

  await worker.kill(); // SIGKILL: no graceful shutdown
  expect(worker.running).toBe(false);
  await k.delete(cmRef(followed.metadata!.name!));
  // With no worker, nothing happens past the TTL: the work is parked in Temporal, not lost.
  const expiry = Date.parse(ttlKeeper.metadata!.creationTimestamp as unknown as string) + 20_000;
  await eventually('TTL passed', async () => Date.now() > expiry + 2000, { timeoutMs: 60_000 });
  expect(await k.get(objectKeeperRef(ttlKeeper.metadata!.name!))).toBeDefined();
  expect(await k.get(objectKeeperRef(followKeeper.metadata!.name!))).toBeDefined();

  worker = spawnRole('worker', TASK_QUEUE, 'worker-crash-2');
  for (const [keeper, owned] of [
    [ttlKeeper, ttlOwned],
    [followKeeper, followOwned],
  ] as const) {
    await eventually(
      `${keeper.metadata!.name} deleted`,
      async () => !(await k.get(objectKeeperRef(keeper.metadata!.name!))),
      { timeoutMs: 180_000 },
    );
    await eventually('owned object garbage-collected', async () => !(await k.get(cmRef(owned.metadata!.name!))));
    const id = objectKeeperWorkflowId(keeper.metadata!.name!, keeper.metadata!.uid!);
    expect(await (await temporal()).workflow.getHandle(id).result()).toMatch(/^deleted: /);
    // Visibility is eventually consistent; the run list must settle on exactly one completed run.
    await eventually('one completed execution', async () => {
      const runs = await listWorkflows(`WorkflowId = "${id}"`);
      return runs.length === 1 && runs[0]!.status === 'COMPLETED';
    });
    expect(await activityCount(id, 'deleteObjectKeeper')).toBe(1);
  }
});
