/**
 * A Tunnel's connector, the cloudflared Deployment (src/domain/cloudflare/connector.ts builds
 * it): written after the tunnel and its credentials Secret exist, and deleted when the Tunnel is
 * removed, before its tunnel is. It lives next to the Secret (the Tunnel's namespace; a
 * ClusterTunnel's in the operator's Cloudflare namespace) and is owned by the Tunnel, so the
 * garbage collector also removes it with the Tunnel. A Deployment of that name that the Tunnel
 * does not control is never changed or deleted.
 *
 * A Tunnel's Deployment that selects its Pods by other labels — the original operator's, for a
 * Tunnel migrated from it — is replaced: a selector cannot be changed in place. On removal the
 * Deployment is deleted in the foreground and waited for until its Pods are gone, so no
 * cloudflared holds a connection when the tunnel is deleted (Cloudflare refuses that, 1022).
 */
import { ApplicationFailure } from '@temporalio/common';
import type { KubernetesObject, V1Deployment } from '@kubernetes/client-node';
import { DEFAULT_CREDENTIALS_NAMESPACE } from '../../api/cloudflare.js';
import { ClusterTunnelKind, TunnelKind, type TunnelSpec } from '../../api/cloudflare-tunnels.js';
import type { CloudflareConfig } from '../../config.js';
import { TOKEN_CHECKSUM_ANNOTATION, connectorDeployment, selectorDiffers } from '../../domain/cloudflare/connector.js';
import type { SourceRef } from '../../domain/cloudflare/markers.js';
import { failedWith, ok, type Outcome } from '../../domain/results.js';
import { apiMessage, statusCode, type KubeClient } from '../../kube/client.js';
import { getObject } from './calls.js';
import { kubeFailure } from './errors.js';

export interface ConnectorRequest {
  ref: SourceRef;
  uid: string;
}

const deploymentRef = (namespace: string, name: string) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  namespace,
  name,
});

export function createConnectorActivities(kube: KubeClient, config: Pick<CloudflareConfig, 'cloudflaredImage'>) {
  const placeOf = (ref: SourceRef) => ({
    namespace: ref.kind === 'ClusterTunnel' ? DEFAULT_CREDENTIALS_NAMESPACE : ref.namespace!,
    name: ref.name,
  });

  /** The Deployment of that name if this Tunnel controls it; 'foreign' if someone else's. */
  async function current(req: ConnectorRequest): Promise<V1Deployment | 'foreign' | undefined> {
    const { namespace, name } = placeOf(req.ref);
    const dep = await getObject<V1Deployment>(kube, deploymentRef(namespace, name));
    if (!dep) return undefined;
    const controller = dep.metadata?.ownerReferences?.find((o) => o.controller);
    return controller?.uid === req.uid ? dep : 'foreign';
  }

  /** Creates or updates the connector of the Tunnel as its spec now says (server-side apply). */
  async function applyTunnelConnector(
    req: ConnectorRequest,
  ): Promise<Outcome<{ deployment: string }, { reason: string; message: string }>> {
    const def = req.ref.kind === 'ClusterTunnel' ? ClusterTunnelKind : TunnelKind;
    const tunnel = await getObject<KubernetesObject & { spec: TunnelSpec }>(kube, {
      apiVersion: def.apiVersion,
      kind: def.kind,
      namespace: req.ref.namespace,
      name: req.ref.name,
    });
    if (!tunnel || tunnel.metadata?.uid !== req.uid || tunnel.metadata.deletionTimestamp)
      return failedWith({ reason: 'Gone', message: `${req.ref.kind} ${req.ref.name} no longer exists` });
    const { namespace, name } = placeOf(req.ref);
    const built = connectorDeployment(
      {
        apiVersion: def.apiVersion,
        kind: def.kind as 'Tunnel' | 'ClusterTunnel',
        name,
        uid: req.uid,
        spec: tunnel.spec,
      },
      {
        namespace,
        secretName: name,
        defaultImage: config.cloudflaredImage,
        // Recorded on the Tunnel by ensureTunnel when it writes the Secret (the worker never reads Secrets).
        ...(tunnel.metadata.annotations?.[TOKEN_CHECKSUM_ANNOTATION]
          ? { tokenChecksum: tunnel.metadata.annotations[TOKEN_CHECKSUM_ANNOTATION] }
          : {}),
      },
    );
    if ('problem' in built) return failedWith({ reason: 'InvalidSpec', message: built.problem });
    const existing = await current(req);
    if (existing === 'foreign')
      return failedWith({
        reason: 'ConnectorConflict',
        message: `Deployment ${namespace}/${name} exists and is not this ${req.ref.kind}'s: it is never changed (delete or rename it)`,
      });
    if (
      existing &&
      !existing.metadata?.deletionTimestamp &&
      selectorDiffers(existing, { kind: def.kind as 'Tunnel' | 'ClusterTunnel', name })
    ) {
      // Its own Deployment under another selector (the original operator's): made again, as the
      // selector is immutable. Its Pods go with it (background), the new ones start at once.
      try {
        await kube.delete(deploymentRef(namespace, name), { uid: existing.metadata!.uid! });
      } catch (err) {
        throw kubeFailure(err, `replace Deployment ${namespace}/${name}`);
      }
    }
    try {
      await kube.apply(built.deployment as KubernetesObject);
    } catch (err) {
      // The patch made a Deployment the apiserver refuses: the spec's fault, said as the apiserver says it.
      const code = statusCode(err);
      if (code === 422 || code === 400)
        return failedWith({
          reason: 'InvalidSpec',
          message: `spec.deployPatch: the cloudflared Deployment is refused: ${apiMessage(err)}`,
        });
      throw kubeFailure(err, `apply Deployment ${namespace}/${name}`);
    }
    return ok({ deployment: `${namespace}/${name}` });
  }

  /**
   * Deletes the connector (only if this Tunnel controls it), in the foreground: the Deployment
   * stays until its ReplicaSets and Pods are gone. Done when it is gone; until then a retryable
   * failure (the workflow's retries are the wait).
   */
  async function removeTunnelConnector(req: ConnectorRequest): Promise<void> {
    const dep = await current(req);
    if (!dep || dep === 'foreign') return;
    const { namespace, name } = placeOf(req.ref);
    try {
      if (!dep.metadata?.deletionTimestamp)
        await kube.delete(deploymentRef(namespace, name), { uid: dep.metadata!.uid!, propagationPolicy: 'Foreground' });
    } catch (err) {
      throw err instanceof ApplicationFailure ? err : kubeFailure(err, `delete Deployment ${namespace}/${name}`);
    }
    const after = await current(req);
    if (after === undefined || after === 'foreign') return;
    throw ApplicationFailure.retryable(
      `waiting for the connector's Pods (Deployment ${namespace}/${name}) to stop before the tunnel is deleted`,
      'ConnectorStopping',
    );
  }

  return { applyTunnelConnector, removeTunnelConnector };
}

export type ConnectorActivities = ReturnType<typeof createConnectorActivities>;
