/**
 * Crash between every pair of steps of a manifest capture: the worker SIGKILLs itself right
 * after a step's side effects and before Temporal records the step as done
 * (DO_FAULT_KILL_AFTER_ACTIVITY). A fresh worker then finishes the request. Whatever the crash
 * point: exactly one keeper, one checkpoint, exactly the chunks the checkpoint lists, one
 * workflow execution, and the request completes.
 */
import { randomBytes } from 'node:crypto';
import type { KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  CHECKPOINT_LABEL,
  type ManifestCaptureRequest,
  type ManifestCheckpoint,
  type ManifestCheckpointContentChunk,
} from '../../src/api/manifests.js';
import type { ObjectKeeper } from '../../src/api/objectkeeper.js';
import { reassemble } from '../../src/codec/manifest-chunks.js';
import { exportCheckpoint } from '../../src/cli/checkpoint.js';
import { checkpointNameFor, requestWorkflowId } from '../../src/domain/requests.js';
import type { ManagedProcess } from '../../src/infra/process.js';
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
import { expectGcValidOwners } from '../support/ownership.js';
import { waitTerminal } from '../support/requests.js';

const TASK_QUEUE = uniq('tq-mcr-crash');
const k = kube();
const ns = uniq('mcr-crash');
const GROUP_VERSION = 'state-snapshotter.deckhouse.io/v1alpha1';
let watcher: RunningWatcher;
let worker: ManagedProcess | undefined;

/** The steps of a manifest capture, in order (activity types). */
const STEPS = ['beginRequest', 'prepareCapture', 'writeCheckpointContent', 'setCheckpointStatus', 'finalizeRequest'];

async function listAll<T extends KubernetesObject>(kind: string, labelSelector?: string): Promise<T[]> {
  const apiVersion = kind === 'ObjectKeeper' ? 'deckhouse.io/v1alpha1' : GROUP_VERSION;
  return (await k.listPage<T>(apiVersion, kind, { labelSelector })).items;
}

/**
 * How often the history records `activityType` as done: regular activities as a completion event
 * (with the attempt that completed), local activities as a `core_local_activity` marker.
 */
async function recordedCompletions(
  workflowId: string,
  activityType: string,
): Promise<{ count: number; lastAttempt: number; local: boolean }> {
  const history = await (await temporal()).workflow.getHandle(workflowId).fetchHistory();
  const events = history.events ?? [];
  let count = 0;
  let lastAttempt = 0;
  let local = false;
  const scheduled = new Set(
    events
      .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === activityType)
      .map((e) => Number(e.eventId)),
  );
  for (const e of events) {
    const started = e.activityTaskStartedEventAttributes;
    if (started && scheduled.has(Number(started.scheduledEventId))) lastAttempt = started.attempt ?? 0;
    const completed = e.activityTaskCompletedEventAttributes;
    if (completed && scheduled.has(Number(completed.scheduledEventId))) count++;
    const marker = e.markerRecordedEventAttributes;
    if (marker?.markerName === 'core_local_activity') {
      const data = marker.details?.data?.payloads?.[0]?.data;
      const meta = data ? (JSON.parse(Buffer.from(data).toString('utf8')) as { activity_type?: string }) : {};
      if (meta.activity_type === activityType) {
        count++;
        local = true;
      }
    }
  }
  return { count, lastAttempt, local };
}

beforeAll(async () => {
  await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  // Two ConfigMaps of incompressible data, so a capture spans two chunks.
  for (const name of ['blob-a', 'blob-b']) {
    await k.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: ns },
      data: { blob: randomBytes(450_000).toString('base64') },
    });
  }
  await k.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'small', namespace: ns }, data: { a: 'b' } });
  watcher = await startTestWatcher(TASK_QUEUE);
  await watcher.watcher.waitForSync();
});

afterAll(async () => {
  await worker?.stop();
  await watcher?.stop();
});

it.each(STEPS)(
  'a crash right after %s leaves one keeper, one checkpoint, no extra chunks, and the request completes',
  async (step) => {
    worker = spawnRole('worker', TASK_QUEUE, `worker-crash-${step}`, { DO_FAULT_KILL_AFTER_ACTIVITY: step });
    await waitForWorker(TASK_QUEUE, worker);
    const mcr = await k.create<ManifestCaptureRequest>({
      apiVersion: GROUP_VERSION,
      kind: 'ManifestCaptureRequest',
      metadata: { name: uniq(`crash-${step.toLowerCase()}`), namespace: ns },
      spec: {
        targets: ['small', 'blob-a', 'blob-b'].map((name) => ({ apiVersion: 'v1', kind: 'ConfigMap', name })),
      },
    });
    const uid = mcr.metadata!.uid!;
    await eventually(`worker killed after ${step}`, async () => !worker!.running, { timeoutMs: 60_000 });
    expect(worker.logTail(20)).toContain(`fault injection: SIGKILL after ${step}`);

    worker = spawnRole('worker', TASK_QUEUE, `worker-recover-${step}`);
    const done = await waitTerminal<ManifestCaptureRequest>(k, mcr);
    const workflowId = requestWorkflowId({
      kind: 'ManifestCaptureRequest',
      namespace: ns,
      name: mcr.metadata!.name!,
      uid,
    });
    // The crashed step ran again and is recorded exactly once. A regular activity's retry shows
    // as attempt ≥ 2; a local activity's re-execution after the lost workflow task leaves one marker.
    // Except a crash after setCheckpointStatus or finalizeRequest in a small capture's one
    // workflow task: the rerun finds the checkpoint Ready or the request terminal (the durable
    // results) and does not write them again.
    const result = await (await temporal()).workflow.getHandle(workflowId).result();
    const skipped =
      (step === 'setCheckpointStatus' && /is ready$/.test(done.ready.message ?? '')) ||
      (step === 'finalizeRequest' && /terminal before this run$/.test(String(result)));
    if (!skipped) {
      const recorded = await eventually(`${step} recorded`, async () => {
        const r = await recordedCompletions(workflowId, step);
        return r.count > 0 ? r : undefined;
      });
      expect(recorded.count).toBe(1);
      if (!recorded.local) expect(recorded.lastAttempt).toBeGreaterThanOrEqual(2);
    }
    await worker.stop();
    worker = undefined;

    expect(done.ready).toMatchObject({ status: 'True', reason: 'Completed' });
    const keepers = (await listAll<ObjectKeeper>('ObjectKeeper')).filter((o) => o.spec.followObjectRef?.uid === uid);
    expect(keepers).toHaveLength(1);
    const checkpoints = (await listAll<ManifestCheckpoint>('ManifestCheckpoint')).filter(
      (o) => o.spec.manifestCaptureRequestRef.uid === uid,
    );
    expect(checkpoints).toHaveLength(1);
    const mcp = checkpoints[0]!;
    expect(mcp.metadata!.name).toBe(done.status!.checkpointName);
    expect(mcp.metadata!.ownerReferences?.map((o) => o.uid)).toEqual([keepers[0]!.metadata!.uid]);
    await expectGcValidOwners(k, mcp);
    const chunks = await listAll<ManifestCheckpointContentChunk>(
      'ManifestCheckpointContentChunk',
      `${CHECKPOINT_LABEL}=${mcp.metadata!.name!}`,
    );
    expect(mcp.status!.chunks!.length).toBeGreaterThanOrEqual(2);
    expect(chunks.map((c) => c.metadata!.name).sort()).toEqual(mcp.status!.chunks!.map((c) => c.name).sort());
    const objects = reassemble(
      mcp.status!.chunks!,
      chunks.map((c) => ({ name: c.metadata!.name, ...c.spec })),
    ) as KubernetesObject[];
    expect(objects.map((o) => o.metadata!.name)).toEqual(['blob-a', 'blob-b', 'small']);

    expect(await listWorkflows(`WorkflowId = '${workflowId}'`)).toHaveLength(1);
  },
  180_000,
);

/**
 * Chunks are the one artifact a retry may replace: a retry re-reads the targets, and when they
 * changed since the crashed attempt, a chunk of the same name holds other content. The checkpoint
 * is not Ready until its status lists every chunk with its checksum (one write, after the last
 * chunk), so a reader never sees a mixture: before, export refuses the checkpoint as in progress;
 * after, every chunk matches the table, or export fails naming the chunk.
 */
it('a retry that captures changed content replaces the chunks; a reader sees in-progress or the final set, never a mix', async () => {
  const cm = { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: uniq('changing') };
  await k.create({ ...cm, metadata: { name: cm.name, namespace: ns }, data: { v: 'first' } });
  worker = spawnRole('worker', TASK_QUEUE, 'worker-crash-changed', {
    DO_FAULT_KILL_AFTER_ACTIVITY: 'writeCheckpointContent',
  });
  await waitForWorker(TASK_QUEUE, worker);
  const mcr = await k.create<ManifestCaptureRequest>({
    apiVersion: GROUP_VERSION,
    kind: 'ManifestCaptureRequest',
    metadata: { name: uniq('crash-changed'), namespace: ns },
    spec: { targets: [{ apiVersion: 'v1', kind: 'ConfigMap', name: cm.name }] },
  });
  await eventually('worker killed after writeCheckpointContent', async () => !worker!.running, { timeoutMs: 60_000 });
  const checkpoint = checkpointNameFor(mcr.metadata!.uid!);
  const [first] = await listAll<ManifestCheckpointContentChunk>(
    'ManifestCheckpointContentChunk',
    `${CHECKPOINT_LABEL}=${checkpoint}`,
  );
  expect(first).toBeDefined();
  // The crashed attempt's chunk exists, but its checkpoint is not Ready: export refuses it.
  await expect(exportCheckpoint(k, checkpoint)).rejects.toThrow(/is not Ready: .*still in progress/);

  await k.mergePatch(cm, { data: { v: 'second' } });
  worker = spawnRole('worker', TASK_QUEUE, 'worker-recover-changed');
  const done = await waitTerminal<ManifestCaptureRequest>(k, mcr);
  await worker.stop();
  worker = undefined;
  expect(done.ready).toMatchObject({ status: 'True', reason: 'Completed' });

  const [replaced] = await listAll<ManifestCheckpointContentChunk>(
    'ManifestCheckpointContentChunk',
    `${CHECKPOINT_LABEL}=${checkpoint}`,
  );
  expect(replaced!.metadata!.name).toBe(first!.metadata!.name);
  expect(replaced!.metadata!.uid).not.toBe(first!.metadata!.uid);
  expect(replaced!.spec.checksum).not.toBe(first!.spec.checksum);
  const exported = await exportCheckpoint(k, checkpoint);
  expect((exported.objects as { data: { v: string } }[]).map((o) => o.data.v)).toEqual(['second']);
}, 180_000);
