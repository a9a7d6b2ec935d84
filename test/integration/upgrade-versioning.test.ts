/**
 * An upgrade under Worker Deployment Versioning (src/workers/versioning.ts) on the stack's real
 * Temporal server: build A serves a running ObjectKeeper (an entity, AUTO_UPGRADE) and a
 * ManifestCaptureRequest's workflow (PINNED) whose capture step A holds; build B starts and makes
 * itself current. The keeper's next task runs on B, and after A stops it still takes signals and
 * ends on B; the request finishes on A while A runs, never touched by B. A DNSRecord's source and
 * its target's sync (entities, AUTO_UPGRADE; the sync on the account's queue) start on A; after A
 * stops, a spec change reaches Cloudflare (the emulator) through both on B. Nothing is terminated.
 * (B runs the same code: what is under test is where each run goes.) The sandbox entities run on
 * the fast path's worker (runtime project), not on this one.
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
import { syncWorkflowId, sourceWorkflowId } from '../../src/domain/cloudflare/targets.js';
import { logger } from '../../src/log.js';
import { CloudflareSourceRoute } from '../../src/watcher/routes/cloudflare.js';
import { startWatcher, type RunningWatcher } from '../../src/watcher/main.js';
import { cloudflareSuite, hexId, sourceObject, zoneRecords } from '../support/cloudflare.js';
import { eventually, startTestWorker, temporal, testConfig, uniq } from '../support/env.js';

const account = hexId();
const creds = uniq('cf-upgrade-acct');
const zoneName = `${uniq('upgrade')}.example`;
// The Cloudflare side (emulator, zone, credentials); the file starts its own workers, A and B.
const suite = cloudflareSuite({
  taskQueue: 'tq-upgrade',
  namespace: 'cf-upgrade',
  account: { id: account, name: 'upgrade' },
  zone: zoneName,
  credentials: { name: creds },
  configOverrides: { debounceMs: 200 },
  inProcessWorker: false,
  watcher: false,
});
const TASK_QUEUE = suite.taskQueue;
const k = suite.k;
const workers: { stop(): Promise<void> }[] = [];
let watcher: RunningWatcher | undefined;
let release = (): void => undefined;

afterAll(async () => {
  // A failed run must not leave A's held capture blocking its shutdown.
  release();
  await watcher?.stop();
  for (const w of workers) await w.stop();
});

/** Versioned worker `buildId` on the file's queue, Cloudflare on (its account queues join the deployment). */
const startBuild = (buildId: string, activityInterceptors?: ActivityInterceptorsFactory[]) =>
  startTestWorker(
    TASK_QUEUE,
    { versioning: { mode: 'auto-promote', buildId }, cloudflare: suite.cloudflareConfig() },
    { cloudflare: true, ...(activityInterceptors ? { activityInterceptors } : {}) },
  );

/** A watcher for the Cloudflare sources only: the keeper and the request runs are the test's own. */
async function startCloudflareWatcher(): Promise<RunningWatcher> {
  const cfg = testConfig(TASK_QUEUE, { cloudflare: suite.cloudflareConfig() });
  const log = logger.child({ test: true });
  log.level = process.env.DO_TEST_LOG_LEVEL ?? 'warn';
  return startWatcher(cfg, {
    log,
    routes: [new CloudflareSourceRoute({ reregisterMs: cfg.cloudflare.observeIntervalMs })],
  });
}

const dnsRecord = (name: string, content: string) =>
  sourceObject(
    'DNSRecord',
    name,
    { name: 'app', type: 'A', content, cloudflare: { credentialsRef: { name: creds }, domain: zoneName } },
    suite.namespace,
  );
/** The content of the zone's `app` A record (undefined while there is none). */
const appRecord = async () =>
  (await zoneRecords(suite.fx.cf, suite.zoneId)).find((r) => r.name === `app.${zoneName}` && r.type === 'A')?.content;

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
  const released = new Promise<void>((resolve) => (release = resolve));
  workers.push(await startBuild('build-a', [holding('writeCheckpointContent', released)]));
  await eventually('build A to be current', async () => (await currentBuild()) === 'build-a');
  watcher = await startCloudflareWatcher();

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

  // Entities of the Cloudflare aggregation: a DNSRecord's source and its target's sync, on A.
  const app = uniq('app');
  await k.apply(dnsRecord(app, '192.0.2.1'));
  await eventually('the record created on A', async () => (await appRecord()) === '192.0.2.1');
  const sourceRun = client.workflow.getHandle(
    sourceWorkflowId({ kind: 'DNSRecord', namespace: suite.namespace, name: app }),
  );
  const syncRun = client.workflow.getHandle(
    syncWorkflowId({
      resourceType: 'DNSRecord',
      accountId: account,
      zoneId: suite.zoneId,
      zone: zoneName,
      name: `app.${zoneName}`,
      type: 'A',
    }),
  );
  expect(await versioning(sourceRun)).toEqual({ behavior: AUTO_UPGRADE, buildId: 'build-a' });
  expect(await versioning(syncRun)).toEqual({ behavior: AUTO_UPGRADE, buildId: 'build-a' });

  await eventually('both runs to have run a task on A', async () => {
    const [kv, rv] = [await versioning(keeperRun), await versioning(requestRun)];
    return kv.buildId === 'build-a' && rv.buildId === 'build-a' && { kv, rv };
  });
  expect(await versioning(keeperRun)).toEqual({ behavior: AUTO_UPGRADE, buildId: 'build-a' });
  expect(await versioning(requestRun)).toEqual({ behavior: PINNED, buildId: 'build-a' });

  // Build B starts and makes itself current.
  workers.push(await startBuild('build-b'));
  await eventually('build B to be current', async () => (await currentBuild()) === 'build-b');

  // The keeper's next task (a hint: it re-reads and stays) runs on B. Hinted again until it does:
  // the new routing reaches the queue's partitions a moment after the deployment names B current.
  await eventually(
    'the keeper to move to B',
    async () => {
      await keeperRun.signal('followedObjectChanged', { event: 'upgrade test' });
      return (await versioning(keeperRun)).buildId === 'build-b';
    },
    { intervalMs: 1_000 },
  );

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

  // With A gone, a spec change reaches Cloudflare through the source and the sync, both on B.
  await k.apply(dnsRecord(app, '192.0.2.2'));
  await eventually('the record patched on B', async () => (await appRecord()) === '192.0.2.2');
  for (const run of [sourceRun, syncRun]) {
    expect((await run.describe()).status.name).toBe('RUNNING');
    expect(await versioning(run)).toEqual({ behavior: AUTO_UPGRADE, buildId: 'build-b' });
    expect(new Set(await taskBuilds(run))).toEqual(new Set(['build-a', 'build-b']));
  }
  // Deleted, the source ends on B and the record goes; the sync is not terminated either.
  await k.delete({ ...dnsRecord(app, ''), name: app, namespace: suite.namespace });
  await eventually('the record deleted on B', async () => (await appRecord()) === undefined);
  await sourceRun.result();
  expect((await sourceRun.describe()).status.name).toBe('COMPLETED');
  expect(await versioning(sourceRun)).toEqual({ behavior: AUTO_UPGRADE, buildId: 'build-b' });
  expect(['RUNNING', 'COMPLETED']).toContain((await syncRun.describe()).status.name);
  expect(await versioning(syncRun)).toEqual({ behavior: AUTO_UPGRADE, buildId: 'build-b' });
});
