/**
 * Releasing the finalizers the original operator put on objects that are not sources here (an
 * Ingress or Gateway of its class, a tunnel's Secret, CloudflareCredentials, its SyncStates).
 * They guarded cleanups the original did; here those objects need none, and nothing else would
 * ever remove them, so the deletion of a migrated object — or of its namespace — would hang.
 * They are released where the operator meets such an object, whether or not it is being deleted:
 * a deletion must not depend on seeing it start. Only the original's finalizer goes; the patch
 * carries the object's UID and resourceVersion, so a concurrent change is retried next time.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { KubeClient, ObjectRef } from '../../kube/client.js';
import { statusCode } from '../../kube/client.js';
import { kubeFailure } from '../kubernetes/errors.js';

/** Removes the finalizers `original` matches from `obj`; false when there were none (or it changed meanwhile). */
export async function releaseOriginalFinalizers(
  kube: KubeClient,
  ref: ObjectRef,
  obj: KubernetesObject,
  original: (finalizer: string) => boolean,
): Promise<boolean> {
  const m = obj.metadata;
  const current = m?.finalizers ?? [];
  if (!m?.uid || !current.some(original)) return false;
  try {
    await kube.mergePatch(
      ref,
      { metadata: { finalizers: current.filter((f) => !original(f)), resourceVersion: m.resourceVersion } },
      { uid: m.uid },
    );
    return true;
  } catch (err) {
    // Gone, or changed since it was read: the next time it is met.
    if (statusCode(err) === 404 || statusCode(err) === 409) return false;
    throw kubeFailure(
      err,
      `release the original operator's finalizer of ${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`,
    );
  }
}
