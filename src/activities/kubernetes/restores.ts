/**
 * Volume restore: check the request before anything happens, then wait for the external
 * provisioner (which watches VolumeRestoreRequests and creates the PVC; the operator never does)
 * to create the target PVC and bind it. The verdicts are in src/domain/volumes.ts.
 */
import type { V1PersistentVolume, V1PersistentVolumeClaim, V1StorageClass } from '@kubernetes/client-node';
import { RequestReason } from '../../api/requests.js';
import type { VolumeRestoreRequest } from '../../api/volumes.js';
import { failed, type RequestRef } from '../../domain/requests.js';
import {
  SNAPSHOT_API,
  checkRestoreNamespace,
  claimLabel,
  humanDuration,
  judgeExistingTarget,
  judgeRestoredClaim,
  judgeRestoreSource,
  judgeRestoreStorageClass,
  type RestoreSourceFacts,
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
  return {
    /**
     * Checks a restore before anything is created: namespace, source, StorageClass, and that no
     * PVC of the target name predates the request.
     */
    async validateRestoreSource(ref: RequestRef): Promise<StepResult<{ driver: string; storageClassName?: string }>> {
      // Deleted, or the name now belongs to another request: this operation has nothing to do.
      const request = await readRequestObject<VolumeRestoreRequest>(kube, ref);
      if (!request) return GONE;
      const spec = request.spec;
      const ns = checkRestoreNamespace(spec, ref.namespace);
      if (ns.status !== 'ok') return ns;

      const { kind, name } = spec.sourceRef;
      let facts: RestoreSourceFacts | undefined;
      if (kind === 'VolumeSnapshotContent') {
        const problem = await snapshotApiProblem(kube, ['VolumeSnapshotContent']);
        if (problem) return { status: 'failed', outcome: problem };
        const vsc = await getObject<VolumeSnapshotContent>(kube, { apiVersion: SNAPSHOT_API, kind, name });
        facts = vsc && {
          kind,
          name,
          deleting: Boolean(vsc.metadata?.deletionTimestamp),
          driver: vsc.spec.driver,
          readyToUse: vsc.status?.readyToUse,
          error: vsc.status?.error?.message,
          sourceVolumeMode: vsc.spec.sourceVolumeMode,
        };
      } else {
        const pv = await getObject<V1PersistentVolume>(kube, volumeRef(name));
        facts = pv && {
          kind: 'PersistentVolume',
          name,
          deleting: Boolean(pv.metadata?.deletionTimestamp),
          driver: pv.spec?.csi?.driver,
          phase: pv.status?.phase,
          claimRef: pv.spec?.claimRef
            ? { namespace: pv.spec.claimRef.namespace, name: pv.spec.claimRef.name }
            : undefined,
          volumeMode: pv.spec?.volumeMode,
        };
      }
      const source = judgeRestoreSource(spec, facts);
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
      return { status: 'ok', driver: source.driver, storageClassName: spec.storageClassName };
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
