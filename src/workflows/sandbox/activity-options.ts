/**
 * How a sandbox's workflow calls its activities. Every one runs in a fast-path process (the only
 * processes polling the sandbox task queue), next to the placement table it consults.
 *
 * The create path answers a caller who is waiting, so its steps are local activities (no task
 * round trip, no history events of their own; consecutive ones run inside one workflow task) with
 * a short, bounded retry: a create the agents cannot take now is answered UNAVAILABLE in seconds
 * rather than retried for minutes while the caller waits. Steps after the answer (recording,
 * hand-off, following the agent, deletion) retry until they succeed.
 */
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { SandboxAgentActivities } from '../../activities/sandbox/agents.js';
import type { SandboxCreateActivities } from '../../activities/sandbox/create.js';
import type { SandboxLifeStepActivities } from '../../activities/sandbox/life-steps.js';
import type { SandboxRecordActivities } from '../../activities/sandbox/records.js';
import type { SandboxJanitorActivities } from '../../activities/sandbox/janitor.js';
import type { SandboxPoolActivities } from '../../activities/sandbox/pools.js';
import type { SandboxQuotaActivities } from '../../activities/sandbox/quota.js';
import { RETRY } from '../retry-policy.js';

/** The caller is waiting: a few quick attempts, then the workflow answers with a refusal. */
export const createSteps = proxyLocalActivities<
  SandboxAgentActivities & SandboxRecordActivities & SandboxCreateActivities
>({
  startToCloseTimeout: '6 seconds',
  scheduleToCloseTimeout: '15 seconds',
  retry: {
    initialInterval: '100 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '2 seconds',
    maximumAttempts: 4,
  },
});

/** One apiserver or agent call (or a few back to back) after the answer: retried until it succeeds. */
export const sandboxCalls = proxyLocalActivities<
  SandboxAgentActivities & SandboxRecordActivities & SandboxLifeStepActivities
>({
  startToCloseTimeout: '10 seconds',
  retry: RETRY,
});

/** The tenant quota's side of a sandbox's end, in the run's last task: retried until it succeeds. */
export const quotaCalls = proxyLocalActivities<SandboxQuotaActivities>({
  startToCloseTimeout: '10 seconds',
  retry: RETRY,
});

/**
 * Waiting for an agent to stop reporting a deleted sandbox (SIGTERM, then SIGKILL after its grace
 * period): a regular activity that polls and heartbeats, so a dead worker is noticed.
 */
export const agentWaits = proxyActivities<SandboxAgentActivities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '20 seconds',
  retry: RETRY,
});

/** The janitor's scan and clean-up: listings and one call per orphan. */
export const janitorSteps = proxyActivities<SandboxJanitorActivities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '30 seconds',
  retry: RETRY,
});

/** The quota workflow's listing of a tenant's Sandboxes (nobody waits on it but the first grant). */
export const quotaSteps = proxyActivities<SandboxRecordActivities>({
  startToCloseTimeout: '1 minute',
  retry: RETRY,
});

/** A SandboxPool's workflow: reads, Pod creates and deletes, agent drains; nobody waits on them. */
export const poolSteps = proxyActivities<SandboxPoolActivities>({
  startToCloseTimeout: '1 minute',
  retry: RETRY,
});
