/**
 * A request's workflow is not live work once the request is done: it ends with the request's
 * terminal condition (the TTL is the sweep's, as the original's scanner), so the Web UI shows it
 * Completed — not Running on a day-long timer, which stayed behind when the request or its
 * namespace was deleted while no watcher saw it. And a request deleted while its operation runs
 * ends its workflow without a failed workflow task.
 */
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { createActivities } from '../../src/activities/index.js';
import type { ManifestCaptureRequest } from '../../src/api/manifests.js';
import { requestWorkflowId, type RequestRef } from '../../src/domain/requests.js';
import { connectWorker, dataConverterOf } from '../../src/temporal/connection.js';
import type { RunningWatcher } from '../../src/watcher/main.js';
import { manifestCaptureRequestWorkflow, requestDeletedSignal } from '../../src/workflows/requests/contract.js';
import {
  eventually,
  kube,
  replayAndRecord,
  startTestWatcher,
  startTestWorker,
  temporal,
  testConfig,
  uniq,
} from '../support/env.js';
import { waitTerminal } from '../support/requests.js';

const TASK_QUEUE = uniq('tq-endings');
const k = kube();
let worker: { stop(): Promise<void> };
let watcher: RunningWatcher;

beforeAll(async () => {
  worker = await startTestWorker(TASK_QUEUE);
  watcher = await startTestWatcher(TASK_QUEUE);
  await watcher.watcher.waitForSync();
});

afterAll(async () => {
  await watcher?.stop();
  await worker?.stop();
});

it('deleting a terminal request sends its ended workflow no delete hint (one would race its completion)', async () => {
  // Under load the hint reached the workflow while its last task completed it: UnhandledCommand.
  const ns = uniq('endings-hint');
  await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  const mcr = await k.create<ManifestCaptureRequest>({
    apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1',
    kind: 'ManifestCaptureRequest',
    metadata: { name: 'done', namespace: ns },
    spec: { targets: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'absent' }] },
  });
  await waitTerminal<ManifestCaptureRequest>(k, mcr);
  const { metrics } = watcher;
  const count = async (metric: typeof metrics.eventsSeen | typeof metrics.signalsSent, label: string, value: string) =>
    (await metric.get()).values
      .filter((v) => (v.labels as Record<string, unknown>)[label] === value)
      .reduce((n, v) => n + v.value, 0);
  const deletedSeen = await count(metrics.eventsSeen, 'type', 'DELETED');
  const hints = await count(metrics.signalsSent, 'signal', 'requestDeleted');
  await k.delete({ apiVersion: mcr.apiVersion!, kind: mcr.kind!, namespace: ns, name: 'done' });
  await eventually('the watcher to see the deletion', async () => {
    if ((await count(metrics.eventsSeen, 'type', 'DELETED')) <= deletedSeen) return false;
    return (await metrics.queueDepth.get()).values.every((v) => v.value === 0);
  });
  await new Promise((r) => setTimeout(r, 1000)); // a hint, had one been queued, is sent by now
  expect(await count(metrics.signalsSent, 'signal', 'requestDeleted')).toBe(hints);
  await k.delete({ apiVersion: 'v1', kind: 'Namespace', name: ns });
});

it("a terminal request's workflow ends with it: no TTL timer, nothing left when its namespace goes", async () => {
  const ns = uniq('endings');
  await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  const mcr = await k.create<ManifestCaptureRequest>({
    apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1',
    kind: 'ManifestCaptureRequest',
    metadata: { name: 'missing', namespace: ns },
    spec: { targets: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'absent' }] },
  });
  const done = await waitTerminal<ManifestCaptureRequest>(k, mcr);
  expect(done.ready).toMatchObject({ status: 'False', reason: 'NotFound' });
  const handle = (await temporal()).workflow.getHandle(
    requestWorkflowId({ kind: 'ManifestCaptureRequest', namespace: ns, name: 'missing', uid: mcr.metadata!.uid! }),
  );
  await eventually(
    'the workflow of the terminal request to end',
    async () => (await handle.describe()).status.name === 'COMPLETED',
    {
      timeoutMs: 30_000,
    },
  );
  expect(await handle.result()).toMatch(/^NotFound: /);
  const history = await handle.fetchHistory();
  expect((history.events ?? []).filter((e) => e.timerStartedEventAttributes)).toEqual([]);

  // The watcher is stopped, so nothing would tell a waiting workflow; none waits.
  await watcher.stop();
  await k.delete({ apiVersion: 'v1', kind: 'Namespace', name: ns });
  expect((await handle.describe()).status.name).toBe('COMPLETED');
});

it('a request deleted while its operation runs ends its workflow with no failed workflow task', async () => {
  // The race the requests bench hit under load (TMPRL1100 "Invalid transition in state machine"):
  // one workflow task brings the delete hint and the capture's last regular activity together,
  // so the hint's check (readRequest) and the capture's next step (setCheckpointStatus) run as
  // local activities at once. The check finds the request gone and the operation is cancelled
  // while the SDK core already holds setCheckpointStatus's result. Made deterministic here: the
  // workflow worker is down while the hint and the activity's completion arrive, and
  // setCheckpointStatus returns just after the check.
  await watcher.stop(); // this test is the watcher: the request's one workflow is the one it starts
  const queue = uniq('tq-delete-race');
  const cfg = testConfig(queue);
  const k8s = kube();
  const client = await temporal();
  const real = createActivities({ kube: k8s, requests: cfg.requests });
  const connection = await connectWorker(cfg.temporal);
  const common = {
    connection,
    namespace: cfg.temporal.namespace,
    taskQueue: queue,
    dataConverter: dataConverterOf(cfg.temporal),
  };
  const ns = uniq('delete-race');
  await k8s.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  // 100 targets: a capture this large writes its chunks in a regular activity (a smaller one's
  // write is a local activity of the same workflow task).
  const names = Array.from({ length: 100 }, (_, i) => `cm-${i}`);
  await Promise.all(
    names.map((name) =>
      k8s.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns }, data: { a: 'b' } }),
    ),
  );
  const mcr = await k8s.create<ManifestCaptureRequest>({
    apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1',
    kind: 'ManifestCaptureRequest',
    metadata: { name: 'raced', namespace: ns },
    spec: { targets: names.map((name) => ({ apiVersion: 'v1', kind: 'ConfigMap', name })) },
  });
  const ref: RequestRef = {
    apiVersion: mcr.apiVersion!,
    kind: 'ManifestCaptureRequest',
    namespace: ns,
    name: 'raced',
    uid: mcr.metadata!.uid!,
  };
  const workflowId = requestWorkflowId(ref);

  // Regular activities on their own worker: the capture's write waits for the test's go.
  let written!: () => void;
  const wroteContent = new Promise<void>((r) => (written = r));
  let go!: () => void;
  const released = new Promise<void>((r) => (go = r));
  const activityWorker = await Worker.create({
    ...common,
    activities: {
      ...real,
      async writeCheckpointContent(...args: Parameters<typeof real.writeCheckpointContent>) {
        const result = await real.writeCheckpointContent(...args);
        written();
        await released;
        return result;
      },
    },
  });
  const workflowWorker = (activities: typeof real) =>
    Worker.create({
      ...common,
      workflowBundle: { codePath: inject('workflowBundle') },
      activities,
      enableNonLocalActivities: false,
      stickyQueueScheduleToStartTimeout: '1s',
    });
  const activitiesRunning = activityWorker.run();
  const first = await workflowWorker(real);
  const firstRunning = first.run();
  try {
    const handle = await client.workflow.start(manifestCaptureRequestWorkflow, {
      workflowId,
      taskQueue: queue,
      args: [{ ref }],
    });
    await wroteContent;
    // The workflow worker goes; the request is deleted, the hint sent, the write completes.
    first.shutdown();
    await firstRunning;
    await k8s.delete({ apiVersion: ref.apiVersion, kind: ref.kind, namespace: ns, name: 'raced' });
    await handle.signal(requestDeletedSignal);
    go();
    await eventually('the write recorded as completed', async () =>
      (await handle.fetchHistory()).events?.some((e) => e.activityTaskCompletedEventAttributes),
    );

    // A new workflow worker takes both in one task. Both local activities answer in the same tick
    // of this process, the check first: the core has setCheckpointStatus's result before the
    // workflow has even seen the check's.
    let release!: () => void;
    const bothDone = new Promise<void>((r) => (release = r));
    let done = 0;
    const arrived = () => {
      if (++done === 2) release();
    };
    const second = await workflowWorker({
      ...real,
      async readRequest(r) {
        const view = await real.readRequest(r);
        arrived();
        await bothDone;
        return view;
      },
      async setCheckpointStatus(input) {
        const result = await real.setCheckpointStatus(input);
        arrived();
        await bothDone;
        for (let i = 0; i < 5; i++) await null; // a few microtasks behind the check, same tick
        return result;
      },
    });
    const secondRunning = second.run();
    try {
      const failedOrDone = await eventually(
        'the workflow to complete or a workflow task to fail',
        async () => {
          const events = (await handle.fetchHistory()).events ?? [];
          const failed = events.filter((e) => e.workflowTaskFailedEventAttributes);
          if (failed.length) return failed.map((e) => e.workflowTaskFailedEventAttributes!.failure?.message);
          return events.some((e) => e.workflowExecutionCompletedEventAttributes) ? [] : undefined;
        },
        { timeoutMs: 60_000 },
      );
      expect(failedOrDone).toEqual([]);
      expect(await handle.result()).toMatch(/deleted/);
      await replayAndRecord(workflowId, 'manifest-capture-deleted-during-local-calls');
    } finally {
      second.shutdown();
      await secondRunning;
    }
  } finally {
    go();
    if (first.getState() === 'RUNNING') first.shutdown();
    await firstRunning;
    activityWorker.shutdown();
    await activitiesRunning;
    await connection.close();
    await k8s.delete({ apiVersion: 'v1', kind: 'Namespace', name: ns });
  }
});
