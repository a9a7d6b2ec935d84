/**
 * One sync of one target, in four steps (external-dns' source → plan → registry → provider):
 * read the SyncState, the registered sources fresh and the live Cloudflare object (./sync-read.ts);
 * plan, purely (src/domain/cloudflare/sync-plan.ts); apply the Cloudflare calls
 * (./sync-apply.ts); record the status, the Events and the ownership markers (./sync-record.ts).
 * Runs on the account's task queue, whose server-side rate limit is that account's API throttle.
 *
 * A crash anywhere in here re-runs the whole activity: the GET shows what the crashed attempt
 * already wrote, so the retry writes nothing twice and loses nothing.
 */
import type { CloudflareConfig } from '../../config.js';
import type { Conflict, WritePlan } from '../../domain/cloudflare/merge.js';
import { decideWrite, type SourceVerdict, type SyncTrigger } from '../../domain/cloudflare/sync-plan.js';
import type { SyncTarget } from '../../domain/cloudflare/targets.js';
import type { Failed, Ok } from '../../domain/results.js';
import type { KubeClient } from '../../kube/client.js';
import type { EventRecorder } from '../../kube/events.js';
import type { SourceRegistration, SourceRemoval } from '../../workflows/cloudflare/messages.js';
import { heartbeat } from '../kubernetes/calls.js';
import { kubeFailure } from '../kubernetes/errors.js';
import type { CallBudget, CallPriority } from './call-budget.js';
import { activitySignal } from './credentials.js';
import { applyPlan } from './sync-apply.js';
import {
  clientOf,
  readLive,
  readTarget,
  replan,
  syncStateRef,
  warnIfMarkedElsewhere,
  type SyncDeps,
} from './sync-read.js';
import { recordFailed, recordSynced, targetContextOf } from './sync-record.js';
import { placeTunnelHostnames, resolveZone } from './zone-lookups.js';

export type { SourceVerdict } from '../../domain/cloudflare/sync-plan.js';

export interface SyncTargetRequest {
  target: SyncTarget;
  credentials: string;
  syncState: string;
  sources: SourceRegistration[];
  /**
   * Sources being removed by this sync. A source the SyncState lists that is neither registered
   * nor removed — its object still there — has not registered with this run of the workflow
   * (started for a removal, or restarted): its items are kept as they are.
   */
  removing?: SourceRemoval[];
  /** Why this sync runs: sources changed, the periodic observation, or a user's `reaggregate`. */
  trigger: SyncTrigger;
  /** Digest of the desired managed subset last written (or found in place). */
  lastDigest?: string;
  /** The SyncState's configVersion so far (bumped by each write). */
  configVersion: number;
  clusterId: string;
  adoptLegacyMarkers: boolean;
  driftPolicy: 'repair' | 'observe';
}

export interface SyncSummary {
  wrote: boolean;
  /** Our items in Cloudflare differed from what was last written, with no source change: someone edited them. */
  drifted: boolean;
  /** Drift found and left in place (drift policy observe). */
  driftLeft: boolean;
  differences: string[];
  conflicts: Conflict[];
  counts: WritePlan<unknown>['counts'];
  digest: string;
  configVersion: number;
  cloudflareId: string;
  verdicts: SourceVerdict[];
  /** Sources the SyncState lists that have not registered: kept, so the target is not done. */
  kept?: number;
}

export interface SyncFailure {
  reason: string;
  message: string;
  verdicts: SourceVerdict[];
}

export type SyncResult = Ok<SyncSummary> | Failed<SyncFailure>;

/** Reads, plans, applies and records one sync of one target. */
async function syncOnce(deps: SyncDeps, request: SyncTargetRequest): Promise<SyncResult> {
  const run = await readTarget(deps, request, targetContextOf);
  run.sources.rejectAgain(run.request.trigger, run.existing?.status?.rejectedSources ?? []);
  try {
    const cf = await clientOf(run);
    await readLive(run, cf);
    const { plan, digest } = await replan(run);
    warnIfMarkedElsewhere(run);
    const decision = decideWrite(plan, digest, run.request);
    const wrote = decision.write && (await applyPlan(run, cf));
    return await recordSynced(run, decision, wrote);
  } catch (err) {
    return recordFailed(run, err);
  }
}

export function createCloudflareSyncActivities(
  kube: KubeClient,
  config: Pick<CloudflareConfig, 'baseURL'>,
  events: EventRecorder,
  budget?: CallBudget,
) {
  const deps: SyncDeps = {
    kube,
    config,
    events,
    pacing: (priority: CallPriority) => (budget ? { budget, priority } : undefined),
  };

  /** Deletes the SyncState once no source is left (its target then has nothing of ours). */
  async function deleteSyncState(req: { syncState: string }): Promise<void> {
    try {
      await kube.delete(syncStateRef(req.syncState));
    } catch (err) {
      throw kubeFailure(err, `delete CloudflareSyncState ${req.syncState}`);
    }
  }

  return {
    syncTarget: (req: SyncTargetRequest) => whileAlive(() => syncOnce(deps, req)),
    placeTunnelHostnames: (req: Parameters<typeof placeTunnelHostnames>[1]) =>
      whileAlive(() => placeTunnelHostnames(deps, req)),
    deleteSyncState: (req: { syncState: string }) => whileAlive(() => deleteSyncState(req)),
    resolveZone: (req: Parameters<typeof resolveZone>[1]) => whileAlive(() => resolveZone(deps, req)),
  };
}

/**
 * Heartbeats every few seconds while `fn` runs: a worker that dies mid-call (a crash between the
 * GET and the PUT) is noticed within the heartbeat timeout (activity-options.ts), and the retry
 * runs elsewhere then instead of after the 2-minute start-to-close timeout.
 */
async function whileAlive<T>(fn: () => Promise<T>): Promise<T> {
  heartbeat();
  // Every second: a heartbeat is also how a cancellation reaches the attempt (the account workers
  // send them at most a second apart), so a change waits at most about that for an observation.
  const timer = setInterval(() => heartbeat(), 1_000);
  try {
    return await fn();
  } catch (err) {
    // Cancelled (a change interrupted an observation, or Temporal gave up on the attempt): its
    // aborted call is reported as the cancellation it is, not as a Cloudflare failure to retry.
    const signal = activitySignal();
    if (signal?.aborted) throw signal.reason ?? err;
    throw err;
  } finally {
    clearInterval(timer);
  }
}

export type CloudflareSyncActivities = ReturnType<typeof createCloudflareSyncActivities>;
