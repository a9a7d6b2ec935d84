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
 *
 * The run's state lives in one `RequestRun` (as the sandbox's `SandboxRun`); its steps gather
 * facts through activities and leave the decisions to src/domain/request-run.ts. The entity kit
 * (../entity.ts) does not fit: a request's run is one pass that ends, not a reconcile loop.
 */
import {
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
import {
  DELETED_BEFORE_FINALIZATION,
  DELETED_WHILE_PROCESSING,
  REQUEST_GONE,
  afterReap,
  howFailureEnds,
  howRequestStarts,
  isDeleted,
  outcomeOf,
  phaseNeedsIndexing,
  phaseOf,
  type RunEnding,
} from '../../domain/request-run.js';
import type { OperationResult, RequestRef, RequestView } from '../../domain/requests.js';
import { GONE, type Failed, type Gone } from '../../domain/results.js';
import { OperationPhase } from '../../temporal/search-attributes.js';
import { activityFailureOf } from '../activity-failure.js';
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
 * Patch: a local activity's own failure (a Forbidden past the rollout window, a 422) ends the
 * request like a regular activity's; runs from before failed the workflow, leaving the request
 * Processing. Asked only when such a failure happens.
 */
export const REQUEST_LOCAL_FAILURE_ENDS = 'request-local-failure-ends';

/**
 * Runs one request's life; `firstStep` is the operation's first progress message, written with
 * the first read when the run takes REQUEST_FEWER_TASKS.
 */
export async function runRequest(
  input: RequestWorkflowInput,
  firstStep: string,
  operate: (ctx: OperationContext) => Promise<OperationResult>,
): Promise<string> {
  const run = new RequestRun(input.ref, patched(REQUEST_FEWER_TASKS), firstStep);
  const start = howRequestStarts(await run.read());
  if (start.next === 'end') return run.endUnprocessed(start.ending);
  if (start.next === 'terminal') {
    log.info('request already terminal; only its TTL is left', { name: run.ref.name });
    run.setPhase(start.phase, start.details);
  } else {
    const ended = await run.process(start.spec, operate);
    if (ended) return run.endWith(ended);
  }
  return run.end();
}

/** What the operation and its delete watchdog tell each other. */
interface Watch {
  /** The operation returned or threw: the watchdog stops. */
  finished: boolean;
  /** The watchdog cancelled the operation. */
  cancelled: boolean;
  /** The fresh read that failed for good, when that is why the watchdog cancelled. */
  readFailure?: unknown;
}

/** One run of a request's workflow: its state, the delete hint, and the steps it sequences. */
class RequestRun {
  /** What the state query answers. */
  readonly state: RequestState = { phase: 'Pending', step: 'reading the request' };
  /** The watcher said the request was deleted; believed once a fresh read agrees. */
  private deleteHinted = false;
  /** The OperationPhase Temporal holds (set at start by the watcher, or by the last upsert). */
  private indexedPhase: string | undefined;
  /** The Processing message on the request now (with REQUEST_FEWER_TASKS, beginRequest wrote the first step). */
  private marked: string | undefined;

  constructor(
    readonly ref: RequestRef,
    /** This run takes REQUEST_FEWER_TASKS. */
    readonly fewerTasks: boolean,
    private readonly firstStep: string,
  ) {
    setHandler(requestDeletedSignal, () => {
      this.deleteHinted = true;
    });
    setHandler(requestStateQuery, () => this.state);
    this.indexedPhase = fewerTasks ? workflowInfo().typedSearchAttributes.get(OperationPhase) : undefined;
  }

  /** The phase the query, the search attribute and the workflow's current details show. */
  setPhase(phase: string, details: string): void {
    this.state.phase = phase;
    this.state.step = details;
    if (phaseNeedsIndexing(this.fewerTasks, this.indexedPhase, phase)) {
      upsertSearchAttributes([{ key: OperationPhase, value: phase }]);
    }
    this.indexedPhase = phase;
    setCurrentDetails(`**${phase}** — ${details}`);
  }

  /** The first fresh read (with REQUEST_FEWER_TASKS it also marks the request Processing with the first step). */
  read(): Promise<RequestView> {
    return this.fewerTasks
      ? requestCalls.beginRequest({ ref: this.ref, message: this.firstStep })
      : requestCalls.readRequest(this.ref);
  }

  /** Gone or being deleted before it was processed (runs from before REQUEST_FEWER_TASKS showed no phase). */
  endUnprocessed(ending: RunEnding): string {
    if (this.fewerTasks) this.setPhase(ending.phase, ending.details);
    return ending.result;
  }

  endWith(ending: RunEnding): string {
    this.setPhase(ending.phase, ending.details);
    return ending.result;
  }

  /** Operates once and finalizes the request; how the run ends when the request was deleted meanwhile. */
  async process(
    spec: unknown,
    operate: (ctx: OperationContext) => Promise<OperationResult>,
  ): Promise<RunEnding | undefined> {
    this.setPhase('Processing', this.fewerTasks ? this.firstStep : 'starting');
    this.marked = this.fewerTasks ? this.firstStep : undefined;
    const ctx: OperationContext = {
      ref: this.ref,
      spec,
      fewerTasks: this.fewerTasks,
      progress: (message) => this.progress(message),
    };
    const result = await this.operateUnlessDeleted(() => operate(ctx));
    if (result.status === 'gone') return DELETED_WHILE_PROCESSING;
    return this.finalize(result);
  }

  /** Ready=False/Processing with this step's message (once per message with REQUEST_FEWER_TASKS). */
  async progress(message: string): Promise<void> {
    if (message === this.marked) return;
    this.setPhase('Processing', message);
    const r = await requestCalls.markRequestProcessing({ ref: this.ref, message });
    if (r.status === 'gone') throw ApplicationFailure.nonRetryable('request deleted', REQUEST_GONE);
    if (this.fewerTasks) this.marked = message;
  }

  /**
   * Runs the operation; if the watcher reports the request deleted and a fresh read agrees, the
   * operation is cancelled (in-flight waits stop) and GONE is returned. A failure an activity
   * cannot retry away — the operation's own, or the watchdog's read — becomes a terminal outcome
   * (howFailureEnds).
   */
  private async operateUnlessDeleted(operate: () => Promise<OperationResult>): Promise<OperationResult> {
    const operation = new CancellationScope();
    const watch: Watch = { finished: false, cancelled: false };
    void this.cancelOnConfirmedDelete(operation, watch);
    try {
      return await operation.run(operate);
    } catch (err) {
      // Cancelled by the watchdog: for a confirmed delete (GONE), or for its failed read.
      const byWatch = watch.cancelled && isCancellation(err);
      if (byWatch && watch.readFailure === undefined) return GONE;
      const failure = byWatch ? watch.readFailure : err;
      const ended = failureEnding(failure);
      if (ended) return ended;
      throw failure;
    } finally {
      watch.finished = true;
    }
  }

  /**
   * The operation's watchdog: verifies each delete hint with a fresh read, cancels once one agrees
   * — or once the read fails for good (a Forbidden past the rollout window), which then ends the
   * request as the operation's own failure would. It must not reject: a rejection nobody awaits
   * fails every workflow task of the run.
   */
  private async cancelOnConfirmedDelete(operation: CancellationScope, watch: Watch): Promise<void> {
    while (!watch.finished) {
      await condition(() => this.deleteHinted || watch.finished);
      if (watch.finished) return;
      this.deleteHinted = false;
      let now: RequestView | undefined;
      try {
        // Awaited as it is (no .catch): the order of a run's commands in recorded histories stays.
        now = await requestCalls.readRequest(this.ref);
      } catch (err) {
        watch.readFailure = err;
      }
      if (!watch.finished && (now === undefined || isDeleted(now))) {
        if (this.fewerTasks || patched(REQUEST_CANCELS_BETWEEN_LOCAL_CALLS)) {
          // Not while one of the operation's local activities is in flight (noLocalCallInFlight says why).
          await condition(() => noLocalCallInFlight() || watch.finished);
          if (watch.finished) return;
        }
        watch.cancelled = true;
        operation.cancel();
        return;
      }
    }
  }

  /** One terminal Ready condition and completionTimestamp on the request. */
  private async finalize(result: Exclude<OperationResult, Gone>): Promise<RunEnding | undefined> {
    const outcome = outcomeOf(result);
    this.state.outcome = outcome;
    const end = await requestCalls.finalizeRequest({ ref: this.ref, outcome, fields: result.fields });
    if (end.status === 'gone') return DELETED_BEFORE_FINALIZATION;
    this.setPhase(phaseOf(outcome), outcome.message);
    return undefined;
  }

  /** A terminal request's run ends; runs from before REQUEST_ENDS_WHEN_TERMINAL waited for its TTL. */
  end(): Promise<string> | string {
    if (this.fewerTasks || patched(REQUEST_ENDS_WHEN_TERMINAL)) {
      setCurrentDetails(
        `**${this.state.phase}** — ${this.state.step}\n\nDeleted by the TTL sweep once its TTL has passed.`,
      );
      return `${this.state.phase}: ${this.state.step}`;
    }
    return this.waitForTtl();
  }

  /** Sleeps until the TTL (counted from completionTimestamp) expires, then deletes the request. */
  private async waitForTtl(): Promise<string> {
    for (;;) {
      const step = afterReap(await requestCalls.reapRequestIfExpired(this.ref), this.state.phase);
      if (step.next === 'end') return this.endWith(step.ending);
      this.state.expiresAt = step.expiresAt;
      setCurrentDetails(`**${this.state.phase}** — ${this.state.step}\n\nTTL expires at ${step.expiresAt}`);
      const ms = Math.max(0, Date.parse(step.expiresAt) - Date.now());
      // The watcher's delete hint ends the wait early; otherwise the timer fires at expiry.
      if (await condition(() => this.deleteHinted, ms)) this.deleteHinted = false;
    }
  }
}

/**
 * How a failure that escaped an operation ends the request (src/domain/request-run.ts decides),
 * or undefined when it is no ending (a cancellation, a workflow bug): rethrown.
 */
export function failureEnding(err: unknown): Failed | Gone | undefined {
  const failure = activityFailureOf(err);
  return failure && howFailureEnds(failure, () => patched(REQUEST_LOCAL_FAILURE_ENDS));
}
