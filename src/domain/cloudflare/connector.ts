/**
 * The connector of a Tunnel/ClusterTunnel: the `cloudflared` Deployment that runs its tunnel, as
 * the original builds it (remotely-managed: cloudflared takes its ingress rules from Cloudflare,
 * so no config file), from the v1alpha1 fields `size`, `image`, `nodeSelectors`, `tolerations`,
 * then `spec.deployPatch` applied as a strategic merge patch. Pure: the activity
 * (src/activities/kubernetes/connector.ts) reads the Tunnel and writes what this returns.
 */
import { parse } from 'yaml';
import type { TunnelSpec } from '../../api/cloudflare-tunnels.js';
import { strategicMerge } from '../strategic-merge.js';
import { caPoolPath } from './tunnels.js';

export interface ConnectorOwner {
  apiVersion: string;
  kind: 'Tunnel' | 'ClusterTunnel';
  name: string;
  uid: string;
  spec: TunnelSpec;
}

export interface ConnectorPlace {
  /** Where the Deployment goes: the Tunnel's namespace, a ClusterTunnel's operator namespace. */
  namespace: string;
  /** The tunnel's credentials Secret in that namespace (its `token` key is the run token). */
  secretName: string;
  /** The image when the spec names none. */
  defaultImage: string;
  /**
   * A digest of the run token in that Secret, on the Pod template: a rotated token changes the
   * template, so the Pods roll and read the new one (cloudflared reads its token only at start).
   */
  tokenChecksum?: string;
}

/** The Pod template annotation that carries the run token's digest (and the Tunnel's, where the worker records it). */
export const TOKEN_CHECKSUM_ANNOTATION = 'cloudflare-operator.io/token-checksum';

/** Port of cloudflared's metrics and `/ready` endpoint, as the original sets it. */
export const CONNECTOR_METRICS_PORT = 2000;

/** The labels that select a Tunnel's connector Pods (stable: a Deployment's selector is immutable). */
export function connectorLabels(owner: Pick<ConnectorOwner, 'kind' | 'name'>): Record<string, string> {
  return {
    'app.kubernetes.io/name': 'cloudflared',
    'app.kubernetes.io/managed-by': 'durable-operators',
    'cloudflare-operator.io/tunnel': owner.name,
    'cloudflare-operator.io/tunnel-kind': owner.kind,
  };
}

/**
 * Whether a Deployment of the Tunnel's (its controller) selects its Pods otherwise than the
 * connector does — the original operator's `cloudflare-operator.io/{tunnel,app,id,name,domain,is-cluster-tunnel}`
 * selector, say. A selector is immutable: such a Deployment is replaced (deleted, then made again).
 */
export function selectorDiffers(
  current: { spec?: { selector?: { matchLabels?: Record<string, string>; matchExpressions?: unknown[] } } },
  owner: Pick<ConnectorOwner, 'kind' | 'name'>,
): boolean {
  const selector = current.spec?.selector;
  const want = connectorLabels(owner);
  const have = selector?.matchLabels ?? {};
  if (selector?.matchExpressions?.length) return true;
  const keys = new Set([...Object.keys(want), ...Object.keys(have)]);
  return [...keys].some((k) => want[k] !== have[k]);
}

/** `spec.deployPatch` parsed (JSON or YAML, as `kubectl patch` takes it), or why it cannot be used. */
export function parseDeployPatch(patch: string | undefined): Record<string, unknown> | string {
  if (patch === undefined || !patch.trim()) return {};
  let parsed: unknown;
  try {
    parsed = parse(patch);
  } catch (err) {
    return `spec.deployPatch: not JSON or YAML (${(err as Error).message.split('\n')[0]})`;
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed))
    return 'spec.deployPatch: must be an object (a strategic merge patch of the Deployment)';
  return parsed as Record<string, unknown>;
}

/** The Deployment before `deployPatch`: what the original's deploymentForTunnel builds. */
export function baseConnectorDeployment(owner: ConnectorOwner, place: ConnectorPlace): Record<string, unknown> {
  const { spec } = owner;
  const labels = connectorLabels(owner);
  const certs = spec.originCaPool
    ? {
        volumeMounts: [{ name: 'certs', mountPath: caPoolPath('').replace(/\/$/, ''), readOnly: true }],
        volumes: [{ name: 'certs', secret: { secretName: spec.originCaPool, defaultMode: 0o644 } }],
      }
    : undefined;
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: owner.name,
      namespace: place.namespace,
      labels,
      ownerReferences: [
        {
          apiVersion: owner.apiVersion,
          kind: owner.kind,
          name: owner.name,
          uid: owner.uid,
          controller: true,
          // true would need `update` on the Tunnel's finalizers; the finalizer orders the removal instead.
          blockOwnerDeletion: false,
        },
      ],
    },
    spec: {
      // Set only when `size` says so: unset, the replicas are whoever scales the Deployment's (an
      // HPA, `kubectl scale`) — the re-apply at each resolve would otherwise undo them (1 at creation).
      ...(spec.size !== undefined ? { replicas: spec.size } : {}),
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [
            {
              name: 'cloudflared',
              image: spec.image || place.defaultImage,
              // Remotely managed: the token names the tunnel and the rules come from Cloudflare.
              // The token is read from TUNNEL_TOKEN (cloudflared's variable for --token), so it
              // never shows in the Pod's command line.
              args: [
                'tunnel',
                '--no-autoupdate',
                '--protocol',
                spec.protocol ?? 'auto',
                '--metrics',
                `0.0.0.0:${CONNECTOR_METRICS_PORT}`,
                'run',
              ],
              env: [{ name: 'TUNNEL_TOKEN', valueFrom: { secretKeyRef: { name: place.secretName, key: 'token' } } }],
              ports: [{ name: 'metrics', containerPort: CONNECTOR_METRICS_PORT, protocol: 'TCP' }],
              livenessProbe: {
                httpGet: { path: '/ready', port: CONNECTOR_METRICS_PORT },
                failureThreshold: 1,
                initialDelaySeconds: 10,
                periodSeconds: 10,
              },
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                runAsUser: 1002,
                capabilities: { drop: ['ALL'] },
              },
              ...(certs ? { volumeMounts: certs.volumeMounts } : {}),
            },
          ],
          ...(certs ? { volumes: certs.volumes } : {}),
          ...(spec.nodeSelectors && Object.keys(spec.nodeSelectors).length ? { nodeSelector: spec.nodeSelectors } : {}),
          ...(spec.tolerations?.length ? { tolerations: spec.tolerations } : {}),
        },
      },
    },
  };
}

/**
 * The Deployment to write, or why it cannot be built. The patch may change anything but what
 * ties the Deployment to its Tunnel (name, namespace, owner, the selector's labels): those are
 * set again after it.
 */
export function connectorDeployment(
  owner: ConnectorOwner,
  place: ConnectorPlace,
): { deployment: Record<string, unknown> } | { problem: string } {
  const patch = parseDeployPatch(owner.spec.deployPatch);
  if (typeof patch === 'string') return { problem: patch };
  const base = baseConnectorDeployment(owner, place);
  let patched: Record<string, unknown>;
  try {
    patched = strategicMerge(base, patch);
  } catch (err) {
    return { problem: `spec.deployPatch: ${(err as Error).message}` };
  }
  const baseMeta = base.metadata as Record<string, unknown>;
  const meta = (patched.metadata ?? {}) as Record<string, unknown>;
  patched.apiVersion = 'apps/v1';
  patched.kind = 'Deployment';
  patched.metadata = {
    ...meta,
    name: baseMeta.name,
    namespace: baseMeta.namespace,
    labels: { ...((meta.labels as object) ?? {}), ...connectorLabels(owner) },
    ownerReferences: baseMeta.ownerReferences,
  };
  const spec = (patched.spec ?? {}) as Record<string, unknown>;
  const template = (spec.template ?? {}) as Record<string, unknown>;
  const templateMeta = (template.metadata ?? {}) as Record<string, unknown>;
  patched.spec = {
    ...spec,
    selector: { matchLabels: connectorLabels(owner) },
    template: {
      ...template,
      metadata: {
        ...templateMeta,
        labels: { ...((templateMeta.labels as object) ?? {}), ...connectorLabels(owner) },
        ...(place.tokenChecksum
          ? {
              annotations: {
                ...((templateMeta.annotations as object) ?? {}),
                [TOKEN_CHECKSUM_ANNOTATION]: place.tokenChecksum,
              },
            }
          : {}),
      },
    },
  };
  return { deployment: patched };
}
