/**
 * Volume capture and restore (`storage.deckhouse.io/v1alpha1`): same group, version, names and
 * fields as Deckhouse's storage-foundation, so existing manifests apply unchanged.
 *
 * VolumeCaptureRequest → ObjectKeeper (follows the request) → the captured artifact (a
 * VolumeSnapshot/VolumeSnapshotContent, or the detached PersistentVolume) owned by the keeper.
 * VolumeRestoreRequest → ObjectKeeper; the restored PVC is user data and is never owned by it.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { KubernetesObject } from '@kubernetes/client-node';
import { defineKind } from './kind.js';
import { COMPLETION_WRITTEN_ONCE, immutableSpec, requestPrinterColumns, requestStatusFields } from './requests.js';
import { NamespaceName, ObjectName, StringEnum, withCel } from './schema.js';

export const STORAGE_GROUP = 'storage.deckhouse.io';

export const VOLUME_CAPTURE_MODES = ['Snapshot', 'Detach'] as const;
export type VolumeCaptureMode = (typeof VOLUME_CAPTURE_MODES)[number];

export const VolumeTarget = Type.Object({
  uid: Type.Optional(
    Type.String({ description: 'UID of the PVC; when set, a PVC recreated under the same name does not match.' }),
  ),
  apiVersion: Type.String({ minLength: 1 }),
  kind: Type.String({ minLength: 1 }),
  name: ObjectName(),
  namespace: Type.Optional(NamespaceName({ description: "Must be the request's namespace when set." })),
});

export const VolumeCaptureRequestSpec = immutableSpec(
  Type.Object({
    mode: StringEnum(VOLUME_CAPTURE_MODES, {
      description:
        "Snapshot: take a CSI snapshot of each PVC. Detach: release each PVC's PersistentVolume from its " +
        'claim and keep it (the claim is deleted).',
    }),
    targets: Type.Array(
      withCel(VolumeTarget, [
        {
          rule: "self.apiVersion == 'v1' && self.kind == 'PersistentVolumeClaim'",
          message: 'targets must be v1 PersistentVolumeClaims',
        },
      ]),
      { minItems: 1, maxItems: 64, description: 'PersistentVolumeClaims to capture (at least one).' },
    ),
  }),
  'VolumeCaptureRequest',
);

export const ArtifactRef = Type.Object({
  apiVersion: Type.String(),
  kind: Type.String(),
  name: Type.String(),
  namespace: Type.Optional(Type.String()),
});

export const DataRef = Type.Object({
  targetUID: Type.String(),
  target: VolumeTarget,
  artifact: ArtifactRef,
});

export const VolumeCaptureRequestStatus = Type.Object({
  ...requestStatusFields,
  dataRefs: Type.Optional(Type.Array(DataRef, { maxItems: 64 })),
});

export type VolumeCaptureRequestSpec = Static<typeof VolumeCaptureRequestSpec>;
export type VolumeCaptureRequestStatus = Static<typeof VolumeCaptureRequestStatus>;
export type VolumeTarget = Static<typeof VolumeTarget>;
export type DataRef = Static<typeof DataRef>;
export type ArtifactRef = Static<typeof ArtifactRef>;

export interface VolumeCaptureRequest extends KubernetesObject {
  apiVersion: 'storage.deckhouse.io/v1alpha1';
  kind: 'VolumeCaptureRequest';
  spec: VolumeCaptureRequestSpec;
  status?: VolumeCaptureRequestStatus;
}

export const VolumeCaptureRequestKind = defineKind({
  group: STORAGE_GROUP,
  version: 'v1alpha1',
  kind: 'VolumeCaptureRequest',
  plural: 'volumecapturerequests',
  singular: 'volumecapturerequest',
  shortNames: ['vcr'],
  scope: 'Namespaced',
  description:
    'VolumeCaptureRequest captures PersistentVolumeClaims once, by CSI snapshot or by detaching their volumes. ' +
    'It ends in one terminal Ready condition; its artifacts live until the request is deleted (by hand or TTL).',
  spec: VolumeCaptureRequestSpec,
  status: VolumeCaptureRequestStatus,
  rootValidations: [COMPLETION_WRITTEN_ONCE],
  printerColumns: [{ name: 'Mode', type: 'string', jsonPath: '.spec.mode' }, ...requestPrinterColumns],
});

export const RESTORE_SOURCE_KINDS = ['VolumeSnapshotContent', 'PersistentVolume'] as const;
export const VOLUME_MODES = ['Filesystem', 'Block'] as const;
export const ACCESS_MODES = ['ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOncePod'] as const;

export const VolumeRestoreRequestSpec = immutableSpec(
  Type.Object({
    sourceRef: Type.Object({
      name: ObjectName(),
      namespace: Type.Optional(NamespaceName()),
      kind: StringEnum(RESTORE_SOURCE_KINDS),
    }),
    targetNamespace: NamespaceName({
      description: "Namespace of the restored PVC; must be the request's namespace.",
    }),
    targetPVCName: ObjectName({ description: 'Name of the PVC the provisioner creates.' }),
    storageClassName: Type.Optional(ObjectName()),
    volumeMode: StringEnum(VOLUME_MODES),
    fsType: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 32,
        description: 'Filesystem of the restored volume; optional, and ignored when volumeMode is Block.',
      }),
    ),
    accessModes: Type.Optional(Type.Array(StringEnum(ACCESS_MODES), { maxItems: 4 })),
  }),
  'VolumeRestoreRequest',
);

export const TargetPVCRef = Type.Object({
  apiVersion: Type.Optional(Type.String()),
  kind: Type.Optional(Type.String()),
  name: Type.String(),
  namespace: Type.String(),
  uid: Type.String(),
});

export const VolumeRestoreRequestStatus = Type.Object({
  ...requestStatusFields,
  targetPVCRef: Type.Optional(TargetPVCRef),
});

export type VolumeRestoreRequestSpec = Static<typeof VolumeRestoreRequestSpec>;
export type VolumeRestoreRequestStatus = Static<typeof VolumeRestoreRequestStatus>;

export interface VolumeRestoreRequest extends KubernetesObject {
  apiVersion: 'storage.deckhouse.io/v1alpha1';
  kind: 'VolumeRestoreRequest';
  spec: VolumeRestoreRequestSpec;
  status?: VolumeRestoreRequestStatus;
}

export const VolumeRestoreRequestKind = defineKind({
  group: STORAGE_GROUP,
  version: 'v1alpha1',
  kind: 'VolumeRestoreRequest',
  plural: 'volumerestorerequests',
  singular: 'volumerestorerequest',
  shortNames: ['vrr'],
  scope: 'Namespaced',
  description:
    'VolumeRestoreRequest restores a VolumeSnapshotContent or PersistentVolume into a new PVC (created by the ' +
    'external provisioner), once. The restored PVC is user data: it outlives the request.',
  spec: VolumeRestoreRequestSpec,
  status: VolumeRestoreRequestStatus,
  rootValidations: [COMPLETION_WRITTEN_ONCE],
  printerColumns: [
    { name: 'Source', type: 'string', jsonPath: '.spec.sourceRef.name' },
    { name: 'PVC', type: 'string', jsonPath: '.spec.targetPVCName' },
    ...requestPrinterColumns,
  ],
});

/** Annotation on a PersistentVolume released by a Detach capture (as the original sets it). */
export const DETACHED_ANNOTATION = `${STORAGE_GROUP}/detached`;
/** StorageClass annotation naming the VolumeSnapshotClass to use (as the original reads it). */
export const SNAPSHOT_CLASS_ANNOTATION = `${STORAGE_GROUP}/volumesnapshotclass`;
