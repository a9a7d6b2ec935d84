/**
 * The worker's record of the tunnel a Tunnel or ClusterTunnel made — the annotations
 * `cloudflare-operator.io/cloudflare-id` and `…/cloudflare-id-proof` — is the worker's to write
 * (issue 33, N1): a user who set them could make the worker treat another team's tunnel as this
 * object's, run it and delete it. So a CREATE or UPDATE that sets, changes or removes either is
 * refused unless its author may write the object's status: the worker does (deploy/rbac/worker.yaml),
 * and whoever else may is as trusted as the worker already, since the status records the same ID.
 * The worker checks its proof again before it honours the annotation (src/domain/cloudflare/tunnel-ownership.ts).
 */
import { AuthorizationV1Api } from '@kubernetes/client-node';
import { CLOUDFLARE_GROUP, CLOUDFLARE_ID_ANNOTATION } from '../api/cloudflare.js';
import { ClusterTunnelKind, TunnelKind } from '../api/cloudflare-tunnels.js';
import { CLOUDFLARE_ID_PROOF_ANNOTATION } from '../domain/cloudflare/tunnel-ownership.js';
import type { KubeClient } from '../kube/client.js';
import { userMay } from './access.js';
import { describeUser, type AdmissionRequest } from './review.js';

const RECORD_ANNOTATIONS = [CLOUDFLARE_ID_ANNOTATION, CLOUDFLARE_ID_PROOF_ANNOTATION] as const;

/** The worker's record annotations a request sets, changes or removes on a Tunnel or ClusterTunnel. */
export function changedTunnelRecord(req: AdmissionRequest): string[] {
  if (req.kind.group !== CLOUDFLARE_GROUP || (req.kind.kind !== 'Tunnel' && req.kind.kind !== 'ClusterTunnel'))
    return [];
  if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return [];
  const now = req.object?.metadata?.annotations ?? {};
  const before = (req.operation === 'UPDATE' ? req.oldObject?.metadata?.annotations : undefined) ?? {};
  return RECORD_ANNOTATIONS.filter((a) => (now[a] ?? '') !== (before[a] ?? ''));
}

/** The refusal message, or undefined when the request leaves the record alone or its author may write it. */
export async function tunnelRecordRefusalOf(kube: KubeClient, req: AdmissionRequest): Promise<string | undefined> {
  const changed = changedTunnelRecord(req);
  if (!changed.length) return undefined;
  const def = req.kind.kind === 'ClusterTunnel' ? ClusterTunnelKind : TunnelKind;
  const { userInfo: user } = req;
  const allowed = await userMay(kube.kc.makeApiClient(AuthorizationV1Api), user, {
    group: def.group,
    resource: def.plural,
    subresource: 'status',
    verb: 'patch',
    ...(def.kind === 'Tunnel' ? { namespace: req.namespace ?? '' } : {}),
    name: req.object?.metadata?.name ?? req.name ?? '',
  });
  if (allowed) return undefined;
  return (
    `${changed.map((a) => `metadata.annotations["${a}"]`).join(' and ')}: set only by the operator's worker, ` +
    `which records there the tunnel this ${def.kind} made; ${describeUser(user)} may not set, change or remove it. ` +
    `Leave it out of the manifest — a tunnel made elsewhere is bound with spec.existingTunnel (which the ` +
    `CloudflareCredentials' adoptNamespaces must allow)`
  );
}
