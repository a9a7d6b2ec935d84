/**
 * Who may use a CloudflareCredentials, decided purely (issue 23, D2): the credentials list the
 * namespaces whose sources may write with them (`allowedNamespaces`), the zones they may write
 * to (`allowedZones`), and the namespaces whose sources may set a priority ahead of their kind's
 * default (`priorityNamespaces`), and the namespaces whose sources may take over Cloudflare
 * objects the operator did not create (`adoptNamespaces`: an existing tunnel, an unmarked DNS
 * record — knowing an ID is never a grant). The admission webhook refuses a source against these rules, and
 * the source's workflow checks them again with the credentials it resolves, so a source admitted
 * before the rules changed, or while the webhook was not registered, is refused too.
 *
 * Why an allow-list on the credentials and not a SubjectAccessReview (`use` on the credentials):
 * the worker writes long after admission and does not know who created a source, so it could not
 * repeat a review made as that user; a list on the credentials is checked the same way at both
 * places, and an administrator revokes a namespace by editing one object. Named credentials
 * already need `get` on them (checked at admission), so without a list they stay usable from
 * every namespace, as before; the default credentials need no grant at all, so without a list no
 * namespaced source may use them.
 *
 * The target's sync checks them a third time, on every spec it reads afresh (issue 33, N3): an
 * edit the webhook did not see (not registered, or made before the rules changed) never reaches
 * Cloudflare — the source is held as it was, with the refusal on its status.
 *
 * Cluster-scoped sources are made by cluster administrators and are not restricted by namespace
 * (zones still apply). Sources that write through a tunnel they name (TunnelBinding, the class
 * configs) use that tunnel's credentials: `get` on the tunnel authorises them, so the namespace
 * rule does not apply to them; the zone (their tunnel's domain) and the priority rules do.
 */
import type { CloudflareCredentialsSpec } from '../../api/cloudflare.js';

/** What the rules read from a CloudflareCredentials. */
export type CredentialsUsePolicy = Pick<
  CloudflareCredentialsSpec,
  'isDefault' | 'allowedNamespaces' | 'allowedZones' | 'priorityNamespaces' | 'adoptNamespaces'
> & { name: string };

/** A source asking to use the credentials. */
export interface CredentialsUse {
  kind: string;
  /** '' for a cluster-scoped source. */
  namespace: string;
  /** The source named the credentials (credentialsRef); false: they are the default. */
  named: boolean;
  /** The zone it writes to, when it writes to one. */
  zone?: string;
  /** Where the zone comes from, for the message (`spec.cloudflare.domain`…). */
  zoneField?: string;
  /** Its priority, and its kind's default (lower = ahead of the others). */
  priority: number;
  defaultPriority: number;
  /** It writes with the credentials of a tunnel it names. */
  throughTunnel?: boolean;
  /**
   * What it takes over that the operator did not create (`spec.existingTunnel`,
   * `spec.adoptExisting`), named for the message; needs `adoptNamespaces`.
   */
  adopts?: string;
}

export const CREDENTIALS_NOT_ALLOWED = 'CredentialsNotAllowed';
export const PRIORITY_NOT_ALLOWED = 'PriorityNotAllowed';
export const ADOPTION_NOT_ALLOWED = 'AdoptionNotAllowed';

const ANY = '*';
const listed = (list: string[] | undefined, name: string) => !!list?.some((n) => n === ANY || n === name);
const sameZone = (a: string, b: string) => a.replace(/\.$/, '').toLowerCase() === b.replace(/\.$/, '').toLowerCase();

/** Whether the credentials may write to `zone` (every zone when they list no `allowedZones`). */
export function zoneAllowed(policy: Pick<CredentialsUsePolicy, 'allowedZones'>, zone: string): boolean {
  return !policy.allowedZones || policy.allowedZones.some((z) => z === ANY || sameZone(z, zone));
}

/** Why the source may not use the credentials (undefined: it may). */
export function credentialsUseRefusal(
  policy: CredentialsUsePolicy,
  use: CredentialsUse,
): { reason: string; message: string } | undefined {
  const who = `CloudflareCredentials ${policy.name}`;
  if (use.namespace && !use.throughTunnel) {
    const allowed =
      policy.allowedNamespaces !== undefined ? listed(policy.allowedNamespaces, use.namespace) : use.named;
    if (!allowed)
      return {
        reason: CREDENTIALS_NOT_ALLOWED,
        message:
          policy.allowedNamespaces === undefined
            ? `${who} is the default credentials and lists no spec.allowedNamespaces, so no namespaced ${use.kind} may use them: an administrator adds "${use.namespace}" there, or name credentials in spec.cloudflare.credentialsRef`
            : `${who} may not be used from namespace "${use.namespace}" (spec.allowedNamespaces: ${policy.allowedNamespaces.join(', ') || 'none'})`,
      };
  }
  if (use.zone !== undefined && !zoneAllowed(policy, use.zone))
    return {
      reason: CREDENTIALS_NOT_ALLOWED,
      message: `${use.zoneField ? `${use.zoneField}: ` : ''}${who} may not write to zone ${use.zone} (spec.allowedZones: ${policy.allowedZones?.join(', ') || 'none'})`,
    };
  if (use.namespace && use.priority < use.defaultPriority && !listed(policy.priorityNamespaces, use.namespace))
    return {
      reason: PRIORITY_NOT_ALLOWED,
      message: `priority ${use.priority} would put this ${use.kind} ahead of the ${use.kind}s at the default ${use.defaultPriority}; only namespaces listed in spec.priorityNamespaces of ${who} may set a priority below ${use.defaultPriority}`,
    };
  if (use.namespace && use.adopts && !listed(policy.adoptNamespaces, use.namespace))
    return {
      reason: ADOPTION_NOT_ALLOWED,
      message: `${use.adopts} takes over a Cloudflare object this operator did not create; only namespaces listed in spec.adoptNamespaces of ${who} may (spec.adoptNamespaces: ${policy.adoptNamespaces?.join(', ') || 'none'})`,
    };
  return undefined;
}
