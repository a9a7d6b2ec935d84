/**
 * The id of this cluster in the ownership markers it writes to Cloudflare. `DO_CLUSTER_ID` when
 * set; else the id a target's CloudflareSyncState records (its items were marked with it: a
 * restore into a new cluster that brings the SyncStates back keeps them ours); else derived from
 * the UID of the `kube-system` namespace, which every cluster has and no two clusters share. A
 * fixed default (`default`) made two clusters sharing a Cloudflare account, both left at it,
 * delete each other's items.
 */
import { ownershipOf, refString, type SourceRef } from '../domain/cloudflare/markers.js';
import type { KubeClient } from './client.js';

/** On each CloudflareSyncState: the cluster id its target's items are marked with. */
export const CLUSTER_ID_ANNOTATION = 'cloudflare-operator.io/cluster-id';

/** `k-` and the first 12 hex digits of kube-system's UID: short, so descriptions keep their room. */
export async function defaultClusterId(kube: KubeClient): Promise<string> {
  const ns = await kube.core.readNamespace({ name: 'kube-system' });
  const uid = ns.metadata?.uid?.replaceAll('-', '');
  if (!uid) throw new Error('the kube-system namespace has no UID');
  return `k-${uid.slice(0, 12)}`;
}

/**
 * The cluster id a target is written with: the pinned one, else the one its SyncState recorded,
 * else the derived one. `conflict`: a pinned id differs from the recorded one (the items in
 * Cloudflare carry the recorded id, and are another cluster's to this one).
 */
export async function clusterIdFor(
  pinned: string,
  recorded: string | undefined,
  derived: () => Promise<string>,
): Promise<{ clusterId: string; conflict?: string }> {
  if (pinned)
    return recorded && recorded !== pinned ? { clusterId: pinned, conflict: recorded } : { clusterId: pinned };
  return { clusterId: recorded || (await derived()) };
}

/**
 * The other cluster ids whose markers name one of `sources` (the same Kind/Namespace/Name): what
 * a restore into a new cluster without its SyncStates looks like — the same sources' items,
 * marked with the old id. Never adopted (two clusters may run the same manifests on one
 * account); the worker says so.
 */
export function sameSourcesUnderOtherIds(
  descriptions: Iterable<string | null | undefined>,
  sources: readonly SourceRef[],
  clusterId: string,
): string[] {
  const wanted = new Set(sources.map(refString));
  const ids = new Set<string>();
  for (const d of descriptions) {
    const o = ownershipOf(d, clusterId);
    if (o.owner === 'other-cluster' && wanted.has(refString(o.ref))) ids.add(o.clusterId);
  }
  return [...ids].sort();
}
