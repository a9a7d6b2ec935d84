/**
 * All activities, grouped by the system they touch. The worker builds them once with real
 * clients; workflows import only the types (`import type`).
 */
import type { KubeClient } from '../kube/client.js';
import { createObjectKeeperActivities } from './kubernetes/objectkeeper.js';

export interface ActivityDeps {
  kube: KubeClient;
}

export function createActivities(deps: ActivityDeps) {
  return {
    ...createObjectKeeperActivities(deps.kube),
  };
}

export type Activities = ReturnType<typeof createActivities>;
