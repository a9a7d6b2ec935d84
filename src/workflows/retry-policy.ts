/**
 * The retry policy of every activity that is idempotent and should eventually succeed: 1 s
 * doubling to 30 s, no attempt limit, so apiserver hiccups and RBAC rollouts pass. What retrying
 * cannot fix is raised non-retryable by the activity (src/activities/kubernetes/errors.ts).
 */
import type { RetryPolicy } from '@temporalio/workflow';

export const RETRY: RetryPolicy = { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' };
