/**
 * What a ManifestCaptureRequest's workflow decides, pure: when a capture reports its progress,
 * where its chunks are written, what its checkpoint and its request say when it ends.
 */
import { READY_CONDITION, RequestReason } from '../api/requests.js';
import { setCondition, type Condition } from './conditions.js';

/** Captures at least this large report their progress on the request before writing chunks. */
export const PROGRESS_FROM_OBJECTS = 100;

/** A small capture takes milliseconds: a progress write would cost more than it tells. */
export function reportsCaptureProgress(objects: number): boolean {
  return objects >= PROGRESS_FROM_OBJECTS;
}

/**
 * A small capture's chunks are written by a local activity in the run's workflow task (runs that
 * take `request-fewer-tasks`); a large one's, or any from before, by the regular activity that
 * heartbeats.
 */
export function writesChunksInTask(fewerTasks: boolean, objects: number): boolean {
  return fewerTasks && objects < PROGRESS_FROM_OBJECTS;
}

/** What the written chunks add up to (the activity's summary). */
export interface CaptureSummary {
  totalObjects: number;
  totalSizeBytes: number;
  chunks: readonly unknown[];
}

/** The Ready message of a capture that completed, on its request and on its checkpoint. */
export function capturedMessage(checkpointName: string, summary: CaptureSummary): string {
  return (
    `captured ${summary.totalObjects} objects into ${checkpointName}: ` +
    `${summary.chunks.length} chunk(s), ${summary.totalSizeBytes} bytes compressed`
  );
}

/**
 * A checkpoint's Ready condition when its capture ends: True/Completed, or False/Failed with the
 * request's failure message (a checkpoint that says it is a result also says how it ended).
 */
export function checkpointConditions(ready: boolean, message: string, now: Date): Condition[] {
  const reason = ready ? RequestReason.Completed : RequestReason.Failed;
  return setCondition(undefined, { type: READY_CONDITION, status: ready ? 'True' : 'False', reason, message }, now);
}
