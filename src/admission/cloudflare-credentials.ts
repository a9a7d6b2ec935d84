/**
 * The webhook's half of who may use a CloudflareCredentials (issue 23, D2): a Cloudflare source
 * is refused when the credentials it would write with (named, or the default) do not allow its
 * namespace, its zone or its priority (src/domain/cloudflare/credentials-use.ts decides; the
 * source's workflow checks the same again). Credentials that do not exist yet, or an ambiguous
 * default, are left to the workflow, which reports them on the source's status.
 */
import { ApplicationFailure } from '@temporalio/common';
import { credentialsUsePolicy, findCredentials } from '../activities/cloudflare/credentials.js';
import { credentialsUseRefusal } from '../domain/cloudflare/credentials-use.js';
import { legacyCredentialsOf } from '../domain/cloudflare/legacy-credentials.js';
import { canonical } from '../domain/cloudflare/merge.js';
import {
  credentialsRefOf,
  credentialsUseOf,
  isSourceKind,
  usesTunnelCredentials,
  type SourceSpec,
} from '../domain/cloudflare/sources.js';
import type { KubeClient } from '../kube/client.js';
import type { AdmissionRequest } from './review.js';

/** The refusal message, or undefined when the source may use its credentials (or is not one to check). */
export async function credentialsUseRefusalOf(kube: KubeClient, req: AdmissionRequest): Promise<string | undefined> {
  const kind = req.kind.kind;
  if (!isSourceKind(kind) || usesTunnelCredentials(kind) || !req.object) return undefined;
  const spec = (req.object.spec ?? {}) as SourceSpec;
  // A write that leaves the spec as it was (a finalizer, a label) is never refused: a deletion
  // must not be held up because the credentials' rules changed since.
  if (req.operation === 'UPDATE' && canonical(req.oldObject?.spec ?? {}) === canonical(spec)) return undefined;
  if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return undefined;
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
