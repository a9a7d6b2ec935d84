/**
 * What the admission webhook checks, as pure functions of the AdmissionReview: which objects a
 * new request names, which verbs its creator must hold on each, and the messages it answers.
 * The apiserver calls (discovery, SubjectAccessReview) are in ./access.ts.
 *
 * Why: the worker reads (and, for a Detach capture, deletes) what a request names with its own,
 * cluster-wide permissions. Without this check anyone allowed to create a request could read
 * through the worker whatever the worker can read. The original state-snapshotter's webhook
 * checked, with a SubjectAccessReview, that the requesting user may `get` each target; this
 * restores that guarantee for every capture kind.
 */
import { CLOUDFLARE_API_VERSION, DEFAULT_CREDENTIALS_NAMESPACE } from '../api/cloudflare.js';
import type { SecretKeySelector } from '../api/cloudflare-zerotrust.js';
import type { CaptureTarget } from '../api/manifests.js';
import { canonical } from '../domain/cloudflare/merge.js';
import { credentialsRefOf, isSourceKind, type SourceSpec } from '../domain/cloudflare/sources.js';
import { REQUEST_KINDS } from '../api/request-kinds.js';
import { SandboxKind, SandboxPoolKind, type EnvVar } from '../api/sandbox.js';
import {
  capabilitiesRefusal,
  type AllowedCapabilities,
  type CapabilitiesSpec,
} from '../domain/sandbox-capabilities.js';
import { envSourceOf } from '../domain/sandbox-env.js';
import type { VolumeCaptureMode, VolumeTarget } from '../api/volumes.js';

/** The part of an `admission.k8s.io/v1` AdmissionRequest the webhook reads. */
export interface AdmissionRequest {
  uid: string;
  kind: { group: string; version: string; kind: string };
  namespace?: string;
  name?: string;
  operation: string;
  userInfo: UserInfo;
  object?: {
    metadata?: { name?: string; generateName?: string; annotations?: Record<string, string> };
    spec?: unknown;
    tunnelRef?: unknown;
  };
  /** UPDATE only: the object before the change. */
  oldObject?: { metadata?: { annotations?: Record<string, string> }; spec?: unknown; tunnelRef?: unknown };
}

export interface UserInfo {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export interface AdmissionReview {
  apiVersion: 'admission.k8s.io/v1';
  kind: 'AdmissionReview';
  request?: AdmissionRequest;
  response?: AdmissionResponse;
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: { code: number; reason?: string; message: string };
}

/** One object a request names, and what its creator must be allowed to do with it. */
export interface TargetCheck {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  verbs: string[];
  /** The object is cluster-scoped on purpose (CloudflareCredentials): checked without a namespace. */
  clusterScoped?: true;
}

/** The request kinds whose CREATE the webhook reviews (see ./webhook.ts for the registration). */
export const REVIEWED_KINDS = {
  ManifestCaptureRequest: REQUEST_KINDS.ManifestCaptureRequest.definition,
  VolumeCaptureRequest: REQUEST_KINDS.VolumeCaptureRequest.definition,
} as const;

/**
 * The Cloudflare source kinds, reviewed on CREATE and UPDATE (their specs change): the
 * CloudflareCredentials a source names and, for an AccessIdentityProvider, the Secret of its
 * client secret. The worker reads both with its own permissions, and writes to Cloudflare with
 * them; without this check anyone allowed to create a DNSRecord could write to any account the
 * operator holds credentials for, or send any Secret of the operator's namespace to Cloudflare.
 * A source that names no credentials uses the default ones, which an administrator chose.
 *
 * Tunnels: a Tunnel's creator must be allowed to create and update the Secret the worker writes
 * its credentials into and the cloudflared Deployment that runs it (both named after it, in its
 * namespace; a ClusterTunnel's in the operator's Cloudflare namespace); a TunnelBinding's or a class config's creator must be allowed
 * to `get` the Tunnel it routes traffic through (it writes with that Tunnel's credentials).
 */
export function cloudflareChecks(
  kind: string,
  object: { metadata?: { name?: string }; spec?: unknown; tunnelRef?: unknown },
  namespace: string,
): TargetCheck[] | undefined {
  if (!isSourceKind(kind)) return undefined;
  const spec = (object.spec ?? {}) as Record<string, unknown>;
  const checks: TargetCheck[] = [];
  if (kind === 'Tunnel' || kind === 'ClusterTunnel')
    for (const [apiVersion, objectKind] of [
      ['v1', 'Secret'],
      // Its connector: spec.deployPatch shapes the Pods (any image, volume, service account).
      ['apps/v1', 'Deployment'],
    ] as const)
      checks.push({
        apiVersion,
        kind: objectKind,
        namespace: kind === 'Tunnel' ? namespace : DEFAULT_CREDENTIALS_NAMESPACE,
        name: object.metadata?.name ?? '',
        verbs: ['create', 'update'],
      });
  const tunnelRef = (
    kind === 'TunnelBinding'
      ? object.tunnelRef
      : kind === 'TunnelIngressClassConfig' || kind === 'TunnelGatewayClassConfig'
        ? spec.tunnelRef
        : undefined
  ) as { kind?: string; name?: string; namespace?: string } | undefined;
  if (tunnelRef?.name)
    checks.push({
      apiVersion: CLOUDFLARE_API_VERSION,
      kind: tunnelRef.kind === 'ClusterTunnel' ? 'ClusterTunnel' : 'Tunnel',
      namespace: tunnelRef.kind === 'ClusterTunnel' ? '' : tunnelRef.namespace || namespace,
      name: tunnelRef.name,
      verbs: ['get'],
      ...(tunnelRef.kind === 'ClusterTunnel' ? { clusterScoped: true as const } : {}),
    });
  const credentials = credentialsRefOf(kind, spec as SourceSpec);
  if (credentials)
    checks.push({
      apiVersion: CLOUDFLARE_API_VERSION,
      kind: 'CloudflareCredentials',
      namespace: '',
      name: credentials,
      verbs: ['get'],
      clusterScoped: true,
    });
  const secretRef =
    kind === 'AccessIdentityProvider' ? (spec as { configSecretRef?: SecretKeySelector }).configSecretRef : undefined;
  if (secretRef?.name)
    checks.push({
      apiVersion: 'v1',
      kind: 'Secret',
      namespace: secretRef.namespace || DEFAULT_CREDENTIALS_NAMESPACE,
      name: secretRef.name,
      verbs: ['get'],
    });
  return checks;
}

/**
 * A SandboxPool makes the fast path create Pods from its agentTemplate (any image, command,
 * ServiceAccount, volumes), with the fast path's own permissions. So its creator must be allowed
 * to create Pods in the pool's namespace: reviewed on CREATE and on an UPDATE that changes the
 * spec (the template, the runtime settings, the pull Secrets the agents mount).
 */
export function sandboxPoolChecks(namespace: string): TargetCheck[] {
  return [{ apiVersion: 'v1', kind: 'Pod', namespace, name: '', verbs: ['create'] }];
}

/**
 * A SandboxPool's sandboxes get the capabilities its `sandboxSecurityContext` asks for: one beyond
 * the default set only in a namespace the operator allowed it for (`allowed`, the admission
 * role's setting). Why it is refused, or undefined. Reviewed with the pool's other checks (CREATE,
 * and an UPDATE that changes the spec).
 */
export function sandboxPoolCapabilitiesRefusal(
  req: AdmissionRequest,
  allowed: AllowedCapabilities,
): string | undefined {
  if (req.kind.group !== SandboxPoolKind.group || req.kind.kind !== SandboxPoolKind.kind) return undefined;
  const spec = req.object?.spec as { sandboxSecurityContext?: { capabilities?: CapabilitiesSpec } } | undefined;
  return capabilitiesRefusal(req.namespace ?? '', spec?.sandboxSecurityContext?.capabilities, allowed);
}

/**
 * A Sandbox's `envs[].valueFrom` makes the fast path read a Secret's or ConfigMap's key, with its
 * own permissions, and give the value to the sandbox — which its creator can read from inside. So
 * its creator must be allowed to `get` each object named (optional ones too), in the Sandbox's
 * namespace: reviewed on CREATE and on an UPDATE that changes envs (a reset or a recreate reads
 * them again).
 */
export function sandboxChecks(spec: { envs?: EnvVar[] }, namespace: string): TargetCheck[] {
  return (spec.envs ?? []).flatMap((e) => {
    const source = e.valueFrom && envSourceOf(namespace, e.valueFrom);
    return source ? [{ apiVersion: 'v1', kind: source.kind, namespace, name: source.name, verbs: ['get'] }] : [];
  });
}

/**
 * The objects a new request names and the verbs required on each:
 * - ManifestCaptureRequest: `get` on every target (the worker reads and stores it);
 * - VolumeCaptureRequest: `get` on every PersistentVolumeClaim, and `delete` too in Detach mode,
 *   where the worker deletes the claim to keep its volume.
 * VolumeRestoreRequest is not reviewed yet: its source is a cluster-scoped snapshot content or
 * PersistentVolume that namespace users normally may not read at all, so `get` on the source would
 * refuse every ordinary restore; the right rule (the source was captured from the user's own
 * namespace by a request they may read) needs its own design.
 * Returns undefined for kinds the webhook does not review (it then allows them).
 */
export function checksFor(req: AdmissionRequest): TargetCheck[] | undefined {
  const namespace = req.namespace ?? '';
  const spec = (req.object?.spec ?? {}) as Record<string, unknown>;
  if (req.operation === 'CREATE' || req.operation === 'UPDATE') {
    const cloudflare = req.object ? cloudflareChecks(req.kind.kind, req.object, namespace) : undefined;
    // An update that leaves the spec as it was (the worker's finalizer, a label) names nothing
    // new: it must never be refused, or a deletion could be held up by a finalizer left in place.
    if (
      cloudflare &&
      req.operation === 'UPDATE' &&
      canonical(req.oldObject?.spec ?? {}) === canonical(spec) &&
      canonical(req.oldObject?.tunnelRef ?? {}) === canonical(req.object?.tunnelRef ?? {})
    )
      return [];
    if (cloudflare) return cloudflare;
    if (req.kind.group === SandboxKind.group && req.kind.kind === SandboxKind.kind)
      // The fast path's own writes (finalizer, annotations) never change envs: never refused.
      return req.operation === 'UPDATE' &&
        canonical((req.oldObject?.spec as { envs?: unknown } | undefined)?.envs ?? []) ===
          canonical((spec as { envs?: unknown }).envs ?? [])
        ? []
        : sandboxChecks(spec, namespace);
    if (req.kind.group === SandboxPoolKind.group && req.kind.kind === SandboxPoolKind.kind)
      return req.operation === 'UPDATE' && canonical(req.oldObject?.spec ?? {}) === canonical(spec)
        ? []
        : sandboxPoolChecks(namespace);
  }
  // A capture request's spec is immutable: its targets are checked once, at CREATE.
  if (req.operation !== 'CREATE') return undefined;
  switch (req.kind.kind) {
    case 'ManifestCaptureRequest': {
      const targets = (spec.targets ?? []) as CaptureTarget[];
      return targets.map((t) => ({ apiVersion: t.apiVersion, kind: t.kind, name: t.name, namespace, verbs: ['get'] }));
    }
    case 'VolumeCaptureRequest': {
      const targets = (spec.targets ?? []) as VolumeTarget[];
      const verbs = (spec.mode as VolumeCaptureMode | undefined) === 'Detach' ? ['get', 'delete'] : ['get'];
      return targets.map((t) => ({
        apiVersion: t.apiVersion,
        kind: t.kind,
        name: t.name,
        // The schema says a target's namespace must be the request's; check where the worker would act.
        namespace: t.namespace || namespace,
        verbs,
      }));
    }
    default:
      return undefined;
  }
}

/** A target the creator may not use, or one whose kind cannot be checked (so is refused). */
export type Refusal =
  | { reason: 'denied'; target: TargetCheck; verb: string; resource: string }
  | { reason: 'unserved'; target: TargetCheck }
  | { reason: 'cluster-scoped'; target: TargetCheck };

/** At most this many refusals are spelled out in one message; the rest are counted. */
const MAX_LISTED = 10;

export function describeUser(user: UserInfo): string {
  return user.username ? `user "${user.username}"` : 'an anonymous user';
}

function describeRefusal(r: Refusal, user: UserInfo): string {
  const t = r.target;
  // A check without a name is on the kind (e.g. any Pod a SandboxPool's workflow would create).
  const label = t.name ? `${t.kind} "${t.name}" (${t.apiVersion})` : `${t.kind}s (${t.apiVersion})`;
  switch (r.reason) {
    case 'denied':
      return `${label}: ${describeUser(user)} may not ${r.verb} ${r.resource}${t.clusterScoped ? '' : ` in namespace "${t.namespace}"`}`;
    case 'unserved':
      return `${label}: the apiserver does not serve ${t.kind} in ${t.apiVersion}, so access to it cannot be checked`;
    case 'cluster-scoped':
      return `${label}: ${t.kind} is cluster-scoped; targets are namespaced objects in the request's namespace`;
  }
}

/** The message of a refusal: which targets, and why, so the user can fix the request or ask for access. */
export function refusalMessage(kind: string, refusals: Refusal[], user: UserInfo): string {
  const listed = refusals.slice(0, MAX_LISTED).map((r) => describeRefusal(r, user));
  const more = refusals.length > MAX_LISTED ? `; and ${refusals.length - MAX_LISTED} more` : '';
  if (kind === SandboxKind.kind)
    return `a Sandbox's envs[].valueFrom makes the operator read the Secret or ConfigMap it names into the sandbox, so its creator must be allowed to get it, and is not: ${listed.join('; ')}${more}`;
  if (kind === SandboxPoolKind.kind)
    return `a SandboxPool makes the operator create its agent Pods from spec.agentTemplate, so its creator must be allowed to create Pods in its namespace, and is not: ${listed.join('; ')}`;
  return (
    `a ${kind} may only name objects its creator may use, and ${refusals.length === 1 ? 'this target is' : 'these targets are'} ` +
    `refused: ${listed.join('; ')}${more}`
  );
}

export function allow(uid: string): AdmissionResponse {
  return { uid, allowed: true };
}

export function refuse(uid: string, code: number, message: string): AdmissionResponse {
  return { uid, allowed: false, status: { code, reason: code === 403 ? 'Forbidden' : 'InternalError', message } };
}
