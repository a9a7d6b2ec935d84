import { describe, expect, it } from 'vitest';
import type { VolumeRestoreRequestSpec } from '../../src/api/volumes.js';
import {
  checkRestoreNamespace,
  checkTargets,
  deadlineMessage,
  humanDuration,
  isUpstreamContentRejection,
  judgeClaim,
  judgeContentAdoption,
  judgeExistingTarget,
  judgeRestoredClaim,
  judgeRestoreSource,
  judgeRestoreStorageClass,
  judgeSnapshot,
  judgeVolume,
  reservedClaimName,
  selectSnapshotClass,
  type ClaimFacts,
  type SnapshotClassFacts,
  type VolumeFacts,
} from '../../src/domain/volumes.js';
import type { Outcome } from '../../src/domain/results.js';

const pvcTarget = (name: string, extra: Record<string, string> = {}) => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  name,
  ...extra,
});

const reasonOf = (v: Outcome) => (v.status === 'ok' ? 'ok' : (v.outcome as { reason: string }).reason);

describe('checkTargets', () => {
  it('accepts PVCs in the request namespace, with or without an explicit namespace', () => {
    expect(checkTargets([pvcTarget('a'), pvcTarget('b', { namespace: 'ns' })], 'ns')).toEqual({ status: 'ok' });
  });
  it('denies a target in another namespace', () => {
    const v = checkTargets([pvcTarget('a', { namespace: 'other' })], 'ns');
    expect(reasonOf(v)).toBe('RBACDenied');
    expect(v.status !== 'ok' && v.outcome.message).toMatch(/targets must be in the request's namespace/);
  });
  it('refuses a non-PVC target and a PVC listed twice', () => {
    expect(reasonOf(checkTargets([{ apiVersion: 'v1', kind: 'ConfigMap', name: 'x' }], 'ns'))).toBe('InvalidSource');
    expect(reasonOf(checkTargets([pvcTarget('a'), pvcTarget('a')], 'ns'))).toBe('InvalidSource');
  });
});

describe('judgeClaim / judgeVolume', () => {
  const bound: ClaimFacts = { uid: 'u1', phase: 'Bound', volumeName: 'pv1', deleting: false };
  const csiPv: VolumeFacts = {
    name: 'pv1',
    uid: 'pvu',
    csi: { driver: 'd', volumeHandle: 'h' },
    claimUid: 'u1',
  };
  it('a missing or recreated claim is NotFound', () => {
    expect(reasonOf(judgeClaim(pvcTarget('a'), 'ns', undefined))).toBe('NotFound');
    expect(reasonOf(judgeClaim(pvcTarget('a', { uid: 'u0' }), 'ns', bound))).toBe('NotFound');
    expect(judgeClaim(pvcTarget('a', { uid: 'u1' }), 'ns', bound)).toEqual({ status: 'ok' });
  });
  it('an unbound or terminating claim is InvalidSource', () => {
    expect(reasonOf(judgeClaim(pvcTarget('a'), 'ns', { ...bound, phase: 'Pending', volumeName: undefined }))).toBe(
      'InvalidSource',
    );
    expect(reasonOf(judgeClaim(pvcTarget('a'), 'ns', { ...bound, deleting: true }))).toBe('InvalidSource');
  });
  it('the volume must exist, be CSI and be bound back to the claim', () => {
    expect(judgeVolume('PVC ns/a', bound, csiPv, 'Snapshot')).toEqual({ status: 'ok' });
    expect(reasonOf(judgeVolume('PVC ns/a', bound, undefined, 'Snapshot'))).toBe('NotFound');
    const nonCsi = judgeVolume('PVC ns/a', bound, { ...csiPv, csi: undefined }, 'Snapshot');
    expect(reasonOf(nonCsi)).toBe('InvalidSource');
    expect(nonCsi.status !== 'ok' && nonCsi.outcome.message).toMatch(/not a CSI volume/);
    expect(reasonOf(judgeVolume('PVC ns/a', bound, { ...csiPv, claimUid: 'other' }, 'Snapshot'))).toBe('InvalidSource');
  });
  it('Detach refuses a volume another object already controls', () => {
    const owned = { ...csiPv, controlledBy: 'ObjectKeeper ret-vcr-x' };
    expect(judgeVolume('PVC ns/a', bound, owned, 'Snapshot')).toEqual({ status: 'ok' });
    expect(reasonOf(judgeVolume('PVC ns/a', bound, owned, 'Detach'))).toBe('InvalidSource');
  });
});

describe('selectSnapshotClass', () => {
  const cls = (name: string, driver: string, isDefault = false, deletionPolicy = 'Delete'): SnapshotClassFacts => ({
    name,
    driver,
    isDefault,
    deletionPolicy,
  });
  const select = (classes: SnapshotClassFacts[], requested?: string) =>
    selectSnapshotClass({ label: 'PVC ns/a', driver: 'd1', storageClassName: 'sc', requested, classes });
  const chosen = (r: ReturnType<typeof select>) => (r.status === 'ok' ? r.snapshotClass.name : r.outcome);

  it('uses the class the StorageClass annotation names', () => {
    expect(chosen(select([cls('a', 'd1', true), cls('b', 'd1')], 'b'))).toBe('b');
  });
  it('refuses a named class of another driver, or one that does not exist', () => {
    const other = select([cls('b', 'd2')], 'b');
    expect(reasonOf(other)).toBe('Incompatible');
    expect(other.status !== 'ok' && other.outcome.message).toMatch(/driver d2.*CSI driver is d1/);
    expect(reasonOf(select([cls('a', 'd1')], 'missing'))).toBe('Incompatible');
  });
  it("falls back to the driver's single default class, ignoring other drivers' defaults", () => {
    expect(chosen(select([cls('x', 'd2', true), cls('a', 'd1'), cls('b', 'd1', true)]))).toBe('b');
  });
  it("falls back to the driver's only class when none is default", () => {
    expect(chosen(select([cls('x', 'd2', true), cls('only', 'd1', false, 'Retain')]))).toBe('only');
    const r = select([cls('only', 'd1', false, 'Retain')]);
    expect(r.status === 'ok' && r.snapshotClass.deletionPolicy).toBe('Retain');
  });
  it('is Incompatible when nothing or several classes could be meant', () => {
    const none = select([cls('x', 'd2', true)]);
    expect(reasonOf(none)).toBe('Incompatible');
    expect(none.status !== 'ok' && none.outcome.message).toMatch(/no VolumeSnapshotClass exists for CSI driver d1/);
    const twoDefaults = select([cls('a', 'd1', true), cls('b', 'd1', true)]);
    expect(twoDefaults.status !== 'ok' && twoDefaults.outcome.message).toMatch(/several .* default .*\(a, b\)/);
    const noDefault = select([cls('b', 'd1'), cls('a', 'd1')]);
    expect(noDefault.status !== 'ok' && noDefault.outcome.message).toMatch(
      /2 VolumeSnapshotClasses .*\(a, b\) and none is/,
    );
    expect(noDefault.status !== 'ok' && noDefault.outcome.message).toMatch(
      /storage\.deckhouse\.io\/volumesnapshotclass/,
    );
  });
});

describe('judgeSnapshot', () => {
  const expected = { what: 'VolumeSnapshot ns/s', driver: 'd1', volumeHandle: 'h1' };
  it('VolumeSnapshot mode walks snapshot-controller → sidecar → snapshot-controller', () => {
    const noBinding = judgeSnapshot({ mode: 'VolumeSnapshot', snapshot: {} }, expected);
    expect(noBinding).toMatchObject({ state: 'waiting', actor: 'the snapshot-controller' });
    const notReady = judgeSnapshot(
      {
        mode: 'VolumeSnapshot',
        snapshot: { boundContentName: 'c' },
        content: { name: 'c', volumeHandle: 'h1', error: 'rpc error: quota' },
      },
      expected,
    );
    expect(notReady).toMatchObject({ state: 'waiting', error: 'rpc error: quota' });
    expect(notReady.state === 'waiting' && notReady.actor).toMatch(/csi-snapshotter sidecar of driver d1/);
    expect(
      judgeSnapshot(
        {
          mode: 'VolumeSnapshot',
          snapshot: { boundContentName: 'c' },
          content: { name: 'c', volumeHandle: 'h1', readyToUse: true },
        },
        expected,
      ),
    ).toMatchObject({ state: 'waiting', waitingFor: 'the VolumeSnapshot to become readyToUse' });
    expect(
      judgeSnapshot(
        {
          mode: 'VolumeSnapshot',
          snapshot: { boundContentName: 'c', readyToUse: true },
          content: { name: 'c', volumeHandle: 'h1', readyToUse: true },
        },
        expected,
      ),
    ).toEqual({ state: 'ready', contentName: 'c' });
  });
  it('an error alone is not terminal; a deleted snapshot or another source volume is', () => {
    expect(judgeSnapshot({ mode: 'Content', content: { name: 'c', error: 'boom' } }, expected).state).toBe('waiting');
    expect(judgeSnapshot({ mode: 'VolumeSnapshot' }, expected)).toMatchObject({
      state: 'failed',
      outcome: { reason: 'Failed' },
    });
    expect(judgeSnapshot({ mode: 'Content' }, expected).state).toBe('failed');
    expect(
      judgeSnapshot({ mode: 'Content', content: { name: 'c', volumeHandle: 'other', readyToUse: true } }, expected),
    ).toMatchObject({ state: 'failed', outcome: { reason: 'InvalidSource' } });
    expect(judgeSnapshot({ mode: 'Content', content: { name: 'c', readyToUse: true } }, expected)).toEqual({
      state: 'ready',
      contentName: 'c',
    });
  });
  it('the deadline message says what was awaited, the last error and whom to check', () => {
    const msg = deadlineMessage('VolumeSnapshot ns/s', 'ready', 8000, {
      waitingFor: 'VolumeSnapshotContent c to become readyToUse',
      actor: 'the csi-snapshotter sidecar of driver d1',
      error: 'quota exceeded',
    });
    expect(msg).toBe(
      'VolumeSnapshot ns/s was not ready within 8s: still waiting for VolumeSnapshotContent c to become readyToUse; ' +
        "last error: quota exceeded. Check the csi-snapshotter sidecar of driver d1 (its logs and the object's events)",
    );
    expect(
      deadlineMessage('PVC ns/a', 'detached', 90_000, { waitingFor: 'x', actor: 'y', hint: 'Check the pods.' }),
    ).toBe('PVC ns/a was not detached within 1m30s: still waiting for x. Check the pods.');
  });
});

describe('helpers', () => {
  it('humanDuration prints durations as they are configured', () => {
    expect(humanDuration(8000)).toBe('8s');
    expect(humanDuration(30 * 60_000)).toBe('30m');
    expect(humanDuration(90 * 60_000)).toBe('1h30m');
    expect(humanDuration(61_000)).toBe('1m1s');
    expect(humanDuration(0)).toBe('0ms');
  });
  it('recognises the upstream CRD refusing a content without volumeSnapshotRef', () => {
    expect(isUpstreamContentRejection(422, 'spec.volumeSnapshotRef: Required value')).toBe(true);
    expect(isUpstreamContentRejection(422, 'spec.driver: Required value')).toBe(false);
    expect(isUpstreamContentRejection(409, 'volumeSnapshotRef')).toBe(false);
  });
});

describe('restore rules', () => {
  const spec: VolumeRestoreRequestSpec = {
    sourceRef: { kind: 'VolumeSnapshotContent', name: 'c' },
    targetNamespace: 'ns',
    targetPVCName: 'restored',
    volumeMode: 'Filesystem',
  };
  const content = { kind: 'VolumeSnapshotContent' as const, name: 'c', deleting: false, driver: 'd1' };

  it('the restored PVC lands in the request namespace only', () => {
    expect(checkRestoreNamespace(spec, 'ns')).toEqual({ status: 'ok' });
    expect(reasonOf(checkRestoreNamespace({ ...spec, targetNamespace: 'victim' }, 'ns'))).toBe('RBACDenied');
  });
  it('a content source must exist, be ready and match the volume mode', () => {
    expect(reasonOf(judgeRestoreSource(spec, undefined))).toBe('NotFound');
    const unready = judgeRestoreSource(spec, { ...content, error: 'snapshot failed' });
    expect(reasonOf(unready)).toBe('InvalidSource');
    expect(unready.status !== 'ok' && unready.outcome.message).toMatch(/not readyToUse: snapshot failed/);
    expect(reasonOf(judgeRestoreSource(spec, { ...content, readyToUse: true, sourceVolumeMode: 'Block' }))).toBe(
      'Incompatible',
    );
    expect(judgeRestoreSource(spec, { ...content, readyToUse: true, sourceVolumeMode: 'Filesystem' })).toEqual({
      status: 'ok',
      driver: 'd1',
    });
    expect(reasonOf(judgeRestoreSource(spec, { ...content, readyToUse: true, deleting: true }))).toBe('InvalidSource');
  });
  it('a content that is not ready yet is waited for, naming the sidecar; only its status.error is terminal', () => {
    const waiting = judgeRestoreSource(spec, { ...content });
    expect(waiting).toEqual({
      status: 'ok',
      driver: 'd1',
      pending: {
        waitingFor: 'VolumeSnapshotContent c to become readyToUse',
        actor: 'the csi-snapshotter sidecar of driver d1',
      },
    });
    expect(judgeRestoreSource(spec, { ...content, readyToUse: false })).toMatchObject({ status: 'ok', pending: {} });
    expect(reasonOf(judgeRestoreSource(spec, { ...content, readyToUse: false, error: 'disk gone' }))).toBe(
      'InvalidSource',
    );
    // What the spec already says is judged before waiting: a mode mismatch never becomes ready.
    expect(reasonOf(judgeRestoreSource(spec, { ...content, sourceVolumeMode: 'Block' }))).toBe('Incompatible');
  });
  it("a volume reserved by this project's Detach is a valid source; one bound to a real claim is not", () => {
    const pvSpec: VolumeRestoreRequestSpec = { ...spec, sourceRef: { kind: 'PersistentVolume', name: 'pv' } };
    const pv = { kind: 'PersistentVolume' as const, name: 'pv', deleting: false, driver: 'd1' };
    const uid = '6f1c2a8e-1d2b-4c3d-8e9f-0a1b2c3d4e5f';
    const reserved = { namespace: 'ns', name: reservedClaimName(uid) };
    expect(reservedClaimName(uid)).toBe(`detached-${uid}`);
    // No PV binder has looked yet (the phase still says Bound), or it has (Available): both are ours.
    expect(judgeRestoreSource(pvSpec, { ...pv, phase: 'Bound', detached: true, claimRef: reserved })).toEqual({
      status: 'ok',
      driver: 'd1',
    });
    expect(judgeRestoreSource(pvSpec, { ...pv, phase: 'Available', detached: true, claimRef: reserved }).status).toBe(
      'ok',
    );
    // A claim of that name with a UID is a real binding; so is the name without our detached mark.
    expect(
      reasonOf(
        judgeRestoreSource(pvSpec, { ...pv, phase: 'Bound', detached: true, claimRef: { ...reserved, uid: 'u9' } }),
      ),
    ).toBe('PVBound');
    expect(reasonOf(judgeRestoreSource(pvSpec, { ...pv, phase: 'Bound', claimRef: reserved }))).toBe('PVBound');
    // Still bound to the claim a Detach is deleting: the message says to wait for the capture.
    const detaching = judgeRestoreSource(pvSpec, {
      ...pv,
      phase: 'Bound',
      detached: true,
      claimRef: { namespace: 'ns', name: 'data', uid: 'u1' },
    });
    expect(reasonOf(detaching)).toBe('PVBound');
    expect(detaching.status !== 'ok' && detaching.outcome.message).toMatch(/being detached/);
  });
  it('a volume source must be CSI, not bound to a claim, and of the requested mode', () => {
    const pvSpec: VolumeRestoreRequestSpec = { ...spec, sourceRef: { kind: 'PersistentVolume', name: 'pv' } };
    const pv = { kind: 'PersistentVolume' as const, name: 'pv', deleting: false, driver: 'd1' };
    expect(judgeRestoreSource(pvSpec, { ...pv, phase: 'Available' })).toEqual({ status: 'ok', driver: 'd1' });
    expect(reasonOf(judgeRestoreSource(pvSpec, { ...pv, driver: undefined }))).toBe('InvalidSource');
    expect(
      reasonOf(judgeRestoreSource(pvSpec, { ...pv, phase: 'Bound', claimRef: { namespace: 'a', name: 'b' } })),
    ).toBe('PVBound');
    // A stale phase without a claimRef (no PV controller has looked yet) is not a binding.
    expect(judgeRestoreSource(pvSpec, { ...pv, phase: 'Bound' }).status).toBe('ok');
    expect(reasonOf(judgeRestoreSource(pvSpec, { ...pv, volumeMode: 'Block' }))).toBe('Incompatible');
  });
  it('the StorageClass must exist and belong to the source driver', () => {
    expect(judgeRestoreStorageClass('sc', 'd1', { provisioner: 'd1' })).toEqual({ status: 'ok' });
    expect(reasonOf(judgeRestoreStorageClass('sc', 'd1', undefined))).toBe('NotFound');
    expect(reasonOf(judgeRestoreStorageClass('sc', 'd1', { provisioner: 'd2' }))).toBe('Incompatible');
  });
  it('a PVC older than the request is never taken over', () => {
    const req = '2026-01-01T10:00:05Z';
    expect(judgeExistingTarget('PVC ns/r', undefined, req)).toEqual({ status: 'ok' });
    expect(judgeExistingTarget('PVC ns/r', { creationTimestamp: '2026-01-01T10:00:06Z' }, req)).toEqual({
      status: 'ok',
    });
    expect(judgeExistingTarget('PVC ns/r', { creationTimestamp: req }, req)).toEqual({ status: 'ok' });
    const old = judgeExistingTarget('PVC ns/r', { creationTimestamp: '2026-01-01T10:00:04Z' }, req);
    expect(reasonOf(old)).toBe('RestoreFailed');
    expect(old.status !== 'ok' && old.outcome.message).toMatch(/already exists; a restore never overwrites a PVC/);
  });
  it('the provisioned claim is awaited until Bound; Lost is terminal', () => {
    expect(judgeRestoredClaim('PVC ns/r', undefined)).toEqual({ state: 'waiting', seen: 'not created yet' });
    expect(judgeRestoredClaim('PVC ns/r', { uid: 'u', phase: 'Pending' })).toEqual({
      state: 'waiting',
      seen: 'phase Pending',
    });
    expect(judgeRestoredClaim('PVC ns/r', { uid: 'u', phase: 'Bound' })).toEqual({ state: 'bound', uid: 'u' });
    expect(judgeRestoredClaim('PVC ns/r', { uid: 'u', phase: 'Lost' })).toMatchObject({
      state: 'failed',
      outcome: { reason: 'RestoreFailed' },
    });
  });
});

describe('judgeContentAdoption', () => {
  const vs = { namespace: 'ns', name: 'snap', uid: 'vs-uid' };
  const bound = { name: 'snapcontent-vs-uid', volumeSnapshotRef: { namespace: 'ns', name: 'snap', uid: 'vs-uid' } };
  it("adopts the snapshot-controller's content of our VolumeSnapshot once, then sees it owned", () => {
    expect(judgeContentAdoption('what', bound, vs, 'keeper-uid')).toEqual({ state: 'adopt' });
    expect(
      judgeContentAdoption(
        'what',
        { ...bound, controller: { kind: 'ObjectKeeper', name: 'ret-vcr-x', uid: 'keeper-uid' } },
        vs,
        'keeper-uid',
      ),
    ).toEqual({ state: 'owned' });
  });
  it("never takes a content bound to another VolumeSnapshot, or another controller's", () => {
    const other = judgeContentAdoption(
      'what',
      { ...bound, volumeSnapshotRef: { ...bound.volumeSnapshotRef, uid: 'other' } },
      vs,
      'keeper-uid',
    );
    expect(other).toMatchObject({ state: 'failed', outcome: { reason: 'Failed' } });
    expect(other.state === 'failed' && other.outcome.message).toMatch(/bound to another VolumeSnapshot/);
    const controlled = judgeContentAdoption(
      'what',
      { ...bound, controller: { kind: 'Thing', name: 't', uid: 'u' } },
      vs,
      'keeper-uid',
    );
    expect(controlled).toMatchObject({ state: 'failed', outcome: { reason: 'Failed' } });
    expect(controlled.state === 'failed' && controlled.outcome.message).toMatch(/controlled by Thing t/);
  });
});
