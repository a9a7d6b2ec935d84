/**
 * VolumeCaptureRequest: resolve every target (nothing is created for a request that cannot
 * succeed) → ObjectKeeper (UID barrier) → per target either a snapshot owned by the keeper and
 * a wait until it is ready, or a detach that hands the PersistentVolume to the keeper → Ready
 * with one dataRef per target.
 *
 * Waits on external actors (snapshot-controller, CSI sidecar, pods releasing a claim) share one
 * absolute deadline fixed here, so activity retries and worker restarts never extend it.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { VolumeActivities } from '../../activities/kubernetes/volumes.js';
import type { DataRef } from '../../api/volumes.js';
import type { RequestRef } from '../../domain/requests.js';
import { SNAPSHOT_API, type ResolvedVolumeTarget, type SnapshotMode } from '../../domain/volumes.js';
import type { KeeperIdentity } from '../../activities/kubernetes/requests.js';
import { GONE, requestActivities, runRequest, type OperationResult, type RequestWorkflowInput } from './lifecycle.js';

const RETRY = { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' } as const;

const volumes = proxyActivities<VolumeActivities>({ startToCloseTimeout: '10 seconds', retry: RETRY });

/** Up to 64 targets, each a few uncached GETs: more than one short call's worth. */
const resolving = proxyActivities<VolumeActivities>({ startToCloseTimeout: '2 minutes', retry: RETRY });

/**
 * Long polls bounded by the request's deadline. The heartbeat timeout notices a dead worker
 * (the retry resumes with the same deadline); heartbeats also carry the cancellation when the
 * request is deleted mid-wait.
 */
function waiting(waitTimeoutMs: number) {
  return proxyActivities<VolumeActivities>({
    startToCloseTimeout: waitTimeoutMs + 5 * 60_000,
    heartbeatTimeout: '30 seconds',
    retry: RETRY,
  });
}

export async function volumeCaptureRequestWorkflow(input: RequestWorkflowInput): Promise<string> {
  return runRequest(input, async ({ ref, progress }) => {
    const policy = await requestActivities.requestPolicy();
    await progress('resolving targets');
    const resolved = await resolving.resolveVolumeTargets(ref);
    if ('gone' in resolved) return GONE;
    if (!resolved.ok) return { outcome: resolved.outcome };

    const keeper = await requestActivities.ensureRequestKeeper(ref);
    if ('gone' in keeper) return GONE;
    const ctx: CaptureContext = {
      ref,
      keeper,
      targets: resolved.targets,
      waitTimeoutMs: policy.waitTimeoutMs,
      progress,
    };
    return resolved.mode === 'Snapshot' ? snapshotAll(ctx, policy.snapshotMode) : detachAll(ctx);
  });
}

interface CaptureContext {
  ref: RequestRef;
  keeper: KeeperIdentity;
  targets: ResolvedVolumeTarget[];
  waitTimeoutMs: number;
  progress(message: string): Promise<void>;
}

function dataRef(t: ResolvedVolumeTarget, artifact: DataRef['artifact']): DataRef {
  return { targetUID: t.pvcUid, target: t.target, artifact };
}

async function snapshotAll(ctx: CaptureContext, snapshotMode: SnapshotMode): Promise<OperationResult> {
  const { ref, keeper, targets } = ctx;
  // Every snapshot is requested before any is awaited: the actors work on all of them at once.
  const snapshots = [];
  for (const target of targets) {
    const made = await volumes.ensureSnapshot({ ref, keeper, target, snapshotMode });
    if (!made.ok) return { outcome: made.outcome };
    snapshots.push(made.snapshot);
  }
  await ctx.progress(`waiting for ${targets.length} snapshot(s) to become ready`);
  const deadline = Date.now() + ctx.waitTimeoutMs;
  const waits = waiting(ctx.waitTimeoutMs);
  const dataRefs: DataRef[] = [];
  const captured: string[] = [];
  for (const [i, target] of targets.entries()) {
    const snapshot = snapshots[i]!;
    const r = await waits.waitForSnapshotReady({ target, snapshot, deadline, timeoutMs: ctx.waitTimeoutMs });
    if (!r.ok) return { outcome: r.outcome };
    dataRefs.push(dataRef(target, { apiVersion: SNAPSHOT_API, kind: 'VolumeSnapshotContent', name: r.contentName }));
    captured.push(
      snapshot.kind === 'VolumeSnapshot'
        ? `${target.pvcName} → VolumeSnapshot ${snapshot.name} (content ${r.contentName})`
        : `${target.pvcName} → VolumeSnapshotContent ${r.contentName}`,
    );
  }
  return {
    outcome: { ready: true, message: `snapshotted ${targets.length} volume(s): ${captured.join('; ')}` },
    fields: { dataRefs },
  };
}

async function detachAll(ctx: CaptureContext): Promise<OperationResult> {
  const { keeper, targets } = ctx;
  const deadline = Date.now() + ctx.waitTimeoutMs;
  const waits = waiting(ctx.waitTimeoutMs);
  const dataRefs: DataRef[] = [];
  for (const target of targets) {
    await ctx.progress(`detaching PersistentVolume ${target.pvName} from PVC ${target.pvcName}`);
    const r = await waits.detachVolume({ keeper, target, deadline, timeoutMs: ctx.waitTimeoutMs });
    if (!r.ok) return { outcome: r.outcome };
    dataRefs.push(dataRef(target, { apiVersion: 'v1', kind: 'PersistentVolume', name: target.pvName }));
  }
  const released = targets.map((t) => `${t.pvcName} → PersistentVolume ${t.pvName}`).join('; ');
  return {
    outcome: {
      ready: true,
      message: `detached ${targets.length} volume(s); the claims are deleted and the volumes kept: ${released}`,
    },
    fields: { dataRefs },
  };
}
