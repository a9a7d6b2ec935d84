/**
 * What the volume activities (capture, snapshots, restore) share: the snapshot kinds as the
 * activities read them, object references, the served-API check, and the
 * deadline-bounded poll every wait on an external actor uses.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { Context } from '@temporalio/activity';
import { RequestReason } from '../../api/requests.js';
import { failed, type RequestOutcome } from '../../domain/requests.js';
import { SNAPSHOT_API } from '../../domain/volumes.js';
import type { KubeClient, ObjectRef } from '../../kube/client.js';
import { kubeFailure } from './errors.js';

/** How often a wait re-reads the objects it waits on (each poll heartbeats). */
export const POLL_INTERVAL_MS = 2000;

export const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'durable-operators' };

interface SnapshotStatusError {
  message?: string;
}

export interface VolumeSnapshot extends KubernetesObject {
  spec: {
    source: { persistentVolumeClaimName?: string; volumeSnapshotContentName?: string };
    volumeSnapshotClassName?: string;
  };
  status?: { boundVolumeSnapshotContentName?: string; readyToUse?: boolean; error?: SnapshotStatusError };
}

export interface VolumeSnapshotContent extends KubernetesObject {
  spec: {
    driver: string;
    deletionPolicy: string;
    source: { volumeHandle?: string; snapshotHandle?: string };
    volumeSnapshotClassName?: string;
    sourceVolumeMode?: string;
    volumeSnapshotRef?: { name?: string; namespace?: string };
  };
  status?: { readyToUse?: boolean; snapshotHandle?: string; error?: SnapshotStatusError };
}

export interface VolumeSnapshotClass extends KubernetesObject {
  driver: string;
  deletionPolicy: string;
}

export type Outcome<T> = ({ ok: true } & T) | { ok: false; outcome: RequestOutcome };

export const snapshotRef = (
  kind: 'VolumeSnapshot' | 'VolumeSnapshotContent',
  name: string,
  namespace?: string,
): ObjectRef => ({ apiVersion: SNAPSHOT_API, kind, name, namespace });
export const claimRef = (namespace: string, name: string): ObjectRef => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  namespace,
  name,
});
export const volumeRef = (name: string): ObjectRef => ({ apiVersion: 'v1', kind: 'PersistentVolume', name });
export const storageClassRef = (name: string): ObjectRef => ({
  apiVersion: 'storage.k8s.io/v1',
  kind: 'StorageClass',
  name,
});

/** metav1.Time as the typed client gives it (a Date) or as plain JSON has it (a string). */
export function timestamp(t: Date | string | undefined): string | undefined {
  if (t === undefined) return undefined;
  return typeof t === 'string' ? t : t.toISOString();
}

/**
 * Terminal Incompatible when snapshot.storage.k8s.io/v1 does not serve one of `kinds`. Checked
 * by discovery up front: a GET of an unserved kind answers 404, which would read as "not found".
 */
export async function snapshotApiProblem(
  kube: KubeClient,
  kinds: readonly string[],
): Promise<RequestOutcome | undefined> {
  for (const kind of kinds) {
    let served;
    try {
      served = await kube.objects.servedResource(SNAPSHOT_API, kind);
    } catch (err) {
      throw kubeFailure(err, `discover ${SNAPSHOT_API} ${kind}`);
    }
    if (!served) {
      return failed(
        RequestReason.Incompatible,
        `${SNAPSHOT_API} ${kind} is not served: the external-snapshotter CRDs are not installed`,
      );
    }
  }
  return undefined;
}

/**
 * Polls `check` until it reports done or the absolute deadline passes; always polls once first,
 * so a retried attempt past the deadline still reports what it last saw. Heartbeats every poll:
 * that is how a deleted request's cancellation reaches the activity (and Context.sleep throws).
 */
export async function pollUntil<D, W>(
  deadline: number,
  check: () => Promise<{ done: D } | { waiting: W }>,
): Promise<{ done: D } | { expired: W }> {
  const ctx = Context.current();
  for (;;) {
    const r = await check();
    if ('done' in r) return r;
    const left = deadline - Date.now();
    if (left <= 0) return { expired: r.waiting };
    ctx.heartbeat();
    await ctx.sleep(Math.min(POLL_INTERVAL_MS, left));
  }
}
