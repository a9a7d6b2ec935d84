/** Activities an ObjectKeeper workflow uses: uncached reads, status writes and the final delete. */
import type { FollowObjectRef, ObjectKeeper, ObjectKeeperStatus } from '../../api/objectkeeper.js';
import { ObjectKeeperKind, objectKeeperRef } from '../../api/objectkeeper.js';
import type { FollowedObservation, KeeperIdentity } from '../../domain/objectkeeper.js';
import { GONE, ok, type Found } from '../../domain/results.js';
import { keeperDeletedEvent } from '../../domain/events.js';
import type { KubeClient } from '../../kube/client.js';
import { isRetriedActivity, type EventRecorder } from '../../kube/events.js';
import { getByUid, getObject, patchStatusUnlessGone } from './calls.js';
import { kubeFailure } from './errors.js';

export function createObjectKeeperActivities(kube: KubeClient, events: EventRecorder) {
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
          status: 'gone',
          reason: 'KindNotServed',
          detail: `the apiserver does not serve ${ref.apiVersion} ${ref.kind}`,
        };
      }
      const { apiVersion, kind, namespace, name } = ref;
      const obj = await getObject(kube, { apiVersion, kind, namespace, name });
      return obj ? ok({ uid: obj.metadata!.uid! }) : { status: 'gone', reason: 'NotFound' };
    },

    /** The keeper as it is now; gone when it was deleted or the name belongs to another UID. */
    async readObjectKeeper(
      ref: KeeperIdentity,
    ): Promise<Found<{ deleting: boolean; keeperStatus?: ObjectKeeperStatus }>> {
      const obj = await getByUid<ObjectKeeper>(kube, objectKeeperRef(ref.name), ref.uid);
      if (!obj) return GONE;
      return ok({ deleting: Boolean(obj.metadata?.deletionTimestamp), keeperStatus: obj.status });
    },

    /**
     * Merge-patches the status. The UID in the patch body is a precondition: the apiserver
     * rejects the write if the name now belongs to a recreated keeper: gone then.
     */
    async patchObjectKeeperStatus(ref: KeeperIdentity & { keeperStatus: ObjectKeeperStatus }): Promise<Found> {
      const keeper = { ...objectKeeperRef(ref.name), plural: ObjectKeeperKind.plural };
      return patchStatusUnlessGone(kube, keeper, ref.keeperStatus, ref.uid);
    },

    /** Deletes the keeper (background propagation: the GC then removes what it owns); gone when already deleted. */
    async deleteObjectKeeper(ref: KeeperIdentity): Promise<Found> {
      // Read first: the Event says why (the status tells a TTL from a lost followed object).
      const keeper = await getByUid<ObjectKeeper>(kube, objectKeeperRef(ref.name), ref.uid);
      let deleted: boolean;
      try {
        deleted = await kube.delete(objectKeeperRef(ref.name), { uid: ref.uid, propagationPolicy: 'Background' });
      } catch (err) {
        throw kubeFailure(err, `delete ObjectKeeper ${ref.name}`);
      }
      // Gone on a retry may be this activity's own delete, made before its Event.
      if (keeper && (deleted || isRetriedActivity()))
        await events.record(
          { apiVersion: ObjectKeeperKind.apiVersion, kind: ObjectKeeperKind.kind, name: ref.name, uid: ref.uid },
          keeperDeletedEvent(keeper.status ?? {}, new Date()),
        );
      return deleted ? ok() : GONE;
    },
  };
}

export type ObjectKeeperActivities = ReturnType<typeof createObjectKeeperActivities>;
