/**
 * The facts of an activity's failure as a workflow sees it: a regular activity's failure wraps its
 * cause in an ActivityFailure, a local activity's is its own ApplicationFailure (a timed-out one
 * wrapped). One reading for every workflow that calls both kinds.
 */
import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import type { OperationFailure } from '../domain/request-run.js';

export function activityFailureOf(err: unknown): OperationFailure | undefined {
  if (err instanceof ActivityFailure) {
    const cause = err.cause;
    const type = cause instanceof ApplicationFailure ? (cause.type ?? undefined) : undefined;
    return { wrapped: true, type, message: cause?.message ?? err.message };
  }
  if (err instanceof ApplicationFailure) return { wrapped: false, type: err.type ?? undefined, message: err.message };
  return undefined;
}
