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
import type { VolumeRestoreRequestSpec } from '../../api/volumes.js';
import { ok } from '../../domain/results.js';
import { externalWaits, requestCalls, restoreChecks } from './activity-options.js';
import { runRequest } from './lifecycle.js';
import type { RequestWorkflowInput } from './messages.js';

export async function volumeRestoreRequestWorkflow(input: RequestWorkflowInput): Promise<string> {
  return runRequest(input, async ({ ref, spec, progress }) => {
    const policy = await requestCalls.requestPolicy();
    await progress('validating the source');
    const valid = await restoreChecks.validateRestoreSource(ref);
    if (valid.status !== 'ok') return valid;

    // The keeper follows the request like every request's; a restore gives it nothing to own.
    const owner = await requestCalls.ensureRequestKeeper(ref);
    if (owner.status !== 'ok') return owner;

    const { targetNamespace: namespace, targetPVCName: name, sourceRef } = spec as VolumeRestoreRequestSpec;
    await progress(`waiting for the external provisioner to create and bind PVC ${name}`);
    const waits = externalWaits(policy.waitTimeoutMs);
    const deadline = Date.now() + policy.waitTimeoutMs;
    const r = await waits.waitForRestoredPvc({
      namespace,
      name,
      driver: valid.driver,
      deadline,
      timeoutMs: policy.waitTimeoutMs,
    });
    if (r.status !== 'ok') return r;
    return ok({
      message: `restored ${sourceRef.kind} ${sourceRef.name} into PVC ${namespace}/${name}`,
      fields: { targetPVCRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', name, namespace, uid: r.uid } },
    });
  });
}
