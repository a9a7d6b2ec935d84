/**
 * Manifest capture: read the targets (uncached), pack them into checksummed chunks, and write
 * the checkpoint and its chunks under the request's ObjectKeeper. Every write is idempotent by
 * name (names derive from the request UID), so a retry after a crash finds its own objects.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/activity';
import {
  CHECKPOINT_LABEL,
  checkpointRef,
  chunkRef,
  ManifestCheckpointContentChunkKind,
  ManifestCheckpointKind,
  SOURCE_NAMESPACE_LABEL,
  SOURCE_REQUEST_LABEL,
  type CaptureTarget,
  type ChunkInfo,
  type ManifestCaptureRequest,
  type ManifestCheckpoint,
  type ManifestCheckpointContentChunk,
  type ManifestCheckpointStatus,
} from '../../api/manifests.js';
import { RequestReason } from '../../api/requests.js';
import { ObjectTooLargeError, packChunks } from '../../codec/manifest-chunks.js';
import { ownedByKeeper } from '../../domain/objectkeeper.js';
import { controllerReference } from '../../domain/ownership.js';
import type { KeeperIdentity } from '../../domain/objectkeeper.js';
import { checkpointNameFor, chunkNameFor, failed, type RequestRef } from '../../domain/requests.js';
import { GONE, failedWith, ok, type Found, type Outcome, type StepResult } from '../../domain/results.js';
import { isAlreadyExists, type KubeClient } from '../../kube/client.js';
import { getObject, heartbeat, listAll, patchStatusUnlessGone } from './calls.js';
import { kubeFailure } from './errors.js';
import { ensureKeeperFollowing, keeperObject, readRequestObject } from './requests.js';

export interface CheckpointIdentity {
  name: string;
  uid: string;
}

export interface CheckpointSummary {
  chunks: ChunkInfo[];
  totalObjects: number;
  totalSizeBytes: number;
}

/** From this many targets of one kind on, they are read with one list instead of a GET each. */
const LIST_THRESHOLD = 8;

export function createManifestActivities(kube: KubeClient) {
  const readRequest = (ref: RequestRef) => readRequestObject<ManifestCaptureRequest>(kube, ref);

  /**
   * Reads every target fresh from the apiserver. A target that does not exist, or whose kind is
   * not served or cluster-scoped, is a terminal outcome (a request is a snapshot of *now*: if
   * the object appears later, that is a new request). Other errors, 403 included, are retried.
   * Many targets of one kind are read with one (paginated) list of the namespace instead of a
   * GET each — still an uncached read, and 1,000 ConfigMaps cost a few calls instead of 1,000.
   */
  async function readTargets(request: ManifestCaptureRequest): Promise<Outcome<{ objects: KubernetesObject[] }>> {
    const namespace = request.metadata!.namespace!;
    const byKind = new Map<string, CaptureTarget[]>();
    for (const t of request.spec.targets) {
      const key = `${t.apiVersion}\n${t.kind}`;
      byKind.set(key, [...(byKind.get(key) ?? []), t]);
    }
    const found = new Map<string, KubernetesObject>();
    const targetKey = (t: Pick<CaptureTarget, 'apiVersion' | 'kind' | 'name'>) =>
      `${t.apiVersion}\n${t.kind}\n${t.name}`;
    for (const targets of byKind.values()) {
      const { apiVersion, kind } = targets[0]!;
      let resource;
      try {
        resource = await kube.objects.servedResource(apiVersion, kind);
      } catch (err) {
        throw kubeFailure(err, `discover ${apiVersion} ${kind}`);
      }
      if (!resource) {
        const label = `${kind} ${namespace}/${targets[0]!.name} (${apiVersion})`;
        return failedWith(
          failed(RequestReason.InvalidSource, `${label}: the apiserver does not serve ${apiVersion} ${kind}`),
        );
      }
      const namespaced = resource.namespaced;
      if (!namespaced) {
        return failedWith(
          failed(
            RequestReason.InvalidSource,
            `${kind} is cluster-scoped; a ManifestCaptureRequest captures namespaced objects in its own namespace`,
          ),
        );
      }
      if (targets.length >= LIST_THRESHOLD) {
        const wanted = new Set(targets.map((t) => t.name));
        for (const obj of await listAll(kube, apiVersion, kind, { namespace })) {
          if (wanted.has(obj.metadata!.name!))
            found.set(targetKey({ apiVersion, kind, name: obj.metadata!.name! }), obj);
        }
      } else {
        for (const t of targets) {
          const obj = await getObject(kube, { apiVersion, kind, namespace, name: t.name });
          if (obj) found.set(targetKey(t), obj);
          heartbeat();
        }
      }
    }
    const objects: KubernetesObject[] = [];
    for (const t of request.spec.targets) {
      const obj = found.get(targetKey(t));
      if (!obj) {
        return failedWith(
          failed(
            RequestReason.NotFound,
            `${t.kind} ${namespace}/${t.name} (${t.apiVersion}) not found; the request captures objects as they ` +
              'are now — create a new request once it exists',
          ),
        );
      }
      // A list returns items without apiVersion/kind; a checkpoint needs them to be re-applied.
      obj.apiVersion ??= t.apiVersion;
      obj.kind ??= t.kind;
      // managedFields are bookkeeping of the apiserver, large and useless in a restore.
      if (obj.metadata) delete obj.metadata.managedFields;
      objects.push(obj);
    }
    return ok({ objects });
  }

  return {
    /** Validates the targets before any artifact exists, so a bad request leaves nothing behind. */
    async checkCaptureTargets(ref: RequestRef): Promise<StepResult<{ count: number }>> {
      const request = await readRequest(ref);
      if (!request) return GONE;
      const result = await readTargets(request);
      return result.status === 'ok' ? ok({ count: result.objects.length }) : result;
    },

    /** Gets or creates the checkpoint, owned by the keeper; returns its apiserver-given UID. */
    async ensureCheckpoint(input: {
      ref: RequestRef;
      keeper: KeeperIdentity;
    }): Promise<CheckpointIdentity & { ready: boolean }> {
      return ensureCheckpointOf(kube, input.ref, input.keeper);
    },

    /**
     * checkCaptureTargets, ensureRequestKeeper and ensureCheckpoint in one call, on one fresh read
     * of the request (the keeper's UID barrier): the targets are validated before any artifact
     * exists, then the keeper, then the checkpoint it owns. Each step is idempotent, so a retry
     * after a crash finds its own objects.
     */
    async prepareCapture(
      ref: RequestRef,
    ): Promise<
      StepResult<{ count: number; keeper: KeeperIdentity; checkpoint: CheckpointIdentity & { ready: boolean } }>
    > {
      const request = await readRequest(ref);
      if (!request) return GONE;
      const targets = await readTargets(request);
      if (targets.status !== 'ok') return targets;
      const keeper = await ensureKeeperFollowing(kube, ref, request);
      const checkpoint = await ensureCheckpointOf(kube, ref, keeper);
      return ok({ count: targets.objects.length, keeper, checkpoint });
    },

    /**
     * Captures the targets into the checkpoint's chunks: creates each missing chunk, keeps a
     * chunk whose checksum matches, replaces one left by an earlier attempt with other content
     * (the checkpoint is not Ready yet, so nobody reads it), and deletes chunks beyond the new
     * count. Heartbeats per chunk; a retry after a crash converges on the same set.
     */
    async writeCheckpointContent(input: {
      ref: RequestRef;
      checkpoint: CheckpointIdentity;
    }): Promise<StepResult<{ summary: CheckpointSummary }>> {
      const { ref, checkpoint } = input;
      const request = await readRequest(ref);
      if (!request) return GONE;
      const targets = await readTargets(request);
      if (targets.status !== 'ok') return targets;
      let packed;
      try {
        packed = packChunks(targets.objects);
      } catch (err) {
        if (err instanceof ObjectTooLargeError) return failedWith(failed(RequestReason.ObjectTooLarge, err.message));
        throw err;
      }
      heartbeat();
      const owner = controllerReference(
        { ...checkpointRef(checkpoint.name), uid: checkpoint.uid, scope: 'Cluster' },
        { kind: ManifestCheckpointContentChunkKind.kind, scope: 'Cluster' },
      );
      const chunks: ChunkInfo[] = [];
      for (const c of packed) {
        const name = chunkNameFor(checkpoint.name, c.index);
        const body: ManifestCheckpointContentChunk = {
          apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1',
          kind: 'ManifestCheckpointContentChunk',
          metadata: { name, labels: { [CHECKPOINT_LABEL]: checkpoint.name }, ownerReferences: [owner] },
          spec: {
            checkpointName: checkpoint.name,
            index: c.index,
            data: c.data,
            objectsCount: c.objectsCount,
            checksum: c.checksum,
          },
        };
        await createOrVerifyChunk(kube, body);
        chunks.push({
          name,
          index: c.index,
          objectsCount: c.objectsCount,
          sizeBytes: c.sizeBytes,
          checksum: c.checksum,
        });
        heartbeat(c.index);
      }
      await deleteChunksFrom(kube, checkpoint.name, packed.length);
      return ok({
        summary: {
          chunks,
          totalObjects: chunks.reduce((n, c) => n + c.objectsCount, 0),
          totalSizeBytes: chunks.reduce((n, c) => n + c.sizeBytes, 0),
        },
      });
    },

    /** The checkpoint's own status: its chunk table and Ready, or why the capture failed. */
    async setCheckpointStatus(input: {
      checkpoint: CheckpointIdentity;
      checkpointStatus: ManifestCheckpointStatus;
    }): Promise<Found> {
      const { checkpoint, checkpointStatus } = input;
      const ref = { ...checkpointRef(checkpoint.name), plural: ManifestCheckpointKind.plural };
      return patchStatusUnlessGone(kube, ref, checkpointStatus, checkpoint.uid);
    },
  };
}

/** Gets or creates the request's checkpoint, owned by the keeper; returns its apiserver-given UID. */
async function ensureCheckpointOf(
  kube: KubeClient,
  ref: RequestRef,
  keeper: KeeperIdentity,
): Promise<CheckpointIdentity & { ready: boolean }> {
  const name = checkpointNameFor(ref.uid);
  let mcp: ManifestCheckpoint | undefined;
  try {
    mcp = await kube.create<ManifestCheckpoint>({
      apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1',
      kind: 'ManifestCheckpoint',
      metadata: {
        name,
        labels: { [SOURCE_NAMESPACE_LABEL]: ref.namespace, [SOURCE_REQUEST_LABEL]: ref.name },
        ownerReferences: [ownedByKeeper(keeperObject(keeper))],
      },
      spec: {
        sourceNamespace: ref.namespace,
        manifestCaptureRequestRef: { name: ref.name, namespace: ref.namespace, uid: ref.uid },
      },
    });
  } catch (err) {
    if (!isAlreadyExists(err)) throw kubeFailure(err, `create ManifestCheckpoint ${name}`);
    mcp = await getObject<ManifestCheckpoint>(kube, checkpointRef(name));
    if (!mcp) throw ApplicationFailure.retryable(`ManifestCheckpoint ${name} vanished after AlreadyExists`);
    if (mcp.spec.manifestCaptureRequestRef.uid !== ref.uid) {
      throw ApplicationFailure.nonRetryable(
        `ManifestCheckpoint ${name} belongs to request uid ${mcp.spec.manifestCaptureRequestRef.uid}, not ${ref.uid}`,
        'CheckpointConflict',
      );
    }
  }
  const ready = mcp.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  return { name, uid: mcp.metadata!.uid!, ready };
}

/** Creates a chunk; AlreadyExists is success only when the stored checksum and index match. */
async function createOrVerifyChunk(kube: KubeClient, body: ManifestCheckpointContentChunk): Promise<void> {
  const name = body.metadata!.name!;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await kube.create(body);
      return;
    } catch (err) {
      if (!isAlreadyExists(err)) throw kubeFailure(err, `create ManifestCheckpointContentChunk ${name}`);
    }
    const existing = await getObject<ManifestCheckpointContentChunk>(kube, chunkRef(name));
    if (!existing) continue; // deleted meanwhile: create again
    if (existing.spec.checksum === body.spec.checksum && existing.spec.index === body.spec.index) return;
    // Left by an earlier attempt that captured different content: chunks are immutable, so replace.
    try {
      await kube.delete(chunkRef(name), { uid: existing.metadata!.uid!, propagationPolicy: 'Background' });
    } catch (err) {
      throw kubeFailure(err, `delete stale ManifestCheckpointContentChunk ${name}`);
    }
  }
  throw ApplicationFailure.retryable(`ManifestCheckpointContentChunk ${name} keeps changing under us`);
}

/** Deletes the checkpoint's chunks with index ≥ count (left by an earlier, longer attempt). */
async function deleteChunksFrom(kube: KubeClient, checkpointName: string, count: number): Promise<void> {
  const chunks = await listAll<ManifestCheckpointContentChunk>(
    kube,
    ManifestCheckpointContentChunkKind.apiVersion,
    ManifestCheckpointContentChunkKind.kind,
    { labelSelector: `${CHECKPOINT_LABEL}=${checkpointName}` },
  );
  const stale = chunks.filter((c) => c.spec.index >= count);
  for (const c of stale) {
    await kube
      .delete(chunkRef(c.metadata!.name!), { uid: c.metadata!.uid!, propagationPolicy: 'Background' })
      .catch((err: unknown) => {
        throw kubeFailure(err, `delete stale chunk ${c.metadata!.name!}`);
      });
  }
}

export type ManifestActivities = ReturnType<typeof createManifestActivities>;
