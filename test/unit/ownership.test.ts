/**
 * The garbage collector's ownership rule and the builders that refuse to emit an illegal
 * reference. The references the code actually emits are checked on the objects the end-to-end
 * tests read back (test/support/ownership.ts: expectGcValidOwners), not against a list here.
 */
import { describe, expect, it } from 'vitest';
import { ALL_KINDS } from '../../src/api/index.js';
import { ownedByKeeper } from '../../src/domain/objectkeeper.js';
import { controllerReference, ownerReferenceProblem, type Scope } from '../../src/domain/ownership.js';

const scope: Record<string, Scope> = {
  ...Object.fromEntries(ALL_KINDS.map((k) => [k.kind, k.scope])),
  VolumeSnapshot: 'Namespaced',
  VolumeSnapshotContent: 'Cluster',
  PersistentVolume: 'Cluster',
  PersistentVolumeClaim: 'Namespaced',
};
const obj = (kind: string, namespace?: string) => ({ kind, scope: scope[kind]!, namespace });

describe('scopes that make the ObjectKeeper necessary', () => {
  it('the request kinds are namespaced and their artifacts cluster-scoped — why the keeper exists', () => {
    for (const request of ['ManifestCaptureRequest', 'VolumeCaptureRequest', 'VolumeRestoreRequest']) {
      expect(scope[request]).toBe('Namespaced');
      for (const artifact of ['ManifestCheckpoint', 'VolumeSnapshotContent', 'PersistentVolume']) {
        expect(ownerReferenceProblem(obj(request, 'ns-a'), obj(artifact))).toMatch(/cannot be owned by namespaced/);
      }
    }
    expect(scope.ObjectKeeper).toBe('Cluster');
  });
});

describe('ownerReferenceProblem', () => {
  it('allows cluster → anything and namespaced → same namespace', () => {
    expect(ownerReferenceProblem(obj('ObjectKeeper'), obj('PersistentVolumeClaim', 'a'))).toBeUndefined();
    expect(ownerReferenceProblem(obj('ManifestCaptureRequest', 'a'), obj('VolumeSnapshot', 'a'))).toBeUndefined();
  });

  it('rejects namespaced → cluster and namespaced → another namespace', () => {
    expect(ownerReferenceProblem(obj('VolumeCaptureRequest', 'a'), obj('VolumeSnapshotContent'))).toBe(
      'cluster-scoped VolumeSnapshotContent cannot be owned by namespaced VolumeCaptureRequest',
    );
    expect(ownerReferenceProblem(obj('VolumeCaptureRequest', 'a'), obj('VolumeSnapshot', 'b'))).toBe(
      'VolumeSnapshot in b cannot be owned by VolumeCaptureRequest in a',
    );
  });
});

describe('controllerReference / ownedByKeeper', () => {
  it('refuses to emit an illegal reference or one without a UID', () => {
    const owner = {
      apiVersion: 'v1',
      kind: 'ManifestCaptureRequest',
      name: 'r',
      uid: 'u1',
      scope: 'Namespaced' as const,
      namespace: 'a',
    };
    expect(() => controllerReference(owner, obj('ManifestCheckpoint'))).toThrow(/illegal ownerReference/);
    const keeper = {
      apiVersion: 'deckhouse.io/v1alpha1',
      kind: 'ObjectKeeper',
      name: 'k',
      uid: '',
      scope: 'Cluster' as const,
    };
    expect(() => controllerReference(keeper, obj('ManifestCheckpoint'))).toThrow(/without a UID/);
  });

  it('a keeper reference carries the keeper UID and is the controller', () => {
    const ref = ownedByKeeper({
      apiVersion: 'deckhouse.io/v1alpha1',
      kind: 'ObjectKeeper',
      metadata: { name: 'k', uid: 'u-1' },
    });
    expect(ref).toEqual({
      apiVersion: 'deckhouse.io/v1alpha1',
      kind: 'ObjectKeeper',
      name: 'k',
      uid: 'u-1',
      controller: true,
    });
    expect(() =>
      ownedByKeeper({ apiVersion: 'deckhouse.io/v1alpha1', kind: 'ObjectKeeper', metadata: { name: 'k' } }),
    ).toThrow(/no apiVersion\/kind\/name\/uid/);
  });
});
