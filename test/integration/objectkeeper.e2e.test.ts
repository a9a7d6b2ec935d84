/**
 * ObjectKeeper end to end on the real stack: watcher → Temporal → worker → kube-apiserver, and
 * the real garbage collector removing what the keeper owned.
 */
import type { V1ConfigMap } from '@kubernetes/client-node';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { objectKeeperRef, type ObjectKeeper, type ObjectKeeperSpec } from '../../src/api/objectkeeper.js';
import { followRefTo, objectKeeperWorkflowId, ownedByKeeper } from '../../src/domain/objectkeeper.js';
import { objectKeeperWorkflow } from '../../src/workflows/objectkeeper/contract.js';
import { findBinary } from '../../src/infra/binaries.js';
import type { RunningWatcher } from '../../src/watcher/main.js';
import {
  REPO_ROOT,
  eventually,
  kube,
  stackInfo,
  listWorkflows,
  startTestWatcher,
  startTestWorker,
  temporal,
  uniq,
} from '../support/env.js';

const TASK_QUEUE = uniq('tq-keeper');
const HISTORY_DIR = path.join(REPO_ROOT, 'test/fixtures/histories');
const k = kube();
const ns = uniq('keeper-e2e');
let worker: { stop(): Promise<void> };
let watcher: RunningWatcher;

const cmRef = (name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name });

async function createConfigMap(name: string, owner?: ObjectKeeper): Promise<V1ConfigMap> {
  return k.create<V1ConfigMap>({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name,
      namespace: ns,
      // The keeper as the create response returned it: the UID barrier.
      ownerReferences: owner ? [ownedByKeeper(owner)] : undefined,
    },
    data: { hello: 'world' },
  });
}

async function createKeeper(spec: ObjectKeeperSpec): Promise<ObjectKeeper> {
  return k.create<ObjectKeeper>({
    apiVersion: 'deckhouse.io/v1alpha1',
    kind: 'ObjectKeeper',
    metadata: { name: uniq('keeper') },
    spec,
  });
}

const followRef = followRefTo;

const gone = (ref: Parameters<typeof k.get>[0]) => async () => (await k.get(ref)) === undefined;

async function workflowResult(keeper: ObjectKeeper): Promise<string> {
  const c = await temporal();
  return c.workflow.getHandle(objectKeeperWorkflowId(keeper.metadata!.name!, keeper.metadata!.uid!)).result();
}

beforeAll(async () => {
  await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  worker = await startTestWorker(TASK_QUEUE);
  // A long backstop interval: these tests pass only if the event-driven path works.
  watcher = await startTestWatcher(TASK_QUEUE, { keeperVerifyIntervalMs: 30 * 60_000 });
  await watcher.watcher.waitForSync();
});

afterAll(async () => {
  await watcher?.stop();
  await worker?.stop();
});

describe('ObjectKeeper FollowObject', () => {
  it('deletes itself when the followed object is deleted, and the GC removes what it owned', async () => {
    const followed = await createConfigMap(uniq('followed'));
    const keeper = await createKeeper({ mode: 'FollowObject', followObjectRef: followRef(followed) });
    const owned = await createConfigMap(uniq('owned'), keeper);

    const tracking = await eventually('keeper Tracking', async () => {
      const kp = await k.get<ObjectKeeper>(objectKeeperRef(keeper.metadata!.name!));
      return kp?.status?.phase === 'Tracking' ? kp : undefined;
    });
    expect(tracking.status?.conditions?.find((c) => c.type === 'Active')?.status).toBe('True');

    await k.delete(cmRef(followed.metadata!.name!));
    await eventually('keeper deleted', gone(objectKeeperRef(keeper.metadata!.name!)));
    await eventually('owned ConfigMap garbage-collected', gone(cmRef(owned.metadata!.name!)));
    expect(await workflowResult(keeper)).toMatch(/^deleted: .*was deleted/);
  });

  it('treats a followed object recreated under the same name as gone, and leaves the new object alone', async () => {
    const name = uniq('recreated');
    const first = await createConfigMap(name);
    const keeper = await createKeeper({ mode: 'FollowObject', followObjectRef: followRef(first) });
    const owned = await createConfigMap(uniq('owned'), keeper);
    await eventually(
      'keeper Tracking',
      async () => (await k.get<ObjectKeeper>(objectKeeperRef(keeper.metadata!.name!)))?.status?.phase === 'Tracking',
    );

    await k.delete(cmRef(name));
    const second = await createConfigMap(name);
    expect(second.metadata!.uid).not.toBe(first.metadata!.uid);

    await eventually('keeper deleted', gone(objectKeeperRef(keeper.metadata!.name!)));
    await eventually('owned ConfigMap garbage-collected', gone(cmRef(owned.metadata!.name!)));
    const survivor = await k.get<V1ConfigMap>(cmRef(name));
    expect(survivor?.metadata?.uid).toBe(second.metadata!.uid);
  });

  it('deletes itself at once when the followed name already belongs to another UID', async () => {
    const live = await createConfigMap(uniq('live'));
    const keeper = await createKeeper({
      mode: 'FollowObject',
      followObjectRef: { ...followRef(live), uid: '00000000-0000-0000-0000-000000000000' },
    });
    const owned = await createConfigMap(uniq('owned'), keeper);
    await eventually('keeper deleted', gone(objectKeeperRef(keeper.metadata!.name!)));
    await eventually('owned ConfigMap garbage-collected', gone(cmRef(owned.metadata!.name!)));
    expect(await workflowResult(keeper)).toMatch(/was recreated/);
    expect(await k.get(cmRef(live.metadata!.name!))).toBeDefined();
  });
});

describe('ObjectKeeper TTL modes', () => {
  it('TTL: expires ttl after creation; the GC then removes what it owned', async () => {
    const keeper = await createKeeper({ mode: 'TTL', ttl: '4s' });
    const owned = await createConfigMap(uniq('owned'), keeper);
    const waiting = await eventually('keeper WaitingTTL', async () => {
      const kp = await k.get<ObjectKeeper>(objectKeeperRef(keeper.metadata!.name!));
      return kp?.status?.phase === 'WaitingTTL' ? kp : undefined;
    });
    const created = Date.parse(keeper.metadata!.creationTimestamp as unknown as string);
    expect(Date.parse(waiting.status!.expiresAt!)).toBe(created + 4000);

    await eventually('keeper deleted', gone(objectKeeperRef(keeper.metadata!.name!)));
    // The delete happened at or after expiry (the apiserver's clock, second precision).
    expect(Date.now()).toBeGreaterThanOrEqual(created + 4000);
    await eventually('owned ConfigMap garbage-collected', gone(cmRef(owned.metadata!.name!)));
    expect(await workflowResult(keeper)).toMatch(/ttl 4s expired/);
  });

  it('FollowObjectWithTTL: records lostAt when the object goes, then expires ttl after lostAt', async () => {
    const followed = await createConfigMap(uniq('followed'));
    const keeper = await createKeeper({ mode: 'FollowObjectWithTTL', followObjectRef: followRef(followed), ttl: '5s' });
    const owned = await createConfigMap(uniq('owned'), keeper);
    await eventually(
      'keeper Tracking',
      async () => (await k.get<ObjectKeeper>(objectKeeperRef(keeper.metadata!.name!)))?.status?.phase === 'Tracking',
    );

    await k.delete(cmRef(followed.metadata!.name!));
    const waiting = await eventually('keeper WaitingTTL with lostAt', async () => {
      const kp = await k.get<ObjectKeeper>(objectKeeperRef(keeper.metadata!.name!));
      return kp?.status?.phase === 'WaitingTTL' && kp.status.lostAt ? kp : undefined;
    });
    expect(Date.parse(waiting.status!.expiresAt!)).toBe(Date.parse(waiting.status!.lostAt!) + 5000);
    // The owned object survives the loss itself; only the TTL releases it.
    expect(await k.get(cmRef(owned.metadata!.name!))).toBeDefined();

    await eventually('keeper deleted', gone(objectKeeperRef(keeper.metadata!.name!)));
    await eventually('owned ConfigMap garbage-collected', gone(cmRef(owned.metadata!.name!)));
  });
});

describe('ObjectKeeper signals are hints, verified before acting', () => {
  it('a stray followedObjectChanged leaves a keeper whose object is still there alone', async () => {
    const followed = await createConfigMap(uniq('followed'));
    const keeper = await createKeeper({ mode: 'FollowObject', followObjectRef: followRef(followed) });
    await eventually(
      'keeper Tracking',
      async () => (await k.get<ObjectKeeper>(objectKeeperRef(keeper.metadata!.name!)))?.status?.phase === 'Tracking',
    );
    const handle = (await temporal()).workflow.getHandle(
      objectKeeperWorkflowId(keeper.metadata!.name!, keeper.metadata!.uid!),
    );
    // By wire name, as `temporal workflow signal --name followedObjectChanged` sends it.
    await handle.signal('followedObjectChanged', { event: 'manual' });
    await eventually(
      'the re-check ran',
      async () => (await handle.query<{ checks: number }>('keeperState')).checks >= 1,
    );
    expect((await k.get<ObjectKeeper>(objectKeeperRef(keeper.metadata!.name!)))?.status?.phase).toBe('Tracking');
    await k.delete(cmRef(followed.metadata!.name!));
    await eventually('keeper deleted', gone(objectKeeperRef(keeper.metadata!.name!)));
  });

  it('a stray keeperDeleted does not orphan a live keeper: it still expires', async () => {
    const keeper = await createKeeper({ mode: 'TTL', ttl: '6s' });
    const handle = (await temporal()).workflow.getHandle(
      objectKeeperWorkflowId(keeper.metadata!.name!, keeper.metadata!.uid!),
    );
    await eventually(
      'keeper WaitingTTL',
      async () => (await k.get<ObjectKeeper>(objectKeeperRef(keeper.metadata!.name!)))?.status?.phase === 'WaitingTTL',
    );
    await handle.signal('keeperDeleted');
    expect(await handle.result()).toMatch(/ttl 6s expired/);
    expect(await k.get(objectKeeperRef(keeper.metadata!.name!))).toBeUndefined();
  });
});

describe('ObjectKeeper continue-as-new', () => {
  it('continues at a quiet moment past its history bound, carrying what it follows, and still ends with the object', async () => {
    const followed = await createConfigMap(uniq('followed'));
    const keeper = await createKeeper({ mode: 'FollowObject', followObjectRef: followRef(followed) });
    // A second workflow for the keeper, under its own ID: no hint reaches it, so every wait is quiet.
    const c = await temporal();
    const workflowId = `keeper-continued/${keeper.metadata!.uid!}`;
    const first = await c.workflow.start(objectKeeperWorkflow, {
      workflowId,
      taskQueue: TASK_QUEUE,
      args: [
        {
          name: keeper.metadata!.name!,
          uid: keeper.metadata!.uid!,
          spec: keeper.spec,
          creationTimestamp: new Date(keeper.metadata!.creationTimestamp!).toISOString(),
          verifyIntervalMs: 300,
          continueAfterEvents: 20,
        },
      ],
    });
    await eventually('the first run continued as new', async () => {
      const d = await c.workflow.getHandle(workflowId, first.firstExecutionRunId).describe();
      return d.status.name === 'CONTINUED_AS_NEW';
    });
    const history = await c.workflow.getHandle(workflowId, first.firstExecutionRunId).fetchHistory();
    const markers = (history.events ?? []).filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch');
    expect(markers.length).toBeGreaterThan(0);
    if (process.env.DO_RECORD_HISTORIES === '1') {
      const show = spawnSync(
        findBinary('temporal')!.path,
        [
          'workflow',
          'show',
          '--address',
          stackInfo().temporal.address,
          '-w',
          workflowId,
          '-r',
          first.firstExecutionRunId,
          '-o',
          'json',
        ],
        { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
      );
      expect(show.status, show.stderr).toBe(0);
      await writeFile(path.join(HISTORY_DIR, 'objectkeeper-follow-continued-local.json'), show.stdout);
    }

    await k.delete(cmRef(followed.metadata!.name!));
    // The watcher's own workflow for the keeper may delete it first: then this chain finds it gone.
    expect(await c.workflow.getHandle(workflowId).result()).toMatch(
      /^((deleted|already gone): .*was deleted|keeper already gone)$/,
    );
    await eventually('keeper deleted', gone(objectKeeperRef(keeper.metadata!.name!)));
  });
});

describe('the watcher’s keeperDeleted hint', () => {
  it('tells a keeper a person deleted, and none whose own workflow deleted it', async () => {
    const keeper = await createKeeper({ mode: 'TTL', ttl: '1h' });
    await eventually(
      'keeper WaitingTTL',
      async () => (await k.get<ObjectKeeper>(objectKeeperRef(keeper.metadata!.name!)))?.status?.phase === 'WaitingTTL',
    );
    await k.delete(objectKeeperRef(keeper.metadata!.name!));
    expect(await workflowResult(keeper)).toBe('keeper deleted before expiry');
    await watcher.watcher.idle();
    // Every other keeper of this file deleted itself (its TTL up, or the object it followed lost):
    // a hint to those would only race their run's last task (UnhandledCommand).
    const signals = await watcher.metrics.registry.getSingleMetric('durable_operators_watcher_signals_total')!.get();
    const told = signals.values.filter((v) => v.labels.signal === 'keeperDeleted').reduce((n, v) => n + v.value, 0);
    expect(told).toBe(1);
  });
});

describe('ObjectKeeper workflows', () => {
  it('are one execution per keeper, findable by search attributes, and replay deterministically', async () => {
    // Visibility is eventually consistent: wait for every keeper of this file to show up completed.
    // The same query for the list and the histories: other kinds' workflows complete on this queue too.
    const query = `K8sKind = "ObjectKeeper" AND TaskQueue = "${TASK_QUEUE}" AND ExecutionStatus = "Completed"`;
    const done = await eventually('7 completed keeper workflows in visibility', async () => {
      const list = await listWorkflows(query);
      return list.length >= 7 ? list : undefined;
    });
    const ids = done.map((w) => w.workflowId);
    expect(new Set(ids).size).toBe(ids.length);

    const c = await temporal();
    const histories = c.workflow.list({ query }).intoHistories();
    let replayed = 0;
    for await (const result of Worker.runReplayHistories(
      { workflowBundle: { codePath: inject('workflowBundle') } },
      histories,
    )) {
      expect(result.error, `${result.workflowId} replay`).toBeUndefined();
      replayed++;
    }
    expect(replayed).toBe(done.length);
    // Their reads and status writes are local activities (issue 35): the only activity tasks are
    // the calls a run may end after (its own deletion, the check of a deletion hint).
    for (const wf of done) {
      const events = (await c.workflow.getHandle(wf.workflowId).fetchHistory()).events ?? [];
      const scheduled = events.flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
      expect(
        scheduled.filter((n) => n !== 'deleteObjectKeeper' && n !== 'readObjectKeeper'),
        wf.workflowId,
      ).toEqual([]);
    }

    // DO_RECORD_HISTORIES=1 refreshes the histories that test/unit/replay.test.ts replays, so a
    // later change to the workflow code that breaks running executions fails fast, without a server.
    if (process.env.DO_RECORD_HISTORIES === '1') {
      const categories: Array<[RegExp, string]> = [
        [/^deleted: .*was deleted$/, 'follow-deleted'],
        [/was recreated/, 'follow-recreated'],
        [/ttl 4s expired/, 'ttl'],
        [/ttl 5s expired/, 'follow-with-ttl'],
        [/ttl 6s expired/, 'ttl-stray-keeper-deleted-signal'],
        [/^keeper deleted before expiry$/, 'ttl-deleted-by-person'],
      ];
      await mkdir(HISTORY_DIR, { recursive: true });
      for (const wf of done) {
        const handle = c.workflow.getHandle(wf.workflowId);
        const result = await handle.result();
        const category = categories.find(([re]) => re.test(result))?.[1];
        if (!category) continue;
        // The CLI's proto-JSON export is the format `historyFromJSON` reads back.
        const show = spawnSync(
          findBinary('temporal')!.path,
          ['workflow', 'show', '--address', stackInfo().temporal.address, '-w', wf.workflowId, '-o', 'json'],
          { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
        );
        expect(show.status, show.stderr).toBe(0);
        await writeFile(path.join(HISTORY_DIR, `objectkeeper-${category}-local.json`), show.stdout);
      }
    }
  });
});
