/**
 * ManifestCaptureRequest: validate targets → ObjectKeeper (UID barrier) → ManifestCheckpoint
 * owned by the keeper → chunks owned by the checkpoint → checkpoint Ready → request Ready.
 * Each step is an idempotent activity keyed by names derived from the request UID, so a crash
 * between any two steps resumes without duplicates.
 */
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { ManifestActivities } from '../../activities/kubernetes/manifests.js';
import type { ManifestCheckpointStatus } from '../../api/manifests.js';
import { READY_CONDITION, RequestReason } from '../../api/requests.js';
import { setCondition } from '../../domain/conditions.js';
import { GONE, requestActivities, runRequest, type RequestWorkflowInput } from './lifecycle.js';

/**
 * Short, idempotent apiserver calls: local activities (see requestActivities in lifecycle.ts).
 * A minute covers reading a request's targets (at most 5,000, listed per kind).
 */
const manifests = proxyLocalActivities<ManifestActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

/** Reading and writing a whole namespace's worth of objects: long, so it heartbeats per chunk. */
const capture = proxyActivities<ManifestActivities>({
  startToCloseTimeout: '15 minutes',
  heartbeatTimeout: '20 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

/** Captures at least this large report their progress on the request before writing chunks. */
const PROGRESS_FROM_OBJECTS = 100;

export async function manifestCaptureRequestWorkflow(input: RequestWorkflowInput): Promise<string> {
  return runRequest(input, async ({ ref, progress }) => {
    await progress('checking targets');
    const checked = await manifests.checkCaptureTargets(ref);
    if ('gone' in checked) return GONE;
    if (!checked.ok) return { outcome: checked.outcome };

    const keeper = await requestActivities.ensureRequestKeeper(ref);
    if ('gone' in keeper) return GONE;
    const checkpoint = await manifests.ensureCheckpoint({ ref, keeper });
    const fields = { checkpointName: checkpoint.name };
    if (checkpoint.ready) {
      // Finished before a crash: the checkpoint is the durable result.
      return { outcome: { ready: true, message: `checkpoint ${checkpoint.name} is ready` }, fields };
    }

    // A small capture takes milliseconds: a progress write would cost more than it tells.
    if (checked.count >= PROGRESS_FROM_OBJECTS) {
      await progress(`capturing ${checked.count} objects into ${checkpoint.name}`);
    }
    const result = await capture.writeCheckpointContent({ ref, checkpoint });
    if ('gone' in result) return GONE;
    const now = new Date();
    if (!result.ok) {
      const o = result.outcome;
      const status: ManifestCheckpointStatus = {
        conditions: setCondition(
          undefined,
          { type: READY_CONDITION, status: 'False', reason: RequestReason.Failed, message: o.message },
          now,
        ),
      };
      await manifests.setCheckpointStatus({ checkpoint, status });
      return { outcome: o, fields };
    }
    const { summary } = result;
    const message =
      `captured ${summary.totalObjects} objects into ${checkpoint.name}: ` +
      `${summary.chunks.length} chunk(s), ${summary.totalSizeBytes} bytes compressed`;
    await manifests.setCheckpointStatus({
      checkpoint,
      status: {
        ...summary,
        conditions: setCondition(
          undefined,
          { type: READY_CONDITION, status: 'True', reason: RequestReason.Completed, message },
          now,
        ),
      },
    });
    return { outcome: { ready: true, message }, fields };
  });
}
