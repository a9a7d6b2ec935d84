/**
 * VolumeRestoreRequest end to end on the real stack: watcher → Temporal → worker →
 * kube-apiserver with the upstream external-snapshotter CRDs and the real garbage collector; the
 * test plays the snapshot-controller, the CSI sidecar and the external-provisioner.
 */
import type { V1PersistentVolume, V1PersistentVolumeClaim, V1StorageClass } from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { objectKeeperRef, type ObjectKeeper } from '../../src/api/objectkeeper.js';
import { ownedByKeeper } from '../../src/domain/objectkeeper.js';
import type { VolumeCaptureRequest, VolumeRestoreRequest, VolumeRestoreRequestSpec } from '../../src/api/volumes.js';
import { keeperNameFor, requestWorkflowId } from '../../src/domain/requests.js';
import type { RunningWatcher } from '../../src/watcher/main.js';
import {
  SNAPSHOT_API,
  createCsiVolume,
  createSnapshotClass,
  installSnapshotCrds,
  provisionerRestores,
  pvcProtectionReleases,
  snapshotControllerBinds,
  snapshotControllerProvisions,
  snapshotterMarksContentReady,
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
  testConfig,
  uniq,
} from '../support/env.js';
import { goneCheck, sweepAfterTtl, waitTerminal, type RequestLike } from '../support/requests.js';

const TASK_QUEUE = uniq('tq-vrr');
const WAIT_TIMEOUT_MS = 8000;
/** Short enough to watch a restore request expire; long enough for every other test to read its result. */
const TTL_MS = 20_000;
const k = kube();
const ns = uniq('vrr-e2e');
const otherNs = uniq('vrr-other');
// A driver of this file's own, so other files' classes and volumes never interfere.
const driver = `${uniq('vrr')}.csi.test`;
const storageClassName = `${driver}-sc`;
let worker: { stop(): Promise<void> } | undefined;
let watcher: RunningWatcher | undefined;

const pvcRef = (name: string, namespace = ns) => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  namespace,
  name,
});
const keeperOf = (vrr: VolumeRestoreRequest) =>
  objectKeeperRef(keeperNameFor({ kind: 'VolumeRestoreRequest', uid: vrr.metadata!.uid! }));

async function request(spec: Partial<VolumeRestoreRequestSpec>): Promise<VolumeRestoreRequest> {
  return k.create<VolumeRestoreRequest>({
    apiVersion: 'storage.deckhouse.io/v1alpha1',
    kind: 'VolumeRestoreRequest',
    metadata: { name: uniq('vrr'), namespace: ns },
    spec: {
      targetNamespace: ns,
      targetPVCName: uniq('restored'),
      volumeMode: 'Filesystem',
      ...spec,
    } as VolumeRestoreRequestSpec,
  });
}

/**
 * A snapshot as a capture leaves it: a VolumeSnapshot of a CSI volume, bound to its content.
 * `ready`: the sidecar has cut it; `failed`: the sidecar reports an error; `pending`: not cut yet.
 */
async function snapshotContent(state: boolean | 'pending'): Promise<VolumeSnapshotContent> {
  const pvcName = uniq('source');
  await createCsiVolume(k, { namespace: ns, pvcName, driver, storageClassName });
  const vsName = uniq('snap');
  await k.create<VolumeSnapshot>({
    apiVersion: SNAPSHOT_API,
    kind: 'VolumeSnapshot',
    metadata: { name: vsName, namespace: ns },
    spec: { source: { persistentVolumeClaimName: pvcName } },
  });
  if (state === true) return snapshotControllerProvisions(k, ns, vsName);
  const content = await snapshotControllerBinds(k, ns, vsName);
  if (state === 'pending') return content;
  return snapshotterReportsContentError(k, content.metadata!.name!, 'rpc error: code = Internal desc = disk gone');
}

/** Whether the request's Ready condition says it is waiting for `what`. */
async function requestWaitingFor(vrr: VolumeRestoreRequest, what: string): Promise<boolean | undefined> {
  const now = await k.get<RequestLike>({
    apiVersion: vrr.apiVersion!,
    kind: vrr.kind!,
    namespace: ns,
    name: vrr.metadata!.name!,
  });
  return now?.status?.conditions?.some((c) => c.reason === 'Processing' && c.message.includes(what));
}

/**
 * Asserts the restored PVC is not the request's: no ownerReference to the request or its keeper,
 * and it outlives both through the real garbage collector. A ConfigMap owned by the keeper is the
 * witness that the GC has processed the keeper's deletion before the PVC is checked.
 */
async function expectPvcOutlives(vrr: VolumeRestoreRequest, pvc: V1PersistentVolumeClaim, deleteRequest: boolean) {
  const keeper = (await k.get<ObjectKeeper>(keeperOf(vrr)))!;
  const witness = await k.create({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: uniq('gc-witness'),
      namespace: ns,
      ownerReferences: [ownedByKeeper(keeper)],
    },
  });
  const before = (await k.get<V1PersistentVolumeClaim>(pvcRef(vrr.spec.targetPVCName)))!;
  const owners = (before.metadata?.ownerReferences ?? []).map((o) => o.uid);
  expect(owners).not.toContain(keeper.metadata!.uid);
  expect(owners).not.toContain(vrr.metadata!.uid);
  const vrrRef = { apiVersion: vrr.apiVersion!, kind: vrr.kind!, namespace: ns, name: vrr.metadata!.name! };
  if (deleteRequest) await k.delete(vrrRef);
  else {
    const done = (await k.get<VolumeRestoreRequest>(vrrRef))!;
    await sweepAfterTtl(TASK_QUEUE, done.status!.completionTimestamp!, TTL_MS);
  }
  await eventually('request gone', goneCheck(k, vrrRef), { timeoutMs: TTL_MS + 60_000 });
  await eventually('keeper deleted', goneCheck(k, keeperOf(vrr)));
  await eventually(
    "the GC took the keeper's dependents",
    goneCheck(k, { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: witness.metadata!.name! }),
    { timeoutMs: 120_000 },
  );
  const kept = await k.get<V1PersistentVolumeClaim>(pvcRef(vrr.spec.targetPVCName));
  expect(kept?.metadata?.uid).toBe(pvc.metadata!.uid);
  expect(kept?.metadata?.deletionTimestamp).toBeUndefined();
}

const rejection = (spec: unknown) =>
  refusal(
    () =>
      k.create({
        apiVersion: 'storage.deckhouse.io/v1alpha1',
        kind: 'VolumeRestoreRequest',
        metadata: { name: uniq('bad'), namespace: ns },
        spec,
      } as never),
    JSON.stringify(spec),
  );

/** The external provisioner's part, once the request is waiting for it (as the real one acts on it). */
async function provisionerServes(vrr: VolumeRestoreRequest) {
  await eventually('request waiting for the provisioner', async () => {
    const now = await k.get<RequestLike>({
      apiVersion: vrr.apiVersion!,
      kind: vrr.kind!,
      namespace: ns,
      name: vrr.metadata!.name!,
    });
    return now?.status?.conditions?.some((c) => c.message.includes('waiting for the external provisioner'));
  });
  return provisionerRestores(k, {
    namespace: ns,
    pvcName: vrr.spec.targetPVCName,
    storageClassName,
    driver,
  });
}

beforeAll(async () => {
  await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: otherNs } });
  await installSnapshotCrds(k);
  await createSnapshotClass(k, { name: uniq('vsc'), driver, isDefault: true });
  const requests = { ...testConfig(TASK_QUEUE).requests, waitTimeoutMs: WAIT_TIMEOUT_MS, ttlMs: TTL_MS };
  worker = await startTestWorker(TASK_QUEUE, { requests });
  watcher = await startTestWatcher(TASK_QUEUE);
  await watcher.watcher.waitForSync();
});

afterAll(async () => {
  await watcher?.stop();
  await worker?.stop();
});

describe('VolumeRestoreRequest', () => {
  it('restores a VolumeSnapshotContent into the PVC the provisioner creates; deleting the request keeps the PVC', async () => {
    const content = await snapshotContent(true);
    const vrr = await request({
      sourceRef: { kind: 'VolumeSnapshotContent', name: content.metadata!.name! },
      storageClassName,
    });
    const { pvc } = await provisionerServes(vrr);

    const done = await waitTerminal<VolumeRestoreRequest>(k, vrr);
    expect(done.ready).toMatchObject({ status: 'True', reason: 'Completed' });
    expect(done.ready.message).toBe(
      `restored VolumeSnapshotContent ${content.metadata!.name} into PVC ${ns}/${vrr.spec.targetPVCName}`,
    );
    expect(Date.parse(done.status!.completionTimestamp!)).not.toBeNaN();
    expect(done.status!.targetPVCRef).toEqual({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      name: vrr.spec.targetPVCName,
      namespace: ns,
      uid: pvc.metadata!.uid,
    });
    const keeper = await k.get<ObjectKeeper>(keeperOf(vrr));
    expect(keeper?.spec.followObjectRef?.uid).toBe(vrr.metadata!.uid);

    // The restored PVC is user data: neither the request nor its keeper owns it, so the GC
    // takes nothing of it.
    await expectPvcOutlives(vrr, pvc, true);
    await replayAndRecord(
      requestWorkflowId({
        kind: 'VolumeRestoreRequest',
        namespace: ns,
        name: vrr.metadata!.name!,
        uid: vrr.metadata!.uid!,
      }),
      'volume-restore-deleted',
    );
  });

  it('after the TTL the request and its keeper are deleted; the restored PVC stays', async () => {
    const content = await snapshotContent(true);
    const vrr = await request({
      sourceRef: { kind: 'VolumeSnapshotContent', name: content.metadata!.name! },
      storageClassName,
    });
    const { pvc } = await provisionerServes(vrr);
    const done = await waitTerminal<VolumeRestoreRequest>(k, vrr);
    expect(done.ready.reason).toBe('Completed');
    await expectPvcOutlives(vrr, pvc, false);
    expect(Date.now() - Date.parse(done.status!.completionTimestamp!)).toBeGreaterThanOrEqual(TTL_MS - 1000);
  });

  it('a VolumeSnapshotContent not ready yet is waited for; the restore completes once the sidecar is done', async () => {
    const content = await snapshotContent('pending');
    const vrr = await request({
      sourceRef: { kind: 'VolumeSnapshotContent', name: content.metadata!.name! },
      storageClassName,
    });
    await eventually('request waiting for the content', () =>
      requestWaitingFor(vrr, `VolumeSnapshotContent ${content.metadata!.name} to become readyToUse`),
    );
    // Nothing is made while the source is not ready.
    expect(await k.get(keeperOf(vrr))).toBeUndefined();
    await snapshotterMarksContentReady(k, content.metadata!.name!);
    const { pvc } = await provisionerServes(vrr);
    const done = await waitTerminal<VolumeRestoreRequest>(k, vrr);
    expect(done.ready).toMatchObject({ status: 'True', reason: 'Completed' });
    expect(done.status!.targetPVCRef?.uid).toBe(pvc.metadata!.uid);
  });

  it('a VolumeSnapshotContent that never becomes ready ends in DeadlineExceeded, naming the sidecar', async () => {
    const content = await snapshotContent('pending');
    const vrr = await request({ sourceRef: { kind: 'VolumeSnapshotContent', name: content.metadata!.name! } });
    const done = await waitTerminal<VolumeRestoreRequest>(k, vrr);
    expect(done.ready).toMatchObject({ status: 'False', reason: 'DeadlineExceeded' });
    expect(done.ready.message).toBe(
      `VolumeSnapshotContent ${content.metadata!.name} was not ready within 8s: still waiting for ` +
        `VolumeSnapshotContent ${content.metadata!.name} to become readyToUse. Check the csi-snapshotter sidecar ` +
        `of driver ${driver} (its logs and the object's events)`,
    );
  });

  it('a content that fails while the restore waits ends the restore with its error', async () => {
    const content = await snapshotContent('pending');
    const vrr = await request({ sourceRef: { kind: 'VolumeSnapshotContent', name: content.metadata!.name! } });
    await eventually('request waiting for the content', () => requestWaitingFor(vrr, 'to become readyToUse'));
    await snapshotterReportsContentError(k, content.metadata!.name!, 'rpc error: code = Internal desc = disk gone');
    const done = await waitTerminal<VolumeRestoreRequest>(k, vrr);
    expect(done.ready).toMatchObject({ status: 'False', reason: 'InvalidSource' });
    expect(done.ready.message).toContain('disk gone');
  });

  it('restores the PersistentVolume a Detach capture left (reserved for a claim nobody uses)', async () => {
    const pvcName = uniq('detach-me');
    const { pv } = await createCsiVolume(k, { namespace: ns, pvcName, driver, storageClassName });
    const vcr = await k.create<VolumeCaptureRequest>({
      apiVersion: 'storage.deckhouse.io/v1alpha1',
      kind: 'VolumeCaptureRequest',
      metadata: { name: uniq('vcr'), namespace: ns },
      spec: { mode: 'Detach', targets: [{ apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: pvcName }] },
    });
    await eventually('claim deleted', () => pvcProtectionReleases(k, ns, pvcName));
    expect((await waitTerminal<VolumeCaptureRequest>(k, vcr)).ready.reason).toBe('Completed');
    const detached = (await k.get<V1PersistentVolume>({
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      name: pv.metadata!.name!,
    }))!;
    expect(detached.spec?.claimRef?.name).toMatch(/^detached-/);

    const vrr = await request({ sourceRef: { kind: 'PersistentVolume', name: pv.metadata!.name! } });
    const { pvc } = await provisionerServes(vrr);
    const done = await waitTerminal<VolumeRestoreRequest>(k, vrr);
    expect(done.ready).toMatchObject({ status: 'True', reason: 'Completed' });
    expect(done.status!.targetPVCRef?.uid).toBe(pvc.metadata!.uid);
  });

  it('restores a released CSI PersistentVolume', async () => {
    const { pv } = await createCsiVolume(k, { namespace: ns, pvcName: uniq('old'), driver, storageClassName });
    // Released as a Detach capture leaves it: no claimRef.
    await k.mergePatch(
      { apiVersion: 'v1', kind: 'PersistentVolume', name: pv.metadata!.name! },
      { spec: { claimRef: null } },
    );
    const vrr = await request({ sourceRef: { kind: 'PersistentVolume', name: pv.metadata!.name! } });
    const { pvc } = await provisionerServes(vrr);
    const done = await waitTerminal<VolumeRestoreRequest>(k, vrr);
    expect(done.ready).toMatchObject({ status: 'True', reason: 'Completed' });
    expect(done.status!.targetPVCRef?.uid).toBe(pvc.metadata!.uid);
  });

  it('ends in DeadlineExceeded when no provisioner acts', async () => {
    const content = await snapshotContent(true);
    const vrr = await request({ sourceRef: { kind: 'VolumeSnapshotContent', name: content.metadata!.name! } });
    const done = await waitTerminal<VolumeRestoreRequest>(k, vrr);
    expect(done.ready).toMatchObject({ status: 'False', reason: 'DeadlineExceeded' });
    expect(done.ready.message).toBe(
      `no PVC ${ns}/${vrr.spec.targetPVCName} was created and bound by the external provisioner within 8s ` +
        `(last seen: not created yet). Check the external-provisioner of driver ${driver} (its logs and the ` +
        `request's events)`,
    );
    expect(done.status!.targetPVCRef).toBeUndefined();
  });
});

describe('VolumeRestoreRequest failures', () => {
  it('an unready VolumeSnapshotContent is InvalidSource, with its error', async () => {
    const content = await snapshotContent(false);
    const vrr = await request({ sourceRef: { kind: 'VolumeSnapshotContent', name: content.metadata!.name! } });
    const done = await waitTerminal<VolumeRestoreRequest>(k, vrr);
    expect(done.ready).toMatchObject({ status: 'False', reason: 'InvalidSource' });
    expect(done.ready.message).toBe(
      `VolumeSnapshotContent ${content.metadata!.name} is not readyToUse: rpc error: code = Internal desc = disk gone`,
    );
    expect(await k.get(keeperOf(vrr))).toBeUndefined();
  });

  it('a missing source is NotFound', async () => {
    const vrr = await request({ sourceRef: { kind: 'VolumeSnapshotContent', name: uniq('nothing') } });
    const done = await waitTerminal<VolumeRestoreRequest>(k, vrr);
    expect(done.ready).toMatchObject({ status: 'False', reason: 'NotFound' });
  });

  it('a PersistentVolume still bound to a claim is PVBound', async () => {
    const { pv, pvc } = await createCsiVolume(k, { namespace: ns, pvcName: uniq('busy'), driver, storageClassName });
    const vrr = await request({ sourceRef: { kind: 'PersistentVolume', name: pv.metadata!.name! } });
    const done = await waitTerminal<VolumeRestoreRequest>(k, vrr);
    expect(done.ready).toMatchObject({ status: 'False', reason: 'PVBound' });
    expect(done.ready.message).toContain(`is bound to ${ns}/${pvc.metadata!.name}`);
    const still = await k.get<V1PersistentVolume>({
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      name: pv.metadata!.name!,
    });
    expect(still?.spec?.claimRef?.uid).toBe(pvc.metadata!.uid);
  });

  it('a target namespace other than the request’s is RBACDenied', async () => {
    const content = await snapshotContent(true);
    const vrr = await request({
      sourceRef: { kind: 'VolumeSnapshotContent', name: content.metadata!.name! },
      targetNamespace: otherNs,
    });
    const done = await waitTerminal<VolumeRestoreRequest>(k, vrr);
    expect(done.ready).toMatchObject({ status: 'False', reason: 'RBACDenied' });
    expect(done.ready.message).toContain(`targetNamespace ${otherNs} is not the request's namespace (${ns})`);
    expect(await k.get(keeperOf(vrr))).toBeUndefined();
  });

  it('a StorageClass of another provisioner is Incompatible', async () => {
    const content = await snapshotContent(true);
    const foreign = uniq('foreign-sc');
    await k.create<V1StorageClass>({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: foreign },
      provisioner: 'other.csi.test',
    });
    const vrr = await request({
      sourceRef: { kind: 'VolumeSnapshotContent', name: content.metadata!.name! },
      storageClassName: foreign,
    });
    const done = await waitTerminal<VolumeRestoreRequest>(k, vrr);
    expect(done.ready).toMatchObject({ status: 'False', reason: 'Incompatible' });
    expect(done.ready.message).toContain(`provisions with other.csi.test, but the source belongs to driver ${driver}`);
  });

  it('a PVC of the target name that predates the request is RestoreFailed and left alone', async () => {
    const content = await snapshotContent(true);
    const existing = uniq('existing');
    const { pvc } = await createCsiVolume(k, { namespace: ns, pvcName: existing, driver, storageClassName });
    await sleep(1100); // creationTimestamp has one-second resolution
    const vrr = await request({
      sourceRef: { kind: 'VolumeSnapshotContent', name: content.metadata!.name! },
      targetPVCName: existing,
    });
    const done = await waitTerminal<VolumeRestoreRequest>(k, vrr);
    expect(done.ready).toMatchObject({ status: 'False', reason: 'RestoreFailed' });
    expect(done.ready.message).toBe(`PVC ${ns}/${existing} already exists; a restore never overwrites a PVC`);
    expect((await k.get(pvcRef(existing)))?.metadata?.uid).toBe(pvc.metadata!.uid);
  });
});

describe('VolumeRestoreRequest admission', () => {
  const valid = {
    sourceRef: { kind: 'VolumeSnapshotContent', name: 'c' },
    targetNamespace: 'x',
    targetPVCName: 'p',
    volumeMode: 'Filesystem',
  };
  it.each([
    [{ ...valid, sourceRef: { kind: 'VolumeSnapshot', name: 'c' } }, 'Unsupported value: "VolumeSnapshot"'],
    [{ ...valid, targetPVCName: undefined }, 'spec.targetPVCName: Required value'],
  ])('%j is rejected: %s', async (spec, expected) => {
    const r = await rejection(spec);
    expect(r.code).toBe(422);
    expect(r.message).toContain(expected);
  });

  it('fsType with volumeMode Block is accepted (and ignored), as in the original', async () => {
    const vrr = await request({
      sourceRef: { kind: 'VolumeSnapshotContent', name: uniq('nothing') },
      volumeMode: 'Block',
      fsType: 'ext4',
    });
    expect(vrr.metadata?.uid).toBeTruthy();
  });

  it('refuses to change the spec after creation', async () => {
    const vrr = await request({ sourceRef: { kind: 'VolumeSnapshotContent', name: uniq('nothing') } });
    const r = await refusal(() =>
      k.mergePatch(
        { apiVersion: vrr.apiVersion!, kind: vrr.kind!, namespace: ns, name: vrr.metadata!.name! },
        { spec: { targetPVCName: 'another' } },
      ),
    );
    expect(r.code).toBe(422);
    expect(r.message).toContain('spec is immutable; create a new VolumeRestoreRequest instead');
  });
});
