/**
 * What the ObjectKeeper workflow accepts from the outside: its input, the signals the watcher
 * (or a person with `temporal workflow signal`) sends, and the query that shows its state.
 * The wire names are part of the user-facing API: renaming one breaks scripts and runbooks.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { ObjectKeeperPhase, ObjectKeeperSpec } from '../../api/objectkeeper.js';

export interface ObjectKeeperWorkflowInput {
  name: string;
  uid: string;
  spec: ObjectKeeperSpec;
  creationTimestamp: string;
  /** Backstop re-check period while following (default 5 minutes). */
  verifyIntervalMs?: number;
  /** Carried across continue-as-new. */
  lostAt?: string;
  /** Continue as new past this many history events, before Temporal suggests it (at a quiet moment). */
  continueAfterEvents?: number;
}

export interface ObjectKeeperState {
  phase: ObjectKeeperPhase | 'Deleted';
  lostAt?: string;
  expiresAt?: string;
  checks: number;
}

/** What the watcher saw happen to the followed object (shown in the history; the workflow re-reads anyway). */
export interface FollowedObjectChange {
  event: string;
  uid?: string;
}

/** Hint from the watcher: the followed object was deleted or replaced. The workflow verifies. */
export const followedObjectChangedSignal = defineSignal<[FollowedObjectChange?]>('followedObjectChanged');
/** Hint from the watcher: the keeper itself was deleted (by a user or the GC). */
export const keeperDeletedSignal = defineSignal('keeperDeleted');
export const keeperStateQuery = defineQuery<ObjectKeeperState>('keeperState');
