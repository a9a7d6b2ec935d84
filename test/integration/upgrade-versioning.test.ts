/**
 * An upgrade under Worker Deployment Versioning (src/workers/versioning.ts) on the stack's real
 * Temporal server: build A serves a running ObjectKeeper (an entity, AUTO_UPGRADE) and a
 * ManifestCaptureRequest's workflow (PINNED) whose capture step A holds; build B starts and makes
 * itself current. The keeper's next task runs on B, and after A stops it still takes signals and
 * ends on B; the request finishes on A while A runs, never touched by B. Nothing is terminated.
 * (B runs the same code: what is under test is where each run goes.)
 */
import { heartbeat } from '@temporalio/activity';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, expect, it } from 'vitest';
import { objectKeeperRef, type ObjectKeeper } from '../../src/api/objectkeeper.js';
import type { ManifestCaptureRequest } from '../../src/api/manifests.js';
import { objectKeeperWorkflowId } from '../../src/domain/objectkeeper.js';
import { requestWorkflowId, type RequestRef } from '../../src/domain/requests.js';
import {
  keeperDeletedSignal,
  manifestCaptureRequestWorkflow,
  objectKeeperWorkflow,
} from '../../src/workflows/index.js';
import { eventually, kube, startTestWorker, temporal, uniq } from '../support/env.js';

const TASK_QUEUE = uniq('tq-upgrade');
const k = kube();
const workers: { stop(): Promise<void> }[] = [];

afterAll(async () => {
  for (const w of workers) await w.stop();
});

/** Holds every attempt of `activityType` (heartbeating) until `released` settles. */
function holding(activityType: string, released: Promise<void>): ActivityInterceptorsFactory {
  return (ctx) => ({
    inbound: {
      async execute(input, next) {
        if (ctx.info.activityType === activityType) {
          const beat = setInterval(() => heartbeat(), 2_000);
          await released.finally(() => clearInterval(beat));
        }
        return next(input);
      },
    },
  });
}

async function currentBuild(): Promise<string | undefined> {
  const client = await temporal();
  const res = await client.workflowService
    .describeWorkerDeployment({ namespace: client.options.namespace, deploymentName: TASK_QUEUE })
    .catch(() => undefined);
  return res?.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId ?? undefined;
}

/** The run's versioning as the server records it: its behaviour and the build of its last task. */
async function versioning(handle: WorkflowHandle) {
  const info = (await handle.describe()).raw.workflowExecutionInfo?.versioningInfo;
  return { behavior: info?.behavior, buildId: info?.deploymentVersion?.buildId };
}

/** The build of every completed workflow task of the run. */
async function taskBuilds(handle: WorkflowHandle): Promise<string[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? [])
    .map((e) => e.workflowTaskCompletedEventAttributes?.deploymentVersion?.buildId)
    .filter((b): b is string => !!b);
}

const PINNED = 1; // temporal.api.enums.v1.VersioningBehavior
const AUTO_UPGRADE = 2;

it('an upgrade to a new build terminates nothing: an entity moves to it, a pinned request ends on its build', async () => {
  const client = await temporal();
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  workers.push(
    await startTestWorker(
      TASK_QUEUE,
      { versioning: { mode: 'auto-promote', buildId: 'build-a' } },
      { activityInterceptors: [holding('writeCheckpointContent', released)] },
    ),
  );
  await eventually('build A to be current', async () => (await currentBuild()) === 'build-a');

  // An entity: a keeper on a long TTL.
  const keeper = await k.create<ObjectKeeper>({
    apiVersion: 'deckhouse.io/v1alpha1',
    kind: 'ObjectKeeper',
    metadata: { name: uniq('keeper') },
    spec: { mode: 'TTL', ttl: '1h' },
  });
  const keeperRun = await client.workflow.start(objectKeeperWorkflow, {
    taskQueue: TASK_QUEUE,
    workflowId: objectKeeperWorkflowId(keeper.metadata!.name!, keeper.metadata!.uid!),
    args: [
      {
        name: keeper.metadata!.name!,
        uid: keeper.metadata!.uid!,
        spec: keeper.spec!,
        creationTimestamp: keeper.metadata!.creationTimestamp as unknown as string,
      },
    ],
  });

  // A request, its capture held on A.
  const ns = uniq('upgrade');
  await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  await k.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kept', namespace: ns }, data: { a: 'b' } });
  const mcr = await k.create<ManifestCaptureRequest>({
    apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1',
    kind: 'ManifestCaptureRequest',
    metadata: { name: 'capture', namespace: ns },
    spec: { targets: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'kept' }] },
  });
  const ref: RequestRef = {
    apiVersion: mcr.apiVersion!,
    kind: 'ManifestCaptureRequest',
    namespace: ns,
    name: 'capture',
    uid: mcr.metadata!.uid!,
  };
  const requestRun = await client.workflow.start(manifestCaptureRequestWorkflow, {
    taskQueue: TASK_QUEUE,
    workflowId: requestWorkflowId(ref),
    args: [{ ref }],
  });

  await eventually('both runs to have run a task on A', async () => {
    const [kv, rv] = [await versioning(keeperRun), await versioning(requestRun)];
    return kv.buildId === 'build-a' && rv.buildId === 'build-a' && { kv, rv };
  });
  expect(await versioning(keeperRun)).toEqual({ behavior: AUTO_UPGRADE, buildId: 'build-a' });
  expect(await versioning(requestRun)).toEqual({ behavior: PINNED, buildId: 'build-a' });

  // Build B starts and makes itself current.
  workers.push(await startTestWorker(TASK_QUEUE, { versioning: { mode: 'auto-promote', buildId: 'build-b' } }));
  await eventually('build B to be current', async () => (await currentBuild()) === 'build-b');

  // The keeper's next task (a hint: it re-reads and stays) runs on B.
  await keeperRun.signal('followedObjectChanged', { event: 'upgrade test' });
  await eventually('the keeper to move to B', async () => (await versioning(keeperRun)).buildId === 'build-b');

  // The pinned request is still A's: released, it finishes there while A runs.
  expect(await versioning(requestRun)).toEqual({ behavior: PINNED, buildId: 'build-a' });
  release();
  expect(await requestRun.result()).toMatch(/^Completed/);
  expect(new Set(await taskBuilds(requestRun))).toEqual(new Set(['build-a']));

  // A stops; the keeper still takes signals on B and ends there.
  await workers.shift()!.stop();
  await k.delete(objectKeeperRef(keeper.metadata!.name!));
  await keeperRun.signal(keeperDeletedSignal);
  await keeperRun.result();
  expect((await keeperRun.describe()).status.name).toBe('COMPLETED');
  expect(await versioning(keeperRun)).toMatchObject({ behavior: AUTO_UPGRADE, buildId: 'build-b' });
  expect(await taskBuilds(keeperRun)).toContain('build-b');
});
