/**
 * Turns apiserver errors into Temporal failures: what retrying cannot fix (400 Bad Request,
 * 422 Invalid) becomes non-retryable with the apiserver's own message; everything else is
 * retried by the activity's retry policy. 403 is retried for a while on purpose: during an RBAC
 * rollout a Forbidden is transient, and failing fast would wedge the operation (the original's
 * lesson) — but a Forbidden that outlives FORBIDDEN_ATTEMPTS attempts (about three minutes with
 * the usual 1 s → 30 s backoff) is a missing grant, and retrying forever would wedge it the
 * other way. Then it becomes non-retryable `Kubernetes403`: requests end with RBACDenied.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { apiMessage, statusCode } from '../../kube/client.js';

export const FORBIDDEN_ATTEMPTS = 10;

function currentAttempt(): number {
  try {
    return Context.current().info.attempt;
  } catch {
    return 1; // not inside an activity (e.g. a unit test)
  }
}

export function kubeFailure(err: unknown, action: string): Error {
  const code = statusCode(err);
  const message = `${action}: ${apiMessage(err)}`;
  if (code === 400 || code === 422) {
    return ApplicationFailure.nonRetryable(message, `Kubernetes${code}`);
  }
  if (code === 403 && currentAttempt() >= FORBIDDEN_ATTEMPTS) {
    return ApplicationFailure.nonRetryable(
      `${message} (still forbidden after ${FORBIDDEN_ATTEMPTS} attempts)`,
      'Kubernetes403',
    );
  }
  return ApplicationFailure.retryable(message, code ? `Kubernetes${code}` : 'KubernetesUnavailable');
}
