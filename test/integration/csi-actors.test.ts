/** The CSI actor helpers work against the real apiserver with the upstream snapshot CRDs. */
import { beforeAll, describe, expect, it } from 'vitest';
import { apiMessage, statusCode } from '../../src/kube/client.js';
import {
  SNAPSHOT_API,
  binaryQuantity,
  createCsiVolume,
  createSnapshotClass,
  installSnapshotCrds,
  provisionerRestores,
  quantityBytes,
  BEING_DELETED_ANNOTATION,
  VSC_FINALIZER,
  VS_AS_SOURCE_FINALIZER,
  VS_BOUND_FINALIZER,
  csiBackend,
  installDeckhouseSnapshotCrds,
  snapshotControllerProvisions,
  snapshotControllersReconcileDeletion,
  snapshotterReportsContentError,
  type VolumeSnapshot,
  type VolumeSnapshotContent,
} from '../support/csi-actors.js';
import { eventually, kube, uniq } from '../support/env.js';

const k = kube();
const driver = 'csi.test.deckhouse.io';

async function newNamespace(): Promise<string> {
  const name = uniq('csi-actors');
  await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  return name;
}

describe('CSI actor helpers', () => {
  beforeAll(async () => {
    await installSnapshotCrds(k);
  });

  it('installs the upstream CRDs idempotently', async () => {
    await installSnapshotCrds(k);
    for (const name of ['volumesnapshots', 'volumesnapshotcontents', 'volumesnapshotclasses']) {
      const crd = await k.apiextensions.readCustomResourceDefinition({ name: `${name}.snapshot.storage.k8s.io` });
      expect(crd.spec.versions.filter((v) => v.served).map((v) => v.name)).toEqual(['v1']);
    }
  });

  it('the upstream CRD refuses a VolumeSnapshotContent without volumeSnapshotRef', async () => {
    const content = (spec: Record<string, unknown>) => ({
      apiVersion: SNAPSHOT_API,
      kind: 'VolumeSnapshotContent',
      metadata: { name: uniq('vsc-bad') },
      spec: { driver, deletionPolicy: 'Delete', source: { snapshotHandle: 'snap-1' }, ...spec },
    });
    const rejection = async (spec: Record<string, unknown>) => {
      try {
        await k.create(content(spec));
      } catch (err) {
        return { code: statusCode(err), message: apiMessage(err) };
      }
      throw new Error(`apiserver accepted ${JSON.stringify(spec)}`);
    };

    const missing = await rejection({});
    expect(missing.code).toBe(422);
    expect(missing.message).toContain('spec.volumeSnapshotRef: Required value');

    const noNamespace = await rejection({ volumeSnapshotRef: { name: 'vs' } });
    expect(noNamespace.code).toBe(422);
    expect(noNamespace.message).toContain(
      'both spec.volumeSnapshotRef.name and spec.volumeSnapshotRef.namespace must be set',
    );
  });

  it('createCsiVolume leaves a Bound PVC on a bound CSI PV', async () => {
    const namespace = await newNamespace();
    const { pvc, pv } = await createCsiVolume(k, {
      namespace,
      pvcName: 'data',
      driver,
      storageClassName: uniq('sc'),
      size: '2Gi',
    });
    expect(pvc.status).toMatchObject({ phase: 'Bound', capacity: { storage: '2Gi' }, accessModes: ['ReadWriteOnce'] });
    expect(pvc.spec?.volumeName).toBe(pv.metadata!.name);
    expect(pv.status?.phase).toBe('Bound');
    expect(pv.spec?.csi?.driver).toBe(driver);
    expect(pv.spec?.claimRef).toMatchObject({ namespace, name: 'data', uid: pvc.metadata!.uid });
  });

  it('snapshotControllerProvisions leaves a ready VolumeSnapshot bound to a ready content', async () => {
    const namespace = await newNamespace();
    const { pv } = await createCsiVolume(k, { namespace, pvcName: 'data', driver, storageClassName: uniq('sc') });
    const vsClass = await createSnapshotClass(k, { name: uniq('vsclass'), driver });
    const vs = await k.create<VolumeSnapshot>({
      apiVersion: SNAPSHOT_API,
      kind: 'VolumeSnapshot',
      metadata: { name: 'snap', namespace },
      spec: { source: { persistentVolumeClaimName: 'data' }, volumeSnapshotClassName: vsClass.metadata!.name },
    });

    const vsc = await snapshotControllerProvisions(k, namespace, 'snap');
    expect(vsc.metadata!.name).toBe(`snapcontent-${vs.metadata!.uid}`);
    expect(vsc.spec).toMatchObject({
      volumeSnapshotRef: { kind: 'VolumeSnapshot', name: 'snap', namespace, uid: vs.metadata!.uid },
      source: { volumeHandle: pv.spec!.csi!.volumeHandle },
      driver,
      deletionPolicy: 'Delete',
      volumeSnapshotClassName: vsClass.metadata!.name,
    });
    expect(vsc.status).toMatchObject({ readyToUse: true, restoreSize: quantityBytes('1Gi') });
    expect(vsc.status!.snapshotHandle).toBeTruthy();

    const bound = await k.get<VolumeSnapshot>({
      apiVersion: SNAPSHOT_API,
      kind: 'VolumeSnapshot',
      namespace,
      name: 'snap',
    });
    expect(bound!.status).toMatchObject({
      boundVolumeSnapshotContentName: vsc.metadata!.name,
      readyToUse: true,
      restoreSize: binaryQuantity(quantityBytes('1Gi')),
    });
    expect(Date.parse(bound!.status!.creationTime!)).not.toBeNaN();

    const failed = await snapshotterReportsContentError(k, vsc.metadata!.name!, 'driver said no');
    expect(failed.status).toMatchObject({ readyToUse: false, error: { message: 'driver said no' } });

    await k.delete({ apiVersion: SNAPSHOT_API, kind: 'VolumeSnapshot', namespace, name: 'snap' });
    await eventually('snapshot and content deleted', () =>
      snapshotControllersReconcileDeletion(k, {
        vsNamespace: namespace,
        vsName: 'snap',
        contentName: vsc.metadata!.name!,
      }),
    );
  });

  it.each(['Delete', 'Retain'] as const)(
    'deletionPolicy %s: finalizers as the snapshot-controller sets them, and the deletion protocol',
    async (deletionPolicy) => {
      const namespace = await newNamespace();
      await createCsiVolume(k, { namespace, pvcName: 'data', driver, storageClassName: uniq('sc') });
      const vsClass = await createSnapshotClass(k, { name: uniq('vsclass'), driver, deletionPolicy });
      const vsRef = { apiVersion: SNAPSHOT_API, kind: 'VolumeSnapshot', namespace, name: 'snap' };
      await k.create<VolumeSnapshot>({
        ...vsRef,
        metadata: { name: 'snap', namespace },
        spec: { source: { persistentVolumeClaimName: 'data' }, volumeSnapshotClassName: vsClass.metadata!.name },
      });
      const vsc = await snapshotControllerProvisions(k, namespace, 'snap');
      const vscRef = { apiVersion: SNAPSHOT_API, kind: 'VolumeSnapshotContent', name: vsc.metadata!.name! };
      expect(vsc.metadata!.finalizers).toEqual([VSC_FINALIZER]);
      const vs = (await k.get<VolumeSnapshot>(vsRef))!;
      expect(vs.metadata!.finalizers).toEqual(
        deletionPolicy === 'Delete' ? [VS_AS_SOURCE_FINALIZER, VS_BOUND_FINALIZER] : [VS_AS_SOURCE_FINALIZER],
      );

      // The content deleted first (as the GC may): the sidecar waits until the snapshot goes too.
      await k.delete(vscRef);
      expect(
        await snapshotControllersReconcileDeletion(k, {
          vsNamespace: namespace,
          vsName: 'snap',
          contentName: vscRef.name,
        }),
      ).toBe(false);
      expect((await k.get(vscRef))?.metadata?.deletionTimestamp).toBeDefined();
      await k.delete(vsRef);
      await eventually('snapshot and content deleted', () =>
        snapshotControllersReconcileDeletion(k, { vsNamespace: namespace, vsName: 'snap', contentName: vscRef.name }),
      );
      // The backend snapshot follows the policy.
      expect(csiBackend.deletedSnapshots.has(vsc.status!.snapshotHandle!)).toBe(deletionPolicy === 'Delete');
    },
  );

  it('with Retain, deleting only the VolumeSnapshot leaves the content (marked being-deleted) behind', async () => {
    const namespace = await newNamespace();
    await createCsiVolume(k, { namespace, pvcName: 'data', driver, storageClassName: uniq('sc') });
    const vsClass = await createSnapshotClass(k, { name: uniq('vsclass'), driver, deletionPolicy: 'Retain' });
    await k.create<VolumeSnapshot>({
      apiVersion: SNAPSHOT_API,
      kind: 'VolumeSnapshot',
      metadata: { name: 'snap', namespace },
      spec: { source: { persistentVolumeClaimName: 'data' }, volumeSnapshotClassName: vsClass.metadata!.name },
    });
    const vsc = await snapshotControllerProvisions(k, namespace, 'snap');
    await k.delete({ apiVersion: SNAPSHOT_API, kind: 'VolumeSnapshot', namespace, name: 'snap' });
    const names = { vsNamespace: namespace, vsName: 'snap', contentName: vsc.metadata!.name! };
    expect(await snapshotControllersReconcileDeletion(k, names)).toBe(false);
    expect(await snapshotControllersReconcileDeletion(k, names)).toBe(false);
    const left = await k.get<VolumeSnapshotContent>({
      apiVersion: SNAPSHOT_API,
      kind: 'VolumeSnapshotContent',
      name: vsc.metadata!.name!,
    });
    expect(left?.metadata?.deletionTimestamp).toBeUndefined();
    expect(left?.metadata?.annotations?.[BEING_DELETED_ANNOTATION]).toBe('yes');
  });

  it("Deckhouse's relaxed CRD accepts a content without volumeSnapshotRef; the upstream one comes back", async () => {
    const bare = () =>
      k.create({
        apiVersion: SNAPSHOT_API,
        kind: 'VolumeSnapshotContent',
        metadata: { name: uniq('vsc-only') },
        spec: { driver, deletionPolicy: 'Delete', source: { volumeHandle: 'vol-1' } },
      });
    try {
      await installDeckhouseSnapshotCrds(k);
      const created = await bare();
      await k.delete({ apiVersion: SNAPSHOT_API, kind: 'VolumeSnapshotContent', name: created.metadata!.name! });
    } finally {
      await installSnapshotCrds(k);
    }
    await expect(bare()).rejects.toThrow();
  });

  it('provisionerRestores leaves a Bound PVC on a restored CSI PV', async () => {
    const namespace = await newNamespace();
    const { pvc, pv } = await provisionerRestores(k, {
      namespace,
      pvcName: 'restored',
      storageClassName: uniq('sc'),
      driver,
      volumeMode: 'Block',
    });
    expect(pvc.status?.phase).toBe('Bound');
    expect(pvc.spec?.volumeMode).toBe('Block');
    expect(pv.spec?.csi?.volumeHandle).toMatch(/^restored-/);
  });
});
