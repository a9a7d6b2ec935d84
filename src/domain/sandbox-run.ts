/**
 * What a sandbox's workflow decides at each step, pure: which agent to try next after a refusal,
 * what the record's status becomes (placed, waiting for room, following its agent, agent lost,
 * expired, reset), and when the run's phase must be indexed again. The workflow gathers the facts
 * (activities) and sequences the writes; nothing here does I/O or reads a clock.
 */
import type { Sandbox, SandboxAllocation, SandboxPhase, SandboxStatus } from '../api/sandbox.js';
import type { Placement } from './allocation.js';
import {
  AGENT_LOST,
  AGENT_UNREACHABLE,
  UNASSIGNED,
  endpointsOf,
  failureReason,
  failurePolicyOf,
  nextLookInMs,
  phaseFromAgent,
  refusal,
  type LifecycleStep,
  type Refusal,
  type RefusalCode,
  type SandboxCreateSpec,
  type SandboxStatusPatch,
} from './sandbox.js';

/** One incarnation of a sandbox name on an agent: its ID, where it runs, what it runs. */
export interface Incarnation {
  sandboxId: string;
  placement: Placement;
  spec: SandboxCreateSpec;
}

export interface ReadyCondition {
  type: 'Ready';
  status: 'True' | 'False';
  reason: string;
  message: string;
  lastTransitionTime: string;
}

/** The sandbox's Ready condition, stamped `now` (each status write of the workflow sets it anew). */
export function readyCondition(status: 'True' | 'False', reason: string, message: string, now: Date): ReadyCondition {
  return { type: 'Ready', status, reason, message, lastTransitionTime: now.toISOString() };
}

// ---- placement: one agent after another ----

/** A refusal from an allocation or an agent create; `agentId` names the agent that refused. */
export interface PlacementRefusalFacts {
  code: RefusalCode;
  message: string;
  retryElsewhere?: boolean;
  agentId?: string;
  /** The Ready condition's reason when it is not the usual one (e.g. CreateContainerConfigError). */
  reason?: string;
}

export type PlacementTry =
  /** Answer with `refusal`; `unansweredInstead`: the agent that did not answer is the better reason (a patched answer). */
  | { next: 'answer'; refusal: Refusal; unansweredInstead?: Refusal }
  /** Try again without `exclude`; `unanswered`: the reason to give should no agent be left. */
  | { next: 'elsewhere'; exclude: string; refusal: Refusal; unanswered?: Refusal };

/**
 * After a refusal: another agent may take the sandbox when the refusal is that agent's alone
 * (full, port taken, did not answer); anything else is the answer. When the allocation then finds
 * no agent left, an agent that did not answer is why — not the pool's "full".
 */
export function afterPlacementRefusal(r: PlacementRefusalFacts, unanswered: Refusal | undefined): PlacementTry {
  const answer = { ...refusal(r.code, r.message), ...(r.reason ? { reason: r.reason } : {}) };
  if (!r.agentId) return { next: 'answer', refusal: answer, ...(unanswered ? { unansweredInstead: unanswered } : {}) };
  if (!r.retryElsewhere) return { next: 'answer', refusal: answer };
  return {
    next: 'elsewhere',
    exclude: r.agentId,
    refusal: answer,
    unanswered: r.code === 'Unavailable' ? answer : unanswered,
  };
}

// ---- status writes ----

/** Where a placed sandbox runs, as status says it (the hand-off of a placement the run made). */
export function boundStatus(placed: Incarnation): SandboxStatus {
  return {
    phase: 'Bound',
    assignedPod: placed.placement.pod,
    nodeName: placed.placement.node,
    sandboxID: placed.sandboxId,
    endpoints: endpointsOf(placed.placement.ip, placed.spec.exposedPorts),
  };
}

/** The allocation annotation moved to status; the sandbox ID and endpoints when the agent was found. */
export function handOffStatus(alloc: SandboxAllocation, found: Incarnation | undefined): SandboxStatus {
  return {
    phase: 'Bound',
    assignedPod: alloc.assignedPod,
    nodeName: alloc.assignedNode,
    ...(found
      ? { sandboxID: found.sandboxId, endpoints: endpointsOf(found.placement.ip, found.spec.exposedPorts) }
      : {}),
  };
}

/** No agent has room now (or, `reason`, what it needs is missing): Pending, unassigned, and why. */
export function unschedulableStatus(why: string, now: Date, reason = 'Unschedulable'): SandboxStatusPatch {
  return {
    phase: 'Pending',
    assignedPod: null,
    nodeName: null,
    conditions: [readyCondition('False', reason, why, now)],
  };
}

/** What the agent said about the sandbox (activities/sandbox/agents.ts `agentSandbox`), less `agent-gone`. */
export type AgentAnswer =
  | { state: 'held'; phase: string; message: string; reason?: string; runtime?: string }
  | { state: 'missing'; bootId?: string };

export interface ObservedStatus {
  phase: SandboxPhase;
  condition: ReadyCondition;
  runtime?: string;
  /** Missing from an agent that restarted since the placement: its loss, and the failure policy's step. */
  agentRestarted?: { lostFor: string; step: 'recreate' | 'lost' };
}

/**
 * The record's phase and Ready condition from the agent's answer: its phase while it holds the
 * sandbox (Failed with the exit), AgentLostSandbox when it answers without it — unless it
 * restarted since the placement (a new boot ID), when the sandbox went with it and the failure
 * policy applies.
 */
export function observedStatus(
  sb: Pick<Sandbox, 'spec'>,
  seen: AgentAnswer,
  where: { pod: string; sandboxId: string; placedBootId?: string },
  now: Date,
): ObservedStatus {
  const { pod, sandboxId } = where;
  if (seen.state === 'held') {
    const phase = phaseFromAgent(seen.phase as Parameters<typeof phaseFromAgent>[0]);
    const condition =
      phase === 'Running'
        ? readyCondition('True', 'Running', `running on agent ${pod}`, now)
        : phase === 'Failed'
          ? readyCondition('False', failureReason(seen), seen.message, now)
          : readyCondition('False', phase ?? 'Pending', seen.message || `${seen.phase} on agent ${pod}`, now);
    return { phase, condition, ...(seen.runtime ? { runtime: seen.runtime } : {}) };
  }
  const restarted = !!where.placedBootId && !!seen.bootId && seen.bootId !== where.placedBootId;
  return {
    phase: 'Failed',
    condition: readyCondition('False', 'AgentLostSandbox', `agent ${pod} no longer has sandbox ${sandboxId}`, now),
    ...(restarted
      ? {
          agentRestarted: {
            lostFor: `agent ${pod} restarted and no longer has sandbox ${sandboxId}`,
            step: failurePolicyOf(sb) === 'AutoRecreate' ? ('recreate' as const) : ('lost' as const),
          },
        }
      : {}),
  };
}

/** Whether the record already says what was observed (a write would change nothing but the condition's time). */
export function statusCurrent(
  sb: Pick<Sandbox, 'status'>,
  seen: Pick<ObservedStatus, 'phase' | 'condition' | 'runtime'>,
): boolean {
  return (
    seen.phase === sb.status?.phase &&
    sb.status?.conditions?.[0]?.reason === seen.condition.reason &&
    (seen.runtime === undefined || seen.runtime === sb.status?.runtime)
  );
}

/** The agent is gone, within its recovery timeout: the assignment kept, the loss timed from `sinceIso`. */
export function agentUnreachableCondition(
  sb: Pick<Sandbox, 'spec'>,
  where: { pod: string; sandboxId: string; timeoutSeconds: number; sinceIso: string },
  now: Date,
): ReadyCondition {
  return {
    ...readyCondition(
      'False',
      AGENT_UNREACHABLE,
      `agent ${where.pod} is gone (Pod deleted, not Ready or not answering); sandbox ${where.sandboxId} is kept for ` +
        `${where.timeoutSeconds}s in case it returns, then failurePolicy ${failurePolicyOf(sb)} applies`,
      now,
    ),
    lastTransitionTime: where.sinceIso,
  };
}

/** The agent lost the sandbox: AutoRecreate → Pending and unassigned (placed again); Manual → Lost. */
export function agentLostStatus(
  step: 'recreate' | 'lost',
  lostFor: string,
  sandboxId: string,
  now: Date,
): SandboxStatusPatch {
  if (step === 'recreate')
    return {
      phase: 'Pending',
      ...UNASSIGNED,
      conditions: [
        readyCondition(
          'False',
          AGENT_LOST,
          `${lostFor}; sandbox ${sandboxId} is placed again on another agent (failurePolicy AutoRecreate)`,
          now,
        ),
      ],
    };
  return {
    phase: 'Lost',
    endpoints: null,
    conditions: [
      readyCondition(
        'False',
        AGENT_LOST,
        `${lostFor}; sandbox ${sandboxId} was not placed again (failurePolicy Manual): delete the Sandbox, ` +
          `or raise spec.resetRevision to place it again`,
        now,
      ),
    ],
  };
}

/**
 * Expired: unassigned, the record kept. Reset: Pending and unassigned with the revision accepted
 * in that same write, so it is acted upon exactly once. `removed` says what left the agent.
 */
export function lifecycleStatus(lifecycle: NonNullable<LifecycleStep>, removed: string, now: Date): SandboxStatusPatch {
  return lifecycle.step === 'expire'
    ? {
        phase: 'Expired',
        ...UNASSIGNED,
        conditions: [readyCondition('False', 'Expired', `expired at ${lifecycle.at}${removed}`, now)],
      }
    : {
        phase: 'Pending',
        ...UNASSIGNED,
        acceptedResetRevision: lifecycle.revision,
        conditions: [
          readyCondition('False', 'Reset', `reset to revision ${lifecycle.revision}${removed}; placing it again`, now),
        ],
      };
}

/** Phases in which the sandbox has ended on its agent (or lost it): nothing to follow there. */
export function isTerminal(sb: Pick<Sandbox, 'status'>): boolean {
  return sb.status?.phase === 'Failed' || sb.status?.phase === 'Expired' || sb.status?.phase === 'Lost';
}

/**
 * Whether reporting `next` as the run's phase needs a search-attribute upsert (a history event):
 * only on a change. `indexed` is what the run last indexed; before its first, the start's own
 * (the fast path starts a run with `creating`), except for a continued run, which indexes its first.
 */
export function phaseNeedsIndexing(
  next: string,
  run: { indexed?: string; startPhase?: string; continued: boolean; reported: boolean },
): boolean {
  const indexed = run.reported ? run.indexed : run.continued ? undefined : run.startPhase;
  return indexed !== next;
}

/**
 * How long the run waits for a hint before it looks again: nextLookInMs (expiry, a recorded
 * recovery timeout, the resync), or sooner when this pass found the agent gone and its recovery
 * timeout ends first (the record read in that pass does not carry the loss yet).
 */
export function waitForHintsMs(
  sb: Pick<Sandbox, 'spec' | 'status'>,
  nowMs: number,
  resyncMs: number,
  recoveryEndsAtMs: number | undefined,
): number {
  const lookInMs = nextLookInMs(sb, nowMs, resyncMs);
  return recoveryEndsAtMs === undefined ? lookInMs : Math.max(1, Math.min(lookInMs, recoveryEndsAtMs - nowMs));
}
