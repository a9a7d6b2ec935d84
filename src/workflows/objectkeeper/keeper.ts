/**
 * The lifetime of one ObjectKeeper, from creation to self-deletion.
 *
 * - FollowObject: the watcher signals `followedObjectChanged` as soon as it sees the followed
 *   object deleted or replaced; the workflow confirms with a fresh GET and deletes the keeper.
 *   A periodic re-check is the backstop for missed events (the original only polled, every 2 min).
 * - TTL: a durable timer from creationTimestamp.
 * - FollowObjectWithTTL: follow, record status.lostAt once the object is lost, then a durable
 *   timer from lostAt.
 *
 * The keeper's deletion is what releases its dependents: the Kubernetes garbage collector
 * removes every object that names the keeper as owner.
 */
import {
  ActivityFailure,
  condition,
  continueAsNew,
  log,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { ObjectKeeperPhase, ObjectKeeperStatus } from '../../api/objectkeeper.js';
import { setCondition } from '../../domain/conditions.js';
import { keeperExpiry, followsObject, judgeFollowed, type FollowVerdict } from '../../domain/objectkeeper.js';
import { OperationPhase } from '../../temporal/search-attributes.js';
import {
  followedObjectChangedSignal,
  keeperDeletedSignal,
  keeperStateQuery,
  type ObjectKeeperState,
  type ObjectKeeperWorkflowInput,
} from './messages.js';
import { followedObjectReads, keeperCalls } from './activity-options.js';

const kube = keeperCalls;
const observe = followedObjectReads.observeFollowedObject;
const UNREADABLE_RETRY_MS = 30_000;

const DEFAULT_VERIFY_INTERVAL_MS = 5 * 60_000;
/** Follow loops per run before continue-as-new keeps history small. */
const CHECKS_PER_RUN = 200;

export async function objectKeeperWorkflow(input: ObjectKeeperWorkflowInput): Promise<string> {
  const { name, uid, spec } = input;
  const ref = { name, uid };
  const state: ObjectKeeperState = { phase: 'Pending', lostAt: input.lostAt, checks: 0 };
  let hinted = false;
  let keeperGone = false;
  setHandler(followedObjectChangedSignal, () => {
    hinted = true;
  });
  setHandler(keeperDeletedSignal, () => {
    keeperGone = true;
  });
  setHandler(keeperStateQuery, () => state);

  const current = await kube.readObjectKeeper(ref);
  if (current.status === 'gone' || current.deleting) return 'keeper already gone';
  let conditions = current.keeperStatus?.conditions;
  state.lostAt ??= current.keeperStatus?.lostAt;

  /** Writes status; returns false when the keeper is gone (nothing left to do). */
  const report = async (
    phase: ObjectKeeperPhase,
    reason: string,
    message: string,
    active: 'True' | 'Unknown' = 'True',
  ): Promise<boolean> => {
    state.phase = phase;
    upsertSearchAttributes([{ key: OperationPhase, value: phase }]);
    setCurrentDetails(`**${phase}** — ${message}${state.expiresAt ? `\n\nexpires at ${state.expiresAt}` : ''}`);
    conditions = setCondition(conditions, { type: 'Active', status: active, reason, message }, new Date());
    const status: ObjectKeeperStatus = { phase, message, conditions };
    if (state.lostAt) status.lostAt = state.lostAt;
    if (state.expiresAt) status.expiresAt = state.expiresAt;
    return (await kube.patchObjectKeeperStatus({ ...ref, keeperStatus: status })).status === 'ok';
  };

  /**
   * `keeperDeleted` is a hint (from the watcher, or a person with `temporal workflow signal`):
   * believe it only once a fresh read agrees, so a stray signal cannot orphan a live keeper.
   */
  const keeperReallyGone = async (): Promise<boolean> => {
    if (!keeperGone) return false;
    const now = await kube.readObjectKeeper(ref);
    if (now.status === 'gone' || now.deleting) return true;
    log.warn('keeperDeleted signal, but the keeper still exists; carrying on', { name });
    keeperGone = false;
    return false;
  };
  /** Waits up to `ms` (or for `also`); true when the keeper turned out to be gone. */
  const waitOrGone = async (ms: number, also: () => boolean = () => false): Promise<boolean> => {
    const deadline = Date.now() + ms;
    for (;;) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) return false;
      await condition(() => keeperGone || also(), remaining);
      if (await keeperReallyGone()) return true;
      if (also()) return false;
    }
  };

  const deleteSelf = async (why: string): Promise<string> => {
    log.info('deleting ObjectKeeper', { name, why });
    setCurrentDetails(`**Deleting** — ${why}`);
    const deleted = await kube.deleteObjectKeeper(ref);
    state.phase = 'Deleted';
    upsertSearchAttributes([{ key: OperationPhase, value: 'Deleted' }]);
    return deleted.status === 'ok' ? `deleted: ${why}` : `already gone: ${why}`;
  };

  /** Sleeps until the expiry time unless the keeper is deleted first. */
  const waitForExpiry = async (expiresAtMs: number, why: string): Promise<string> => {
    state.expiresAt = new Date(expiresAtMs).toISOString();
    if (!(await report('WaitingTTL', 'WaitingTTL', why))) return 'keeper already gone';
    const remaining = expiresAtMs - Date.now();
    if (remaining > 0 && (await waitOrGone(remaining))) return 'keeper deleted before expiry';
    return deleteSelf(`ttl ${spec.ttl} expired`);
  };

  if (!followsObject(spec.mode)) {
    return waitForExpiry(keeperExpiry(spec, input.creationTimestamp)!, `ttl ${spec.ttl} counted from creation`);
  }

  // Follow modes. Once lost (FollowObjectWithTTL already recorded lostAt), never un-lost: the
  // followed UID cannot come back.
  const target = `${spec.followObjectRef!.kind} ${spec.followObjectRef!.namespace ?? ''}/${spec.followObjectRef!.name}`;
  let reported = false;
  /** A fresh read of the followed object; while it keeps failing, says so on the keeper. */
  const check = async (): Promise<FollowVerdict | 'keeper gone'> => {
    for (;;) {
      try {
        return judgeFollowed(spec, await observe(spec.followObjectRef!));
      } catch (err) {
        if (!(err instanceof ActivityFailure)) throw err;
        const why = err.cause?.message ?? err.message;
        reported = false; // report Tracking again once reads work
        const phase = state.phase === 'Tracking' ? 'Tracking' : 'Pending';
        if (!(await report(phase, 'FollowedObjectUnreadable', `cannot read ${target}: ${why}`, 'Unknown'))) {
          return 'keeper gone';
        }
        if (await waitOrGone(UNREADABLE_RETRY_MS)) return 'keeper gone';
      }
    }
  };
  const first = state.lostAt
    ? ({ lost: true, reason: 'Deleted', message: `followed object lost at ${state.lostAt}` } as const)
    : await check();
  if (first === 'keeper gone') return 'keeper already gone';
  let verdict: FollowVerdict = first;
  const verifyInterval = input.verifyIntervalMs ?? DEFAULT_VERIFY_INTERVAL_MS;
  while (!verdict.lost) {
    if (!reported) {
      if (!(await report('Tracking', 'Tracking', `following ${target} (uid ${spec.followObjectRef!.uid})`))) {
        return 'keeper already gone';
      }
      reported = true;
    }
    if (await waitOrGone(verifyInterval, () => hinted)) return 'keeper deleted while following';
    // Consume the hint only now: one arriving during the check below triggers another check.
    hinted = false;
    state.checks++;
    if (state.checks >= CHECKS_PER_RUN || workflowInfo().continueAsNewSuggested) {
      return continueAsNew<typeof objectKeeperWorkflow>({ ...input, lostAt: undefined });
    }
    const next = await check();
    if (next === 'keeper gone') return 'keeper deleted while following';
    verdict = next;
  }

  if (spec.mode === 'FollowObject') return deleteSelf(verdict.message);
  state.lostAt ??= new Date().toISOString();
  return waitForExpiry(
    keeperExpiry(spec, input.creationTimestamp, state.lostAt)!,
    `${verdict.message}; ttl ${spec.ttl} counted from lostAt`,
  );
}
