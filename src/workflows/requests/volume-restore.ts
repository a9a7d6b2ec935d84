/**
 * VolumeRestoreRequest: validate the source and target (nothing happens for a request that
 * cannot succeed) → if the source snapshot is not ready yet, wait for it → ObjectKeeper → wait until the external provisioner, which watches these
 * requests, has created the PVC and it is Bound → Ready with targetPVCRef.
 *
 * The operator never creates the PVC (the provisioner does, as in the original) and the keeper
 * owns nothing: the restored PVC is user data and must outlive the request. Unlike the original,
 * the wait has a deadline, so a missing provisioner ends in DeadlineExceeded instead of a
 * request that stays pending forever.
 */
import type { VolumeRestoreRequestSpec } from '../../api/volumes.js';
import type { OperationResult } from '../../domain/requests.js';
import { ok } from '../../domain/results.js';
import { externalWaits, requestCalls, restoreChecks } from './activity-options.js';
import { runRequest, type OperationContext } from './lifecycle.js';
import type { RequestWorkflowInput } from './messages.js';

export async function volumeRestoreRequestWorkflow(input: RequestWorkflowInput): Promise<string> {
  return runRequest(input, 'validating the source', restore);
}

/**
 * The restore. Each wait is awaited right here, not in a helper: an await more would move the
 * watchdog's commands (a delete hint in the same activation) in recorded histories.
 */
async function restore({ ref, spec, progress }: OperationContext): Promise<OperationResult> {
  const policy = await requestCalls.requestPolicy();
  await progress('validating the source');
  const valid = await restoreChecks.validateRestoreSource(ref);
  if (valid.status !== 'ok') return valid;

  const wanted = spec as VolumeRestoreRequestSpec;
  const waits = externalWaits(policy.waitTimeoutMs);
  const deadline = new SharedDeadline(policy.waitTimeoutMs);
  if (valid.pending) {
    // A snapshot not ready yet (a restore applied right after its capture): wait, don't fail.
    await progress(`waiting for ${valid.pending.waitingFor}`);
    const ready = await waits.waitForRestoreSource({ spec: wanted, ...deadline.fromNow() });
    if (ready.status !== 'ok') return ready;
  }

  // The keeper follows the request like every request's; a restore gives it nothing to own.
  const owner = await requestCalls.ensureRequestKeeper(ref);
  if (owner.status !== 'ok') return owner;

  const { targetNamespace: namespace, targetPVCName: name } = wanted;
  await progress(`waiting for the external provisioner to create and bind PVC ${name}`);
  const pvc = await waits.waitForRestoredPvc({ namespace, name, driver: valid.driver, ...deadline.fromNow() });
  return pvc.status === 'ok' ? restored(wanted, pvc.uid) : pvc;
}

/**
 * One absolute deadline for every wait, fixed when the first one starts, so retries and worker
 * restarts never extend it.
 */
class SharedDeadline {
  private deadline?: number;
  constructor(private readonly timeoutMs: number) {}

  /** The deadline (fixed now if no wait started before) and the wait's own timeout. */
  fromNow(): { deadline: number; timeoutMs: number } {
    this.deadline ??= Date.now() + this.timeoutMs;
    return { deadline: this.deadline, timeoutMs: this.timeoutMs };
  }
}

/** The restore's ending: Ready with the restored claim as targetPVCRef. */
function restored(restore: VolumeRestoreRequestSpec, uid: string): OperationResult {
  const { targetNamespace: namespace, targetPVCName: name, sourceRef } = restore;
  return ok({
    message: `restored ${sourceRef.kind} ${sourceRef.name} into PVC ${namespace}/${name}`,
    fields: { targetPVCRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', name, namespace, uid } },
  });
}
