/**
 * How the Cloudflare workflows call their activities. Kubernetes and Temporal calls run on the
 * operator's task queue; Cloudflare API calls run on the account's own task queue (the sync
 * settings name it), whose server-side rate limit is the one throttle of that account shared by
 * every workflow and worker. Retries are Temporal's: the SDK's are off, a 429 comes back with
 * `nextRetryDelay` = Retry-After, and permanent errors are non-retryable (errors.ts).
 */
import { ActivityCancellationType, proxyActivities } from '@temporalio/workflow';
import type { CloudflareSourceActivities } from '../../activities/cloudflare/sources.js';
import type { ConnectorActivities } from '../../activities/kubernetes/connector.js';
import type { CloudflareSyncActivities } from '../../activities/cloudflare/sync.js';
import type { TunnelActivities } from '../../activities/cloudflare/tunnels.js';
import { RETRY } from '../retry-policy.js';

/** Reads and writes of source objects, credentials, registrations, a tunnel's connector. */
export const sourceSteps = proxyActivities<CloudflareSourceActivities & ConnectorActivities>({
  startToCloseTimeout: '30 seconds',
  retry: RETRY,
});

/** A GET-merge-write of one target, a zone lookup or a tunnel's lifecycle, on the account's task queue. */
export function cloudflareCalls(taskQueue: string) {
  return proxyActivities<CloudflareSyncActivities & TunnelActivities>({
    taskQueue,
    startToCloseTimeout: '2 minutes',
    // The activities heartbeat every 3 s while they run: a dead worker's call is retried after this.
    heartbeatTimeout: '15 seconds',
    retry: { ...RETRY, maximumInterval: '60 seconds' },
    // A cancelled call (an observation a change interrupts) is waited for until its attempt has
    // stopped: the target's workflow stays its one writer, never writing next to a zombie.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  });
}
