/**
 * ManifestCaptureRequest: validate targets → ObjectKeeper (UID barrier) → ManifestCheckpoint
 * owned by the keeper → chunks owned by the checkpoint → checkpoint Ready → request Ready.
 * Each step is an idempotent activity keyed by names derived from the request UID, so a crash
 * between any two steps resumes without duplicates.
 */
import { isCancellation } from '@temporalio/workflow';
import type { CheckpointIdentity } from '../../activities/kubernetes/manifests.js';
import { READY_CONDITION, RequestReason } from '../../api/requests.js';
import { setCondition } from '../../domain/conditions.js';
import type { RequestRef } from '../../domain/requests.js';
import { ok } from '../../domain/results.js';
import { checkpointWrites, requestCalls, smallWrites, targetChecks } from './activity-options.js';
import { howFailureEnds, runRequest } from './lifecycle.js';
import type { RequestWorkflowInput } from './messages.js';

/** Captures at least this large report their progress on the request before writing chunks. */
const PROGRESS_FROM_OBJECTS = 100;

export async function manifestCaptureRequestWorkflow(input: RequestWorkflowInput): Promise<string> {
  return runRequest(input, 'checking targets', async ({ ref, progress, fewerTasks }) => {
    await progress('checking targets');
    const prepared = fewerTasks ? await prepare(ref) : await prepareStepwise(ref);
    if (prepared.status !== 'ok') return prepared;
    const { count, checkpoint } = prepared;
    const fields = { checkpointName: checkpoint.name };
    if (checkpoint.ready) {
      // Finished before a crash: the checkpoint is the durable result.
      return ok({ message: `checkpoint ${checkpoint.name} is ready`, fields });
    }

    // A small capture takes milliseconds: a progress write would cost more than it tells.
    if (count >= PROGRESS_FROM_OBJECTS) {
      await progress(`capturing ${count} objects into ${checkpoint.name}`);
    }
    /** A checkpoint that says it is a result also says how it ended, failure included. */
    const markFailed = (message: string) =>
      requestCalls.setCheckpointStatus({
        checkpoint,
        checkpointStatus: {
          conditions: setCondition(
            undefined,
            { type: READY_CONDITION, status: 'False', reason: RequestReason.Failed, message },
            new Date(),
          ),
        },
      });
    let result;
    try {
      result =
        fewerTasks && count < PROGRESS_FROM_OBJECTS
          ? await writeSmall({ ref, checkpoint })
          : await checkpointWrites.writeCheckpointContent({ ref, checkpoint });
    } catch (err) {
      const ended = howFailureEnds(err);
      if (ended?.status !== 'failed') throw err;
      await markFailed(ended.outcome.message);
      return { ...ended, fields };
    }
    if (result.status === 'gone') return result;
    if (result.status === 'failed') {
      await markFailed(result.outcome.message);
      return { ...result, fields };
    }
    const { summary } = result;
    const message =
      `captured ${summary.totalObjects} objects into ${checkpoint.name}: ` +
      `${summary.chunks.length} chunk(s), ${summary.totalSizeBytes} bytes compressed`;
    await requestCalls.setCheckpointStatus({
      checkpoint,
      checkpointStatus: {
        ...summary,
        conditions: setCondition(
          undefined,
          { type: READY_CONDITION, status: 'True', reason: RequestReason.Completed, message },
          new Date(),
        ),
      },
    });
    return ok({ message, fields });
  });
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
