/**
 * The apiserver calls every activity group makes, with errors already turned into Temporal
 * failures (kubeFailure): uncached reads, reads pinned to a UID, full lists, and status patches
 * that report a deleted or recreated object as 'gone' instead of failing.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { asyncLocalStorage } from '@temporalio/activity';
import { GONE, ok, type Found } from '../../domain/results.js';
import { statusCode, type KubeClient, type ObjectRef } from '../../kube/client.js';
import { kubeFailure } from './errors.js';

/**
 * Tells Temporal this activity is alive. The SDK throttles heartbeats, so calling this per item
 * is cheap; outside an activity (a CLI or a test calling the function directly) it does nothing.
 * A local activity cannot heartbeat (no heartbeat timeout; Temporal's core answers
 * `UnknownActivity` and logs a warning per call), and the same functions run as local activities
 * in the short presets, so there it does nothing either.
 */
export function heartbeat(details?: unknown): void {
  const activity = asyncLocalStorage.getStore();
  if (activity && !activity.info.isLocal) activity.heartbeat(details);
}

/**
 * A poll loop's pause: ends early, rejecting with CancelledFailure, when Temporal cancels the
 * attempt (a heartbeat delivers that), so a cancelled wait stops instead of polling to its own
 * deadline. Outside an activity, a plain timer.
 */
export function pause(ms: number): Promise<void> {
  const activity = asyncLocalStorage.getStore();
  return activity ? activity.sleep(ms) : new Promise((r) => setTimeout(r, ms));
}

const label = (ref: ObjectRef) => `${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`;

/** Uncached GET; undefined when absent. */
export async function getObject<T extends KubernetesObject>(kube: KubeClient, ref: ObjectRef): Promise<T | undefined> {
  try {
    return await kube.get<T>(ref);
  } catch (err) {
    throw kubeFailure(err, `get ${label(ref)}`);
  }
}

/** Uncached GET of one particular object: undefined when it is gone or its name now has another UID. */
export async function getByUid<T extends KubernetesObject>(
  kube: KubeClient,
  ref: ObjectRef,
  uid: string,
): Promise<T | undefined> {
  const obj = await getObject<T>(kube, ref);
  return obj?.metadata?.uid === uid ? obj : undefined;
}

/** Every item of a list (all pages). Heartbeats per item, so a long listing outlives a heartbeat timeout. */
export async function listAll<T extends KubernetesObject>(
  kube: KubeClient,
  apiVersion: string,
  kind: string,
  opts: { namespace?: string; labelSelector?: string } = {},
): Promise<T[]> {
  const out: T[] = [];
  try {
    for await (const obj of kube.listAll<T>(apiVersion, kind, opts)) {
      out.push(obj);
      heartbeat();
    }
  } catch (err) {
    throw kubeFailure(err, `list ${kind}${opts.namespace ? ` in ${opts.namespace}` : ''}`);
  }
  return out;
}

/** JSON merge patch with the UID as precondition; errors become Temporal failures named by `action`. */
export async function mergePatchObject(
  kube: KubeClient,
  ref: ObjectRef,
  body: Record<string, unknown>,
  uid: string,
  action: string,
): Promise<void> {
  try {
    await kube.mergePatch(ref, body, { uid });
  } catch (err) {
    throw kubeFailure(err, action);
  }
}

/**
 * JSON merge patch of a custom resource's status, with the UID as precondition. Gone when the
 * object was deleted (404) or its name now belongs to another object (409).
 */
export async function patchStatusUnlessGone(
  kube: KubeClient,
  ref: ObjectRef & { plural: string },
  status: Record<string, unknown>,
  uid: string,
): Promise<Found> {
  try {
    await kube.patchCustomStatus(ref, status, uid);
    return ok();
  } catch (err) {
    const code = statusCode(err);
    if (code === 404 || code === 409) return GONE;
    throw kubeFailure(err, `patch ${label(ref)} status`);
  }
}
