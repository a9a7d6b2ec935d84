/**
 * Snapshot capture: create one snapshot per target under the request's ObjectKeeper, and wait
 * (one long-polling, heartbeating activity per target) until the external actors report it
 * ready. Names derive from the request UID, so a retried create finds its own object.
 *
 * Two ways to create a snapshot, chosen controller-wide (DO_VOLUME_SNAPSHOT_MODE):
 *   - VolumeSnapshot: a VolumeSnapshot in the claim's namespace; the stock snapshot-controller
 *     makes and binds the VolumeSnapshotContent, which the wait then hands to the keeper as its
 *     controller owner. Once the keeper goes, the GC deletes both: the VolumeSnapshot deletion
 *     marks the content volumesnapshot-being-deleted, so the sidecar deletes the backend
 *     snapshot as the class's deletionPolicy says (Delete) or keeps it (Retain), and no content
 *     object outlives the request whatever the policy. Works on a stock cluster.
 *   - Content: a bare VolumeSnapshotContent, as the original does; only Deckhouse's patched
 *     external-snapshotter accepts and serves one without a VolumeSnapshot.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { RequestReason } from '../../api/requests.js';
import { ownedByKeeper } from '../../domain/objectkeeper.js';
import { failed, snapshotNameFor, type RequestOutcome, type RequestRef } from '../../domain/requests.js';
import {
  SNAPSHOT_API,
  claimLabel,
  deadlineMessage,
  isUpstreamContentRejection,
  judgeContentAdoption,
  judgeSnapshot,
  upstreamContentMessage,
  type ResolvedVolumeTarget,
  type SnapshotMode,
  type SnapshotObservation,
  type SnapshotVerdict,
} from '../../domain/volumes.js';
import { apiMessage, isAlreadyExists, statusCode, type KubeClient, type ObjectRef } from '../../kube/client.js';
import { getObject, mergePatchObject } from './calls.js';
import { kubeFailure } from './errors.js';
import type { Outcome } from '../../domain/results.js';
import { keeperObject } from './requests.js';
import type { KeeperIdentity } from '../../domain/objectkeeper.js';
import {
  MANAGED_BY,
  pollUntil,
  snapshotRef,
  type VolumeSnapshot,
  type VolumeSnapshotContent,
} from './volume-support.js';

/** The snapshot object a capture made for one target. */
export interface SnapshotIdentity {
  kind: 'VolumeSnapshot' | 'VolumeSnapshotContent';
  name: string;
  /** VolumeSnapshot only: the claim's namespace. */
  namespace?: string;
}

export function createSnapshotActivities(kube: KubeClient) {
  const owner = (keeper: KeeperIdentity) => ownedByKeeper(keeperObject(keeper));

  /** AlreadyExists: the object is ours only if the keeper owns it and it snapshots the same source. */
  async function verifyExisting(
    ref: ObjectRef,
    keeper: KeeperIdentity,
    sameSource: (obj: VolumeSnapshot & VolumeSnapshotContent) => boolean,
  ): Promise<void> {
    const existing = await getObject<VolumeSnapshot & VolumeSnapshotContent>(kube, ref);
    if (!existing) throw ApplicationFailure.retryable(`${ref.kind} ${ref.name} vanished after AlreadyExists`);
    const owned = existing.metadata?.ownerReferences?.some((o) => o.uid === keeper.uid) ?? false;
    if (!owned || !sameSource(existing)) {
      throw ApplicationFailure.nonRetryable(
        `${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name} exists but is not this request's ` +
          `(owned by ObjectKeeper ${keeper.name}: ${owned}; same source: ${sameSource(existing)})`,
        'SnapshotConflict',
      );
    }
  }

  return {
    /** Creates (or finds) the snapshot of one target, owned by the request's keeper. */
    async ensureSnapshot(input: {
      ref: RequestRef;
      keeper: KeeperIdentity;
      target: ResolvedVolumeTarget;
      snapshotMode: SnapshotMode;
    }): Promise<Outcome<{ snapshot: SnapshotIdentity }>> {
      const { ref, keeper, target } = input;
      const name = snapshotNameFor(ref.uid, target.index);
      const label = claimLabel(target.namespace, target.pvcName);
      if (input.snapshotMode === 'VolumeSnapshot') {
        const vsRef = snapshotRef('VolumeSnapshot', name, target.namespace);
        try {
          // A cluster-scoped owner of a namespaced dependent is legal, so the keeper owns it directly.
          await kube.create<VolumeSnapshot>({
            apiVersion: SNAPSHOT_API,
            kind: 'VolumeSnapshot',
            metadata: { name, namespace: target.namespace, labels: MANAGED_BY, ownerReferences: [owner(keeper)] },
            spec: {
              source: { persistentVolumeClaimName: target.pvcName },
              volumeSnapshotClassName: target.snapshotClass,
            },
          });
        } catch (err) {
          if (!isAlreadyExists(err)) throw kubeFailure(err, `create VolumeSnapshot ${target.namespace}/${name}`);
          await verifyExisting(vsRef, keeper, (vs) => vs.spec.source?.persistentVolumeClaimName === target.pvcName);
        }
        return { status: 'ok', snapshot: { kind: 'VolumeSnapshot', name, namespace: target.namespace } };
      }

      const vscRef = snapshotRef('VolumeSnapshotContent', name);
      try {
        await kube.create<VolumeSnapshotContent>({
          apiVersion: SNAPSHOT_API,
          kind: 'VolumeSnapshotContent',
          metadata: { name, labels: MANAGED_BY, ownerReferences: [owner(keeper)] },
          spec: {
            driver: target.driver,
            volumeSnapshotClassName: target.snapshotClass,
            deletionPolicy: target.deletionPolicy ?? 'Delete',
            source: { volumeHandle: target.volumeHandle },
            sourceVolumeMode: target.volumeMode,
          },
        });
      } catch (err) {
        const message = apiMessage(err);
        if (isUpstreamContentRejection(statusCode(err), message)) {
          return {
            status: 'failed',
            outcome: failed(RequestReason.Incompatible, upstreamContentMessage(label, message)),
          };
        }
        if (!isAlreadyExists(err)) throw kubeFailure(err, `create VolumeSnapshotContent ${name}`);
        await verifyExisting(vscRef, keeper, (vsc) => vsc.spec.source?.volumeHandle === target.volumeHandle);
      }
      return { status: 'ok', snapshot: { kind: 'VolumeSnapshotContent', name } };
    },

    /**
     * Waits until the snapshot is ready to use, or the absolute deadline (fixed by the workflow,
     * so every retry keeps it) passes. Returns the VolumeSnapshotContent that holds the snapshot.
     */
    async waitForSnapshotReady(input: {
      target: ResolvedVolumeTarget;
      snapshot: SnapshotIdentity;
      /** VolumeSnapshot mode: the keeper the bound content is handed to (see judgeContentAdoption). */
      keeper?: KeeperIdentity;
      deadline: number;
      timeoutMs: number;
    }): Promise<Outcome<{ contentName: string }>> {
      const { target, snapshot, keeper } = input;
      const byVolumeSnapshot = snapshot.kind === 'VolumeSnapshot';
      const what =
        `${snapshot.kind} ${snapshot.namespace ? `${snapshot.namespace}/` : ''}${snapshot.name} ` +
        `(of ${claimLabel(target.namespace, target.pvcName)})`;
      const expected = { what, driver: target.driver, volumeHandle: target.volumeHandle };
      /** Hands a bound content to the keeper; a problem when it is not ours to take. */
      const adopt = async (vs: VolumeSnapshot, vsc: VolumeSnapshotContent): Promise<RequestOutcome | undefined> => {
        if (!keeper) return undefined;
        const controller = vsc.metadata?.ownerReferences?.find((o) => o.controller);
        const verdict = judgeContentAdoption(
          what,
          {
            name: vsc.metadata!.name!,
            volumeSnapshotRef: vsc.spec.volumeSnapshotRef,
            controller: controller && { kind: controller.kind, name: controller.name, uid: controller.uid },
          },
          { namespace: snapshot.namespace!, name: snapshot.name, uid: vs.metadata!.uid! },
          keeper.uid,
        );
        if (verdict.state === 'failed') return verdict.outcome;
        if (verdict.state === 'owned') return undefined;
        const ref = snapshotRef('VolumeSnapshotContent', vsc.metadata!.name!);
        // resourceVersion: the write loses against any concurrent change (the retry re-reads),
        // so the snapshot-controller's own updates are never overwritten.
        await mergePatchObject(
          kube,
          ref,
          {
            metadata: {
              resourceVersion: vsc.metadata!.resourceVersion,
              ownerReferences: [...(vsc.metadata?.ownerReferences ?? []), owner(keeper)],
            },
          },
          vsc.metadata!.uid!,
          `hand VolumeSnapshotContent ${ref.name} to ObjectKeeper ${keeper.name}`,
        );
        return undefined;
      };
      const observe = async (): Promise<SnapshotObservation & { problem?: RequestOutcome }> => {
        const obs: SnapshotObservation & { problem?: RequestOutcome } = {
          mode: byVolumeSnapshot ? 'VolumeSnapshot' : 'Content',
        };
        let contentName = snapshot.name;
        let vs: VolumeSnapshot | undefined;
        if (byVolumeSnapshot) {
          vs = await getObject<VolumeSnapshot>(kube, snapshotRef('VolumeSnapshot', snapshot.name, snapshot.namespace));
          if (!vs) return obs;
          obs.snapshot = {
            readyToUse: vs.status?.readyToUse,
            boundContentName: vs.status?.boundVolumeSnapshotContentName,
            error: vs.status?.error?.message,
          };
          if (!obs.snapshot.boundContentName) return obs;
          contentName = obs.snapshot.boundContentName;
        }
        const vsc = await getObject<VolumeSnapshotContent>(kube, snapshotRef('VolumeSnapshotContent', contentName));
        if (vsc) {
          obs.content = {
            name: contentName,
            readyToUse: vsc.status?.readyToUse,
            volumeHandle: vsc.spec.source?.volumeHandle,
            error: vsc.status?.error?.message,
          };
          // As soon as it is bound, not once ready: a request deleted mid-wait must not leave it.
          if (vs) obs.problem = await adopt(vs, vsc);
        }
        return obs;
      };
      type Waiting = Extract<SnapshotVerdict, { state: 'waiting' }>;
      const r = await pollUntil<Exclude<SnapshotVerdict, Waiting>, Waiting>(input.deadline, async () => {
        const obs = await observe();
        if (obs.problem) return { done: { state: 'failed', outcome: obs.problem } };
        const verdict = judgeSnapshot(obs, expected);
        return verdict.state === 'waiting' ? { waiting: verdict } : { done: verdict };
      });
      if ('expired' in r) {
        return {
          status: 'failed',
          outcome: failed(RequestReason.DeadlineExceeded, deadlineMessage(what, 'ready', input.timeoutMs, r.expired)),
        };
      }
      const verdict = r.done;
      if (verdict.state === 'failed') return { status: 'failed', outcome: verdict.outcome };
      return { status: 'ok', contentName: verdict.contentName };
    },
  };
}

export type SnapshotActivities = ReturnType<typeof createSnapshotActivities>;
