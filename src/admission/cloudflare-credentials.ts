/**
 * The webhook's half of who may use a CloudflareCredentials (issue 23, D2): a Cloudflare source
 * is refused when the credentials it would write with (named, or the default) do not allow its
 * namespace, its zone or its priority (src/domain/cloudflare/credentials-use.ts decides; the
 * source's workflow and the target's sync check the same again). Credentials that do not exist
 * yet, or an ambiguous default, are left to the workflow, which reports them on the source's status.
 *
 * A source that writes through a tunnel it names (TunnelBinding, the class configs) uses that
 * tunnel's credentials: the tunnel is read here (its credentials and domain, nothing else) so its
 * priority and zone are judged as the workflow judges them (issue 33, N3). A tunnel that does not
 * exist yet is left to the workflow too.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { KubernetesObject } from '@kubernetes/client-node';
import { ClusterTunnelKind, TunnelKind, type TunnelSpec } from '../api/cloudflare-tunnels.js';
import { credentialsUsePolicy, findCredentials } from '../activities/cloudflare/credentials.js';
import { getObject } from '../activities/kubernetes/calls.js';
import { credentialsUseRefusal } from '../domain/cloudflare/credentials-use.js';
import { legacyCredentialsOf } from '../domain/cloudflare/legacy-credentials.js';
import { canonical } from '../domain/cloudflare/merge.js';
import {
  credentialsRefOf,
  credentialsUseOf,
  isSourceKind,
  usesTunnelCredentials,
  type SourceKind,
  type SourceSpec,
} from '../domain/cloudflare/sources.js';
import type { TunnelFacts } from '../domain/cloudflare/tunnels.js';
import type { KubeClient } from '../kube/client.js';
import type { AdmissionRequest } from './review.js';

type SourceObject = KubernetesObject & { spec?: SourceSpec; [field: string]: unknown };

/** What the rules read of an object: everything but its metadata and status (a TunnelBinding's fields are top-level). */
function content(obj: SourceObject | undefined): string {
  if (!obj) return '';
  const { metadata: _m, status: _s, apiVersion: _a, kind: _k, ...rest } = obj;
  return canonical(rest);
}

/** The refusal message, or undefined when the source may use its credentials (or is not one to check). */
export async function credentialsUseRefusalOf(kube: KubeClient, req: AdmissionRequest): Promise<string | undefined> {
  const kind = req.kind.kind;
  if (!isSourceKind(kind) || !req.object) return undefined;
  if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return undefined;
  const object = req.object as SourceObject;
  // A write that leaves what the rules read as it was (a finalizer, a label) is never refused: a
  // deletion must not be held up because the credentials' rules changed since.
  if (req.operation === 'UPDATE' && content(req.oldObject as SourceObject | undefined) === content(object))
    return undefined;
  const spec = usesTunnelCredentials(kind)
    ? await throughTunnelView(kube, kind, object, req.namespace)
    : ((object.spec ?? {}) as SourceSpec);
  if (!spec) return undefined;
  // The original's inline credentials are refused by the workflow with their own reason.
  if (legacyCredentialsOf(spec)) return undefined;
  let creds;
  try {
    creds = await findCredentials(kube, credentialsRefOf(kind, spec));
  } catch (err) {
    if (err instanceof ApplicationFailure && err.nonRetryable) return undefined;
    throw err;
  }
  const refused = credentialsUseRefusal(
    credentialsUsePolicy(creds),
    credentialsUseOf(kind, spec, req.namespace, creds.spec.defaultDomain),
  );
  return (
    refused && `a ${kind} may only use CloudflareCredentials that allow it (${refused.reason}): ${refused.message}`
  );
}

/**
 * A source naming a tunnel as the rules read it: its fields and its tunnel's credentials and
 * domain (undefined when the tunnel does not exist: the workflow reports that).
 */
async function throughTunnelView(
  kube: KubeClient,
  kind: SourceKind,
  object: SourceObject,
  namespace: string | undefined,
): Promise<SourceSpec | undefined> {
  const binding = kind === 'TunnelBinding';
  const ref = (binding ? object.tunnelRef : object.spec?.tunnelRef) as
    { kind?: string; name?: string; namespace?: string } | undefined;
  if (!ref?.name) return undefined;
  const cluster = ref.kind === 'ClusterTunnel';
  const def = cluster ? ClusterTunnelKind : TunnelKind;
  const tunnelNamespace = cluster ? undefined : (!binding && ref.namespace) || namespace;
  const tunnel = await getObject<KubernetesObject & { spec?: TunnelSpec }>(kube, {
    apiVersion: def.apiVersion,
    kind: def.kind,
    ...(tunnelNamespace ? { namespace: tunnelNamespace } : {}),
    name: ref.name,
  });
  if (!tunnel) return undefined;
  const cf = tunnel.spec?.cloudflare;
  const facts: TunnelFacts = {
    kind: cluster ? 'ClusterTunnel' : 'Tunnel',
    name: ref.name,
    ...(tunnelNamespace ? { namespace: tunnelNamespace } : {}),
    ...(cf?.credentialsRef?.name ? { credentialsRef: cf.credentialsRef.name } : {}),
    ...(cf?.domain ? { domain: cf.domain } : {}),
  };
  const own = binding
    ? {
        ...(object.spec?.priority !== undefined ? { priority: object.spec.priority } : {}),
        tunnelRef: object.tunnelRef,
      }
    : (object.spec ?? {});
  return { ...own, namespace: namespace ?? '', tunnel: facts } as SourceSpec;
}
