/** How the ObjectKeeper workflow calls its activities (retry rules: ../retry-policy.ts). */
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { ObjectKeeperActivities } from '../../activities/kubernetes/objectkeeper.js';
import { RETRY } from '../retry-policy.js';

/** Reads, status patches and the final delete of the keeper: one apiserver call each. */
export const keeperCalls = proxyActivities<ObjectKeeperActivities>({ startToCloseTimeout: '30 seconds', retry: RETRY });

/**
 * Reading the followed object gets bounded retries, so a persistent failure (typically a 403:
 * no RBAC for that kind) is surfaced on the keeper's status instead of only in activity retries.
 */
export const followedObjectReads = proxyActivities<ObjectKeeperActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { ...RETRY, maximumInterval: '10 seconds', maximumAttempts: 5 },
});

/**
 * The same calls as local activities (patch keeper-local-calls): each is one apiserver call, so a
 * task round trip and three history events apiece cost more than the call — a following keeper's
 * life was 7 workflow tasks and 5 activity tasks (issue 35: most of a request's reaping CPU).
 */
export const keeperLocalCalls = proxyLocalActivities<ObjectKeeperActivities>({
  startToCloseTimeout: '30 seconds',
  retry: RETRY,
});

/** followedObjectReads as local activities, with the same bounded retries. */
export const followedObjectLocalReads = proxyLocalActivities<ObjectKeeperActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { ...RETRY, maximumInterval: '10 seconds', maximumAttempts: 5 },
});
