/** Activities an ObjectKeeper workflow uses: uncached reads, status writes and the final delete. */
import type { FollowObjectRef, ObjectKeeper, ObjectKeeperStatus } from '../../api/objectkeeper.js';
import { ObjectKeeperKind, objectKeeperRef } from '../../api/objectkeeper.js';
import type { FollowedObservation } from '../../domain/objectkeeper.js';
import { KubeClient, statusCode } from '../../kube/client.js';
import { kubeFailure } from './errors.js';

export interface KeeperRef {
  name: string;
  uid: string;
}

export function createObjectKeeperActivities(kube: KubeClient) {
  return {
    /** Fresh GET of the followed object. A kind the apiserver does not serve counts as absent. */
    async observeFollowedObject(ref: FollowObjectRef): Promise<FollowedObservation> {
      try {
        const obj = await kube.get({
          apiVersion: ref.apiVersion,
          kind: ref.kind,
          namespace: ref.namespace,
          name: ref.name,
        });
        if (!obj) return { state: 'absent', reason: 'NotFound' };
        return { state: 'present', uid: obj.metadata!.uid! };
      } catch (err) {
        if (err instanceof Error && /is not served|does not serve/.test(err.message) && statusCode(err) === undefined) {
          return { state: 'absent', reason: 'KindNotServed', detail: err.message };
        }
        throw kubeFailure(err, `get ${ref.kind} ${ref.namespace ?? ''}/${ref.name}`);
      }
    },

    /** The keeper as it is now; `exists: false` when it is gone or the name belongs to another UID. */
    async readObjectKeeper(
      ref: KeeperRef,
    ): Promise<{ exists: boolean; deleting: boolean; status?: ObjectKeeperStatus }> {
      try {
        const obj = await kube.get<ObjectKeeper>(objectKeeperRef(ref.name));
        if (!obj || obj.metadata?.uid !== ref.uid) return { exists: false, deleting: false };
        return { exists: true, deleting: Boolean(obj.metadata?.deletionTimestamp), status: obj.status };
      } catch (err) {
        throw kubeFailure(err, `get ObjectKeeper ${ref.name}`);
      }
    },

    /**
     * Merge-patches the status. The UID in the patch body is a precondition: the apiserver
     * rejects the write if the name now belongs to a recreated keeper. Returns 'gone' then.
     */
    async patchObjectKeeperStatus(ref: KeeperRef & { status: ObjectKeeperStatus }): Promise<'patched' | 'gone'> {
      try {
        await kube.patchCustomStatus(
          { ...objectKeeperRef(ref.name), plural: ObjectKeeperKind.plural },
          ref.status,
          ref.uid,
        );
        return 'patched';
      } catch (err) {
        const code = statusCode(err);
        if (code === 404 || code === 409) return 'gone';
        throw kubeFailure(err, `patch ObjectKeeper ${ref.name} status`);
      }
    },

    /** Deletes the keeper (background propagation: the GC then removes what it owns). */
    async deleteObjectKeeper(ref: KeeperRef): Promise<boolean> {
      try {
        return await kube.delete(objectKeeperRef(ref.name), { uid: ref.uid, propagationPolicy: 'Background' });
      } catch (err) {
        throw kubeFailure(err, `delete ObjectKeeper ${ref.name}`);
      }
    },
  };
}

export type ObjectKeeperActivities = ReturnType<typeof createObjectKeeperActivities>;
