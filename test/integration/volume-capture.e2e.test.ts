/**
 * VolumeCaptureRequest end to end on the real stack: watcher → Temporal → worker →
 * kube-apiserver with the upstream external-snapshotter CRDs, the real garbage collector, and
 * the test playing the CSI actors (snapshot-controller, csi-snapshotter sidecar, pvc-protection).
 */
import {
  PatchStrategy,
  setHeaderOptions,
  type V1PersistentVolume,
  type V1PersistentVolumeClaim,
  type V1StorageClass,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { objectKeeperRef, type ObjectKeeper } from '../../src/api/objectkeeper.js';
import {
  DETACHED_ANNOTATION,
  SNAPSHOT_CLASS_ANNOTATION,
  type VolumeCaptureRequest,
  type VolumeTarget,
} from '../../src/api/volumes.js';
import { keeperNameFor, requestWorkflowId, snapshotNameFor } from '../../src/domain/requests.js';
import { ORIGINAL_RECLAIM_POLICY_ANNOTATION } from '../../src/domain/volumes.js';
import type { RunningWatcher } from '../../src/watcher/main.js';
import {
  PVC_PROTECTION_FINALIZER,
  SNAPSHOT_API,
  createCsiVolume,
  createSnapshotClass,
  csiBackend,
  deckhouseSnapshotterServes,
  installDeckhouseSnapshotCrds,
  installSnapshotCrds,
  pvcProtectionReleases,
  snapshotControllerBinds,
  snapshotControllerProvisions,
  snapshotControllersReconcileDeletion,
  snapshotterReportsContentError,
  type VolumeSnapshot,
  type VolumeSnapshotContent,
} from '../support/csi-actors.js';
import {
  eventually,
  kube,
  refusal,
  replayAndRecord,
  startTestWatcher,
  startTestWorker,
  temporal,
  testConfig,
  uniq,
} from '../support/env.js';
import { expectGcValidOwners } from '../support/ownership.js';
import { goneCheck, waitTerminal } from '../support/requests.js';

const TASK_QUEUE = uniq('tq-vcr');
const WAIT_TIMEOUT_MS = 8000;
const k = kube();
const ns = uniq('vcr-e2e');
const otherNs = uniq('vcr-other');
// A driver of this file's own, so other files' VolumeSnapshotClasses never make selection ambiguous.
const driver = `${uniq('vcr')}.csi.test`;
const defaultClass = uniq('vsc-default');
const namedClass = uniq('vsc-named');
let worker: { stop(): Promise<void> } | undefined;
let watcher: RunningWatcher | undefined;

const pvcTarget = (name: string, extra: Partial<VolumeTarget> = {}): VolumeTarget => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  name,
  ...extra,
});
const vsRef = (name: string, namespace = ns) => ({ apiVersion: SNAPSHOT_API, kind: 'VolumeSnapshot', namespace, name });
const vscRef = (name: string) => ({ apiVersion: SNAPSHOT_API, kind: 'VolumeSnapshotContent', name });
const pvcRef = (name: string, namespace = ns) => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  namespace,
  name,
});
const pvRef = (name: string) => ({ apiVersion: 'v1', kind: 'PersistentVolume', name });
const keeperOf = (vcr: VolumeCaptureRequest) =>
  objectKeeperRef(keeperNameFor({ kind: 'VolumeCaptureRequest', uid: vcr.metadata!.uid! }));

async function request(
  mode: 'Snapshot' | 'Detach',
  targets: VolumeTarget[],
  namespace = ns,
): Promise<VolumeCaptureRequest> {
  return k.create<VolumeCaptureRequest>({
    apiVersion: 'storage.deckhouse.io/v1alpha1',
    kind: 'VolumeCaptureRequest',
    metadata: { name: uniq('vcr'), namespace },
    spec: { mode, targets },
  });
}

async function volume(pvcName: string, opts: { storageClassName?: string; driver?: string } = {}) {
  return createCsiVolume(k, {
    namespace: ns,
    pvcName,
    driver: opts.driver ?? driver,
    storageClassName: opts.storageClassName ?? `${driver}-plain`,
  });
}

/** The snapshot-controller's part, for the VolumeSnapshot a request creates for target `index`. */
async function snapshotControllerServes(vcr: VolumeCaptureRequest, index: number): Promise<VolumeSnapshotContent> {
  const name = snapshotNameFor(vcr.metadata!.uid!, index);
  await eventually(`VolumeSnapshot ${name}`, () => k.get(vsRef(name)));
  return snapshotControllerProvisions(k, ns, name);
}

const rejection = (spec: unknown) =>
  refusal(
    () =>
      k.create({
        apiVersion: 'storage.deckhouse.io/v1alpha1',
        kind: 'VolumeCaptureRequest',
        metadata: { name: uniq('bad'), namespace: ns },
        spec,
      } as never),
    JSON.stringify(spec),
  );

beforeAll(async () => {
  await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: otherNs } });
  await installSnapshotCrds(k);
  await createSnapshotClass(k, { name: defaultClass, driver, isDefault: true });
  await createSnapshotClass(k, { name: namedClass, driver, deletionPolicy: 'Retain' });
  const requests = { ...testConfig(TASK_QUEUE).requests, waitTimeoutMs: WAIT_TIMEOUT_MS };
  worker = await startTestWorker(TASK_QUEUE, { requests });
  watcher = await startTestWatcher(TASK_QUEUE);
  await watcher.watcher.waitForSync();
});

afterAll(async () => {
  await watcher?.stop();
  await worker?.stop();
});

describe('VolumeCaptureRequest, Snapshot mode (VolumeSnapshot)', () => {
  it('snapshots each PVC through a VolumeSnapshot owned by the keeper, with the class its StorageClass picks', async () => {
    // `logs` lives in a StorageClass that names its VolumeSnapshotClass; `data` gets the default.
    const annotatedSc = `${driver}-annotated`;
    await k.create<V1StorageClass>({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: annotatedSc, annotations: { [SNAPSHOT_CLASS_ANNOTATION]: namedClass } },
      provisioner: driver,
      reclaimPolicy: 'Delete',
    });
    const data = await volume('data');
    const logs = await volume('logs', { storageClassName: annotatedSc });
    const vcr = await request('Snapshot', [pvcTarget('data', { uid: data.pvc.metadata!.uid! }), pvcTarget('logs')]);
    const uid = vcr.metadata!.uid!;

    const contents = [await snapshotControllerServes(vcr, 0), await snapshotControllerServes(vcr, 1)];
    const done = await waitTerminal<VolumeCaptureRequest>(k, vcr);
    expect(done.ready).toMatchObject({ status: 'True', reason: 'Completed' });
    expect(done.ready.message).toContain(`data → VolumeSnapshot ${snapshotNameFor(uid, 0)}`);
    expect(Date.parse(done.status!.completionTimestamp!)).not.toBeNaN();
    expect(done.status!.dataRefs).toEqual([
      {
        targetUID: data.pvc.metadata!.uid,
        target: pvcTarget('data', { uid: data.pvc.metadata!.uid! }),
        artifact: { apiVersion: SNAPSHOT_API, kind: 'VolumeSnapshotContent', name: contents[0]!.metadata!.name },
      },
      {
        targetUID: logs.pvc.metadata!.uid,
        target: pvcTarget('logs'),
        artifact: { apiVersion: SNAPSHOT_API, kind: 'VolumeSnapshotContent', name: contents[1]!.metadata!.name },
      },
    ]);

    // request ⇢ keeper (follows it) → VolumeSnapshots (→ contents, the snapshot-controller's).
    const keeper = (await k.get<ObjectKeeper>(keeperOf(vcr)))!;
    expect(keeper.spec).toEqual({
      mode: 'FollowObject',
      followObjectRef: {
        apiVersion: 'storage.deckhouse.io/v1alpha1',
        kind: 'VolumeCaptureRequest',
        namespace: ns,
        name: vcr.metadata!.name,
        uid,
      },
    });
    const snapshots = [
      (await k.get<VolumeSnapshot>(vsRef(snapshotNameFor(uid, 0))))!,
      (await k.get<VolumeSnapshot>(vsRef(snapshotNameFor(uid, 1))))!,
    ];
    await expectGcValidOwners(k, ...snapshots);
    for (const vs of snapshots) {
      expect(vs.metadata!.ownerReferences).toEqual([
        {
          apiVersion: 'deckhouse.io/v1alpha1',
          kind: 'ObjectKeeper',
          name: keeper.metadata!.name,
          uid: keeper.metadata!.uid,
          controller: true,
        },
      ]);
    }
    expect(snapshots.map((vs) => vs.spec)).toEqual([
      { source: { persistentVolumeClaimName: 'data' }, volumeSnapshotClassName: defaultClass },
      { source: { persistentVolumeClaimName: 'logs' }, volumeSnapshotClassName: namedClass },
    ]);
  });

  it.each(['Delete', 'Retain'] as const)(
    'deletionPolicy %s: the keeper owns the VolumeSnapshot and its content; deleting the request → keeper → GC removes both',
    async (deletionPolicy) => {
      // A StorageClass naming a class of this policy, so the snapshot-controller makes a content with it.
      const vsClass = uniq(`vsc-${deletionPolicy.toLowerCase()}`);
      await createSnapshotClass(k, { name: vsClass, driver, deletionPolicy });
      const sc = uniq(`${driver}-gc`);
      await k.create<V1StorageClass>({
        apiVersion: 'storage.k8s.io/v1',
        kind: 'StorageClass',
        metadata: { name: sc, annotations: { [SNAPSHOT_CLASS_ANNOTATION]: vsClass } },
        provisioner: driver,
      });
      const pvcName = uniq('short-lived');
      await volume(pvcName, { storageClassName: sc });
      const vcr = await request('Snapshot', [pvcTarget(pvcName)]);
      const content = await snapshotControllerServes(vcr, 0);
      expect(content.spec.deletionPolicy).toBe(deletionPolicy);
      const done = await waitTerminal<VolumeCaptureRequest>(k, vcr);
      expect(done.ready.status).toBe('True');

      // The content the snapshot-controller made is the keeper's too (its only controller owner).
      const keeper = (await k.get<ObjectKeeper>(keeperOf(vcr)))!;
      const owned = (await k.get<VolumeSnapshotContent>(vscRef(content.metadata!.name!)))!;
      await expectGcValidOwners(k, owned);
      expect(owned.metadata!.ownerReferences).toEqual([
        {
          apiVersion: 'deckhouse.io/v1alpha1',
          kind: 'ObjectKeeper',
          name: keeper.metadata!.name,
          uid: keeper.metadata!.uid,
          controller: true,
        },
      ]);
      // What the snapshot-controller keeps of its own is still there.
      expect(owned.metadata!.finalizers).toEqual(content.metadata!.finalizers);
      expect(owned.spec.volumeSnapshotRef).toEqual(content.spec.volumeSnapshotRef);

      await k.delete({ apiVersion: vcr.apiVersion, kind: vcr.kind, namespace: ns, name: vcr.metadata!.name! });
      await eventually('keeper deleted', goneCheck(k, keeperOf(vcr)));
      // The real GC deletes both; the test plays the snapshot-controller and sidecar on deletion.
      const vsName = snapshotNameFor(vcr.metadata!.uid!, 0);
      await eventually(
        'VolumeSnapshot and VolumeSnapshotContent gone',
        () =>
          snapshotControllersReconcileDeletion(k, { vsNamespace: ns, vsName, contentName: content.metadata!.name! }),
        { timeoutMs: 120_000 },
      );
      // The backend snapshot follows the class's policy: deleted under Delete, kept under Retain.
      expect(csiBackend.deletedSnapshots.has(content.status!.snapshotHandle!)).toBe(deletionPolicy === 'Delete');

      if (deletionPolicy !== 'Delete') return;
      const workflowId = requestWorkflowId({
        kind: 'VolumeCaptureRequest',
        namespace: ns,
        name: vcr.metadata!.name!,
        uid: vcr.metadata!.uid!,
      });
      // The workflow ended when the request was terminal; deleting it needed no workflow.
      const result = await (await temporal()).workflow.getHandle(workflowId).result();
      expect(result).toMatch(/^Completed: /);
      await replayAndRecord(workflowId, 'volume-capture-snapshot-deleted');
    },
  );

  it('a snapshot that never becomes ready ends in DeadlineExceeded, naming the actor and its last error', async () => {
    await volume('slow');
    const vcr = await request('Snapshot', [pvcTarget('slow')]);
    const vsName = snapshotNameFor(vcr.metadata!.uid!, 0);
    await eventually(`VolumeSnapshot ${vsName}`, () => k.get(vsRef(vsName)));
    const content = await snapshotControllerBinds(k, ns, vsName);
    await snapshotterReportsContentError(
      k,
      content.metadata!.name!,
      'rpc error: code = ResourceExhausted desc = quota',
    );

    const done = await waitTerminal<VolumeCaptureRequest>(k, vcr);
    expect(done.ready).toMatchObject({ status: 'False', reason: 'DeadlineExceeded' });
    expect(done.ready.message).toBe(
      `VolumeSnapshot ${ns}/${vsName} (of PVC ${ns}/slow) was not ready within 8s: still waiting for ` +
        `VolumeSnapshotContent ${content.metadata!.name} to become readyToUse; last error: rpc error: ` +
        `code = ResourceExhausted desc = quota. Check the csi-snapshotter sidecar of driver ${driver} ` +
        `(its logs and the object's events)`,
    );
    expect(done.status!.dataRefs).toBeUndefined();
  });
});

describe('VolumeCaptureRequest, Detach mode', () => {
  it('releases the volume from its claim and hands it to the keeper', async () => {
    const { pvc, pv } = await volume('to-detach');
    const pvName = pv.metadata!.name!;
    const vcr = await request('Detach', [pvcTarget('to-detach')]);
    // The pvc-protection controller, once the claim is terminating and no pod uses it.
    await eventually('claim deleted', () => pvcProtectionReleases(k, ns, 'to-detach'));

    const done = await waitTerminal<VolumeCaptureRequest>(k, vcr);
    expect(done.ready).toMatchObject({ status: 'True', reason: 'Completed' });
    expect(done.ready.message).toContain(`to-detach → PersistentVolume ${pvName}`);
    expect(done.status!.dataRefs).toEqual([
      {
        targetUID: pvc.metadata!.uid,
        target: pvcTarget('to-detach'),
        artifact: { apiVersion: 'v1', kind: 'PersistentVolume', name: pvName },
      },
    ]);

    expect(await k.get(pvcRef('to-detach'))).toBeUndefined();
    const keeper = (await k.get<ObjectKeeper>(keeperOf(vcr)))!;
    const after = (await k.get<V1PersistentVolume>(pvRef(pvName)))!;
    expect(after.metadata!.uid).toBe(pv.metadata!.uid);
    // Reserved for a claim name nobody uses: Available, but no stranger's claim can bind it.
    expect(after.spec!.claimRef).toEqual({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      namespace: ns,
      name: `detached-${pvc.metadata!.uid}`,
    });
    expect(after.metadata!.annotations).toMatchObject({
      [DETACHED_ANNOTATION]: 'true',
      [ORIGINAL_RECLAIM_POLICY_ANNOTATION]: 'Delete',
    });
    // Retain only while the claim was being deleted; the user's policy is back.
    expect(after.spec!.persistentVolumeReclaimPolicy).toBe('Delete');
    await expectGcValidOwners(k, after);
    expect(after.metadata!.ownerReferences).toEqual([
      expect.objectContaining({
        apiVersion: 'deckhouse.io/v1alpha1',
        kind: 'ObjectKeeper',
        name: keeper.metadata!.name,
        uid: keeper.metadata!.uid,
        controller: true,
      }),
    ]);
  });

  it('a claim a pod keeps using ends in DeadlineExceeded; the volume stays with Retain', async () => {
    const { pv } = await volume('in-use');
    // Whatever admission did, the claim is protected here as while a pod mounts it.
    await k.core.patchNamespacedPersistentVolumeClaim(
      { name: 'in-use', namespace: ns, body: { metadata: { finalizers: [PVC_PROTECTION_FINALIZER] } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const vcr = await request('Detach', [pvcTarget('in-use')]);
    try {
      const done = await waitTerminal<VolumeCaptureRequest>(k, vcr);
      expect(done.ready).toMatchObject({ status: 'False', reason: 'DeadlineExceeded' });
      expect(done.ready.message).toContain(`PVC ${ns}/in-use was not detached within 8s`);
      expect(done.ready.message).toContain(`finalizers: ${PVC_PROTECTION_FINALIZER}`);
      expect(done.ready.message).toContain('the volume is kept (reclaimPolicy Retain');
      const after = (await k.get<V1PersistentVolume>(pvRef(pv.metadata!.name!)))!;
      expect(after.spec!.persistentVolumeReclaimPolicy).toBe('Retain');
      expect(after.metadata!.annotations?.[DETACHED_ANNOTATION]).toBe('true');
    } finally {
      await pvcProtectionReleases(k, ns, 'in-use');
    }
  });
});

describe('VolumeCaptureRequest failures', () => {
  it('a missing PVC is NotFound and nothing is created', async () => {
    await volume('present');
    const vcr = await request('Snapshot', [pvcTarget('present'), pvcTarget('absent')]);
    const done = await waitTerminal<VolumeCaptureRequest>(k, vcr);
    expect(done.ready).toMatchObject({ status: 'False', reason: 'NotFound' });
    expect(done.ready.message).toMatch(new RegExp(`PVC ${ns}/absent not found`));
    expect(done.status!.completionTimestamp).toBeTruthy();
    expect(await k.get(keeperOf(vcr))).toBeUndefined();
    expect(await k.get(vsRef(snapshotNameFor(vcr.metadata!.uid!, 0)))).toBeUndefined();
  });

  it('a recreated PVC (other UID than the target names) is NotFound', async () => {
    await volume('recreated');
    const vcr = await request('Detach', [pvcTarget('recreated', { uid: 'b6a1f0a8-0000-4000-8000-000000000000' })]);
    const done = await waitTerminal<VolumeCaptureRequest>(k, vcr);
    expect(done.ready).toMatchObject({ status: 'False', reason: 'NotFound' });
    expect(done.ready.message).toMatch(/was recreated/);
    expect(await k.get(pvcRef('recreated'))).toBeDefined();
  });

  it('a target in another namespace is RBACDenied, even when it exists', async () => {
    await createCsiVolume(k, { namespace: otherNs, pvcName: 'theirs', driver, storageClassName: `${driver}-plain` });
    const vcr = await request('Detach', [pvcTarget('theirs', { namespace: otherNs })]);
    const done = await waitTerminal<VolumeCaptureRequest>(k, vcr);
    expect(done.ready).toMatchObject({ status: 'False', reason: 'RBACDenied' });
    expect(done.ready.message).toContain("targets must be in the request's namespace");
    expect(await k.get(keeperOf(vcr))).toBeUndefined();
    expect((await k.get<V1PersistentVolumeClaim>(pvcRef('theirs', otherNs)))!.metadata!.deletionTimestamp).toBe(
      undefined,
    );
  });

  it('a driver without a VolumeSnapshotClass, or a StorageClass naming another driver’s class, is Incompatible', async () => {
    const lonely = `${uniq('nosnap')}.csi.test`;
    await volume('no-class', { driver: lonely, storageClassName: `${lonely}-sc` });
    const mismatchSc = `${driver}-mismatch`;
    const otherDriver = `${uniq('other')}.csi.test`;
    const foreignClass = uniq('vsc-foreign');
    await createSnapshotClass(k, { name: foreignClass, driver: otherDriver });
    await k.create<V1StorageClass>({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: mismatchSc, annotations: { [SNAPSHOT_CLASS_ANNOTATION]: foreignClass } },
      provisioner: driver,
    });
    await volume('mismatch', { storageClassName: mismatchSc });

    const [noClass, mismatch] = await Promise.all([
      request('Snapshot', [pvcTarget('no-class')]).then((r) => waitTerminal<VolumeCaptureRequest>(k, r)),
      request('Snapshot', [pvcTarget('mismatch')]).then((r) => waitTerminal<VolumeCaptureRequest>(k, r)),
    ]);
    expect(noClass.ready).toMatchObject({ status: 'False', reason: 'Incompatible' });
    expect(noClass.ready.message).toContain(`no VolumeSnapshotClass exists for CSI driver ${lonely}`);
    expect(mismatch.ready).toMatchObject({ status: 'False', reason: 'Incompatible' });
    expect(mismatch.ready.message).toContain(
      `StorageClass ${mismatchSc} names VolumeSnapshotClass ${foreignClass} of driver ${otherDriver}, ` +
        `but the volume's CSI driver is ${driver}`,
    );
    expect(await k.get(vsRef(snapshotNameFor(mismatch.metadata!.uid!, 0)))).toBeUndefined();
  });
});

describe('VolumeCaptureRequest admission', () => {
  it.each([
    [{ mode: 'Clone', targets: [pvcTarget('x')] }, 'Unsupported value: "Clone"'],
    [{ mode: 'Snapshot', targets: [] }, 'spec.targets: Invalid value'],
    [{ mode: 'Snapshot' }, 'spec.targets: Required value'],
    [
      { mode: 'Snapshot', targets: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'x' }] },
      'targets must be v1 PersistentVolumeClaims',
    ],
  ])('%j is rejected: %s', async (spec, expected) => {
    const r = await rejection(spec);
    expect(r.code).toBe(422);
    expect(r.message).toContain(expected);
  });

  it('refuses to change the spec after creation', async () => {
    const vcr = await request('Snapshot', [pvcTarget('never-there')]);
    const r = await refusal(() =>
      k.mergePatch(
        { apiVersion: vcr.apiVersion, kind: vcr.kind, namespace: ns, name: vcr.metadata!.name! },
        { spec: { mode: 'Detach' } },
      ),
    );
    expect(r.code).toBe(422);
    expect(r.message).toContain('spec is immutable; create a new VolumeCaptureRequest instead');
  });
});

/**
 * Content mode needs a worker configured for it. Requests are started by whichever watcher sees
 * them first, so this block swaps the file's watcher for one on a Content-mode worker's queue.
 */
/** A worker in Content snapshot mode (DO_VOLUME_SNAPSHOT_MODE=Content) and its watcher, on their own task queue. */
async function startContentModeOperator(queuePrefix: string): Promise<{ stop(): Promise<void> }> {
  const taskQueue = uniq(queuePrefix);
  const requests = {
    ...testConfig(taskQueue).requests,
    waitTimeoutMs: WAIT_TIMEOUT_MS,
    snapshotMode: 'Content' as const,
  };
  const contentWorker = await startTestWorker(taskQueue, { requests });
  const contentWatcher = await startTestWatcher(taskQueue);
  await contentWatcher.watcher.waitForSync();
  return {
    async stop() {
      await contentWatcher.stop();
      await contentWorker.stop();
    },
  };
}

describe('VolumeCaptureRequest, Snapshot mode (Content) on the upstream CRD', () => {
  let content: { stop(): Promise<void> } | undefined;

  beforeAll(async () => {
    await watcher?.stop();
    watcher = undefined;
    content = await startContentModeOperator('tq-vcr-content');
  });

  afterAll(async () => {
    await content?.stop();
  });

  it('is Incompatible, telling the user how to fix it, and leaves no content behind', async () => {
    await volume('content-mode');
    const vcr = await request('Snapshot', [pvcTarget('content-mode')]);
    const done = await waitTerminal<VolumeCaptureRequest>(k, vcr);
    expect(done.ready).toMatchObject({ status: 'False', reason: 'Incompatible' });
    expect(done.ready.message).toContain('this cluster runs the upstream VolumeSnapshotContent CRD');
    expect(done.ready.message).toContain('spec.volumeSnapshotRef: Required value');
    expect(done.ready.message).toContain('DO_VOLUME_SNAPSHOT_MODE=VolumeSnapshot');
    expect(await k.get(vscRef(snapshotNameFor(vcr.metadata!.uid!, 0)))).toBeUndefined();
  });
});

/**
 * Content mode on a cluster running Deckhouse's patched external-snapshotter (relaxed CRD, and
 * controllers that serve a content without a VolumeSnapshot), played by the test.
 */
describe("VolumeCaptureRequest, Snapshot mode (Content) on Deckhouse's external-snapshotter", () => {
  let content: { stop(): Promise<void> } | undefined;

  beforeAll(async () => {
    await installDeckhouseSnapshotCrds(k);
    content = await startContentModeOperator('tq-vcr-deckhouse');
  });

  afterAll(async () => {
    await content?.stop();
    await installSnapshotCrds(k);
  });

  it('snapshots through a bare content owned by the keeper; deleting the request lets the GC remove it', async () => {
    const { pv } = await volume('deckhouse-content');
    const vcr = await request('Snapshot', [pvcTarget('deckhouse-content')]);
    const name = snapshotNameFor(vcr.metadata!.uid!, 0);
    const served = await deckhouseSnapshotterServes(k, name);

    const done = await waitTerminal<VolumeCaptureRequest>(k, vcr);
    expect(done.ready).toMatchObject({ status: 'True', reason: 'Completed' });
    expect(done.ready.message).toContain(`deckhouse-content → VolumeSnapshotContent ${name}`);
    expect(done.status!.dataRefs).toEqual([
      expect.objectContaining({ artifact: { apiVersion: SNAPSHOT_API, kind: 'VolumeSnapshotContent', name } }),
    ]);
    const content = (await k.get<VolumeSnapshotContent>(vscRef(name)))!;
    await expectGcValidOwners(k, content);
    const keeper = (await k.get<ObjectKeeper>(keeperOf(vcr)))!;
    expect(content.metadata!.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'ObjectKeeper', uid: keeper.metadata!.uid, controller: true }),
    ]);
    expect(content.spec).toMatchObject({
      driver,
      volumeSnapshotClassName: defaultClass,
      deletionPolicy: 'Delete',
      source: { volumeHandle: pv.spec!.csi!.volumeHandle },
      sourceVolumeMode: 'Filesystem',
    });
    expect(content.spec.volumeSnapshotRef).toBeUndefined();
    expect(await k.get(vsRef(name))).toBeUndefined();

    await k.delete({ apiVersion: vcr.apiVersion, kind: vcr.kind, namespace: ns, name: vcr.metadata!.name! });
    await eventually('keeper deleted', goneCheck(k, keeperOf(vcr)));
    await eventually(
      'content garbage-collected',
      () => snapshotControllersReconcileDeletion(k, { contentName: name }),
      {
        timeoutMs: 120_000,
      },
    );
    expect(csiBackend.deletedSnapshots.has(served.status!.snapshotHandle!)).toBe(true);
  });
});
