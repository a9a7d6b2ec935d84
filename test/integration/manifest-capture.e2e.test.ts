/**
 * ManifestCaptureRequest end to end on the real stack: watcher → Temporal → worker →
 * kube-apiserver, the real garbage collector, and the checkpoint read back as a user would.
 */
import { manifestCaptureRequestWorkflow } from '../../src/workflows/requests/contract.js';
import { randomBytes } from 'node:crypto';
import type { KubernetesObject, V1ConfigMap } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CHECKPOINT_LABEL,
  type ManifestCaptureRequest,
  type ManifestCheckpoint,
  type ManifestCheckpointContentChunk,
} from '../../src/api/manifests.js';
import { objectKeeperRef, type ObjectKeeper } from '../../src/api/objectkeeper.js';
import { reassemble } from '../../src/codec/manifest-chunks.js';
import { checkpointNameFor, keeperNameFor, requestWorkflowId } from '../../src/domain/requests.js';
import type { RunningWatcher } from '../../src/watcher/main.js';
import {
  eventually,
  kube,
  listWorkflows,
  refusal,
  replayAndRecord,
  startTestWatcher,
  startTestWorker,
  temporal,
  uniq,
} from '../support/env.js';
import { expectGcValidOwners } from '../support/ownership.js';
import { goneCheck, waitTerminal } from '../support/requests.js';

const TASK_QUEUE = uniq('tq-mcr');
const k = kube();
const ns = uniq('mcr-e2e');
let worker: { stop(): Promise<void> };
let watcher: RunningWatcher;

const mcpRef = (name: string) => ({
  apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1',
  kind: 'ManifestCheckpoint',
  name,
});

async function configMap(name: string, data: Record<string, string> = { hello: name }): Promise<V1ConfigMap> {
  return k.create<V1ConfigMap>({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns }, data });
}

async function request(targets: { apiVersion: string; kind: string; name: string }[]): Promise<ManifestCaptureRequest> {
  return k.create<ManifestCaptureRequest>({
    apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1',
    kind: 'ManifestCaptureRequest',
    metadata: { name: uniq('mcr'), namespace: ns },
    spec: { targets },
  });
}

async function chunksOf(checkpoint: string): Promise<ManifestCheckpointContentChunk[]> {
  const page = await k.listPage<ManifestCheckpointContentChunk>(
    'state-snapshotter.deckhouse.io/v1alpha1',
    'ManifestCheckpointContentChunk',
    { labelSelector: `${CHECKPOINT_LABEL}=${checkpoint}` },
  );
  return page.items;
}

beforeAll(async () => {
  await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  worker = await startTestWorker(TASK_QUEUE);
  watcher = await startTestWatcher(TASK_QUEUE);
  await watcher.watcher.waitForSync();
});

afterAll(async () => {
  await watcher?.stop();
  await worker?.stop();
});

describe('ManifestCaptureRequest', () => {
  it('captures its targets into a checkpoint owned through the keeper, and exports them back', async () => {
    const cms = [await configMap('b-settings'), await configMap('a-settings', { x: 'y'.repeat(2000) })];
    const deployment = await k.create<KubernetesObject & { spec: unknown }>({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: ns },
      spec: {
        selector: { matchLabels: { app: 'web' } },
        template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'nginx' }] } },
      },
    });
    const mcr = await request([
      { apiVersion: 'v1', kind: 'ConfigMap', name: 'b-settings' },
      { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' },
      { apiVersion: 'v1', kind: 'ConfigMap', name: 'a-settings' },
    ]);
    const uid = mcr.metadata!.uid!;

    const done = await waitTerminal<ManifestCaptureRequest>(k, mcr);
    expect(done.ready).toMatchObject({ status: 'True', reason: 'Completed' });
    expect(done.ready.message).toMatch(/captured 3 objects/);
    expect(done.status!.checkpointName).toBe(checkpointNameFor(uid));
    expect(Date.parse(done.status!.completionTimestamp!)).not.toBeNaN();

    // Ownership chain: request ⇢ keeper (follows it) → checkpoint → chunks.
    const keeper = (await k.get<ObjectKeeper>(
      objectKeeperRef(keeperNameFor({ kind: 'ManifestCaptureRequest', uid })),
    ))!;
    expect(keeper.spec).toEqual({
      mode: 'FollowObject',
      followObjectRef: {
        apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1',
        kind: 'ManifestCaptureRequest',
        namespace: ns,
        name: mcr.metadata!.name!,
        uid,
      },
    });
    const mcp = (await k.get<ManifestCheckpoint>(mcpRef(done.status!.checkpointName!)))!;
    expect(mcp.metadata!.ownerReferences).toEqual([
      {
        apiVersion: 'deckhouse.io/v1alpha1',
        kind: 'ObjectKeeper',
        name: keeper.metadata!.name,
        uid: keeper.metadata!.uid,
        controller: true,
      },
    ]);
    expect(mcp.spec).toEqual({
      sourceNamespace: ns,
      manifestCaptureRequestRef: { name: mcr.metadata!.name, namespace: ns, uid },
    });
    expect(mcp.status).toMatchObject({ totalObjects: 3 });
    expect(mcp.status!.conditions).toContainEqual(expect.objectContaining({ type: 'Ready', status: 'True' }));

    const chunks = await chunksOf(mcp.metadata!.name!);
    await expectGcValidOwners(k, mcp, ...chunks);
    expect(chunks.map((c) => c.metadata!.ownerReferences)).toEqual(
      chunks.map(() => [
        {
          apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1',
          kind: 'ManifestCheckpoint',
          name: mcp.metadata!.name,
          uid: mcp.metadata!.uid,
          controller: true,
        },
      ]),
    );
    const objects = reassemble(
      mcp.status!.chunks!,
      chunks.map((c) => ({ name: c.metadata!.name, ...c.spec })),
    ) as V1ConfigMap[];
    // Deterministic order (apiVersion, kind, namespace, name), content as the apiserver had it.
    expect(objects.map((o) => `${o.apiVersion} ${o.kind} ${o.metadata!.name}`)).toEqual([
      'apps/v1 Deployment web',
      'v1 ConfigMap a-settings',
      'v1 ConfigMap b-settings',
    ]);
    expect(objects[1]!.data).toEqual(cms[1]!.data);
    expect(objects[0]!.metadata!.uid).toBe(deployment.metadata!.uid);

    // The Web UI finds the operation by kind, namespace and name.
    const workflowId = requestWorkflowId({
      kind: 'ManifestCaptureRequest',
      namespace: ns,
      name: mcr.metadata!.name!,
      uid,
    });
    const found = await listWorkflows(
      `K8sKind = 'ManifestCaptureRequest' AND K8sNamespace = '${ns}' AND K8sName = '${mcr.metadata!.name!}'`,
    );
    expect(found.map((w) => w.workflowId)).toEqual([workflowId]);

    // A small capture costs no activity task (its write is a local activity of the same workflow
    // task) and one OperationPhase upsert: the watcher started the workflow Processing.
    await replayAndRecord(workflowId, 'manifest-capture-completed-coalesced');
    const events = (await (await temporal()).workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    expect(events.filter((e) => e.activityTaskScheduledEventAttributes)).toEqual([]);
    const upserted = events.flatMap((e) =>
      Object.keys(e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {}),
    );
    expect(upserted.filter((key) => key === 'OperationPhase')).toEqual(['OperationPhase']);
  });

  it('captures objects whose names are not DNS-1123 (RBAC names such as system:controller:…)', async () => {
    const name = 'system:controller:Demo_signer';
    await k.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name, namespace: ns },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
    });
    const mcr = await request([{ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', name }]);
    const done = await waitTerminal<ManifestCaptureRequest>(k, mcr);
    expect(done.ready).toMatchObject({ status: 'True', reason: 'Completed' });
    const mcp = (await k.get<ManifestCheckpoint>(mcpRef(done.status!.checkpointName!)))!;
    const chunks = await chunksOf(mcp.metadata!.name!);
    const objects = reassemble(
      mcp.status!.chunks!,
      chunks.map((c) => ({ name: c.metadata!.name, ...c.spec })),
    ) as KubernetesObject[];
    expect(objects.map((o) => `${o.kind} ${o.metadata?.name}`)).toEqual([`Role ${name}`]);
  });

  it('fails with NotFound for a missing target and creates no artifacts', async () => {
    await configMap('present');
    const mcr = await request([
      { apiVersion: 'v1', kind: 'ConfigMap', name: 'present' },
      { apiVersion: 'v1', kind: 'ConfigMap', name: 'absent' },
    ]);
    const done = await waitTerminal<ManifestCaptureRequest>(k, mcr);
    expect(done.ready).toMatchObject({ status: 'False', reason: 'NotFound' });
    expect(done.ready.message).toMatch(/ConfigMap .*\/absent .*not found/);
    expect(done.status!.completionTimestamp).toBeTruthy();
    expect(
      await k.get(objectKeeperRef(keeperNameFor({ kind: 'ManifestCaptureRequest', uid: mcr.metadata!.uid! }))),
    ).toBeUndefined();
    expect(await k.get(mcpRef(checkpointNameFor(mcr.metadata!.uid!)))).toBeUndefined();
  });

  it('an object too large for one chunk fails the request with ObjectTooLarge; no chunk is written', async () => {
    // 1,000,000 random bytes: stored as base64 in the object's JSON, incompressible, so its own
    // chunk would need ~1.34 M characters, over the 1,048,576 limit of spec.data.
    await k.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'huge', namespace: ns },
      binaryData: { blob: randomBytes(1_000_000).toString('base64') },
    } as never);
    const mcr = await request([{ apiVersion: 'v1', kind: 'ConfigMap', name: 'huge' }]);
    const done = await waitTerminal<ManifestCaptureRequest>(k, mcr);
    expect(done.ready).toMatchObject({ status: 'False', reason: 'ObjectTooLarge' });
    expect(done.ready.message).toMatch(/ConfigMap .*\/huge .*too large.*1,048,576/);
    const checkpoint = (await k.get<ManifestCheckpoint>(mcpRef(checkpointNameFor(mcr.metadata!.uid!))))!;
    expect(checkpoint.status!.conditions).toContainEqual(
      expect.objectContaining({ type: 'Ready', status: 'False', reason: 'Failed' }),
    );
    expect(await chunksOf(checkpoint.metadata!.name!)).toEqual([]);
  });

  // Kinds whose access cannot be checked never reach the workflow: the admission webhook
  // (src/admission/, test/integration/capture-admission.test.ts) refuses them at creation.
  it('refuses at admission a cluster-scoped custom or aggregated kind', async () => {
    const r = await refusal(() =>
      request([{ apiVersion: 'flowcontrol.apiserver.k8s.io/v1', kind: 'FlowSchema', name: 'exempt' }]),
    );
    expect(r.message).toMatch(/FlowSchema is cluster-scoped/);
  });

  it('refuses at admission a kind the apiserver does not serve', async () => {
    const r = await refusal(() => request([{ apiVersion: 'example.com/v1', kind: 'Widget', name: 'w' }]));
    expect(r.message).toMatch(/does not serve Widget/);
  });

  it('a terminal request is never operated on again, even by a new workflow run', async () => {
    await configMap('once');
    const mcr = await request([{ apiVersion: 'v1', kind: 'ConfigMap', name: 'once' }]);
    const done = await waitTerminal<ManifestCaptureRequest>(k, mcr);
    const ref = {
      apiVersion: mcr.apiVersion,
      kind: 'ManifestCaptureRequest' as const,
      namespace: ns,
      name: mcr.metadata!.name!,
      uid: mcr.metadata!.uid!,
    };
    const workflowId = requestWorkflowId(ref);
    const c = await temporal();
    // What the watcher's resync does once the finished execution's history has expired (retention).
    await c.workflow.getHandle(workflowId).result();
    const rerun = await c.workflow.start(manifestCaptureRequestWorkflow, {
      taskQueue: TASK_QUEUE,
      workflowId,
      args: [{ ref }],
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    });
    // The run ends at once, reporting the request terminal from before it.
    expect(await rerun.result()).toBe('Completed: terminal before this run');
    const after = (await k.get<ManifestCaptureRequest>({ ...ref }))!;
    expect(after.status).toEqual(done.status);
    expect(after.metadata!.resourceVersion).toBe(done.metadata!.resourceVersion);
    // The recorded run replays (test/unit/replay.test.ts keeps replaying it).
    await replayAndRecord(workflowId, 'manifest-capture-terminal-before-run');
    const history = await rerun.fetchHistory();
    const markers = (history.events ?? []).filter(
      (e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity',
    );
    const activities = markers.map((e) => {
      const data = e.markerRecordedEventAttributes!.details!.data!.payloads![0]!.data!;
      return (JSON.parse(Buffer.from(data).toString('utf8')) as { activity_type: string }).activity_type;
    });
    // Read the request (beginRequest writes nothing to a terminal one), and nothing else: no
    // capture step ran (the TTL is the sweep's).
    expect(new Set(activities)).toEqual(new Set(['beginRequest']));
  });

  it('deleting the request removes its keeper at once and the GC removes checkpoint and chunks', async () => {
    await configMap('to-release');
    const mcr = await request([{ apiVersion: 'v1', kind: 'ConfigMap', name: 'to-release' }]);
    const done = await waitTerminal<ManifestCaptureRequest>(k, mcr);
    const checkpoint = done.status!.checkpointName!;
    expect(await chunksOf(checkpoint)).toHaveLength(1);
    const keeperName = keeperNameFor({ kind: 'ManifestCaptureRequest', uid: mcr.metadata!.uid! });

    await k.delete({ apiVersion: mcr.apiVersion, kind: mcr.kind, namespace: ns, name: mcr.metadata!.name! });
    await eventually('keeper deleted', goneCheck(k, objectKeeperRef(keeperName)));
    await eventually('checkpoint garbage-collected', goneCheck(k, mcpRef(checkpoint)), { timeoutMs: 120_000 });
    await eventually('chunks garbage-collected', async () => (await chunksOf(checkpoint)).length === 0, {
      timeoutMs: 120_000,
    });

    const c = await temporal();
    const workflowId = requestWorkflowId({
      kind: 'ManifestCaptureRequest',
      namespace: ns,
      name: mcr.metadata!.name!,
      uid: mcr.metadata!.uid!,
    });
    // The workflow ended with the request's terminal condition: deleting it needs no workflow.
    const result = await c.workflow.getHandle(workflowId).result();
    expect(result).toMatch(/^Completed: /);
    await replayAndRecord(workflowId, 'manifest-capture-deleted');
  });
});
