/**
 * A worker that lacks a grant: a Forbidden is retried through the RBAC-rollout window
 * (DO_RBAC_ROLLOUT_ATTEMPTS, shortened here), then the request ends Ready=False/RBACDenied, and
 * every artifact that already says it is a result (the ManifestCheckpoint) says how it ended —
 * whether the Forbidden came from a regular activity (the chunk write) or a local one (reading a
 * target kind the worker may not read). The worker runs as a ServiceAccount bound to the shipped worker role minus one verb, against
 * the real apiserver's RBAC.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManifestCaptureRequest, ManifestCheckpoint } from '../../src/api/manifests.js';
import { requestWorkflowId } from '../../src/domain/requests.js';
import type { ManagedProcess } from '../../src/infra/process.js';
import type { RunningWatcher } from '../../src/watcher/main.js';
import {
  REPO_ROOT,
  eventually,
  kube,
  replayAndRecord,
  serviceAccountKubeconfig,
  spawnRole,
  startTestWatcher,
  temporal,
  uniq,
  waitForWorker,
  waitUntilAllowed,
} from '../support/env.js';
import { kustomizeBuild } from '../support/manifests.js';
import { grantsOf } from '../support/rbac.js';
import { waitTerminal } from '../support/requests.js';

const k = kube();
const TASK_QUEUE = uniq('tq-forbidden');
const ns = uniq('forbidden');
const SA = 'limited-worker';
const ROLE = uniq('limited-worker');
const MISSING = {
  group: 'state-snapshotter.deckhouse.io',
  resource: 'manifestcheckpointcontentchunks',
  verb: 'create',
};
let worker: ManagedProcess | undefined;
let watcher: RunningWatcher | undefined;

/** The shipped worker's grants (deploy/rbac, capture targets included), less the one under test. */
function limitedRules() {
  const rendered = kustomizeBuild(path.join(REPO_ROOT, 'deploy'));
  const grants = grantsOf(rendered, { name: 'durable-operators-worker', namespace: 'durable-operators' }).filter(
    (g) => !(g.group === MISSING.group && g.resource === MISSING.resource && g.verb === MISSING.verb),
  );
  return grants.map((g) => ({ apiGroups: [g.group], resources: [g.resource], verbs: [g.verb] }));
}

beforeAll(async () => {
  await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  await k.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: SA, namespace: ns } });
  await k.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: ROLE },
    rules: limitedRules(),
  });
  await k.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: ROLE },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: ROLE },
    subjects: [{ kind: 'ServiceAccount', name: SA, namespace: ns }],
  });
  await k.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: ns }, data: { a: 'b' } });
  await waitUntilAllowed(
    { namespace: ns, name: SA },
    { group: 'state-snapshotter.deckhouse.io', resource: 'manifestcapturerequests', verb: 'get', namespace: ns },
  );
  const kubeconfig = await serviceAccountKubeconfig(ns, SA, TASK_QUEUE);
  worker = spawnRole('worker', TASK_QUEUE, 'worker-forbidden', {
    KUBECONFIG: kubeconfig,
    DO_RBAC_ROLLOUT_ATTEMPTS: '2',
  });
  await waitForWorker(TASK_QUEUE, worker);
  watcher = await startTestWatcher(TASK_QUEUE);
  await watcher.watcher.waitForSync();
});

afterAll(async () => {
  await watcher?.stop();
  await worker?.stop();
  for (const kind of ['ClusterRoleBinding', 'ClusterRole'])
    await k.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind, name: ROLE }).catch(() => undefined);
});

describe('a worker without a grant it needs', () => {
  it('ends the capture RBACDenied after the rollout window, and the checkpoint says how it ended', async () => {
    const mcr = await k.create<ManifestCaptureRequest>({
      apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1',
      kind: 'ManifestCaptureRequest',
      metadata: { name: uniq('mcr'), namespace: ns },
      spec: { targets: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'cm' }] },
    });
    const done = await waitTerminal<ManifestCaptureRequest>(k, mcr);
    expect(done.ready).toMatchObject({ status: 'False', reason: 'RBACDenied' });
    expect(done.ready.message).toMatch(/create ManifestCheckpointContentChunk .*forbidden/i);
    expect(done.ready.message).toContain('still forbidden after 2 attempts');

    // The checkpoint was created before the Forbidden: it must not be left looking unfinished.
    const checkpoint = (await k.get<ManifestCheckpoint>({
      apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1',
      kind: 'ManifestCheckpoint',
      name: done.status!.checkpointName!,
    }))!;
    expect(checkpoint.status?.conditions).toContainEqual(
      expect.objectContaining({ type: 'Ready', status: 'False', reason: 'Failed' }),
    );
    expect(checkpoint.status?.conditions?.find((c) => c.type === 'Ready')?.message).toContain('forbidden');

    // A small capture's local write, refused, went to the regular activity: the history of that path.
    await replayAndRecord(
      requestWorkflowId({
        kind: 'ManifestCaptureRequest',
        namespace: ns,
        name: mcr.metadata!.name!,
        uid: mcr.metadata!.uid!,
      }),
      'manifest-capture-write-refused',
    );
  });

  it('ends the capture RBACDenied when a local activity is refused (a target the worker may not read)', async () => {
    // The shipped worker role grants no `get` on Pods: checking the target (a local activity,
    // whose failure reaches the workflow without an ActivityFailure around it) is refused.
    const mcr = await k.create<ManifestCaptureRequest>({
      apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1',
      kind: 'ManifestCaptureRequest',
      metadata: { name: uniq('mcr-pod'), namespace: ns },
      spec: { targets: [{ apiVersion: 'v1', kind: 'Pod', name: 'any' }] },
    });
    const id = requestWorkflowId({
      kind: 'ManifestCaptureRequest',
      namespace: ns,
      name: mcr.metadata!.name!,
      uid: mcr.metadata!.uid!,
    });
    // The run ends the request instead of failing (which would leave the request Processing).
    const run = (await temporal()).workflow.getHandle(id);
    await eventually(`workflow ${id} started`, () => run.describe());
    await expect(run.result()).resolves.toMatch(/^RBACDenied/);
    const done = await waitTerminal<ManifestCaptureRequest>(k, mcr);
    expect(done.ready).toMatchObject({ status: 'False', reason: 'RBACDenied' });
    expect(done.ready.message).toMatch(/get Pod .*forbidden/i);
    expect(done.ready.message).toContain('still forbidden after 2 attempts');
    await replayAndRecord(id, 'manifest-capture-target-refused');
  });
});
