/**
 * A listing that takes longer than its activity's heartbeat timeout still completes, because
 * listing activities heartbeat per item (src/activities/kubernetes/calls.ts). The listing runs
 * against the real apiserver; the test only slows down how fast the activity consumes it, so the
 * whole listing lasts several heartbeat timeouts. The control case stalls once for longer than
 * the timeout and must fail: it shows the timeout is enforced, so the first case passes because
 * of the heartbeats and not because nobody checks.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ActivityFailure, TimeoutFailure, WorkflowFailedError } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import type { KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRequestActivities } from '../../src/activities/kubernetes/requests.js';
import type { KubeClient } from '../../src/kube/client.js';
import { connectWorker, dataConverterOf } from '../../src/temporal/connection.js';
import { kube, temporal, testConfig, uniq } from '../support/env.js';
import { EventRecorder } from '../../src/kube/events.js';

const k = kube();
const ns = uniq('hb');
const ITEMS = 8;
const HEARTBEAT_TIMEOUT_MS = 2_000;

/** The same client, but its listings yield each item only after `delayFor(index)` ms. */
function pacedListing(base: KubeClient, delayFor: (index: number) => number): KubeClient {
  const paced = Object.create(base) as KubeClient;
  paced.listAll = async function* <T extends KubernetesObject>(...args: Parameters<KubeClient['listAll']>) {
    let i = 0;
    for await (const obj of base.listAll<T>(...args)) {
      await sleep(delayFor(i++));
      yield obj;
    }
  };
  return paced;
}

async function runProbe(client: KubeClient): Promise<{ result: number; elapsedMs: number }> {
  const taskQueue = uniq('tq-hb');
  const cfg = testConfig(taskQueue);
  const worker = await Worker.create({
    connection: await connectWorker(cfg.temporal),
    dataConverter: dataConverterOf(cfg.temporal),
    namespace: cfg.temporal.namespace,
    taskQueue,
    workflowsPath: new URL('../support/workflows/listing-probe.ts', import.meta.url).pathname,
    activities: createRequestActivities(client, cfg.requests, new EventRecorder(client, 'worker')),
  });
  const c = await temporal();
  const started = Date.now();
  try {
    const result = await worker.runUntil(
      c.workflow.execute('listingProbeWorkflow', {
        taskQueue,
        workflowId: uniq('listing-probe'),
        args: ['ManifestCaptureRequest', HEARTBEAT_TIMEOUT_MS],
      }),
    );
    return { result: result as number, elapsedMs: Date.now() - started };
  } finally {
    if (worker.getState() === 'RUNNING') worker.shutdown();
  }
}

beforeAll(async () => {
  await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  for (let i = 0; i < ITEMS; i++) {
    await k.create({
      apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1',
      kind: 'ManifestCaptureRequest',
      metadata: { name: `r${i}`, namespace: ns },
      spec: { targets: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'x' }] },
    });
  }
});

afterAll(async () => {
  await k.delete({ apiVersion: 'v1', kind: 'Namespace', name: ns }).catch(() => undefined);
});

describe('listing activities under a heartbeat timeout', () => {
  it('complete a listing that lasts several heartbeat timeouts', async () => {
    const perItem = 600;
    const { result, elapsedMs } = await runProbe(pacedListing(k, () => perItem));
    // None of the requests is terminal, so none is expired; what matters is that it completed.
    expect(result).toBe(0);
    expect(elapsedMs).toBeGreaterThan(2 * HEARTBEAT_TIMEOUT_MS);
  });

  it('control: one stall longer than the heartbeat timeout fails the attempt', async () => {
    const stall = pacedListing(k, (i) => (i === 1 ? HEARTBEAT_TIMEOUT_MS * 3 : 0));
    const err = await runProbe(stall).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(WorkflowFailedError);
    const activityFailure = (err as WorkflowFailedError).cause;
    expect(activityFailure).toBeInstanceOf(ActivityFailure);
    expect((activityFailure as ActivityFailure).cause).toBeInstanceOf(TimeoutFailure);
    expect(((activityFailure as ActivityFailure).cause as TimeoutFailure).timeoutType).toBe('HEARTBEAT');
  });
});
