/**
 * Turns apiserver errors into Temporal failures: what retrying cannot fix (400 Bad Request,
 * 422 Invalid) becomes non-retryable with the apiserver's own message; everything else is
 * retried by the activity's retry policy. 403 is retried on purpose: during an RBAC rollout a
 * Forbidden is transient, and failing fast would wedge the operation.
 */
import { ApplicationFailure } from '@temporalio/common';
import { apiMessage, statusCode } from '../../kube/client.js';

export function kubeFailure(err: unknown, action: string): Error {
  const code = statusCode(err);
  const message = `${action}: ${apiMessage(err)}`;
  if (code === 400 || code === 422) {
    return ApplicationFailure.nonRetryable(message, `Kubernetes${code}`);
  }
  return ApplicationFailure.retryable(message, code ? `Kubernetes${code}` : 'KubernetesUnavailable');
}
