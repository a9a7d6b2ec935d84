/**
 * TTL of fire-and-forget requests on the real stack: a request's workflow ends when the request is
 * terminal, and the sweep (what the Schedule runs — the original's TTL scanner) deletes it once
 * the controller TTL has passed since completionTimestamp; the keeper follows at once and the
 * garbage collector removes the artifacts. The sweep never reaps what is not
 * terminal-with-a-timestamp.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHECKPOINT_LABEL, type ManifestCaptureRequest } from '../../src/api/manifests.js';
import { objectKeeperRef } from '../../src/api/objectkeeper.js';
import { keeperNameFor, requestWorkflowId } from '../../src/domain/requests.js';
import { REQUEST_KIND_NAMES } from '../../src/api/request-kinds.js';
import { requestTtlSweepWorkflow } from '../../src/workflows/requests/contract.js';
import { createRequestActivities } from '../../src/activities/kubernetes/requests.js';
import { ensureRequestTtlSweep, requestTtlSweepScheduleId } from '../../src/workers/schedules.js';
import type { RunningWatcher } from '../../src/watcher/main.js';
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
import { goneCheck, sweepAfterTtl, waitTerminal } from '../support/requests.js';
import { EventRecorder } from '../../src/kube/events.js';

const TASK_QUEUE = uniq('tq-ttl');
const TTL_MS = 3_000;
const k = kube();
const ns = uniq('ttl');
const GV = 'state-snapshotter.deckhouse.io/v1alpha1';
let worker: { stop(): Promise<void> };
let watcher: RunningWatcher | undefined;

const requests = { ...testConfig(TASK_QUEUE).requests, ttlMs: TTL_MS };
const mcrRef = (name: string) => ({ apiVersion: GV, kind: 'ManifestCaptureRequest', namespace: ns, name });

async function mcr(targets: string[]): Promise<ManifestCaptureRequest> {
  return k.create<ManifestCaptureRequest>({
    apiVersion: GV,
    kind: 'ManifestCaptureRequest',
    metadata: { name: uniq('ttl'), namespace: ns },
    spec: { targets: targets.map((name) => ({ apiVersion: 'v1', kind: 'ConfigMap', name })) },
  });
}

async function runSweep(): Promise<{ reaped: number; examined: number }> {
  const c = await temporal();
  const workflowId = uniq('sweep');
  const result = await c.workflow.execute(requestTtlSweepWorkflow, { taskQueue: TASK_QUEUE, workflowId });
  await replayAndRecord(workflowId, 'request-ttl-sweep-per-kind');
  // One activity per request kind lists and reaps: no local activity per request (issue 35).
  const events = (await c.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  expect(events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity')).toEqual([]);
  expect(events.filter((e) => e.activityTaskScheduledEventAttributes)).toHaveLength(REQUEST_KIND_NAMES.length);
  return result;
}

beforeAll(async () => {
  await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  await k.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: ns }, data: { a: 'b' } });
  worker = await startTestWorker(TASK_QUEUE, { requests });
});

afterAll(async () => {
  await watcher?.stop();
  await worker?.stop();
});

describe('a terminal request: its workflow ends, the sweep deletes it after the TTL', () => {
  beforeAll(async () => {
    watcher = await startTestWatcher(TASK_QUEUE);
    await watcher.watcher.waitForSync();
  });
  afterAll(async () => {
    await watcher?.stop();
    watcher = undefined;
  });

  it('a completed request is deleted by the sweep after the TTL, not before; keeper, checkpoint and chunks follow', async () => {
    const req = await mcr(['cm']);
    const done = await waitTerminal<ManifestCaptureRequest>(k, req);
    expect(done.ready.reason).toBe('Completed');
    const checkpoint = done.status!.checkpointName!;
    const keeper = objectKeeperRef(keeperNameFor({ kind: 'ManifestCaptureRequest', uid: req.metadata!.uid! }));
    expect(await k.get(keeper)).toBeDefined();

    const c = await temporal();
    const workflowId = requestWorkflowId({
      kind: 'ManifestCaptureRequest',
      namespace: ns,
      name: req.metadata!.name!,
      uid: req.metadata!.uid!,
    });
    expect(await c.workflow.getHandle(workflowId).result()).toMatch(/^Completed: captured 1 objects/);
    await replayAndRecord(workflowId, 'manifest-capture-completed');
    const completedAt = Date.parse(done.status!.completionTimestamp!);
    // Before the TTL the sweep leaves it (checked only while surely early: a second-precision timestamp).
    if (Date.now() - completedAt < TTL_MS - 1500) {
      await runSweep();
      expect(await k.get(mcrRef(req.metadata!.name!))).toBeDefined();
    }
    await sweepAfterTtl(TASK_QUEUE, done.status!.completionTimestamp!, TTL_MS);
    expect(await k.get(mcrRef(req.metadata!.name!))).toBeUndefined();
    await eventually('keeper deleted', goneCheck(k, keeper));
    await eventually(
      'checkpoint garbage-collected',
      goneCheck(k, { apiVersion: GV, kind: 'ManifestCheckpoint', name: checkpoint }),
      {
        timeoutMs: 120_000,
      },
    );
    await eventually(
      'chunks garbage-collected',
      async () =>
        (await k.listPage(GV, 'ManifestCheckpointContentChunk', { labelSelector: `${CHECKPOINT_LABEL}=${checkpoint}` }))
          .items.length === 0,
      { timeoutMs: 120_000 },
    );
  });

  it('a failed request is deleted after the TTL too', async () => {
    const req = await mcr(['missing']);
    const done = await waitTerminal<ManifestCaptureRequest>(k, req);
    expect(done.ready.reason).toBe('NotFound');
    await sweepAfterTtl(TASK_QUEUE, done.status!.completionTimestamp!, TTL_MS);
    expect(await k.get(mcrRef(req.metadata!.name!))).toBeUndefined();
  });
});

describe('TTL sweep (the Schedule backstop), with no request workflows at all', () => {
  /** A request the way a previous controller version left it; no watcher runs in this block. */
  async function requestWithStatus(status: Record<string, unknown>): Promise<KubernetesObject> {
    const req = await mcr(['cm']);
    await k.patchCustomStatus({ ...mcrRef(req.metadata!.name!), plural: 'manifestcapturerequests' }, status);
    return req;
  }
  const ready = (status: 'True' | 'False', reason: string) => [
    { type: 'Ready', status, reason, message: 'test', lastTransitionTime: '2026-01-01T00:00:00Z' },
  ];

  it('reaps expired terminal requests and leaves everything else alone', async () => {
    const longAgo = new Date(Date.now() - 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z');
    const expired = await requestWithStatus({ conditions: ready('True', 'Completed'), completionTimestamp: longAgo });
    const expiredFailed = await requestWithStatus({
      conditions: ready('False', 'NotFound'),
      completionTimestamp: longAgo,
    });
    const noTimestamp = await requestWithStatus({ conditions: ready('True', 'Completed') });
    const processing = await requestWithStatus({ conditions: ready('False', 'Processing') });
    const fresh = await requestWithStatus({
      conditions: ready('True', 'Completed'),
      completionTimestamp: new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z'),
    });

    await runSweep();
    const exists = async (o: KubernetesObject) => (await k.get(mcrRef(o.metadata!.name!))) !== undefined;
    expect(await exists(expired)).toBe(false);
    expect(await exists(expiredFailed)).toBe(false);
    expect(await exists(noTimestamp)).toBe(true);
    expect(await exists(processing)).toBe(true);
    expect(await exists(fresh)).toBe(true);
  });

  it('skips an expired request that is already being deleted (a finalizer holds it)', async () => {
    const longAgo = new Date(Date.now() - 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z');
    const held = await requestWithStatus({ conditions: ready('True', 'Completed'), completionTimestamp: longAgo });
    const expired = await requestWithStatus({ conditions: ready('True', 'Completed'), completionTimestamp: longAgo });
    const heldRef = mcrRef(held.metadata!.name!);
    await k.mergePatch(heldRef, { metadata: { finalizers: ['example.com/hold'] } });
    await k.delete(heldRef);
    const deletingSince = (await k.get(heldRef))!.metadata!.deletionTimestamp;
    expect(deletingSince).toBeTruthy();

    // The sweep's listing, against the real apiserver: the held request is not a candidate.
    const activities = createRequestActivities(k, requests, new EventRecorder(k, 'worker'));
    const candidates = (await activities.listExpiredRequests('ManifestCaptureRequest')).map((r) => r.uid);
    expect(candidates).toContain(expired.metadata!.uid);
    expect(candidates).not.toContain(held.metadata!.uid);
    // Reaping it anyway (a request workflow's timer) sees it is being deleted and leaves it to its finalizer.
    const ref = { ...heldRef, kind: 'ManifestCaptureRequest' as const, namespace: ns, uid: held.metadata!.uid! };
    expect(await activities.reapRequestIfExpired(ref)).toEqual({ status: 'ok', state: 'deleting' });

    await runSweep();
    expect(await k.get(mcrRef(expired.metadata!.name!))).toBeUndefined();
    const stillHeld = await k.get(heldRef);
    expect(stillHeld?.metadata?.deletionTimestamp).toEqual(deletingSince);
    expect(stillHeld?.metadata?.finalizers).toEqual(['example.com/hold']);
    await k.mergePatch(heldRef, { metadata: { finalizers: null } });
  });

  it('the worker keeps one sweep Schedule per task queue, updated to the configured interval', async () => {
    const c = await temporal();
    const cfg = testConfig(TASK_QUEUE, { requests: { ...requests, ttlSweepIntervalMs: 60_000 } });
    const id = await ensureRequestTtlSweep(c, cfg);
    expect(id).toBe(requestTtlSweepScheduleId(TASK_QUEUE));
    await ensureRequestTtlSweep(c, { ...cfg, requests: { ...cfg.requests, ttlSweepIntervalMs: 120_000 } });
    const desc = await c.schedule.getHandle(id).describe();
    expect(desc.spec.intervals?.map((i) => Number(i.every))).toEqual([120_000]);
    expect(desc.action).toMatchObject({
      type: 'startWorkflow',
      workflowType: 'requestTtlSweepWorkflow',
      taskQueue: TASK_QUEUE,
    });
    await c.schedule.getHandle(id).delete();
  });
});
