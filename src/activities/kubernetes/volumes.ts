/**
 * Volume capture activities: uncached reads that resolve what a request's targets refer to (the
 * verdicts are in src/domain/volumes.ts) and the Detach steps. Snapshot creation and its wait
 * live in ./snapshots.ts, the restore in ./restores.ts.
 *
 * Every step reads the current state first and only writes what is missing, so a retried or
 * restarted step converges on the same result.
 */
import type {
  KubernetesObject,
  V1PersistentVolume,
  V1PersistentVolumeClaim,
  V1StorageClass,
} from '@kubernetes/client-node';
import { RequestReason } from '../../api/requests.js';
import { DETACHED_ANNOTATION, SNAPSHOT_CLASS_ANNOTATION, type VolumeCaptureRequest } from '../../api/volumes.js';
import { ownedByKeeper } from '../../domain/objectkeeper.js';
import { failed, keeperNameFor, type RequestRef } from '../../domain/requests.js';
import {
  DEFAULT_SNAPSHOT_CLASS_ANNOTATION,
  ORIGINAL_RECLAIM_POLICY_ANNOTATION,
  SNAPSHOT_API,
  checkTargets,
  claimLabel,
  deadlineMessage,
  judgeClaim,
  judgeVolume,
  reservedClaimName,
  selectSnapshotClass,
  type ClaimFacts,
  type ResolvedVolumeTarget,
  type SnapshotClassFacts,
  type VolumeFacts,
  type VolumeMode,
  type WaitingFor,
} from '../../domain/volumes.js';
import type { KubeClient, ObjectRef } from '../../kube/client.js';
import { getObject, listAll, mergePatchObject } from './calls.js';
import { kubeFailure } from './errors.js';
import { GONE, type Outcome, type StepResult } from '../../domain/results.js';
import { keeperObject, readRequestObject } from './requests.js';
import type { KeeperIdentity } from '../../domain/objectkeeper.js';
import {
  claimRef,
  pollUntil,
  snapshotApiProblem,
  storageClassRef,
  volumeRef,
  type VolumeSnapshotClass,
} from './volume-support.js';

/** Put on every claim by the StorageObjectInUseProtection admission plugin; cleared once no pod uses it. */
const PVC_PROTECTION = 'kubernetes.io/pvc-protection';

function claimFacts(pvc: V1PersistentVolumeClaim): ClaimFacts {
  return {
    uid: pvc.metadata!.uid!,
    phase: pvc.status?.phase,
    volumeName: pvc.spec?.volumeName || undefined,
    deleting: Boolean(pvc.metadata?.deletionTimestamp),
  };
}

/** `ownKeeper`: this request's keeper, which a restarted Detach may already have made the controller. */
function volumeFacts(pv: V1PersistentVolume, ownKeeper: string): VolumeFacts {
  const controller = pv.metadata?.ownerReferences?.find(
    (o) => o.controller && !(o.kind === 'ObjectKeeper' && o.name === ownKeeper),
  );
  return {
    name: pv.metadata!.name!,
    uid: pv.metadata!.uid!,
    csi: pv.spec?.csi ? { driver: pv.spec.csi.driver, volumeHandle: pv.spec.csi.volumeHandle } : undefined,
    claimUid: pv.spec?.claimRef?.uid,
    volumeMode: pv.spec?.volumeMode,
    reclaimPolicy: pv.spec?.persistentVolumeReclaimPolicy,
    storageClassName: pv.spec?.storageClassName || undefined,
    controlledBy: controller ? `${controller.kind} ${controller.name}` : undefined,
  };
}

export function createVolumeActivities(kube: KubeClient) {
  const get = <T extends KubernetesObject>(ref: ObjectRef) => getObject<T>(kube, ref);

  async function listSnapshotClasses(): Promise<SnapshotClassFacts[]> {
    const classes = await listAll<VolumeSnapshotClass>(kube, SNAPSHOT_API, 'VolumeSnapshotClass');
    const out: SnapshotClassFacts[] = classes.map((c) => ({
      name: c.metadata!.name!,
      driver: c.driver,
      deletionPolicy: c.deletionPolicy,
      isDefault: c.metadata?.annotations?.[DEFAULT_SNAPSHOT_CLASS_ANNOTATION] === 'true',
    }));
    return out;
  }

  const patch = (ref: ObjectRef, body: Record<string, unknown>, uid: string, action: string) =>
    mergePatchObject(kube, ref, body, uid, action);

  return {
    /**
     * Reads the request and everything its targets refer to, fresh, before any artifact exists:
     * a request that cannot succeed fails here and leaves nothing behind. Returns small plain
     * facts per target (recorded in the workflow history), never whole objects.
     */
    async resolveVolumeTargets(
      ref: RequestRef,
    ): Promise<StepResult<{ mode: 'Snapshot' | 'Detach'; targets: ResolvedVolumeTarget[] }>> {
      // Deleted, or the name now belongs to another request: this operation has nothing to do.
      const request = await readRequestObject<VolumeCaptureRequest>(kube, ref);
      if (!request) return GONE;
      const { mode, targets } = request.spec;
      if (mode !== 'Snapshot' && mode !== 'Detach') {
        return {
          status: 'failed',
          outcome: failed(RequestReason.InvalidMode, `mode ${String(mode)} is not Snapshot or Detach`),
        };
      }
      const shape = checkTargets(targets, ref.namespace);
      if (shape.status !== 'ok') return shape;
      if (mode === 'Snapshot') {
        const problem = await snapshotApiProblem(kube, [
          'VolumeSnapshotClass',
          'VolumeSnapshot',
          'VolumeSnapshotContent',
        ]);
        if (problem) return { status: 'failed', outcome: problem };
      }
      let classes: SnapshotClassFacts[] | undefined;
      const resolved: ResolvedVolumeTarget[] = [];
      for (const [index, target] of targets.entries()) {
        const namespace = ref.namespace;
        const label = claimLabel(namespace, target.name);
        const pvcObj = await get<V1PersistentVolumeClaim>(claimRef(namespace, target.name));
        const pvc = pvcObj && claimFacts(pvcObj);
        const claim = judgeClaim(target, namespace, pvc);
        if (claim.status !== 'ok') return claim;
        const pvObj = await get<V1PersistentVolume>(volumeRef(pvc!.volumeName!));
        const pv = pvObj && volumeFacts(pvObj, keeperNameFor(ref));
        const volume = judgeVolume(label, pvc!, pv, mode);
        if (volume.status !== 'ok') return volume;
        const { csi } = pv!;
        const base: ResolvedVolumeTarget = {
          index,
          target,
          namespace,
          pvcName: target.name,
          pvcUid: pvc!.uid,
          pvName: pv!.name,
          pvUid: pv!.uid,
          driver: csi!.driver,
          volumeHandle: csi!.volumeHandle,
          volumeMode: (pv!.volumeMode as VolumeMode | undefined) ?? 'Filesystem',
          reclaimPolicy: pv!.reclaimPolicy ?? 'Delete',
        };
        if (mode === 'Snapshot') {
          const storageClassName = pv!.storageClassName ?? (pvcObj!.spec?.storageClassName || undefined);
          // Cluster configuration is read uncached, at the moment of the request.
          const sc = storageClassName ? await get<V1StorageClass>(storageClassRef(storageClassName)) : undefined;
          classes ??= await listSnapshotClasses();
          const choice = selectSnapshotClass({
            label,
            driver: base.driver,
            storageClassName,
            requested: sc?.metadata?.annotations?.[SNAPSHOT_CLASS_ANNOTATION] || undefined,
            classes,
          });
          if (choice.status !== 'ok') return choice;
          base.snapshotClass = choice.snapshotClass.name;
          base.deletionPolicy = choice.snapshotClass.deletionPolicy;
        }
        resolved.push(base);
      }
      return { status: 'ok', mode, targets: resolved };
    },

    /**
     * Detach, one target: (a) the volume gets reclaimPolicy Retain (so deleting the claim cannot
     * delete it), the detached mark, its original policy and the keeper as controller owner;
     * (b) the claim is deleted (UID precondition); (c) once the claim is gone, claimRef is pointed at a reserved claim name
     * and (d) the original reclaim policy comes back. Each step checks the state first, so a
     * retry or a crash between steps converges.
     */
    async detachVolume(input: {
      keeper: KeeperIdentity;
      target: ResolvedVolumeTarget;
      deadline: number;
      timeoutMs: number;
    }): Promise<Outcome<object>> {
      const { keeper, target } = input;
      const label = claimLabel(target.namespace, target.pvcName);
      const pvRef = volumeRef(target.pvName);
      const pvLabel = `PersistentVolume ${target.pvName}`;
      const readVolume = async () => {
        const pv = await get<V1PersistentVolume>(pvRef);
        return pv?.metadata?.uid === target.pvUid ? pv : undefined;
      };
      const vanished = {
        status: 'failed' as const,
        outcome: failed(RequestReason.NotFound, `${pvLabel} of ${label} disappeared while detaching`),
      };

      // (a)
      let pv = await readVolume();
      if (!pv) return vanished;
      const owner = ownedByKeeper(keeperObject(keeper));
      const annotations = pv.metadata?.annotations ?? {};
      const ownedByUs = pv.metadata?.ownerReferences?.some((o) => o.uid === keeper.uid) ?? false;
      // Once we own the volume, its annotation is the truth: the policy may already read Retain (ours).
      const original = (ownedByUs && annotations[ORIGINAL_RECLAIM_POLICY_ANNOTATION]) || target.reclaimPolicy;
      if (
        !ownedByUs ||
        !annotations[ORIGINAL_RECLAIM_POLICY_ANNOTATION] ||
        annotations[DETACHED_ANNOTATION] !== 'true'
      ) {
        const others = (pv.metadata?.ownerReferences ?? []).filter((o) => o.uid !== keeper.uid);
        await patch(
          pvRef,
          {
            metadata: {
              annotations: { [DETACHED_ANNOTATION]: 'true', [ORIGINAL_RECLAIM_POLICY_ANNOTATION]: original },
              ownerReferences: [...others, owner],
            },
            spec: { persistentVolumeReclaimPolicy: 'Retain' },
          },
          target.pvUid,
          `mark ${pvLabel} detached`,
        );
      }

      // (b)
      const readClaim = async () => {
        const pvc = await get<V1PersistentVolumeClaim>(claimRef(target.namespace, target.pvcName));
        return pvc?.metadata?.uid === target.pvcUid ? pvc : undefined;
      };
      const pvc = await readClaim();
      if (pvc && !pvc.metadata?.deletionTimestamp) {
        try {
          await kube.delete(claimRef(target.namespace, target.pvcName), {
            uid: target.pvcUid,
            propagationPolicy: 'Background',
          });
        } catch (err) {
          throw kubeFailure(err, `delete ${label}`);
        }
      }

      // (c) The claim stays while kubernetes.io/pvc-protection holds it (a pod still mounts it).
      const kept = `the volume is kept (reclaimPolicy Retain, owned by ObjectKeeper ${keeper.name})`;
      const claimGone = await pollUntil<true, WaitingFor>(input.deadline, async () => {
        const now = await readClaim();
        if (!now) return { done: true };
        const finalizers = now.metadata?.finalizers?.join(', ') || 'none';
        return {
          waiting: {
            waitingFor: `the claim to be deleted (it is terminating; finalizers: ${finalizers})`,
            actor: 'the pods that mount the claim',
            hint: `Check which pods still mount the claim: ${PVC_PROTECTION} holds it until none does`,
          },
        };
      });
      if ('expired' in claimGone) {
        return {
          status: 'failed',
          outcome: failed(
            RequestReason.DeadlineExceeded,
            `${deadlineMessage(label, 'detached', input.timeoutMs, claimGone.expired)}; ${kept}`,
          ),
        };
      }
      pv = await readVolume();
      if (!pv) return vanished;
      if (pv.spec?.claimRef?.uid === target.pvcUid) {
        // The original clears claimRef, which makes the volume Available to any matching claim in
        // any namespace: captured data handed to a stranger. Instead the volume is reserved
        // (pre-bound) for a claim name nobody uses, so it stays Available but unclaimable.
        await patch(
          pvRef,
          { spec: { claimRef: { ...reservedClaimRef(target), uid: null, resourceVersion: null } } },
          target.pvUid,
          `reserve ${pvLabel}`,
        );
      }

      // (d) Never while the volume is Released: the external-provisioner deletes the backend
      // volume of a Released PV with policy Delete. The PV controller turns a volume without
      // claimRef Available (never Released); a phase other than Released means it has, or that
      // it had not yet noticed the claim's deletion. The resourceVersion precondition makes the
      // write lose against any phase change in between (the retry checks again).
      const settled = await pollUntil<V1PersistentVolume | undefined, WaitingFor>(input.deadline, async () => {
        const now = await readVolume();
        if (!now) return { done: undefined };
        if (now.status?.phase !== 'Released') return { done: now };
        return {
          waiting: {
            waitingFor: `${pvLabel} to leave phase Released after its claimRef was cleared`,
            actor: "kube-controller-manager's persistentvolume-binder controller",
            hint: "Check kube-controller-manager's persistentvolume-binder controller, which makes a volume without claimRef Available",
          },
        };
      });
      if ('expired' in settled) {
        return {
          status: 'failed',
          outcome: failed(
            RequestReason.DeadlineExceeded,
            `${deadlineMessage(pvLabel, 'detached', input.timeoutMs, settled.expired)}; ${kept}`,
          ),
        };
      }
      if (!settled.done) return vanished;
      if (settled.done.spec?.persistentVolumeReclaimPolicy !== original) {
        await patch(
          pvRef,
          {
            metadata: { resourceVersion: settled.done.metadata?.resourceVersion },
            spec: { persistentVolumeReclaimPolicy: original },
          },
          target.pvUid,
          `restore the reclaim policy of ${pvLabel}`,
        );
      }
      return { status: 'ok' };
    },
  };
}

/** The claim a detached volume is reserved for; never created, so nothing can bind the volume. */
export function reservedClaimRef(target: Pick<ResolvedVolumeTarget, 'namespace' | 'pvcUid'>) {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    namespace: target.namespace,
    name: reservedClaimName(target.pvcUid),
  };
}

export type VolumeActivities = ReturnType<typeof createVolumeActivities>;
