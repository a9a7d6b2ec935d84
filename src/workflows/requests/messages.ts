/**
 * What a request workflow accepts from the outside: its input, the watcher's deletion hint and
 * the query that shows its state. The wire names are part of the user-facing API.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { RequestOutcome, RequestRef } from '../../domain/requests.js';

export interface RequestWorkflowInput {
  ref: RequestRef;
}

/** Hint from the watcher: the request was deleted. Verified with a fresh read before acting. */
export const requestDeletedSignal = defineSignal('requestDeleted');

export interface RequestState {
  phase: string;
  step: string;
  outcome?: RequestOutcome;
  expiresAt?: string;
}
export const requestStateQuery = defineQuery<RequestState>('requestState');
