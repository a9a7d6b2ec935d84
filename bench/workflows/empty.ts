/**
 * The bare Temporal part of a fast-path create, for bench/fastpath.ts: a workflow that does
 * nothing but answer one update at once and then wait, started by update-with-start exactly as
 * the fast path starts a sandbox's workflow. Its round trip is what a create cannot avoid paying
 * Temporal (start + first workflow task + update accepted and completed), with no activity.
 * And `bareCreateWorkflow`: the same with the agent create as one local activity.
 */
import { condition, defineUpdate, proxyLocalActivities, setHandler } from '@temporalio/workflow';

export const pingUpdate = defineUpdate<string, [string]>('ping');

export async function emptyWorkflow(): Promise<void> {
  setHandler(pingUpdate, (x) => x);
  await condition(() => false);
}

/** The agent create as a bare local activity (the bench's worker implements it). */
export interface BareAgentActivities {
  agentCreate(req: { url: string; sandboxId: string }): Promise<void>;
}
const bare = proxyLocalActivities<BareAgentActivities>({ startToCloseTimeout: '10 seconds' });

export const createUpdate = defineUpdate<string, [{ url: string; sandboxId: string }]>('create');

/**
 * The least a durable create can be: update-with-start of a workflow whose update runs the agent
 * create as one local activity and answers — no allocation, no record, no search attributes.
 */
export async function bareCreateWorkflow(): Promise<void> {
  setHandler(createUpdate, async (req) => {
    await bare.agentCreate(req);
    return req.sandboxId;
  });
  await condition(() => false);
}
