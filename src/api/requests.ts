/**
 * What every fire-and-forget request kind shares: the one `Ready` condition and its reason
 * constants, the status fields, and the CEL rules that make a request a one-shot operation
 * (spec immutable; completionTimestamp written once).
 *
 * `Ready=False` with reason `Processing` means "working"; every other `Ready=False` reason is
 * terminal, as is `Ready=True` (always with reason `Completed`).
 */
import { Type } from '@sinclair/typebox';
import type { PrinterColumn } from './kind.js';
import { Conditions, Timestamp, withCel } from './schema.js';

export const READY_CONDITION = 'Ready';

/** Reasons of the `Ready` condition. Code uses these constants, never string literals. */
export const RequestReason = {
  /** Ready=False, not terminal: the operation is under way (the message reports progress). */
  Processing: 'Processing',
  /** Ready=True: the operation succeeded. */
  Completed: 'Completed',
  /** Terminal: a failure with no more specific reason (details in the message). */
  Failed: 'Failed',
  /** Terminal: a target or source does not exist (or was recreated with another UID). */
  NotFound: 'NotFound',
  /** Terminal: the request asks for something outside its own namespace, or access is denied for good. */
  RBACDenied: 'RBACDenied',
  /** Terminal: the source/target is not usable (wrong scope, not a CSI volume, not ready, unsupported kind). */
  InvalidSource: 'InvalidSource',
  /** Terminal: the requested mode cannot be carried out on this object or cluster. */
  InvalidMode: 'InvalidMode',
  /** Terminal: classes or drivers do not match (StorageClass vs VolumeSnapshotClass, CRD variant). */
  Incompatible: 'Incompatible',
  /** Terminal: the source PersistentVolume is bound to another claim. */
  PVBound: 'PVBound',
  /** Terminal: the restore did not produce a usable volume. */
  RestoreFailed: 'RestoreFailed',
  /** Terminal: a captured object does not fit into one checkpoint chunk. */
  ObjectTooLarge: 'ObjectTooLarge',
  /** Terminal: an external actor (CSI driver, provisioner) did not finish before the configured deadline. */
  DeadlineExceeded: 'DeadlineExceeded',
  /** Terminal: an unexpected error the controller cannot classify. */
  InternalError: 'InternalError',
} as const;
export type RequestReason = (typeof RequestReason)[keyof typeof RequestReason];

/** Reasons that end a request with Ready=False. */
export type TerminalFailureReason = Exclude<RequestReason, 'Processing' | 'Completed'>;

export const CompletionTimestamp = Timestamp({
  description: 'When the request reached its terminal Ready condition. Set once; the TTL counts from here.',
});

/** Status fields of every request kind, plus kind-specific ones. */
export const requestStatusFields = {
  completionTimestamp: Type.Optional(CompletionTimestamp),
  conditions: Type.Optional(Conditions),
};

/** Spec rule of every request: a request is one operation, so its spec never changes. */
export function immutableSpec<T extends Parameters<typeof withCel>[0]>(spec: T, kind: string): T {
  return withCel(spec, [{ rule: 'self == oldSelf', message: `spec is immutable; create a new ${kind} instead` }]);
}

/**
 * Rule of every request: completionTimestamp is written once. On the root object, not on status:
 * a rule on status is not evaluated when a patch removes the whole status.
 */
export const COMPLETION_WRITTEN_ONCE = {
  rule:
    '!has(oldSelf.status) || !has(oldSelf.status.completionTimestamp) || ' +
    '(has(self.status) && has(self.status.completionTimestamp) && ' +
    'self.status.completionTimestamp == oldSelf.status.completionTimestamp)',
  message: 'status.completionTimestamp is set once, when the request becomes terminal',
};

/** Printer columns every request kind shows. */
export const requestPrinterColumns: PrinterColumn[] = [
  { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
  { name: 'Reason', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].reason' },
  { name: 'Completed', type: 'date', jsonPath: '.status.completionTimestamp' },
  { name: 'Message', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].message', priority: 1 },
];
