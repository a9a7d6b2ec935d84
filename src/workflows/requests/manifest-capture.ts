/**
 * ManifestCaptureRequest: validate targets → ObjectKeeper (UID barrier) → ManifestCheckpoint
 * owned by the keeper → chunks owned by the checkpoint → checkpoint Ready → request Ready.
 * Each step is an idempotent activity keyed by names derived from the request UID, so a crash
 * between any two steps resumes without duplicates. What to do at each step is decided in
 * src/domain/request-capture.ts.
 */
import { isCancellation } from '@temporalio/workflow';
import type { CheckpointIdentity, CheckpointSummary } from '../../activities/kubernetes/manifests.js';
import {
  capturedMessage,
  checkpointConditions,
  reportsCaptureProgress,
  writesChunksInTask,
} from '../../domain/request-capture.js';
import type { OperationResult, RequestRef } from '../../domain/requests.js';
import { ok } from '../../domain/results.js';
import { checkpointWrites, requestCalls, smallWrites, targetChecks } from './activity-options.js';
import { failureEnding, runRequest, type OperationContext } from './lifecycle.js';
import type { RequestWorkflowInput } from './messages.js';

export async function manifestCaptureRequestWorkflow(input: RequestWorkflowInput): Promise<string> {
  return runRequest(input, 'checking targets', capture);
}

/** The capture: prepare, write the chunks, and record on the checkpoint how it ended. */
async function capture({ ref, progress, fewerTasks }: OperationContext): Promise<OperationResult> {
  await progress('checking targets');
  const prepared = fewerTasks ? await prepare(ref) : await prepareStepwise(ref);
  if (prepared.status !== 'ok') return prepared;
  const { count, checkpoint } = prepared;
  const fields = { checkpointName: checkpoint.name };
  if (checkpoint.ready) {
    // Finished before a crash: the checkpoint is the durable result.
    return ok({ message: `checkpoint ${checkpoint.name} is ready`, fields });
  }
  if (reportsCaptureProgress(count)) await progress(`capturing ${count} objects into ${checkpoint.name}`);
  // The write awaited right here, not in a helper: an await more would move the watchdog's
  // commands (a delete hint in the same activation) in recorded histories.
  let written;
  try {
    written = writesChunksInTask(fewerTasks, count)
      ? await writeSmall({ ref, checkpoint })
      : await checkpointWrites.writeCheckpointContent({ ref, checkpoint });
  } catch (err) {
    const ended = failureEnding(err);
    if (ended?.status !== 'failed') throw err;
    written = ended;
  }
  if (written.status === 'gone') return written;
  if (written.status === 'failed') {
    await markCheckpoint(checkpoint, false, written.outcome.message);
    return { ...written, fields };
  }
  const message = capturedMessage(checkpoint.name, written.summary);
  await markCheckpoint(checkpoint, true, message, written.summary);
  return ok({ message, fields });
}

/** Targets checked, keeper and checkpoint ensured: one local activity on one read of the request. */
function prepare(ref: RequestRef) {
  return targetChecks.prepareCapture(ref);
}

/** The same in three local activities, as runs before REQUEST_FEWER_TASKS recorded it. */
async function prepareStepwise(ref: RequestRef) {
  const checked = await targetChecks.checkCaptureTargets(ref);
  if (checked.status !== 'ok') return checked;
  const owner = await requestCalls.ensureRequestKeeper(ref);
  if (owner.status !== 'ok') return owner;
  const checkpoint = await requestCalls.ensureCheckpoint({ ref, keeper: owner.keeper });
  return ok({ count: checked.count, keeper: owner.keeper, checkpoint });
}

/**
 * A small capture's write as a local activity of the current workflow task (no activity task, no
 * second workflow task). Its one attempt failing or timing out hands the write to the regular
 * activity, so a refused or slow write gets the same retries, RBAC-rollout window and ending as a
 * large capture's (the writes are idempotent: the second converges on the same chunks).
 */
async function writeSmall(input: { ref: RequestRef; checkpoint: CheckpointIdentity }) {
  try {
    return await smallWrites.writeCheckpointContent(input);
  } catch (err) {
    if (isCancellation(err)) throw err;
    return checkpointWrites.writeCheckpointContent(input);
  }
}

/** The checkpoint's status when its capture ended: Ready with the summary, or how it failed. */
function markCheckpoint(checkpoint: CheckpointIdentity, ready: boolean, message: string, summary?: CheckpointSummary) {
  return requestCalls.setCheckpointStatus({
    checkpoint,
    checkpointStatus: { ...summary, conditions: checkpointConditions(ready, message, new Date()) },
  });
}
