/**
 * What a sandbox's workflow accepts from the outside: the fast path's create (an update, so the
 * caller's answer is its result), the watcher's and the registry's hints, and its state query.
 * The wire names are part of the user-facing API (`temporal workflow signal`, scripts).
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { SandboxPhase } from '../../api/sandbox.js';
import type { Failed, Ok } from '../../domain/results.js';
import type { ConsistencyMode, Refusal, SandboxCreateSpec } from '../../domain/sandbox.js';

export interface SandboxWorkflowInput {
  namespace: string;
  name: string;
  /** Carried across continue-as-new: the incarnation (Sandbox UID) this run followed. */
  previousUid?: string;
  /** Carried across continue-as-new: the create this incarnation answered, so a retry by name still gets it. */
  created?: AnsweredCreate;
}

/** A create's identity (spec fingerprint, tenant) and its successful answer — no spec, no env values. */
export interface AnsweredCreate {
  fingerprint: string;
  tenant?: string;
  answer: Ok<CreatedSandbox>;
}

/** A create through the fast path (gRPC CreateSandbox or HTTP). */
export interface CreateSandboxCall {
  spec: SandboxCreateSpec;
  mode: ConsistencyMode;
  tenant?: string;
  /** Unix nanoseconds at which the fast path received it (the createTimestamp annotation). */
  receivedAtNanos: string;
  /** Strong: how long to wait for an agent of a pool scaling up from zero (default 60 s). */
  scaleUpWaitMs?: number;
}

export interface CreatedSandbox {
  sandboxId: string;
  agentPod: string;
  endpoints: string[];
  sandboxName: string;
}

/** The caller's answer: where the sandbox runs, or why it was refused. */
export type CreateAnswer = Ok<CreatedSandbox> | Failed<Refusal>;

/** The fast path's create. A retry with the same spec gets the first answer; another spec ALREADY_EXISTS. */
export const createSandboxUpdate = defineUpdate<CreateAnswer, [CreateSandboxCall]>('createSandbox');

/** What the watcher saw happen to the Sandbox (shown in history; the workflow re-reads anyway). */
export interface SandboxChange {
  event: string;
  /**
   * The record's UID. `Deleting` without one is the fast path's DeleteSandbox reaching a Fast
   * create whose record it did not find: the run deletes the sandbox, and its record if written.
   */
  uid?: string;
}
/** Hint from the watcher: the Sandbox was created, changed or is being deleted. Verified by a fresh read. */
export const sandboxChangedSignal = defineSignal<[SandboxChange?]>('sandboxChanged');

/** What an agent reported about the sandbox (`missing`: the agent no longer holds it). */
export interface AgentObservation {
  agent: string;
  sandboxId: string;
  phase: string;
  message: string;
}
/** Hint from the registry or the janitor: the agent's view of the sandbox changed. Verified by a fresh read. */
export const agentReportedSignal = defineSignal<[AgentObservation]>('agentReported');

export type SandboxStage =
  | 'waiting'
  | 'creating'
  | 'recording'
  | 'unrecorded'
  | 'scheduling'
  | 'live'
  | 'expiring'
  | 'resetting'
  | 'deleting'
  | 'done';

export interface SandboxState {
  stage: SandboxStage;
  phase?: SandboxPhase;
  uid?: string;
  sandboxId?: string;
  agentPod?: string;
  endpoints?: string[];
  message?: string;
  /** The mode of the create this run answered or is answering. */
  mode?: 'fast' | 'strong';
  /** A `Deleting` hint reached it: the name is closing (a create now waits for the next run). */
  deletionRequested?: boolean;
}
export const sandboxStateQuery = defineQuery<SandboxState>('sandboxState');
