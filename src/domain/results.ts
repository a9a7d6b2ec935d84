/**
 * The one vocabulary in which activities report back to workflows, and in which the pure
 * `domain/` judgements answer. Every result is tagged by `status`:
 *
 * - `ok`: the step did its part; the fields of `T` carry what it found or made.
 * - `failed`: the operation cannot succeed; `outcome` is how the request ends (a terminal reason
 *   and a message for the user). Never used for errors a retry may fix: those are thrown.
 * - `gone`: the object the step was about no longer exists — deleted, or its name now belongs
 *   to an object with another UID. There is nothing left to do for it.
 *
 * Workflows branch on `status` alone; there is no other spelling of "gone" or "failed".
 */
import type { RequestOutcome } from './requests.js';

export type Ok<T extends object = object> = { readonly status: 'ok' } & T;
/** `outcome` says how the operation ends: a request's terminal outcome, a sandbox's refusal, … */
export interface Failed<O = RequestOutcome> {
  readonly status: 'failed';
  readonly outcome: O;
}
export interface Gone {
  readonly status: 'gone';
}

/** A read or write of one object that may find it gone. */
export type Found<T extends object = object> = Ok<T> | Gone;
/** A judgement or step that may end the operation. */
export type Outcome<T extends object = object, O = RequestOutcome> = Ok<T> | Failed<O>;
/** A step that may end the operation or find its object gone. */
export type StepResult<T extends object = object, O = RequestOutcome> = Ok<T> | Failed<O> | Gone;

export const GONE: Gone = Object.freeze({ status: 'gone' });

export function ok(): Ok;
export function ok<T extends object>(fields: T): Ok<T>;
export function ok<T extends object>(fields?: T): Ok<T> {
  return { ...(fields as T), status: 'ok' };
}

export function failedWith<O = RequestOutcome>(outcome: O): Failed<O> {
  return { status: 'failed', outcome };
}
