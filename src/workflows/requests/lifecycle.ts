/**
 * The life of every fire-and-forget request, shared by the three kinds:
 *
 *   read fresh → (terminal already? end) → operate once → finalize (one terminal Ready
 *   condition, completionTimestamp once) → end.
 *
 * The TTL is not the workflow's: as in the original, a scanner deletes terminal requests whose
 * TTL has expired (the sweep Schedule, src/workflows/requests/ttl-sweep.ts). A finished request's
 * workflow therefore ends with it instead of sleeping a day on a timer — the Web UI shows it
 * Completed, not Running, and a request deleted while no watcher saw it leaves nothing waiting.
 * A run without REQUEST_ENDS_WHEN_TERMINAL still sleeps to the TTL and reaps (its history replays so).
 *
 * Replaces the original's reconcile re-entry: the workflow is the one place a request's
 * progress lives, so a restart resumes it instead of re-running it, and a terminal request is
 * never operated on again (even when a resync starts a new workflow for it after retention).
 * Deleting the request (by hand or TTL) ends the workflow; its ObjectKeeper follows the request
 * and the garbage collector removes the artifacts.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  log,
  patched,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { RequestReason } from '../../api/requests.js';
import { failed, readyCondition, type OperationResult, type RequestRef } from '../../domain/requests.js';
import { GONE, failedWith, type Failed, type Gone } from '../../domain/results.js';
import { OperationPhase } from '../../temporal/search-attributes.js';
import { noLocalCallInFlight, requestCalls } from './activity-options.js';
import { requestDeletedSignal, requestStateQuery, type RequestState, type RequestWorkflowInput } from './messages.js';

export interface OperationContext {
  ref: RequestRef;
  spec: unknown;
  /** Reports progress: Ready=False/Processing with this message, and the workflow's current details. */
  progress(message: string): Promise<void>;
  /** This run takes REQUEST_FEWER_TASKS: the kind's merged steps, small work in local activities. */
  fewerTasks: boolean;
}

/** Patch: a terminal request's workflow ends; the sweep applies the TTL. */
export const REQUEST_ENDS_WHEN_TERMINAL = 'request-ends-when-terminal';
/** Patch: a confirmed delete cancels the operation only between its local activities. */
export const REQUEST_CANCELS_BETWEEN_LOCAL_CALLS = 'request-cancels-between-local-calls';
/**
 * Patch: a request in as few workflow tasks and calls as it takes — one local activity reads the
 * request and marks it Processing with the operation's first step, OperationPhase is upserted
 * only when it changes (the watcher starts the workflow with Processing), the kinds merge their
 * steps. Implies the two patches above, which such a run no longer calls (a patch call costs a
 * marker and a TemporalChangeVersion upsert per run).
 */
export const REQUEST_FEWER_TASKS = 'request-fewer-tasks';

/**
 * Runs one request's life; `firstStep` is the operation's first progress message, written with
 * the first read when the run takes REQUEST_FEWER_TASKS.
 */
export async function runRequest(
  input: RequestWorkflowInput,
  firstStep: string,
  operate: (ctx: OperationContext) => Promise<OperationResult>,
): Promise<string> {
  const { ref } = input;
  const fewerTasks = patched(REQUEST_FEWER_TASKS);
  const state: RequestState = { phase: 'Pending', step: 'reading the request' };
  let deleteHint = false;
  setHandler(requestDeletedSignal, () => {
    deleteHint = true;
  });
  setHandler(requestStateQuery, () => state);
  /** The OperationPhase Temporal holds (set at start by the watcher, or by the last upsert). */
  let indexedPhase = fewerTasks ? workflowInfo().typedSearchAttributes.get(OperationPhase) : undefined;
  const phase = (p: string, details: string) => {
    state.phase = p;
    state.step = details;
    if (!fewerTasks || indexedPhase !== p) upsertSearchAttributes([{ key: OperationPhase, value: p }]);
    indexedPhase = p;
    setCurrentDetails(`**${p}** — ${details}`);
  };

  const view = fewerTasks
    ? await requestCalls.beginRequest({ ref, message: firstStep })
    : await requestCalls.readRequest(ref);
  if (view.status === 'gone') {
    if (fewerTasks) phase('Deleted', 'the request was gone before it was processed');
    return 'request gone before it was processed';
  }
  if (view.deleting) {
    if (fewerTasks) phase('Deleted', 'the request was being deleted before it was processed');
    return 'request is being deleted';
  }

  if (view.terminal) {
    // Never operated on again (e.g. a resync restarted its workflow after retention): only the TTL is left.
    const ready = readyCondition(view.requestStatus.conditions);
    log.info('request already terminal; only its TTL is left', { name: ref.name });
    phase(
      ready?.status === 'True' ? RequestReason.Completed : (ready?.reason ?? 'Terminal'),
      'terminal before this run',
    );
  } else {
    phase('Processing', fewerTasks ? firstStep : 'starting');
    /** The Processing message on the request now (beginRequest wrote the first step). */
    let marked = fewerTasks ? firstStep : undefined;
    const ctx: OperationContext = {
      ref,
      spec: view.spec,
      fewerTasks,
      async progress(message) {
        if (message === marked) return;
        phase('Processing', message);
        const r = await requestCalls.markRequestProcessing({ ref, message });
        if (r.status === 'gone') throw ApplicationFailure.nonRetryable('request deleted', 'RequestGone');
        if (fewerTasks) marked = message;
      },
    };
    const result = await runUnlessDeleted(
      ref,
      fewerTasks,
      () => operate(ctx),
      () => deleteHint,
      () => (deleteHint = false),
    );
    if (result.status === 'gone') {
      phase('Deleted', 'the request was deleted while it was being processed');
      return 'request deleted while processing';
    }
    const outcome = result.status === 'ok' ? { ready: true as const, message: result.message } : result.outcome;
    state.outcome = outcome;
    const end = await requestCalls.finalizeRequest({ ref, outcome, fields: result.fields });
    if (end.status === 'gone') {
      phase('Deleted', 'the request was deleted before it could be finalized');
      return 'request deleted before finalization';
    }
    const label = outcome.ready ? RequestReason.Completed : outcome.reason;
    phase(label, outcome.message);
  }
  if (fewerTasks || patched(REQUEST_ENDS_WHEN_TERMINAL)) {
    setCurrentDetails(`**${state.phase}** — ${state.step}\n\nDeleted by the TTL sweep once its TTL has passed.`);
    return `${state.phase}: ${state.step}`;
  }
  return waitForTtl(
    ref,
    state,
    () => deleteHint,
    () => (deleteHint = false),
    phase,
  );
}

/**
 * Runs the operation; if the watcher reports the request deleted and a fresh read agrees, the
 * operation is cancelled (in-flight waits stop) and GONE is returned. A failure an activity
 * cannot retry away becomes a terminal InternalError with the activity's message.
 */
async function runUnlessDeleted(
  ref: RequestRef,
  fewerTasks: boolean,
  operate: () => Promise<OperationResult>,
  deleteHinted: () => boolean,
  clearHint: () => void,
): Promise<OperationResult> {
  const operation = new CancellationScope();
  let finished = false;
  let cancelled = false;
  // Watchdog for the operation's lifetime: verify each delete hint, cancel once confirmed.
  void (async () => {
    while (!finished) {
      await condition(() => deleteHinted() || finished);
      if (finished) return;
      clearHint();
      const now = await requestCalls.readRequest(ref);
      if (!finished && (now.status === 'gone' || now.deleting)) {
        if (fewerTasks || patched(REQUEST_CANCELS_BETWEEN_LOCAL_CALLS)) {
          // Not while one of the operation's local activities is in flight (noLocalCallInFlight says why).
          await condition(() => noLocalCallInFlight() || finished);
          if (finished) return;
        }
        cancelled = true;
        operation.cancel();
        return;
      }
    }
  })();
  try {
    return await operation.run(operate);
  } catch (err) {
    if (cancelled && isCancellation(err)) return GONE;
    const ended = howFailureEnds(err);
    if (ended) return ended;
    throw err;
  } finally {
    finished = true;
  }
}

/**
 * How a failure that escaped an operation ends the request: an activity failure that retries
 * could not fix is terminal (RBACDenied for a Forbidden that outlived the RBAC-rollout window,
 * InternalError otherwise, with the activity's message); the request found deleted is GONE.
 * Anything else (a cancellation, a workflow bug) is not an ending: undefined.
 */
export function howFailureEnds(err: unknown): Failed | Gone | undefined {
  if (err instanceof ActivityFailure) {
    const cause = err.cause;
    if (cause instanceof ApplicationFailure && cause.type === 'RequestGone') return GONE;
    // A Forbidden that outlived its retries is not an RBAC rollout any more: the worker lacks a grant.
    if (cause instanceof ApplicationFailure && cause.type === 'Kubernetes403') {
      return failedWith(
        failed(
          RequestReason.RBACDenied,
          `${cause.message} — the controller's ServiceAccount lacks this permission (see deploy/rbac)`,
        ),
      );
    }
    return failedWith(failed(RequestReason.InternalError, cause?.message ?? err.message));
  }
  if (err instanceof ApplicationFailure && err.type === 'RequestGone') return GONE;
  return undefined;
}

/** Sleeps until the TTL (counted from completionTimestamp) expires, then deletes the request. */
async function waitForTtl(
  ref: RequestRef,
  state: RequestState,
  deleteHinted: () => boolean,
  clearHint: () => void,
  phase: (p: string, details: string) => void,
): Promise<string> {
  for (;;) {
    const r = await requestCalls.reapRequestIfExpired(ref);
    if (r.status === 'gone') {
      phase('Deleted', 'the request was deleted');
      return 'request deleted';
    }
    switch (r.state) {
      case 'deleted':
        phase('Reaped', 'TTL expired; request deleted, its keeper and artifacts follow');
        return 'reaped after TTL';
      case 'deleting':
        phase('Deleted', 'the request was deleted');
        return 'request deleted';
      case 'not-terminal':
        // Only reachable if someone rewrote the status; never reap a request that is not done.
        phase('Orphaned', 'request is no longer terminal; the TTL does not apply');
        return 'request not terminal; not reaped';
      case 'never':
        phase(state.phase, `kept: ${r.why}`);
        return `not reaped: ${r.why}`;
      case 'waiting': {
        state.expiresAt = r.expiresAt;
        setCurrentDetails(`**${state.phase}** — ${state.step}\n\nTTL expires at ${r.expiresAt}`);
        const ms = Math.max(0, Date.parse(r.expiresAt) - Date.now());
        // The watcher's delete hint ends the wait early; otherwise the timer fires at expiry.
        if (await condition(deleteHinted, ms)) clearHint();
        break;
      }
    }
  }
}
