/**
 * Which Kubernetes Event, if any, a status write is: the transitions a user looks for with
 * `kubectl describe`. Pure: the activities that write statuses gather the facts (the write, and
 * the condition before it where a write may repeat an unchanged state) and record what these
 * return (src/kube/events.ts). A write that changes nothing a user would look for returns
 * undefined, so a resync never adds an Event.
 */
import type { Condition } from './conditions.js';
import type { RequestOutcome } from './requests.js';

export interface EventSpec {
  type: 'Normal' | 'Warning';
  /** Why (CamelCase, at most 128 characters); one Event per object and reason, repeats counted. */
  reason: string;
  /** What the controller did (CamelCase, at most 128 characters). */
  action: string;
  /** For humans; at most 1 kB (longer notes are cut). */
  note: string;
}

/** A request reached its terminal Ready condition. */
export function requestOutcomeEvent(outcome: RequestOutcome): EventSpec {
  return outcome.ready
    ? { type: 'Normal', reason: 'Completed', action: 'Complete', note: outcome.message }
    : { type: 'Warning', reason: 'Failed', action: 'Complete', note: `${outcome.reason}: ${outcome.message}` };
}

/** An ObjectKeeper is being deleted: its TTL ran out, or the object it followed is gone. */
export function keeperDeletedEvent(keeper: { expiresAt?: string; message?: string }, now: Date): EventSpec {
  const expired = keeper.expiresAt !== undefined && Date.parse(keeper.expiresAt) <= now.getTime();
  return expired
    ? { type: 'Normal', reason: 'Expired', action: 'Delete', note: `TTL expired at ${keeper.expiresAt}; deleting` }
    : {
        type: 'Normal',
        reason: 'FollowedObjectGone',
        action: 'Delete',
        note: `the followed object is gone; deleting${keeper.message ? ` (${keeper.message})` : ''}`,
      };
}

interface SandboxStatusWrite {
  phase?: string | null;
  assignedPod?: string | null;
  nodeName?: string | null;
  conditions?: readonly { reason?: string; message?: string }[] | null;
}

/**
 * A Sandbox status write that moves it to a phase a user looks for. The sandbox's workflow writes
 * its status only when something changed, so each such write is a transition.
 */
export function sandboxStatusEvent(status: SandboxStatusWrite): EventSpec | undefined {
  const why = status.conditions?.[0];
  const detail = why?.message ? `: ${why.message}` : '';
  switch (status.phase) {
    case 'Bound':
      return {
        type: 'Normal',
        reason: 'Placed',
        action: 'Place',
        note: `placed on agent ${status.assignedPod ?? '?'}${status.nodeName ? ` (node ${status.nodeName})` : ''}`,
      };
    case 'Failed':
      return { type: 'Warning', reason: 'Failed', action: 'Run', note: `${why?.reason ?? 'Failed'}${detail}` };
    case 'Lost':
      return { type: 'Warning', reason: 'Lost', action: 'Recover', note: `${why?.reason ?? 'Lost'}${detail}` };
    case 'Expired':
      return { type: 'Normal', reason: 'Expired', action: 'Expire', note: why?.message ?? 'expired' };
    default:
      return undefined;
  }
}

/** The pool's workflow created agent Pods (it only does when the pool must grow). */
export function poolScaledUpEvent(created: readonly string[], perPod: number): EventSpec | undefined {
  if (created.length === 0) return undefined;
  return {
    type: 'Normal',
    reason: 'ScaledUp',
    action: 'Scale',
    note: `created ${created.length} agent Pod(s) of ${perPod} slot(s): ${created.join(', ')}`,
  };
}

/** The pool's workflow deleted an agent Pod (drained and idle, or never answering). */
export function poolScaledDownEvent(pod: string): EventSpec {
  return {
    type: 'Normal',
    reason: 'ScaledDown',
    action: 'Scale',
    note: `deleted agent Pod ${pod}, holding no sandbox`,
  };
}

/** Reasons of a source's Ready=False that are progress, not a failure. */
const SOURCE_IN_PROGRESS: ReadonlySet<string> = new Set(['Syncing', 'Deleting', 'Processing']);

type ReadyLike = Pick<Condition, 'status' | 'reason'> & { message?: string };

/**
 * A Cloudflare source's Ready condition changed: synced, or failed with a reason. The same
 * condition written again (every sync tells each source its result) is no Event.
 */
export function sourceReadyEvent(before: ReadyLike | undefined, after: ReadyLike | undefined): EventSpec | undefined {
  if (!after || (before && before.status === after.status && before.reason === after.reason)) return undefined;
  if (after.status === 'True')
    return { type: 'Normal', reason: after.reason || 'Synced', action: 'Sync', note: after.message ?? 'synced' };
  if (SOURCE_IN_PROGRESS.has(after.reason)) return undefined;
  return { type: 'Warning', reason: 'SyncFailed', action: 'Sync', note: `${after.reason}: ${after.message ?? ''}` };
}

/**
 * A target's sync found our items in Cloudflare changed by hand. Each repair is an action (every
 * one counts); drift left in place (policy observe) is told once, when first seen.
 */
export function driftEvent(
  found: { drifted: boolean; left: boolean; differences: readonly string[] },
  before: Pick<Condition, 'status' | 'reason'> | undefined,
): EventSpec | undefined {
  if (!found.drifted) return undefined;
  const what = found.differences.slice(0, 10).join('; ');
  if (!found.left) return { type: 'Normal', reason: 'DriftRepaired', action: 'Repair', note: `re-applied: ${what}` };
  if (before?.status === 'True' && before.reason === 'DriftObserved') return undefined;
  return {
    type: 'Warning',
    reason: 'DriftObserved',
    action: 'Observe',
    note: `left as is (drift policy observe): ${what}`,
  };
}
