/** Activities an ObjectKeeper workflow uses: uncached reads, status writes and the final delete. */
import type { FollowObjectRef, ObjectKeeper, ObjectKeeperStatus } from '../../api/objectkeeper.js';
import { ObjectKeeperKind, objectKeeperRef } from '../../api/objectkeeper.js';
import type { FollowedObservation } from '../../domain/objectkeeper.js';
import type { KubeClient } from '../../kube/client.js';
import { getByUid, getObject, patchStatusUnlessGone } from './calls.js';
import { kubeFailure } from './errors.js';

export interface KeeperRef {
  name: string;
  uid: string;
}

export function createObjectKeeperActivities(kube: KubeClient) {
  return {
    /** Fresh GET of the followed object. A kind the apiserver does not serve counts as absent. */
    async observeFollowedObject(ref: FollowObjectRef): Promise<FollowedObservation> {
      let served;
      try {
        served = await kube.objects.servedResource(ref.apiVersion, ref.kind);
      } catch (err) {
        throw kubeFailure(err, `discover ${ref.apiVersion} ${ref.kind}`);
      }
      if (!served) {
        return {
          state: 'absent',
          reason: 'KindNotServed',
          detail: `the apiserver does not serve ${ref.apiVersion} ${ref.kind}`,
        };
      }
      const { apiVersion, kind, namespace, name } = ref;
      const obj = await getObject(kube, { apiVersion, kind, namespace, name });
      return obj ? { state: 'present', uid: obj.metadata!.uid! } : { state: 'absent', reason: 'NotFound' };
    },

    /** The keeper as it is now; `exists: false` when it is gone or the name belongs to another UID. */
    async readObjectKeeper(
      ref: KeeperRef,
    ): Promise<{ exists: boolean; deleting: boolean; status?: ObjectKeeperStatus }> {
      const obj = await getByUid<ObjectKeeper>(kube, objectKeeperRef(ref.name), ref.uid);
      if (!obj) return { exists: false, deleting: false };
      return { exists: true, deleting: Boolean(obj.metadata?.deletionTimestamp), status: obj.status };
    },

    /**
     * Merge-patches the status. The UID in the patch body is a precondition: the apiserver
     * rejects the write if the name now belongs to a recreated keeper. Returns 'gone' then.
     */
    async patchObjectKeeperStatus(ref: KeeperRef & { status: ObjectKeeperStatus }): Promise<'patched' | 'gone'> {
      const keeper = { ...objectKeeperRef(ref.name), plural: ObjectKeeperKind.plural };
      return patchStatusUnlessGone(kube, keeper, ref.status, ref.uid);
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
