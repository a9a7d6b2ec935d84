/**
 * Fire-and-forget request rules, pure and workflow-safe: when a request is terminal, what its
 * artifacts are called, when it expires. Names are derived from UIDs, so every retry of a step
 * addresses the same object and a crash between two steps can never create a second one.
 */
import { REQUEST_KINDS, type RequestKindName } from '../api/request-kinds.js';
import { READY_CONDITION, RequestReason, type TerminalFailureReason } from '../api/requests.js';
import type { Condition } from './conditions.js';
import type { Failed, Found, Gone, Ok } from './results.js';

export type { RequestKindName };

/** Identifies one request (one operation): a recreated request with the same name is another one. */
export interface RequestRef {
  apiVersion: string;
  kind: RequestKindName;
  namespace: string;
  name: string;
  uid: string;
}

/** A request as a fresh GET shows it (the workflow decides what to do from this). */
export type RequestView = Found<{
  deleting: boolean;
  terminal: boolean;
  spec: unknown;
  /** The request's `.status` (not to be confused with the result's own `status` tag). */
  requestStatus: { completionTimestamp?: string; conditions?: Condition[] } & Record<string, unknown>;
}>;

/** What reaping a request whose TTL may have expired found or did. */
export type ReapResult =
  | Gone
  | Ok<{ state: 'deleted' | 'deleting' | 'not-terminal' }>
  | Ok<{ state: 'never'; why: string }>
  | Ok<{ state: 'waiting'; expiresAt: string }>;

/**
 * How a request's operation ended: completed (with the message of its Ready condition) or
 * failed (with its terminal outcome), each with the kind's status fields to record; or the
 * request was found gone. A step's `failed` or `gone` result is a valid OperationResult as it is.
 */
export type OperationResult =
  | (Ok<{ message: string }> & { fields?: Record<string, unknown> })
  | (Failed & { fields?: Record<string, unknown> })
  | Gone;

/** How a request ends: success, or a terminal failure with a reason a script can branch on. */
export type RequestOutcome =
  { ready: true; message: string } | { ready: false; reason: TerminalFailureReason; message: string };

export function failed(reason: TerminalFailureReason, message: string): RequestOutcome {
  return { ready: false, reason, message };
}

export function readyCondition(conditions: readonly Condition[] | undefined): Condition | undefined {
  return conditions?.find((c) => c.type === READY_CONDITION);
}

/** Terminal: Ready=True, or Ready=False with any reason but Processing (or the original's TargetsPending). */
export function isTerminal(conditions: readonly Condition[] | undefined): boolean {
  const ready = readyCondition(conditions);
  if (!ready) return false;
  if (ready.status === 'True') return true;
  return ready.status === 'False' && !NOT_TERMINAL_REASONS.has(ready.reason);
}

/**
 * Ready=False reasons that mean "still working": ours (`Processing`), and `TargetsPending`, which
 * the original storage-foundation controller writes while it waits for its targets. A request
 * that controller left in TargetsPending is picked up here, never taken for finished.
 */
const NOT_TERMINAL_REASONS: ReadonlySet<string> = new Set([RequestReason.Processing, 'TargetsPending']);

/** The Ready condition an outcome writes (True is always `Completed`). */
export function outcomeCondition(outcome: RequestOutcome): Omit<Condition, 'lastTransitionTime'> {
  return outcome.ready
    ? { type: READY_CONDITION, status: 'True', reason: RequestReason.Completed, message: outcome.message }
    : { type: READY_CONDITION, status: 'False', reason: outcome.reason, message: outcome.message };
}

export function processingCondition(message: string): Omit<Condition, 'lastTransitionTime'> {
  return { type: READY_CONDITION, status: 'False', reason: RequestReason.Processing, message };
}

/** Workflow ID of a request's operation (DESIGN.md: request/<kind>/<ns>/<name>/<uid>). */
export function requestWorkflowId(ref: Pick<RequestRef, 'kind' | 'namespace' | 'name' | 'uid'>): string {
  return `request/${ref.kind}/${ref.namespace}/${ref.name}/${ref.uid}`;
}

/** The ObjectKeeper that anchors a request's artifacts (cluster-scoped, follows the request). */
export function keeperNameFor(ref: Pick<RequestRef, 'kind' | 'uid'>): string {
  return `ret-${REQUEST_KINDS[ref.kind].keeperPrefix}-${ref.uid}`;
}

export function checkpointNameFor(requestUid: string): string {
  return `mcp-${requestUid}`;
}

export function chunkNameFor(checkpointName: string, index: number): string {
  return `${checkpointName}-${index}`;
}

/** VolumeSnapshot (Snapshot mode) or VolumeSnapshotContent (content-only mode) for one target. */
export function snapshotNameFor(requestUid: string, targetIndex: number): string {
  return `snapshot-${requestUid}-${targetIndex}`;
}

/**
 * When a terminal request may be deleted (epoch ms), or undefined when it never expires: no
 * completionTimestamp (never reaped — fail safe), or a TTL of 0 (reaping disabled).
 */
export function requestExpiry(completionTimestamp: string | undefined, ttlMs: number): number | undefined {
  if (!completionTimestamp || ttlMs <= 0) return undefined;
  const t = Date.parse(completionTimestamp);
  return Number.isNaN(t) ? undefined : t + ttlMs;
}
