/**
 * Volume restore: check the request before anything happens (and wait for a source snapshot
 * that is not ready yet), then wait for the external provisioner (which watches
 * VolumeRestoreRequests and creates the PVC; the operator never does) to create the target PVC
 * and bind it. The verdicts are in src/domain/volumes.ts.
 */
import type { V1PersistentVolume, V1PersistentVolumeClaim, V1StorageClass } from '@kubernetes/client-node';
import { RequestReason } from '../../api/requests.js';
import { DETACHED_ANNOTATION, type VolumeRestoreRequest, type VolumeRestoreRequestSpec } from '../../api/volumes.js';
import { failed, type RequestRef } from '../../domain/requests.js';
import {
  SNAPSHOT_API,
  checkRestoreNamespace,
  claimLabel,
  deadlineMessage,
  humanDuration,
  judgeExistingTarget,
  judgeRestoredClaim,
  judgeRestoreSource,
  judgeRestoreStorageClass,
  type RestoreSourceFacts,
  type WaitingFor,
} from '../../domain/volumes.js';
import type { KubeClient } from '../../kube/client.js';
import { GONE, type Outcome, type StepResult } from '../../domain/results.js';
import { getObject } from './calls.js';
import { readRequestObject } from './requests.js';
import {
  claimRef,
  pollUntil,
  snapshotApiProblem,
  storageClassRef,
  timestamp,
  volumeRef,
  type VolumeSnapshotContent,
} from './volume-support.js';

export function createRestoreActivities(kube: KubeClient) {
  /** The source as a fresh GET shows it, reduced to the facts judgeRestoreSource needs. */
  async function readSource(spec: VolumeRestoreRequestSpec): Promise<RestoreSourceFacts | undefined> {
    const { kind, name } = spec.sourceRef;
    if (kind === 'VolumeSnapshotContent') {
      const vsc = await getObject<VolumeSnapshotContent>(kube, { apiVersion: SNAPSHOT_API, kind, name });
      return (
        vsc && {
          kind,
          name,
          deleting: Boolean(vsc.metadata?.deletionTimestamp),
          driver: vsc.spec.driver,
          readyToUse: vsc.status?.readyToUse,
          error: vsc.status?.error?.message,
          sourceVolumeMode: vsc.spec.sourceVolumeMode,
        }
      );
    }
    const pv = await getObject<V1PersistentVolume>(kube, volumeRef(name));
    return (
      pv && {
        kind: 'PersistentVolume',
        name,
        deleting: Boolean(pv.metadata?.deletionTimestamp),
        driver: pv.spec?.csi?.driver,
        phase: pv.status?.phase,
        claimRef: pv.spec?.claimRef
          ? { namespace: pv.spec.claimRef.namespace, name: pv.spec.claimRef.name, uid: pv.spec.claimRef.uid }
          : undefined,
        volumeMode: pv.spec?.volumeMode,
        detached: pv.metadata?.annotations?.[DETACHED_ANNOTATION] === 'true',
      }
    );
  }

  return {
    /**
     * Checks a restore before anything is created: namespace, source, StorageClass, and that no
     * PVC of the target name predates the request. A snapshot content not ready yet passes with
     * `pending` (what to wait for): the workflow waits for it (waitForRestoreSource).
     */
    async validateRestoreSource(
      ref: RequestRef,
    ): Promise<StepResult<{ driver: string; storageClassName?: string; pending?: WaitingFor }>> {
      // Deleted, or the name now belongs to another request: this operation has nothing to do.
      const request = await readRequestObject<VolumeRestoreRequest>(kube, ref);
      if (!request) return GONE;
      const spec = request.spec;
      const ns = checkRestoreNamespace(spec, ref.namespace);
      if (ns.status !== 'ok') return ns;
      if (spec.sourceRef.kind === 'VolumeSnapshotContent') {
        const problem = await snapshotApiProblem(kube, ['VolumeSnapshotContent']);
        if (problem) return { status: 'failed', outcome: problem };
      }

      const source = judgeRestoreSource(spec, await readSource(spec));
      if (source.status !== 'ok') return source;

      if (spec.storageClassName) {
        const sc = await getObject<V1StorageClass>(kube, storageClassRef(spec.storageClassName));
        const verdict = judgeRestoreStorageClass(
          spec.storageClassName,
          source.driver,
          sc && { provisioner: sc.provisioner },
        );
        if (verdict.status !== 'ok') return verdict;
      }

      const existing = await getObject<V1PersistentVolumeClaim>(
        kube,
        claimRef(spec.targetNamespace, spec.targetPVCName),
      );
      const clash = judgeExistingTarget(
        claimLabel(spec.targetNamespace, spec.targetPVCName),
        existing && { creationTimestamp: timestamp(existing.metadata?.creationTimestamp) },
        timestamp(request.metadata?.creationTimestamp),
      );
      if (clash.status !== 'ok') return clash;
      return {
        status: 'ok',
        driver: source.driver,
        storageClassName: spec.storageClassName,
        ...(source.pending ? { pending: source.pending } : {}),
      };
    },

    /**
     * Waits until the source the validation found not ready yet is ready (the sidecar fills in
     * its status), or the absolute deadline passes. The source is judged by the same rules as at
     * validation on every poll, so a content deleted or failed meanwhile ends the wait.
     */
    async waitForRestoreSource(input: {
      spec: VolumeRestoreRequestSpec;
      deadline: number;
      timeoutMs: number;
    }): Promise<Outcome<object>> {
      const { spec } = input;
      type Judged = ReturnType<typeof judgeRestoreSource>;
      const r = await pollUntil<Judged, WaitingFor>(input.deadline, async () => {
        const verdict = judgeRestoreSource(spec, await readSource(spec));
        return verdict.status === 'ok' && verdict.pending ? { waiting: verdict.pending } : { done: verdict };
      });
      if ('expired' in r) {
        const what = `${spec.sourceRef.kind} ${spec.sourceRef.name}`;
        return {
          status: 'failed',
          outcome: failed(RequestReason.DeadlineExceeded, deadlineMessage(what, 'ready', input.timeoutMs, r.expired)),
        };
      }
      if (r.done.status !== 'ok') return r.done;
      return { status: 'ok' };
    },

    /**
     * Waits until the external provisioner has created the target PVC and it is Bound, or the
     * absolute deadline passes. Returns the PVC's UID from the GET that saw it Bound.
     */
    async waitForRestoredPvc(input: {
      namespace: string;
      name: string;
      driver: string;
      deadline: number;
      timeoutMs: number;
    }): Promise<Outcome<{ uid: string }>> {
      const label = claimLabel(input.namespace, input.name);
      type Verdict = ReturnType<typeof judgeRestoredClaim>;
      const r = await pollUntil<Exclude<Verdict, { state: 'waiting' }>, string>(input.deadline, async () => {
        const pvc = await getObject<V1PersistentVolumeClaim>(kube, claimRef(input.namespace, input.name));
        const verdict = judgeRestoredClaim(label, pvc && { uid: pvc.metadata!.uid!, phase: pvc.status?.phase });
        return verdict.state === 'waiting' ? { waiting: verdict.seen } : { done: verdict };
      });
      if ('expired' in r) {
        return {
          status: 'failed',
          outcome: failed(
            RequestReason.DeadlineExceeded,
            `no ${label} was created and bound by the external provisioner within ${humanDuration(input.timeoutMs)} ` +
              `(last seen: ${r.expired}). Check the external-provisioner of driver ${input.driver} (its logs and the ` +
              `request's events)`,
          ),
        };
      }
      const verdict = r.done;
      if (verdict.state === 'failed') return { status: 'failed', outcome: verdict.outcome };
      return { status: 'ok', uid: verdict.uid };
    },
  };
}

export type RestoreActivities = ReturnType<typeof createRestoreActivities>;
