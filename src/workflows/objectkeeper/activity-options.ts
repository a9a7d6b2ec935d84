/** How the ObjectKeeper workflow calls its activities (retry rules: ../retry-policy.ts). */
import { proxyActivities } from '@temporalio/workflow';
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
