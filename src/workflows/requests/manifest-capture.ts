/**
 * ManifestCaptureRequest: validate targets → ObjectKeeper (UID barrier) → ManifestCheckpoint
 * owned by the keeper → chunks owned by the checkpoint → checkpoint Ready → request Ready.
 * Each step is an idempotent activity keyed by names derived from the request UID, so a crash
 * between any two steps resumes without duplicates.
 */
import { READY_CONDITION, RequestReason } from '../../api/requests.js';
import { setCondition } from '../../domain/conditions.js';
import { ok } from '../../domain/results.js';
import { checkpointWrites, requestCalls, targetChecks } from './activity-options.js';
import { howFailureEnds, runRequest } from './lifecycle.js';
import type { RequestWorkflowInput } from './messages.js';

/** Captures at least this large report their progress on the request before writing chunks. */
const PROGRESS_FROM_OBJECTS = 100;

export async function manifestCaptureRequestWorkflow(input: RequestWorkflowInput): Promise<string> {
  return runRequest(input, async ({ ref, progress }) => {
    await progress('checking targets');
    const checked = await targetChecks.checkCaptureTargets(ref);
    if (checked.status !== 'ok') return checked;

    const owner = await requestCalls.ensureRequestKeeper(ref);
    if (owner.status !== 'ok') return owner;
    const checkpoint = await requestCalls.ensureCheckpoint({ ref, keeper: owner.keeper });
    const fields = { checkpointName: checkpoint.name };
    if (checkpoint.ready) {
      // Finished before a crash: the checkpoint is the durable result.
      return ok({ message: `checkpoint ${checkpoint.name} is ready`, fields });
    }

    // A small capture takes milliseconds: a progress write would cost more than it tells.
    if (checked.count >= PROGRESS_FROM_OBJECTS) {
      await progress(`capturing ${checked.count} objects into ${checkpoint.name}`);
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
      result = await checkpointWrites.writeCheckpointContent({ ref, checkpoint });
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
