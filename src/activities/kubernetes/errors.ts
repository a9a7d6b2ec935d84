/**
 * Turns apiserver errors into Temporal failures: what retrying cannot fix (400 Bad Request,
 * 422 Invalid) becomes non-retryable with the apiserver's own message; everything else is
 * retried by the activity's retry policy. 403 is retried for a while on purpose: during an RBAC
 * rollout a Forbidden is transient, and failing fast would wedge the operation (the original's
 * lesson) — but a Forbidden that outlives `forbiddenAttempts()` attempts (10 by default: about
 * three minutes with the usual 1 s → 30 s backoff; DO_RBAC_ROLLOUT_ATTEMPTS changes it) is a
 * missing grant, and retrying forever would wedge it the other way. Then it becomes
 * non-retryable `Kubernetes403`: requests end with RBACDenied.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { apiMessage, statusCode } from '../../kube/client.js';

const DEFAULT_FORBIDDEN_ATTEMPTS = 10;

/** How many attempts a Forbidden gets before it counts as a missing grant (DO_RBAC_ROLLOUT_ATTEMPTS). */
export function forbiddenAttempts(env: NodeJS.ProcessEnv = process.env): number {
  const n = Number(env.DO_RBAC_ROLLOUT_ATTEMPTS);
  return Number.isInteger(n) && n >= 1 ? n : DEFAULT_FORBIDDEN_ATTEMPTS;
}

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
  const attempts = forbiddenAttempts();
  if (code === 403 && currentAttempt() >= attempts) {
    return ApplicationFailure.nonRetryable(`${message} (still forbidden after ${attempts} attempts)`, 'Kubernetes403');
  }
  return ApplicationFailure.retryable(message, code ? `Kubernetes${code}` : 'KubernetesUnavailable');
}
