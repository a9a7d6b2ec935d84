/**
 * All activities, grouped by the system they touch. The worker builds them once with real
 * clients; workflows import only the types (`import type`).
 */
import type { Client } from '@temporalio/client';
import type { CloudflareConfig, RequestPolicy } from '../config.js';
import type { KubeClient } from '../kube/client.js';
import { EventRecorder } from '../kube/events.js';
import { createManifestActivities } from './kubernetes/manifests.js';
import { createObjectKeeperActivities } from './kubernetes/objectkeeper.js';
import { createRequestActivities } from './kubernetes/requests.js';
import { createRestoreActivities } from './kubernetes/restores.js';
import { createSnapshotActivities } from './kubernetes/snapshots.js';
import { createVolumeActivities } from './kubernetes/volumes.js';
import { createCloudflareSourceActivities } from './cloudflare/sources.js';
import { createConnectorActivities } from './kubernetes/connector.js';

export interface ActivityDeps {
  kube: KubeClient;
  requests: RequestPolicy;
  /**
   * The Cloudflare sources' activities need a Temporal client (they signal-with-start the
   * targets' workflows). Without it they are not registered (benchmarks of other systems).
   * The Cloudflare API activities run on per-account task queues (src/workers/cloudflare-accounts.ts).
   */
  cloudflare?: { temporal: Client; taskQueue: string; config: CloudflareConfig };
  /** Where the transitions' Events go (default: the worker's reporting controller). */
  events?: EventRecorder;
}

export function createActivities(deps: ActivityDeps) {
  const events = deps.events ?? new EventRecorder(deps.kube, 'worker');
  return {
    ...createObjectKeeperActivities(deps.kube, events),
    ...createRequestActivities(deps.kube, deps.requests, events),
    ...createManifestActivities(deps.kube),
    ...createVolumeActivities(deps.kube),
    ...createSnapshotActivities(deps.kube),
    ...createRestoreActivities(deps.kube),
    ...(deps.cloudflare ? createCloudflareSourceActivities({ kube: deps.kube, events, ...deps.cloudflare }) : {}),
    ...(deps.cloudflare ? createConnectorActivities(deps.kube, deps.cloudflare.config) : {}),
  };
}

export type Activities = ReturnType<typeof createActivities>;
