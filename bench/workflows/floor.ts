/**
 * The least durable work a sandbox life and a request can be, for bench/life-floor.ts: no
 * activity, no search attribute, no record — only what Temporal does for any entity workflow.
 */
import {
  condition,
  defineSignal,
  defineUpdate,
  patched,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import { OperationPhase } from '../../src/temporal/search-attributes.js';

export const answerUpdate = defineUpdate<string, [string]>('answer');
export const deletingSignal = defineSignal('deleting');

/**
 * A sandbox life's least: update-with-start answered in its first task (the create's answer), and
 * ended in the task its deletion hint brings — two workflow tasks, where the product's life has three.
 */
export async function floorLifeWorkflow(): Promise<string> {
  let deleting = false;
  setHandler(answerUpdate, (x) => x);
  setHandler(deletingSignal, () => void (deleting = true));
  await condition(() => deleting);
  return 'deleted';
}

/** A request's least: started and completed in its first workflow task. */
export async function floorRequestWorkflow(): Promise<string> {
  return 'done';
}

/**
 * (c) with what a request's run adds to Temporal's visibility: two patch markers (the core upserts
 * TemporalChangeVersion with each) and its phase upserted once — started with its K8s attributes.
 */
export async function floorIndexedRequestWorkflow(): Promise<string> {
  patched('floor-first');
  patched('floor-second');
  upsertSearchAttributes([{ key: OperationPhase, value: 'done' }]);
  return 'done';
}
