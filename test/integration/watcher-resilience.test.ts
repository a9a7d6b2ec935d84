/**
 * The watcher on the real stack: what happens while it is down is processed once after it comes
 * back, and two watchers at once still give exactly one execution per object.
 */
import type { V1ConfigMap } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { objectKeeperRef, type ObjectKeeper } from '../../src/api/objectkeeper.js';
import { followRefTo, objectKeeperWorkflowId } from '../../src/domain/objectkeeper.js';
import type { RunningWatcher } from '../../src/watcher/main.js';
import { eventually, kube, listWorkflows, startTestWatcher, startTestWorker, temporal, uniq } from '../support/env.js';

const TASK_QUEUE = uniq('tq-watcher');
const k = kube();
const ns = uniq('watcher');
let worker: { stop(): Promise<void> };
const watchers: RunningWatcher[] = [];

async function ttlKeeper(prefix: string): Promise<ObjectKeeper> {
  return k.create<ObjectKeeper>({
    apiVersion: 'deckhouse.io/v1alpha1',
    kind: 'ObjectKeeper',
    metadata: { name: uniq(prefix), labels: { suite: ns } },
    spec: { mode: 'TTL', ttl: '1h' },
  });
}

async function watcher(resyncMs = 15 * 60_000): Promise<RunningWatcher> {
  // Tiny list pages, so every (re)list here goes through pagination.
  const w = await startTestWatcher(TASK_QUEUE, { keeperVerifyIntervalMs: 30 * 60_000, resyncMs }, { pageSize: 2 });
  watchers.push(w);
  await w.watcher.waitForSync();
  return w;
}

async function executions(keeper: ObjectKeeper): Promise<string[]> {
  const runs = await listWorkflows(
    `WorkflowId = "${objectKeeperWorkflowId(keeper.metadata!.name!, keeper.metadata!.uid!)}"`,
  );
  return runs.map((r) => r.status);
}

const counter = async (w: RunningWatcher, name: string) =>
  (await w.metrics.registry.getSingleMetric(name)!.get()).values.reduce((sum, v) => sum + v.value, 0);

beforeAll(async () => {
  await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  worker = await startTestWorker(TASK_QUEUE);
});

afterAll(async () => {
  await Promise.all(watchers.map((w) => w.stop()));
  await worker?.stop();
});

describe('watcher', () => {
  const created: ObjectKeeper[] = [];

  it('processes, once, what was created, changed and deleted while it was down', async () => {
    const first = await watcher();
    // A following keeper, seen while the watcher runs.
    const followed = await k.create<V1ConfigMap>({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: uniq('f'), namespace: ns },
    });
    const follow = await k.create<ObjectKeeper>({
      apiVersion: 'deckhouse.io/v1alpha1',
      kind: 'ObjectKeeper',
      metadata: { name: uniq('follow') },
      spec: {
        mode: 'FollowObject',
        followObjectRef: followRefTo(followed),
      },
    });
    await eventually(
      'follow keeper Tracking',
      async () => (await k.get<ObjectKeeper>(objectKeeperRef(follow.metadata!.name!)))?.status?.phase === 'Tracking',
    );
    await first.stop();

    // While no watcher runs: new keepers, a changed one, a short-lived one, and the followed object deleted.
    for (let i = 0; i < 5; i++) created.push(await ttlKeeper('down'));
    await k.objects.patch(
      {
        apiVersion: 'deckhouse.io/v1alpha1',
        kind: 'ObjectKeeper',
        metadata: { name: created[0]!.metadata!.name!, labels: { changed: 'yes' } },
      },
      undefined,
      undefined,
      undefined,
      undefined,
      'application/merge-patch+json',
    );
    const ephemeral = await ttlKeeper('ephemeral');
    await k.delete(objectKeeperRef(ephemeral.metadata!.name!));
    await k.delete({ apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: followed.metadata!.name! });

    const second = await watcher();
    await second.watcher.idle();
    for (const keeper of created) {
      await eventually(`workflow for ${keeper.metadata!.name}`, async () => (await executions(keeper)).length === 1);
      expect(await executions(keeper)).toEqual(['RUNNING']);
    }
    expect(await executions(ephemeral)).toEqual([]); // never existed while anyone looked: nothing to do
    // The deletion missed while down is found by the re-list and ends the follow keeper.
    await eventually('follow keeper deleted', async () => !(await k.get(objectKeeperRef(follow.metadata!.name!))));
    await second.stop();

    // A third start re-lists everything again: all deduplicated, still one execution each.
    const third = await watcher();
    await third.watcher.idle();
    expect(await counter(third, 'durable_operators_watcher_workflows_deduplicated_total')).toBeGreaterThanOrEqual(
      created.length,
    );
    for (const keeper of created) expect(await executions(keeper)).toEqual(['RUNNING']);
    await third.stop();
  });

  it('gives exactly one execution per object when two watchers run at once', async () => {
    const [a, b] = await Promise.all([watcher(), watcher()]);
    const keepers = await Promise.all(Array.from({ length: 20 }, () => ttlKeeper('twin')));
    created.push(...keepers);
    for (const keeper of keepers) {
      await eventually(`workflow for ${keeper.metadata!.name}`, async () => (await executions(keeper)).length > 0);
    }
    await Promise.all([a.watcher.idle(), b.watcher.idle()]);
    for (const keeper of keepers) expect(await executions(keeper)).toEqual(['RUNNING']);
    const started =
      (await counter(a, 'durable_operators_watcher_workflows_started_total')) +
      (await counter(b, 'durable_operators_watcher_workflows_started_total'));
    expect(started).toBe(keepers.length);
  });

  it('restarts, at the next resync, a workflow someone terminated', async () => {
    const w = await watcher(1500);
    const keeper = await ttlKeeper('terminated');
    created.push(keeper);
    await eventually('running', async () => (await executions(keeper)).includes('RUNNING'));
    const id = objectKeeperWorkflowId(keeper.metadata!.name!, keeper.metadata!.uid!);
    await (await temporal()).workflow.getHandle(id).terminate('operator mistake');
    await eventually('a new run after the resync', async () => {
      const runs = await executions(keeper);
      return runs.includes('TERMINATED') && runs.includes('RUNNING');
    });
    await w.stop();
  });

  afterAll(async () => {
    // Deleting the keepers ends their workflows (keeperDeleted signal) — nothing left running.
    const w = await watcher();
    for (const keeper of created) await k.delete(objectKeeperRef(keeper.metadata!.name!));
    for (const keeper of created) {
      await eventually('workflow ended', async () => (await executions(keeper)).every((s) => s !== 'RUNNING'));
    }
    await w.stop();
  });
});
