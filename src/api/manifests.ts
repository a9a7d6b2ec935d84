/**
 * Manifest capture (`state-snapshotter.deckhouse.io/v1alpha1`): same group, version, names and
 * fields as Deckhouse's state-snapshotter, so existing manifests apply unchanged.
 *
 * ManifestCaptureRequest (namespaced) → ObjectKeeper (follows the request) → ManifestCheckpoint
 * (cluster-scoped, owned by the keeper) → ManifestCheckpointContentChunk (cluster-scoped, owned by
 * the checkpoint). Deleting the request releases everything through the garbage collector.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { KubernetesObject } from '@kubernetes/client-node';
import { defineKind } from './kind.js';
import { COMPLETION_WRITTEN_ONCE, immutableSpec, requestPrinterColumns, requestStatusFields } from './requests.js';
import { AnyObjectName, Conditions, NamespaceName, ObjectName, withCel } from './schema.js';

export const STATE_SNAPSHOTTER_GROUP = 'state-snapshotter.deckhouse.io';

/** Upper bound of `spec.data` (base64 characters); chunks are budgeted on this encoded size. */
export const MAX_CHUNK_DATA_LENGTH = 1_048_576;
/** Targets per request; keeps CEL cost bounded and a request a reviewable object. */
export const MAX_CAPTURE_TARGETS = 5_000;

/**
 * Built-in cluster-scoped kinds, rejected at admission. Cluster-scoped custom kinds are caught by
 * the workflow (discovery) and fail the request with reason InvalidSource.
 */
export const CLUSTER_SCOPED_BUILTIN_KINDS = [
  'Namespace',
  'Node',
  'PersistentVolume',
  'StorageClass',
  'VolumeAttachment',
  'CSIDriver',
  'CSINode',
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
  'APIService',
  'PriorityClass',
  'RuntimeClass',
  'IngressClass',
  'MutatingWebhookConfiguration',
  'ValidatingWebhookConfiguration',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
  'CertificateSigningRequest',
  'VolumeSnapshotContent',
  'VolumeSnapshotClass',
  'ManifestCheckpoint',
  'ManifestCheckpointContentChunk',
  'ObjectKeeper',
] as const;

export const CaptureTarget = Type.Object({
  apiVersion: Type.String({ minLength: 1, maxLength: 253, description: 'API version, e.g. v1 or apps/v1.' }),
  kind: withCel(
    Type.String({ minLength: 1, maxLength: 63, pattern: '^[A-Z][A-Za-z0-9]*$', description: 'Kind of the object.' }),
    [
      {
        rule: `!(self in ${JSON.stringify(CLUSTER_SCOPED_BUILTIN_KINDS)})`,
        message: 'cluster-scoped kinds cannot be captured: targets are namespaced objects in the request namespace',
      },
    ],
  ),
  name: AnyObjectName({
    description: "Name of the object in the request's namespace (any name its kind allows, e.g. `system:leader`).",
  }),
});

export const ManifestCaptureRequestSpec = immutableSpec(
  Type.Object({
    targets: Type.Array(CaptureTarget, {
      minItems: 1,
      maxItems: MAX_CAPTURE_TARGETS,
      description: "Namespaced objects in the request's namespace to capture (at least one).",
    }),
  }),
  'ManifestCaptureRequest',
);

export const ManifestCaptureRequestStatus = Type.Object({
  checkpointName: Type.Optional(Type.String({ description: 'The ManifestCheckpoint holding the captured objects.' })),
  ...requestStatusFields,
});

export type ManifestCaptureRequestSpec = Static<typeof ManifestCaptureRequestSpec>;
export type ManifestCaptureRequestStatus = Static<typeof ManifestCaptureRequestStatus>;
export type CaptureTarget = Static<typeof CaptureTarget>;

export interface ManifestCaptureRequest extends KubernetesObject {
  apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1';
  kind: 'ManifestCaptureRequest';
  spec: ManifestCaptureRequestSpec;
  status?: ManifestCaptureRequestStatus;
}

export const ManifestCaptureRequestKind = defineKind({
  group: STATE_SNAPSHOTTER_GROUP,
  version: 'v1alpha1',
  kind: 'ManifestCaptureRequest',
  plural: 'manifestcapturerequests',
  singular: 'manifestcapturerequest',
  shortNames: ['mcr'],
  scope: 'Namespaced',
  description:
    'ManifestCaptureRequest captures the manifests of namespaced objects into a ManifestCheckpoint, once. ' +
    'It ends in one terminal Ready condition and is deleted after the controller TTL, together with its checkpoint.',
  spec: ManifestCaptureRequestSpec,
  status: ManifestCaptureRequestStatus,
  rootValidations: [COMPLETION_WRITTEN_ONCE],
  printerColumns: [
    { name: 'Checkpoint', type: 'string', jsonPath: '.status.checkpointName' },
    ...requestPrinterColumns,
  ],
});

export const ManifestCaptureRequestRef = Type.Object({
  name: ObjectName(),
  namespace: NamespaceName(),
  uid: Type.String({ minLength: 1 }),
});

export const ManifestCheckpointSpec = immutableSpec(
  Type.Object({
    sourceNamespace: NamespaceName({ description: 'Namespace the objects were captured from.' }),
    manifestCaptureRequestRef: ManifestCaptureRequestRef,
  }),
  'ManifestCheckpoint',
);

export const ChunkInfo = Type.Object({
  name: ObjectName(),
  index: Type.Integer({ minimum: 0 }),
  objectsCount: Type.Integer({ minimum: 0 }),
  sizeBytes: Type.Integer({ minimum: 0, description: 'Size of the gzip data (before base64).' }),
  checksum: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'SHA-256 (hex) of the gzip data.' }),
});

export const ManifestCheckpointStatus = Type.Object({
  chunks: Type.Optional(Type.Array(ChunkInfo, { maxItems: 10_000 })),
  totalObjects: Type.Optional(Type.Integer({ minimum: 0 })),
  totalSizeBytes: Type.Optional(Type.Integer({ minimum: 0 })),
  conditions: Type.Optional(Conditions),
});

export type ManifestCheckpointSpec = Static<typeof ManifestCheckpointSpec>;
export type ManifestCheckpointStatus = Static<typeof ManifestCheckpointStatus>;
export type ChunkInfo = Static<typeof ChunkInfo>;

export interface ManifestCheckpoint extends KubernetesObject {
  apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1';
  kind: 'ManifestCheckpoint';
  spec: ManifestCheckpointSpec;
  status?: ManifestCheckpointStatus;
}

export const ManifestCheckpointKind = defineKind({
  group: STATE_SNAPSHOTTER_GROUP,
  version: 'v1alpha1',
  kind: 'ManifestCheckpoint',
  plural: 'manifestcheckpoints',
  singular: 'manifestcheckpoint',
  shortNames: ['mcp'],
  scope: 'Cluster',
  description:
    'ManifestCheckpoint is the result of a ManifestCaptureRequest: captured objects stored in ordered, ' +
    'checksummed ManifestCheckpointContentChunks. Export with `durable-operators checkpoint export <name>`.',
  spec: ManifestCheckpointSpec,
  status: ManifestCheckpointStatus,
  printerColumns: [
    { name: 'Namespace', type: 'string', jsonPath: '.spec.sourceNamespace' },
    { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
    { name: 'Objects', type: 'integer', jsonPath: '.status.totalObjects' },
    { name: 'Size', type: 'integer', jsonPath: '.status.totalSizeBytes' },
  ],
});

export const ManifestCheckpointContentChunkSpec = withCel(
  Type.Object({
    checkpointName: ObjectName({ description: 'The ManifestCheckpoint this chunk belongs to.' }),
    index: Type.Integer({ minimum: 0, description: 'Position of the chunk in the checkpoint (0-based).' }),
    data: Type.String({ maxLength: MAX_CHUNK_DATA_LENGTH, description: 'base64(gzip(JSON array of objects)).' }),
    objectsCount: Type.Integer({ minimum: 0 }),
    checksum: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'SHA-256 (hex) of the gzip bytes of data.' }),
  }),
  [{ rule: 'self == oldSelf', message: 'a chunk is immutable' }],
);

export type ManifestCheckpointContentChunkSpec = Static<typeof ManifestCheckpointContentChunkSpec>;

export interface ManifestCheckpointContentChunk extends KubernetesObject {
  apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1';
  kind: 'ManifestCheckpointContentChunk';
  spec: ManifestCheckpointContentChunkSpec;
}

export const ManifestCheckpointContentChunkKind = defineKind({
  group: STATE_SNAPSHOTTER_GROUP,
  version: 'v1alpha1',
  kind: 'ManifestCheckpointContentChunk',
  plural: 'manifestcheckpointcontentchunks',
  singular: 'manifestcheckpointcontentchunk',
  shortNames: ['mcpchunk'],
  scope: 'Cluster',
  description: 'One ordered, checksummed piece of a ManifestCheckpoint. Owned by its checkpoint.',
  spec: ManifestCheckpointContentChunkSpec,
  status: Type.Object({}),
  printerColumns: [
    { name: 'Checkpoint', type: 'string', jsonPath: '.spec.checkpointName' },
    { name: 'Index', type: 'integer', jsonPath: '.spec.index' },
    { name: 'Objects', type: 'integer', jsonPath: '.spec.objectsCount' },
  ],
});

/** A checkpoint by name (cluster-scoped), as the KubeClient reads it. */
export const checkpointRef = (name: string) => ({
  apiVersion: ManifestCheckpointKind.apiVersion,
  kind: ManifestCheckpointKind.kind,
  name,
});
/** A checkpoint's chunk by name (cluster-scoped). */
export const chunkRef = (name: string) => ({
  apiVersion: ManifestCheckpointContentChunkKind.apiVersion,
  kind: ManifestCheckpointContentChunkKind.kind,
  name,
});

/** Label on chunks naming their checkpoint, so a checkpoint's chunks are one list call away. */
export const CHECKPOINT_LABEL = `${STATE_SNAPSHOTTER_GROUP}/checkpoint`;
/** Labels on checkpoints naming their source (as the original sets them). */
export const SOURCE_NAMESPACE_LABEL = `${STATE_SNAPSHOTTER_GROUP}/source-namespace`;
export const SOURCE_REQUEST_LABEL = `${STATE_SNAPSHOTTER_GROUP}/source-request`;
