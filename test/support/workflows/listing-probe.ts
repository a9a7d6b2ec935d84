/**
 * A test-only workflow: runs the TTL sweep's listing activity under a heartbeat timeout the test
 * chooses, with a single attempt, so a heartbeat timeout shows up as a failure instead of a retry.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { RequestActivities } from '../../../src/activities/kubernetes/requests.js';
import type { RequestKindName } from '../../../src/api/request-kinds.js';

export async function listingProbeWorkflow(kind: RequestKindName, heartbeatTimeoutMs: number): Promise<number> {
  const { listExpiredRequests } = proxyActivities<RequestActivities>({
    startToCloseTimeout: '5 minutes',
    heartbeatTimeout: heartbeatTimeoutMs,
    retry: { maximumAttempts: 1 },
  });
  return (await listExpiredRequests(kind)).length;
}
