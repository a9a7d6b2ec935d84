/**
 * The lifetime of one ObjectKeeper, from creation to self-deletion.
 *
 * - FollowObject: the watcher signals `followedObjectChanged` as soon as it sees the followed
 *   object deleted or replaced; the workflow confirms with a fresh GET and deletes the keeper.
 *   A periodic re-check is the backstop for missed events.
 * - TTL: a durable timer from creationTimestamp.
 * - FollowObjectWithTTL: follow, record status.lostAt once the object is lost, then a durable
 *   timer from lostAt.
 *
 * The keeper's deletion is what releases its dependents: the Kubernetes garbage collector
 * removes every object that names the keeper as owner.
 *
 * An entity run (../entity.ts): `KeeperRun` holds the state and the passes; its decisions are
 * src/domain/objectkeeper.ts's. Each wait remembers what it waits for (`Waiting`), so a hint that
 * turns out stray resumes the same wait until its deadline.
 */
import {
  log,
  patched,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { ObjectKeeperPhase, ObjectKeeperStatus } from '../../api/objectkeeper.js';
import { setCondition, type Condition } from '../../domain/conditions.js';
import { followsObject, judgeFollowed, keeperStep, type FollowVerdict } from '../../domain/objectkeeper.js';
import { OperationPhase } from '../../temporal/search-attributes.js';
import { activityFailureOf } from '../activity-failure.js';
import { EntityRun, runEntity, type Next } from '../entity.js';
import {
  followedObjectChangedSignal,
  keeperDeletedSignal,
  keeperStateQuery,
  type ObjectKeeperState,
  type ObjectKeeperWorkflowInput,
} from './messages.js';
import { followedObjectLocalReads, followedObjectReads, keeperCalls, keeperLocalCalls } from './activity-options.js';

const UNREADABLE_RETRY_MS = 30_000;
const DEFAULT_VERIFY_INTERVAL_MS = 5 * 60_000;
/** Runs from before the kit's rule continued as new after this many follow checks. */
const CHECKS_PER_RUN = 200;
/** Patch: continue-as-new by the entity kit's rule (when Temporal suggests it, at a quiet moment). */
const CONTINUE_WHEN_QUIET = 'keeper-continue-when-quiet';
/**
 * Patch: the keeper's reads and status writes as local activities (one apiserver call each: a
 * task round trip and three history events apiece cost more than the call). The calls after
 * which the run may end — its own deletion, the check of a deletion hint — stay regular
 * activities: the run then ends in a short task of its own, as before, where a local call would
 * make the ending task long and a hint arriving meanwhile would fail it (UnhandledCommand).
 */
const LOCAL_CALLS = 'keeper-local-calls';

/** What the run waits for: the TTL, the next look at the followed object, or a retry of an unreadable one. */
interface Waiting {
  for: 'expiry' | 'check' | 'retry';
  untilMs: number;
}

export class KeeperRun extends EntityRun<string, ObjectKeeperWorkflowInput> {
  readonly state: ObjectKeeperState;
  /** The `keeperDeleted` hint: believed only once a fresh read agrees. */
  deletionHinted = false;
  private readonly ref: { name: string; uid: string };
  private conditions?: Condition[];
  private started = false;
  /** Tracking was reported (reported again once an unreadable spell ends). */
  private reported = false;
  private waiting?: Waiting;

  constructor(private readonly input: ObjectKeeperWorkflowInput) {
    super();
    this.ref = { name: input.name, uid: input.uid };
    this.state = { phase: 'Pending', lostAt: input.lostAt, checks: 0 };
    this.historyBound = input.continueAfterEvents;
  }

  /** `keeperDeleted`, from the watcher or a person with `temporal workflow signal`. */
  keeperDeleted(): void {
    this.recorded();
    this.deletionHinted = true;
  }

  /** First pass: the keeper as it is; later: a hint or a deadline ended the wait. */
  async reconcile(): Promise<Next<string>> {
    if (!this.started) return this.start();
    if (this.deletionHinted && (await this.keeperReallyGone())) return { done: this.goneWhile(this.waiting!) };
    const waiting = this.waiting!;
    const followHint = waiting.for === 'check' && this.needsReconcile;
    if (!followHint && waiting.untilMs - Date.now() > 0) return this.until(waiting);
    if (waiting.for === 'expiry') return { done: await this.deleteSelf(`ttl ${this.input.spec.ttl} expired`) };
    if (waiting.for === 'check') {
      // Consume the hint only now: one arriving during the check below triggers another check.
      this.needsReconcile = false;
      this.state.checks++;
      const due = this.state.checks >= CHECKS_PER_RUN || workflowInfo().continueAsNewSuggested;
      if (due && !this.onKitRule()) return { continueAsNew: true };
    }
    return this.follow();
  }

  private async start(): Promise<Next<string>> {
    this.started = true;
    const current = await this.calls().readObjectKeeper(this.ref);
    if (current.status === 'gone' || current.deleting) return { done: 'keeper already gone' };
    this.conditions = current.keeperStatus?.conditions;
    this.state.lostAt ??= current.keeperStatus?.lostAt;
    if (!followsObject(this.input.spec.mode)) return this.decide(undefined);
    // Once lost (FollowObjectWithTTL recorded lostAt), never un-lost: the followed UID cannot come back.
    const { lostAt } = this.state;
    if (lostAt) return this.decide({ lost: true, reason: 'Deleted', message: `followed object lost at ${lostAt}` });
    return this.follow();
  }

  /** A fresh read of the followed object; while it fails, says so on the keeper and retries. */
  private async follow(): Promise<Next<string>> {
    const spec = this.input.spec;
    let verdict: FollowVerdict;
    try {
      verdict = judgeFollowed(spec, await this.reads().observeFollowedObject(spec.followObjectRef!));
    } catch (err) {
      const why = activityFailureOf(err)?.message;
      if (why === undefined) throw err;
      this.reported = false; // report Tracking again once reads work
      const phase = this.state.phase === 'Tracking' ? 'Tracking' : 'Pending';
      const reported = await this.report(
        phase,
        'FollowedObjectUnreadable',
        `cannot read ${this.target()}: ${why}`,
        'Unknown',
      );
      const retry: Waiting = { for: 'retry', untilMs: Date.now() + UNREADABLE_RETRY_MS };
      return reported ? this.until(retry) : { done: this.goneWhile(retry) };
    }
    return this.decide(verdict);
  }

  /** The step src/domain/objectkeeper.ts decides for this verdict. */
  private async decide(verdict: FollowVerdict | undefined): Promise<Next<string>> {
    const { spec, creationTimestamp } = this.input;
    const step = keeperStep(spec, creationTimestamp, verdict, this.state.lostAt, new Date().toISOString());
    if (step.kind === 'delete') return { done: await this.deleteSelf(step.why) };
    if (step.kind === 'track') {
      if (!this.reported) {
        const following = `following ${this.target()} (uid ${spec.followObjectRef!.uid})`;
        if (!(await this.report('Tracking', 'Tracking', following))) return { done: 'keeper already gone' };
        this.reported = true;
      }
      return this.until({
        for: 'check',
        untilMs: Date.now() + (this.input.verifyIntervalMs ?? DEFAULT_VERIFY_INTERVAL_MS),
      });
    }
    this.state.lostAt = step.lostAt ?? this.state.lostAt;
    this.state.expiresAt = new Date(step.expiresAtMs).toISOString();
    if (!(await this.report('WaitingTTL', 'WaitingTTL', step.why))) return { done: 'keeper already gone' };
    const expiry: Waiting = { for: 'expiry', untilMs: step.expiresAtMs };
    if (step.expiresAtMs - Date.now() > 0) return this.until(expiry);
    return { done: await this.deleteSelf(`ttl ${spec.ttl} expired`) };
  }

  /** The wait until `waiting.untilMs`: the deletion hint ends it, and a follow hint while tracking. */
  private until(waiting: Waiting): Next<string> {
    this.waiting = waiting;
    const wakeWhen =
      waiting.for === 'check' ? () => this.deletionHinted || this.needsReconcile : () => this.deletionHinted;
    return { waitMs: waiting.untilMs - Date.now(), wakeWhen };
  }

  /** The run's result when the keeper turned out deleted during `waiting`. */
  private goneWhile(waiting: Waiting): string {
    if (waiting.for === 'expiry') return 'keeper deleted before expiry';
    return waiting.for === 'retry' && this.state.checks === 0
      ? 'keeper already gone'
      : 'keeper deleted while following';
  }

  /** The hint verified: a stray signal cannot orphan a live keeper. */
  private async keeperReallyGone(): Promise<boolean> {
    // A regular activity: the run may end after it, in a task of its own (see LOCAL_CALLS).
    const now = await keeperCalls.readObjectKeeper(this.ref);
    if (now.status === 'gone' || now.deleting) return true;
    log.warn('keeperDeleted signal, but the keeper still exists; carrying on', { name: this.ref.name });
    this.deletionHinted = false;
    return false;
  }

  /** Writes status; false when the keeper is gone (nothing left to do). */
  private async report(
    phase: ObjectKeeperPhase,
    reason: string,
    message: string,
    active: 'True' | 'Unknown' = 'True',
  ): Promise<boolean> {
    const { state } = this;
    state.phase = phase;
    upsertSearchAttributes([{ key: OperationPhase, value: phase }]);
    setCurrentDetails(`**${phase}** — ${message}${state.expiresAt ? `\n\nexpires at ${state.expiresAt}` : ''}`);
    this.conditions = setCondition(this.conditions, { type: 'Active', status: active, reason, message }, new Date());
    const status: ObjectKeeperStatus = { phase, message, conditions: this.conditions };
    if (state.lostAt) status.lostAt = state.lostAt;
    if (state.expiresAt) status.expiresAt = state.expiresAt;
    return (await this.calls().patchObjectKeeperStatus({ ...this.ref, keeperStatus: status })).status === 'ok';
  }

  private async deleteSelf(why: string): Promise<string> {
    log.info('deleting ObjectKeeper', { name: this.ref.name, why });
    setCurrentDetails(`**Deleting** — ${why}`);
    // A regular activity: the run ends in the short task after it (see LOCAL_CALLS).
    const deleted = await keeperCalls.deleteObjectKeeper(this.ref);
    this.state.phase = 'Deleted';
    upsertSearchAttributes([{ key: OperationPhase, value: 'Deleted' }]);
    return deleted.status === 'ok' ? `deleted: ${why}` : `already gone: ${why}`;
  }

  /** The keeper's calls: local activities in runs with LOCAL_CALLS. */
  private calls(): typeof keeperCalls {
    return patched(LOCAL_CALLS) ? keeperLocalCalls : keeperCalls;
  }

  /** The followed object's reads (bounded retries), local in runs with LOCAL_CALLS. */
  private reads(): typeof followedObjectReads {
    return patched(LOCAL_CALLS) ? followedObjectLocalReads : followedObjectReads;
  }

  private target(): string {
    const ref = this.input.spec.followObjectRef!;
    return `${ref.kind} ${ref.namespace ?? ''}/${ref.name}`;
  }

  protected onKitRule(): boolean {
    return patched(CONTINUE_WHEN_QUIET);
  }

  carry(): ObjectKeeperWorkflowInput {
    return { ...this.input, lostAt: undefined };
  }
}

export async function objectKeeperWorkflow(input: ObjectKeeperWorkflowInput): Promise<string> {
  const run = new KeeperRun(input);
  setHandler(followedObjectChangedSignal, () => run.hint());
  setHandler(keeperDeletedSignal, () => run.keeperDeleted());
  setHandler(keeperStateQuery, () => run.state);
  return runEntity(run);
}
