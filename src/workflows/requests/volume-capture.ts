/**
 * VolumeCaptureRequest: resolve every target (nothing is created for a request that cannot
 * succeed) → ObjectKeeper (UID barrier) → per target either a snapshot owned by the keeper and
 * a wait until it is ready, or a detach that hands the PersistentVolume to the keeper → Ready
 * with one dataRef per target.
 *
 * Waits on external actors (snapshot-controller, CSI sidecar, pods releasing a claim) share one
 * absolute deadline fixed here, so activity retries and worker restarts never extend it.
 */
import type { DataRef } from '../../api/volumes.js';
import type { KeeperIdentity } from '../../domain/objectkeeper.js';
import type { OperationResult, RequestRef } from '../../domain/requests.js';
import { ok } from '../../domain/results.js';
import { SNAPSHOT_API, type ResolvedVolumeTarget, type SnapshotMode } from '../../domain/volumes.js';
import { externalWaits, requestCalls, volumeCalls, volumeResolution } from './activity-options.js';
import { runRequest } from './lifecycle.js';
import type { RequestWorkflowInput } from './messages.js';

export async function volumeCaptureRequestWorkflow(input: RequestWorkflowInput): Promise<string> {
  return runRequest(input, 'resolving targets', async ({ ref, progress }) => {
    const policy = await requestCalls.requestPolicy();
    await progress('resolving targets');
    const resolved = await volumeResolution.resolveVolumeTargets(ref);
    if (resolved.status !== 'ok') return resolved;

    const owner = await requestCalls.ensureRequestKeeper(ref);
    if (owner.status !== 'ok') return owner;
    const ctx: CaptureContext = {
      ref,
      keeper: owner.keeper,
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
    const made = await volumeCalls.ensureSnapshot({ ref, keeper, target, snapshotMode });
    if (made.status !== 'ok') return made;
    snapshots.push(made.snapshot);
  }
  await ctx.progress(`waiting for ${targets.length} snapshot(s) to become ready`);
  const deadline = Date.now() + ctx.waitTimeoutMs;
  const waits = externalWaits(ctx.waitTimeoutMs);
  const dataRefs: DataRef[] = [];
  const captured: string[] = [];
  for (const [i, target] of targets.entries()) {
    const snapshot = snapshots[i]!;
    const r = await waits.waitForSnapshotReady({ target, snapshot, keeper, deadline, timeoutMs: ctx.waitTimeoutMs });
    if (r.status !== 'ok') return r;
    dataRefs.push(dataRef(target, { apiVersion: SNAPSHOT_API, kind: 'VolumeSnapshotContent', name: r.contentName }));
    captured.push(
      snapshot.kind === 'VolumeSnapshot'
        ? `${target.pvcName} → VolumeSnapshot ${snapshot.name} (content ${r.contentName})`
        : `${target.pvcName} → VolumeSnapshotContent ${r.contentName}`,
    );
  }
  return ok({ message: `snapshotted ${targets.length} volume(s): ${captured.join('; ')}`, fields: { dataRefs } });
}

async function detachAll(ctx: CaptureContext): Promise<OperationResult> {
  const { keeper, targets } = ctx;
  const deadline = Date.now() + ctx.waitTimeoutMs;
  const waits = externalWaits(ctx.waitTimeoutMs);
  const dataRefs: DataRef[] = [];
  for (const target of targets) {
    await ctx.progress(`detaching PersistentVolume ${target.pvName} from PVC ${target.pvcName}`);
    const r = await waits.detachVolume({ keeper, target, deadline, timeoutMs: ctx.waitTimeoutMs });
    if (r.status !== 'ok') return r;
    dataRefs.push(dataRef(target, { apiVersion: 'v1', kind: 'PersistentVolume', name: target.pvName }));
  }
  const released = targets.map((t) => `${t.pvcName} → PersistentVolume ${t.pvName}`).join('; ');
  return ok({
    message: `detached ${targets.length} volume(s); the claims are deleted and the volumes kept: ${released}`,
    fields: { dataRefs },
  });
}
