/**
 * ObjectKeeper rules, pure and workflow-safe: what an observation of the followed object means,
 * and when a keeper expires.
 */
import type { FollowObjectRef, ObjectKeeperMode, ObjectKeeperSpec } from '../api/objectkeeper.js';
import { parseGoDuration } from './duration.js';
import { controllerReference } from './ownership.js';
import type { Gone, Ok } from './results.js';

/** What an artifact owned by a keeper needs: the keeper's name and the UID the apiserver gave it. */
export interface KeeperIdentity {
  name: string;
  uid: string;
}

/** What a fresh GET of the followed object showed: its UID, or that it is gone and why. */
export type FollowedObservation =
  Ok<{ uid: string }> | (Gone & { reason: 'NotFound' | 'KindNotServed'; detail?: string });

export type FollowVerdict =
  { lost: false } | { lost: true; reason: 'Deleted' | 'Recreated' | 'KindNotServed'; message: string };

/** The followed object is lost when it is gone, or when its name now belongs to another UID. */
export function judgeFollowed(spec: ObjectKeeperSpec, obs: FollowedObservation): FollowVerdict {
  const ref = spec.followObjectRef;
  if (!ref) throw new Error(`mode ${spec.mode} follows no object`);
  const what = `${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`;
  if (obs.status === 'gone') {
    return obs.reason === 'KindNotServed'
      ? {
          lost: true,
          reason: 'KindNotServed',
          message: `${what}: ${ref.apiVersion} ${ref.kind} is not served (${obs.detail ?? ''})`,
        }
      : { lost: true, reason: 'Deleted', message: `${what} (uid ${ref.uid}) was deleted` };
  }
  if (obs.uid !== ref.uid) {
    return { lost: true, reason: 'Recreated', message: `${what} was recreated: uid ${obs.uid}, following ${ref.uid}` };
  }
  return { lost: false };
}

export function followsObject(mode: ObjectKeeperMode): boolean {
  return mode === 'FollowObject' || mode === 'FollowObjectWithTTL';
}

/**
 * When the keeper expires (epoch ms): TTL mode counts from creation, FollowObjectWithTTL from
 * the moment the followed object was lost; FollowObject never expires by time.
 */
export function keeperExpiry(spec: ObjectKeeperSpec, creationTimestamp: string, lostAt?: string): number | undefined {
  if (!spec.ttl) return undefined;
  const ttl = parseGoDuration(spec.ttl);
  if (spec.mode === 'TTL') return Date.parse(creationTimestamp) + ttl;
  if (spec.mode === 'FollowObjectWithTTL' && lostAt) return Date.parse(lostAt) + ttl;
  return undefined;
}

/** Workflow ID of a keeper's lifetime workflow. The UID makes a recreated keeper a new workflow. */
export function objectKeeperWorkflowId(name: string, uid: string): string {
  return `objectkeeper/${name}/${uid}`;
}

interface ObjectIdentity {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; uid?: string };
}

function identity(obj: ObjectIdentity, what: string) {
  const { apiVersion, kind } = obj;
  const { name, namespace, uid } = obj.metadata ?? {};
  // The UID barrier: references are built only from objects the apiserver returned.
  if (!apiVersion || !kind || !name || !uid) throw new Error(`${what}: object has no apiVersion/kind/name/uid yet`);
  return { apiVersion, kind, name, namespace, uid };
}

/** followObjectRef for a keeper that follows `obj` (as returned by the apiserver). */
export function followRefTo(obj: ObjectIdentity): FollowObjectRef {
  const { apiVersion, kind, name, namespace, uid } = identity(obj, 'followObjectRef');
  return namespace ? { apiVersion, kind, namespace, name, uid } : { apiVersion, kind, name, uid };
}

/** The controller ownerReference that puts an object under a keeper (cluster-scoped, so legal for any dependent). */
export function ownedByKeeper(keeper: ObjectIdentity) {
  const { apiVersion, kind, name, uid } = identity(keeper, 'ownerReference');
  return controllerReference({ apiVersion, kind, name, uid, scope: 'Cluster' }, { kind: 'any', scope: 'Namespaced' });
}

/** What a keeper's workflow does after a look at the followed object (or, in TTL mode, at once). */
export type KeeperStep =
  | { kind: 'track' }
  | { kind: 'delete'; why: string }
  /** Wait for the TTL, then delete; `lostAt` is the keeper's (recorded now when it had none). */
  | { kind: 'expire'; expiresAtMs: number; lostAt?: string; why: string };

/**
 * The keeper's next step: TTL mode expires ttl after creation; a follow mode tracks while the
 * object is there; once lost, FollowObject deletes the keeper and FollowObjectWithTTL expires ttl
 * after lostAt (`nowIso` when it has none yet).
 */
export function keeperStep(
  spec: ObjectKeeperSpec,
  creationTimestamp: string,
  verdict: FollowVerdict | undefined,
  lostAt: string | undefined,
  nowIso: string,
): KeeperStep {
  if (!followsObject(spec.mode))
    return {
      kind: 'expire',
      expiresAtMs: keeperExpiry(spec, creationTimestamp)!,
      why: `ttl ${spec.ttl} counted from creation`,
    };
  if (!verdict?.lost) return { kind: 'track' };
  if (spec.mode === 'FollowObject') return { kind: 'delete', why: verdict.message };
  const lost = lostAt ?? nowIso;
  return {
    kind: 'expire',
    expiresAtMs: keeperExpiry(spec, creationTimestamp, lost)!,
    lostAt: lost,
    why: `${verdict.message}; ttl ${spec.ttl} counted from lostAt`,
  };
}

/** How far the watcher's clock may be behind the workflow's when it judges an expiry. */
export const EXPIRY_SKEW_MS = 5_000;

/**
 * Whether a keeper's deletion is news to its workflow (the watcher's `keeperDeleted` hint). Not
 * when the workflow deletes it itself — its TTL is up, or it follows (FollowObject) an object that
 * is lost — nor when it would within EXPIRY_SKEW_MS anyway: the hint would only race the run's
 * last task (UnhandledCommand), and a run that deletes a keeper already gone ends all the same.
 */
export function keeperDeletionIsNews(
  keeper: { mode: ObjectKeeperMode; expiresAt?: string; followedLost: boolean },
  nowMs: number,
): boolean {
  if (keeper.expiresAt !== undefined && Date.parse(keeper.expiresAt) - nowMs <= EXPIRY_SKEW_MS) return false;
  return !(keeper.mode === 'FollowObject' && keeper.followedLost);
}
