/**
 * All activities, grouped by the system they touch. The worker builds them once with real
 * clients; workflows import only the types (`import type`).
 */
import type { RequestPolicy } from '../config.js';
import type { KubeClient } from '../kube/client.js';
import { createManifestActivities } from './kubernetes/manifests.js';
import { createObjectKeeperActivities } from './kubernetes/objectkeeper.js';
import { createRequestActivities } from './kubernetes/requests.js';
import { createRestoreActivities } from './kubernetes/restores.js';
import { createSnapshotActivities } from './kubernetes/snapshots.js';
import { createVolumeActivities } from './kubernetes/volumes.js';

export interface ActivityDeps {
  kube: KubeClient;
  requests: RequestPolicy;
}

export function createActivities(deps: ActivityDeps) {
  return {
    ...createObjectKeeperActivities(deps.kube),
    ...createRequestActivities(deps.kube, deps.requests),
    ...createManifestActivities(deps.kube),
    ...createVolumeActivities(deps.kube),
    ...createSnapshotActivities(deps.kube),
    ...createRestoreActivities(deps.kube),
  };
}

export type Activities = ReturnType<typeof createActivities>;
