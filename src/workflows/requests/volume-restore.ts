/**
 * VolumeRestoreRequest: validate the source and target (nothing happens for a request that
 * cannot succeed) → ObjectKeeper → wait until the external provisioner, which watches these
 * requests, has created the PVC and it is Bound → Ready with targetPVCRef.
 *
 * The operator never creates the PVC (the provisioner does, as in the original) and the keeper
 * owns nothing: the restored PVC is user data and must outlive the request. Unlike the original,
 * the wait has a deadline, so a missing provisioner ends in DeadlineExceeded instead of a
 * request that stays pending forever.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { RestoreActivities } from '../../activities/kubernetes/restores.js';
import type { VolumeRestoreRequestSpec } from '../../api/volumes.js';
import { GONE, requestActivities, runRequest, type RequestWorkflowInput } from './lifecycle.js';

const RETRY = { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' } as const;

const volumes = proxyActivities<RestoreActivities>({ startToCloseTimeout: '30 seconds', retry: RETRY });

export async function volumeRestoreRequestWorkflow(input: RequestWorkflowInput): Promise<string> {
  return runRequest(input, async ({ ref, spec, progress }) => {
    const policy = await requestActivities.requestPolicy();
    await progress('validating the source');
    const valid = await volumes.validateRestoreSource(ref);
    if ('gone' in valid) return GONE;
    if (!valid.ok) return { outcome: valid.outcome };

    // The keeper follows the request like every request's; a restore gives it nothing to own.
    const keeper = await requestActivities.ensureRequestKeeper(ref);
    if ('gone' in keeper) return GONE;

    const { targetNamespace: namespace, targetPVCName: name, sourceRef } = spec as VolumeRestoreRequestSpec;
    await progress(`waiting for the external provisioner to create and bind PVC ${name}`);
    const waits = proxyActivities<RestoreActivities>({
      startToCloseTimeout: policy.waitTimeoutMs + 5 * 60_000,
      heartbeatTimeout: '30 seconds',
      retry: RETRY,
    });
    const deadline = Date.now() + policy.waitTimeoutMs;
    const r = await waits.waitForRestoredPvc({
      namespace,
      name,
      driver: valid.driver,
      deadline,
      timeoutMs: policy.waitTimeoutMs,
    });
    if (!r.ok) return { outcome: r.outcome };
    return {
      outcome: { ready: true, message: `restored ${sourceRef.kind} ${sourceRef.name} into PVC ${namespace}/${name}` },
      fields: { targetPVCRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', name, namespace, uid: r.uid } },
    };
  });
}
