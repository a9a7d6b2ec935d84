/**
 * What a request's workflow decides as it runs, pure: what the first read says the run does, how
 * an operation's result or an escaped failure ends the request, what a TTL reap (runs from before
 * `request-ends-when-terminal`) means. The workflow gathers the facts (activities) and sequences
 * the writes; nothing here does I/O or reads a clock.
 */
import { RequestReason } from '../api/requests.js';
import {
  failed,
  readyCondition,
  type OperationResult,
  type ReapResult,
  type RequestOutcome,
  type RequestView,
} from './requests.js';
import { GONE, failedWith, type Failed, type Gone } from './results.js';

/** How a run ends without operating: the phase and details it shows, and the workflow's result. */
export interface RunEnding {
  phase: string;
  details: string;
  result: string;
}

/** What the first read of a request says the run does. */
export type RequestStart =
  | { next: 'end'; ending: RunEnding }
  /** Terminal before this run (a resync restarted its workflow): never operated on again. */
  | { next: 'terminal'; phase: string; details: string }
  | { next: 'operate'; spec: unknown };

export function howRequestStarts(view: RequestView): RequestStart {
  if (view.status === 'gone') {
    return {
      next: 'end',
      ending: {
        phase: 'Deleted',
        details: 'the request was gone before it was processed',
        result: 'request gone before it was processed',
      },
    };
  }
  if (view.deleting) {
    return {
      next: 'end',
      ending: {
        phase: 'Deleted',
        details: 'the request was being deleted before it was processed',
        result: 'request is being deleted',
      },
    };
  }
  if (view.terminal) {
    const ready = readyCondition(view.requestStatus.conditions);
    const phase = ready?.status === 'True' ? RequestReason.Completed : (ready?.reason ?? 'Terminal');
    return { next: 'terminal', phase, details: 'terminal before this run' };
  }
  return { next: 'operate', spec: view.spec };
}

/** A fresh read during the operation confirms the watcher's delete hint: gone, or being deleted. */
export function isDeleted(view: RequestView): boolean {
  return view.status === 'gone' || view.deleting;
}

/** The request found deleted while its operation ran, or before its finalization. */
export const DELETED_WHILE_PROCESSING: RunEnding = {
  phase: 'Deleted',
  details: 'the request was deleted while it was being processed',
  result: 'request deleted while processing',
};
export const DELETED_BEFORE_FINALIZATION: RunEnding = {
  phase: 'Deleted',
  details: 'the request was deleted before it could be finalized',
  result: 'request deleted before finalization',
};

/** The outcome an operation that ran to its end writes on the request. */
export function outcomeOf(result: Exclude<OperationResult, Gone>): RequestOutcome {
  return result.status === 'ok' ? { ready: true, message: result.message } : result.outcome;
}

/** The phase a finalized request shows: Completed, or its failure's reason. */
export function phaseOf(outcome: RequestOutcome): string {
  return outcome.ready ? RequestReason.Completed : outcome.reason;
}

/**
 * Whether the OperationPhase search attribute is written: always in runs from before
 * `request-fewer-tasks` (`onlyChanges` false), else only when it differs from what Temporal holds.
 */
export function phaseNeedsIndexing(onlyChanges: boolean, indexed: string | undefined, phase: string): boolean {
  return !onlyChanges || indexed !== phase;
}

/**
 * A failure that escaped a request's operation, as the workflow saw it. A regular activity's
 * failure arrives wrapped (an ActivityFailure, its cause the activity's ApplicationFailure or a
 * timeout); a local activity's own failure arrives unwrapped (the SDK core wraps only a local
 * activity's timeout or cancellation), as does the workflow's own `RequestGone`.
 */
export interface OperationFailure {
  wrapped: boolean;
  /** The ApplicationFailure's type, when there is one. */
  type?: string;
  message: string;
}

/** A Forbidden that outlived the RBAC-rollout window (src/activities/kubernetes/errors.ts). */
const FORBIDDEN = 'Kubernetes403';
/** The request was found deleted while its operation ran. */
export const REQUEST_GONE = 'RequestGone';

/**
 * How a failure that escaped an operation ends the request: the request found deleted is GONE;
 * a failure retries could not fix is terminal — RBACDenied for a Forbidden that outlived the
 * RBAC-rollout window (the worker lacks a grant), InternalError otherwise, with the failure's
 * message. An unwrapped failure ends the request only in runs that take
 * `request-local-failure-ends` (`localFailuresEnd`, asked only then): runs from before failed.
 */
export function howFailureEnds(f: OperationFailure, localFailuresEnd: () => boolean): Failed | Gone | undefined {
  if (f.type === REQUEST_GONE) return GONE;
  if (!f.wrapped && !localFailuresEnd()) return undefined;
  if (f.type === FORBIDDEN) {
    return failedWith(
      failed(
        RequestReason.RBACDenied,
        `${f.message} — the controller's ServiceAccount lacks this permission (see deploy/rbac)`,
      ),
    );
  }
  return failedWith(failed(RequestReason.InternalError, f.message));
}

/** What a TTL reap found (runs from before `request-ends-when-terminal` waited for the TTL). */
export type TtlStep = { next: 'end'; ending: RunEnding } | { next: 'wait'; expiresAt: string };

/** `kept`: the phase the run shows now (a request never reaped keeps it). */
export function afterReap(r: ReapResult, kept: string): TtlStep {
  const end = (phase: string, details: string, result: string): TtlStep => ({
    next: 'end',
    ending: { phase, details, result },
  });
  if (r.status === 'gone') return end('Deleted', 'the request was deleted', 'request deleted');
  switch (r.state) {
    case 'deleted':
      return end('Reaped', 'TTL expired; request deleted, its keeper and artifacts follow', 'reaped after TTL');
    case 'deleting':
      return end('Deleted', 'the request was deleted', 'request deleted');
    case 'not-terminal':
      // Only reachable if someone rewrote the status; never reap a request that is not done.
      return end(
        'Orphaned',
        'request is no longer terminal; the TTL does not apply',
        'request not terminal; not reaped',
      );
    case 'never':
      return end(kept, `kept: ${r.why}`, `not reaped: ${r.why}`);
    case 'waiting':
      return { next: 'wait', expiresAt: r.expiresAt };
  }
}
