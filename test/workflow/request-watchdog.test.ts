/**
 * A request's delete watchdog (src/workflows/requests/lifecycle.ts) with stubbed activities: the
 * watcher hints a delete while the operation waits on an external actor, and the fresh read that
 * would verify it fails for good (a Forbidden past the RBAC-rollout window). The request ends
 * RBACDenied as any of its calls' Forbidden ends it; before, the failed read was an unhandled
 * rejection in the workflow, which fails every workflow task of the run from then on: the request
 * stayed Processing and its run retried a failing task forever.
 */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { temporal } from '@temporalio/proto';
import { ApplicationFailure } from '@temporalio/common';
import { Context } from '@temporalio/activity';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RequestOutcome } from '../../src/domain/requests.js';
import { requestDeletedSignal, volumeCaptureRequestWorkflow } from '../../src/workflows/index.js';
import { eventually } from '../support/env.js';
import { bundleTestWorkflows, startWorkflowEnv, withWorker } from '../support/workflow-env.js';

let env: TestWorkflowEnvironment;
let bundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  [env, bundle] = await Promise.all([startWorkflowEnv(), bundleTestWorkflows()]);
});
afterAll(() => env?.teardown());

const ref = {
  apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1',
  kind: 'VolumeCaptureRequest' as const,
  namespace: 'team-a',
  name: 'nightly',
  uid: '6f1c2a52-0d5e-4c57-9d0e-3f1b8f0e2a11',
};

it('a delete hint whose fresh read is forbidden for good ends the request RBACDenied, with no failed workflow task', async () => {
  const finalized: RequestOutcome[] = [];
  const waitCancelled: boolean[] = [];
  const activities = {
    beginRequest: async () => ({ status: 'ok', deleting: false, terminal: false, spec: {}, requestStatus: {} }),
    readRequest: async () => {
      throw ApplicationFailure.nonRetryable(
        'volumecapturerequests "nightly" is forbidden (still forbidden after 10 attempts)',
        'Kubernetes403',
      );
    },
    requestPolicy: async () => ({ waitTimeoutMs: 600_000, snapshotMode: 'VolumeSnapshot' }),
    markRequestProcessing: async () => ({ status: 'ok', terminal: false }),
    resolveVolumeTargets: async () => ({ status: 'ok', mode: 'Snapshot', targets: [{ pvcName: 'data' }] }),
    ensureRequestKeeper: async () => ({ status: 'ok', keeper: { name: 'ret-vcr-6f1c2a52', uid: 'k-1' } }),
    ensureSnapshot: async () => ({ status: 'ok', snapshot: { kind: 'VolumeSnapshot', name: 'nightly-0' } }),
    // The snapshot-controller never answers: the operation waits until it is cancelled.
    waitForSnapshotReady: async () => {
      try {
        for (;;) {
          Context.current().heartbeat();
          await Context.current().sleep(200);
        }
      } finally {
        waitCancelled.push(true);
      }
    },
    finalizeRequest: async (input: { outcome: RequestOutcome }) => {
      finalized.push(input.outcome);
      return { status: 'ok' };
    },
  };
  await withWorker(env, bundle, activities, async (taskQueue) => {
    const handle = await env.client.workflow.start(volumeCaptureRequestWorkflow, {
      taskQueue,
      workflowId: `request/${ref.namespace}/${ref.name}`,
      args: [{ ref }],
    });
    const types = async () =>
      ((await handle.fetchHistory()).events ?? []).map((e) => temporal.api.enums.v1.EventType[e.eventType ?? 0]);
    await eventually('the operation waiting on the snapshot', async () => {
      const events = (await handle.fetchHistory()).events ?? [];
      return events.some((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'waitForSnapshotReady');
    });
    await handle.signal(requestDeletedSignal);
    const ended = await eventually(
      'the run completed, or a workflow task failed',
      async () => {
        const t = await types();
        return (
          (t.includes('EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED') || t.includes('EVENT_TYPE_WORKFLOW_TASK_FAILED')) && t
        );
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    expect(ended).not.toContain('EVENT_TYPE_WORKFLOW_TASK_FAILED');
    expect(await handle.result()).toMatch(/RBACDenied/);
  });
  expect(finalized).toEqual([
    expect.objectContaining({ ready: false, reason: 'RBACDenied', message: expect.stringMatching(/forbidden/) }),
  ]);
  expect(waitCancelled).toEqual([true]);
});
