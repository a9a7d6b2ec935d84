/**
 * The entity-workflow kit (src/workflows/entity.ts) with stubbed activities on a Temporal dev
 * server of the test's own (test/support/workflow-env.ts): what a user relies on across
 * continue-as-new — the state is carried, an update in flight finishes in the run that accepted
 * it, and an ObjectKeeper keeps following its object through runs, ignores stray hints and
 * deletes itself once when the object is lost.
 */
import type { WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { temporal } from '@temporalio/proto';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ObjectKeeperActivities } from '../../src/activities/kubernetes/objectkeeper.js';
import type { ObjectKeeperStatus } from '../../src/api/objectkeeper.js';
import type { FollowedObservation } from '../../src/domain/objectkeeper.js';
import { GONE, ok } from '../../src/domain/results.js';
import {
  followedObjectChangedSignal,
  keeperDeletedSignal,
  keeperStateQuery,
  objectKeeperWorkflow,
  type ObjectKeeperWorkflowInput,
} from '../../src/workflows/index.js';
import { eventually } from '../support/env.js';
import { bundleTestWorkflows, startWorkflowEnv, withWorker } from '../support/workflow-env.js';
import {
  entityProbeWorkflow,
  probeAddUpdate,
  probeStateQuery,
  type EntityProbeActivities,
} from './workflows/entity-probe.js';

let env: TestWorkflowEnvironment;
let bundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  [env, bundle] = await Promise.all([startWorkflowEnv(), bundleTestWorkflows()]);
});
afterAll(() => env?.teardown());

/** The event types of one run's history, in order. */
async function eventTypes(handle: WorkflowHandle, runId: string): Promise<string[]> {
  const history = await env.client.workflow.getHandle(handle.workflowId, runId).fetchHistory();
  return (history.events ?? []).map((e) => temporal.api.enums.v1.EventType[e.eventType ?? 0] ?? 'unknown');
}

/**
 * Runs `send` against the run current now, so its messages land in one run (a run cannot end
 * before it handles them); when that run ends first, against the next. Returns the run's ID.
 */
async function signalCurrentRun(handle: WorkflowHandle, send: (run: WorkflowHandle) => Promise<void>): Promise<string> {
  return eventually('a run that takes the signals', async () => {
    const { runId } = await handle.describe();
    await send(env.client.workflow.getHandle(handle.workflowId, runId));
    return runId;
  });
}

describe('an entity run', () => {
  it('finishes an update in flight before it continues as new, and carries what the update recorded', async () => {
    let observed = 0;
    let entered!: () => void;
    const addEntered = new Promise<void>((r) => (entered = r));
    let release!: () => void;
    const addReleased = new Promise<void>((r) => (release = r));
    const activities: EntityProbeActivities = {
      async confirmAdd(n) {
        entered();
        await addReleased;
        return n;
      },
      async observe() {
        observed++;
      },
    };
    await withWorker(env, bundle, activities, async (taskQueue) => {
      // Due to continue as new from its second pass on (20 events), after a wait no message interrupted.
      const handle = await env.client.workflow.start(entityProbeWorkflow, {
        taskQueue,
        workflowId: `entity-probe-${taskQueue}`,
        args: [{ total: 0, runs: 0, continueAfterEvents: 20, waitMs: 1_500 }],
      });
      const firstRun = handle.firstExecutionRunId;
      await eventually('the first pass', async () => observed >= 1);
      const update = handle.executeUpdate(probeAddUpdate, { args: [5] });
      update.catch(() => undefined); // awaited below; a failure must not surface before as unhandled
      await addEntered;
      // Two timers fired since: the run has had its quiet wait and is due to continue as new.
      await eventually('the run due to continue as new', async () => {
        const types = await eventTypes(handle, firstRun);
        const accepted = types.indexOf('EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED');
        return accepted >= 0 && types.slice(accepted).filter((t) => t === 'EVENT_TYPE_TIMER_FIRED').length >= 2;
      });
      release();
      expect(await update).toBe(5);

      await eventually('the first run continued as new', async () => {
        const d = await env.client.workflow.getHandle(handle.workflowId, firstRun).describe();
        return d.status.name === 'CONTINUED_AS_NEW';
      });
      const types = await eventTypes(handle, firstRun);
      // Continuing with the handler unfinished fails the task (the SDK warns TMPRL1102; retried until it finishes).
      expect(types).not.toContain('EVENT_TYPE_WORKFLOW_TASK_FAILED');
      expect(types.indexOf('EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED')).toBeGreaterThan(0);
      expect(types.indexOf('EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED')).toBeLessThan(
        types.indexOf('EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW'),
      );
      const next = await handle.query(probeStateQuery);
      expect(next.total).toBe(5);
      expect(next.runs).toBeGreaterThanOrEqual(1);
      await handle.terminate('test done');
    });
  });
});

/** The keeper's activities: `observe` answers for the followed object; status writes and deletes are recorded. */
function keeperStubs(observe: () => Promise<FollowedObservation>) {
  const statuses: ObjectKeeperStatus[] = [];
  const deletes: unknown[] = [];
  const activities: Pick<ObjectKeeperActivities, keyof ObjectKeeperActivities> = {
    observeFollowedObject: observe,
    async readObjectKeeper() {
      return ok({ deleting: false });
    },
    async patchObjectKeeperStatus(req) {
      statuses.push(req.keeperStatus);
      return ok();
    },
    async deleteObjectKeeper(ref) {
      deletes.push(ref);
      return ok();
    },
  };
  return { activities, statuses, deletes };
}

describe('an ObjectKeeper run', () => {
  const followed = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'apps', name: 'config', uid: 'uid-1' };

  it('follows its object through continue-as-new, ignores stray hints, and deletes itself once when the object is lost', async () => {
    let present = true;
    const { activities, statuses, deletes } = keeperStubs(async () =>
      present ? ok({ uid: followed.uid }) : { ...GONE, reason: 'NotFound' },
    );
    await withWorker(env, bundle, activities, async (taskQueue) => {
      const input: ObjectKeeperWorkflowInput = {
        name: 'keeper',
        uid: 'keeper-uid',
        spec: { mode: 'FollowObject', followObjectRef: followed },
        creationTimestamp: new Date().toISOString(),
        verifyIntervalMs: 300,
        continueAfterEvents: 20,
      };
      const handle = await env.client.workflow.start(objectKeeperWorkflow, {
        taskQueue,
        workflowId: `keeper-${taskQueue}`,
        args: [input],
      });
      await eventually('the first run continued as new', async () => {
        const d = await env.client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId).describe();
        return d.status.name === 'CONTINUED_AS_NEW';
      });
      // Stray hints: the object is still there and so is the keeper; a fresh read of each says so.
      const runId = await signalCurrentRun(handle, async (run) => {
        await run.signal(followedObjectChangedSignal, { event: 'MODIFIED' });
        await run.signal(keeperDeletedSignal);
      });
      await eventually('the run read again after the hints', async () => {
        const types = await eventTypes(handle, runId);
        const signalled = types.lastIndexOf('EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED');
        return types.slice(signalled).includes('EVENT_TYPE_ACTIVITY_TASK_COMPLETED');
      });
      expect((await handle.query(keeperStateQuery)).phase).toBe('Tracking');
      expect(deletes).toEqual([]);

      present = false;
      await handle.signal(followedObjectChangedSignal, { event: 'DELETED' });
      expect(await handle.result()).toBe('deleted: ConfigMap apps/config (uid uid-1) was deleted');
      expect(deletes).toEqual([{ name: 'keeper', uid: 'keeper-uid' }]);
      expect(new Set(statuses.map((st) => st.phase))).toEqual(new Set(['Tracking']));
    });
  });
  it('says so on its status when the followed object cannot be read, and stays (issue 35: its reads are local activities)', async () => {
    const { activities, statuses, deletes } = keeperStubs(async () => {
      throw ApplicationFailure.nonRetryable('secrets "followed" is forbidden', 'RBACDenied');
    });
    await withWorker(env, bundle, activities, async (taskQueue) => {
      const input: ObjectKeeperWorkflowInput = {
        name: 'keeper',
        uid: 'keeper-uid',
        spec: { mode: 'FollowObject', followObjectRef: { ...followed, kind: 'Secret', name: 'followed' } },
        creationTimestamp: new Date().toISOString(),
      };
      const handle = await env.client.workflow.start(objectKeeperWorkflow, {
        taskQueue,
        workflowId: `keeper-unreadable-${taskQueue}`,
        args: [input],
      });
      const unreadable = await eventually('FollowedObjectUnreadable on the status', async () =>
        statuses.flatMap((st) => st.conditions ?? []).find((c) => c.reason === 'FollowedObjectUnreadable'),
      );
      expect(unreadable).toMatchObject({ status: 'Unknown', message: expect.stringMatching(/forbidden/) });
      expect((await handle.describe()).status.name).toBe('RUNNING');
      expect(deletes).toEqual([]);
      await handle.terminate('test done');
    });
  });
});
