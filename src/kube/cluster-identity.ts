/**
 * The default id of this cluster in the ownership markers it writes to Cloudflare: derived from
 * the UID of its `kube-system` namespace, which every cluster has and no two clusters share. A
 * fixed default (`default`) made two clusters sharing a Cloudflare account, both left at it,
 * delete each other's items. `DO_CLUSTER_ID` still overrides it.
 */
import type { KubeClient } from './client.js';

/** `k-` and the first 12 hex digits of kube-system's UID: short, so descriptions keep their room. */
export async function defaultClusterId(kube: KubeClient): Promise<string> {
  const ns = await kube.core.readNamespace({ name: 'kube-system' });
  const uid = ns.metadata?.uid?.replaceAll('-', '');
  if (!uid) throw new Error('the kube-system namespace has no UID');
  return `k-${uid.slice(0, 12)}`;
}
