/**
 * The bare Temporal part of a fast-path create, for bench/fastpath.ts: a workflow that does
 * nothing but answer one update at once and then wait, started by update-with-start exactly as
 * the fast path starts a sandbox's workflow. Its round trip is what a create cannot avoid paying
 * Temporal (start + first workflow task + update accepted and completed), with no activity.
 */
import { condition, defineUpdate, setHandler } from '@temporalio/workflow';

export const pingUpdate = defineUpdate<string, [string]>('ping');

export async function emptyWorkflow(): Promise<void> {
  setHandler(pingUpdate, (x) => x);
  await condition(() => false);
}
