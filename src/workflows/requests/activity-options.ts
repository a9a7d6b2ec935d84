/**
 * How the request workflows call their activities: one preset per kind of work, each with the
 * timeout that matches what the activity does. Every activity is idempotent, so each is retried
 * until it succeeds unless it raises a non-retryable failure (src/activities/kubernetes/errors.ts
 * decides which); a wait on an external actor is bounded by the request's own deadline instead.
 *
 * Changing an activity between local and regular changes the history it writes: recorded
 * histories (test/fixtures/histories) must still replay, so such a change needs `patched()`.
 */
import { proxyActivities, proxyLocalActivities, type ActivityOptions } from '@temporalio/workflow';
import type { ManifestActivities } from '../../activities/kubernetes/manifests.js';
import type { RequestActivities } from '../../activities/kubernetes/requests.js';
import type { RestoreActivities } from '../../activities/kubernetes/restores.js';
import type { SnapshotActivities } from '../../activities/kubernetes/snapshots.js';
import type { VolumeActivities } from '../../activities/kubernetes/volumes.js';
import { RETRY } from '../retry-policy.js';

/**
 * Local activities this execution has started whose result it has not seen yet. Module state is
 * per execution (the SDK gives each workflow its own module instances), and the count follows the
 * workflow's own calls and results, so it is the same on replay.
 */
let localCallsInFlight = 0;

/**
 * True when no local activity of this execution is in flight. A cancellation must wait for it:
 * the SDK core cannot cancel a local activity whose result it already holds but the workflow has
 * not been given yet, and fails the task as nondeterministic (TMPRL1100, "Invalid transition in
 * state machine").
 */
export function noLocalCallInFlight(): boolean {
  return localCallsInFlight === 0;
}

/**
 * The same calls, counted while in flight. The caller gets the call's own promise (no extra
 * await), so when each workflow step runs, and with it the order of its commands, is unchanged.
 */
function counted<T extends object>(calls: T): T {
  return new Proxy(calls, {
    get(target, prop, receiver) {
      const call: unknown = Reflect.get(target, prop, receiver);
      if (typeof call !== 'function') return call;
      return (...args: unknown[]) => {
        const pending = (call as (...a: unknown[]) => Promise<unknown>)(...args);
        localCallsInFlight++;
        const settled = () => {
          localCallsInFlight--;
        };
        pending.then(settled, settled);
        return pending;
      };
    },
  });
}

/**
 * One or two apiserver round trips on the request, its keeper and its checkpoint: local
 * activities. They run in the worker that runs the workflow task, consecutive ones within one
 * task, and leave a marker instead of three history events and a task round trip each — about
 * 3× the request throughput on the 2-core dev stack (bench/RESULTS.md).
 */
export const requestCalls = counted(
  proxyLocalActivities<RequestActivities & ManifestActivities>({
    startToCloseTimeout: '10 seconds',
    retry: RETRY,
  }),
);

/**
 * Reading every target of a capture request (at most 5,000, a GET each or one paginated list per
 * kind): a local activity with a minute, which covers 5,000 GETs on a slow apiserver.
 */
export const targetChecks = counted(
  proxyLocalActivities<ManifestActivities>({ startToCloseTimeout: '1 minute', retry: RETRY }),
);

/**
 * A small capture's chunk write, tried once in the same workflow task: a few apiserver calls that
 * take milliseconds. Bounded well under the point (8 s of the 10 s task timeout) where the SDK
 * would heartbeat the task — a heartbeat records the worker's default versioning behaviour, not
 * the request's PINNED — and not retried here: a write that fails or is slow is done again by
 * `checkpointWrites`, whose retries carry the RBAC-rollout window and whose heartbeats a long
 * write needs.
 */
export const smallWrites = counted(
  proxyLocalActivities<ManifestActivities>({ startToCloseTimeout: '3 seconds', retry: { maximumAttempts: 1 } }),
);

/**
 * Listing a whole request kind across the cluster and reaping its expired requests (the TTL
 * sweep). It heartbeats per item listed and per request reaped, so the heartbeat timeout notices
 * a dead worker while a long sweep of many pages still completes.
 */
export const listing = proxyActivities<RequestActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '1 minute',
  retry: RETRY,
});

/**
 * Reading and packing up to 5,000 objects, then writing a chunk per megabyte: long, so it
 * heartbeats per object read and per chunk written.
 */
export const checkpointWrites = proxyActivities<ManifestActivities>({
  startToCloseTimeout: '15 minutes',
  heartbeatTimeout: '20 seconds',
  retry: RETRY,
});

/** One create or patch of a snapshot or volume, with the GET that verifies an existing one. */
export const volumeCalls = proxyActivities<SnapshotActivities & VolumeActivities>({
  startToCloseTimeout: '10 seconds',
  retry: RETRY,
});

/** Resolving up to 64 volume targets, a few uncached GETs each: more than one short call's worth. */
export const volumeResolution = proxyActivities<VolumeActivities>({ startToCloseTimeout: '2 minutes', retry: RETRY });

/** Checking a restore's source, StorageClass and target claim: a handful of GETs. */
export const restoreChecks = proxyActivities<RestoreActivities>({ startToCloseTimeout: '30 seconds', retry: RETRY });

/**
 * Long polls on external actors (snapshot-controller, CSI sidecars, provisioners, pods releasing
 * a claim), bounded by the request's absolute deadline. The heartbeat timeout notices a dead
 * worker (the retry resumes with the same deadline); heartbeats also carry the cancellation when
 * the request is deleted mid-wait.
 */
export function externalWaits(waitTimeoutMs: number) {
  const options: ActivityOptions = {
    startToCloseTimeout: waitTimeoutMs + 5 * 60_000,
    heartbeatTimeout: '30 seconds',
    retry: RETRY,
  };
  return proxyActivities<SnapshotActivities & VolumeActivities & RestoreActivities>(options);
}
