/**
 * Asks the apiserver whether the creator of a request may use each object it names: discovery
 * maps each target's kind to its resource, then SubjectAccessReviews are made as that user
 * (username, uid, groups and extra from the AdmissionReview), so every authorizer of the cluster
 * answers, not a copy of RBAC rules.
 *
 * Cost: one review per (namespace, resource, verb) without a name first; an allowed answer there
 * covers every name (RBAC rules with resourceNames never allow a request without a name). Only
 * when it is denied is each named object reviewed, which is how a grant limited to some
 * resourceNames is still honoured. So the common case is one review per kind, whatever the
 * number of targets.
 */
import { AuthorizationV1Api, type V1ResourceAttributes, type V1SubjectAccessReview } from '@kubernetes/client-node';
import { mapLimited } from '../concurrency.js';
import { splitApiVersion, type KubeClient } from '../kube/client.js';
import type { Refusal, TargetCheck, UserInfo } from './review.js';

/** Reviews in flight at once for one admission request. */
const CONCURRENCY = 8;

export class AccessReviewer {
  private readonly authz: AuthorizationV1Api;

  constructor(private readonly kube: KubeClient) {
    this.authz = kube.kc.makeApiClient(AuthorizationV1Api);
  }

  /** Every target the user may not use (empty: all allowed). Throws when the apiserver cannot answer. */
  async refusals(checks: TargetCheck[], user: UserInfo): Promise<Refusal[]> {
    const refusals: Refusal[] = [];
    const byKind = groupBy(checks, (c) => `${c.apiVersion}\n${c.kind}`);
    // Per resource, the checks still to review, keyed by (namespace, verb) for the nameless review.
    const pending: { group: string; version: string; resource: string; checks: TargetCheck[] }[] = [];
    for (const targets of byKind.values()) {
      const { apiVersion, kind } = targets[0]!;
      const served = await this.kube.objects.servedResource(apiVersion, kind);
      // A kind that is not served cannot be checked, and could be served (by a CRD) before the
      // worker reads it; a cluster-scoped one has no namespace to check in. Refuse both now
      // rather than admit something unchecked.
      if (!served) for (const target of targets) refusals.push({ reason: 'unserved', target });
      else if (served.namespaced === !!targets[0]!.clusterScoped)
        // A capture target must be namespaced; CloudflareCredentials must be cluster-scoped as expected.
        for (const target of targets) refusals.push({ reason: 'cluster-scoped', target });
      else {
        const [group, version] = splitApiVersion(apiVersion);
        pending.push({ group, version, resource: served.name, checks: targets });
      }
    }

    const broad = pending.flatMap((p) =>
      [...groupBy(p.checks, (c) => `${c.namespace}\n${c.verbs.join(',')}`).values()].flatMap((same) =>
        same[0]!.verbs.map((verb) => ({ ...p, verb, namespace: same[0]!.namespace, checks: same })),
      ),
    );
    const broadAllowed = await mapLimited(broad, CONCURRENCY, (b) =>
      this.allowed(user, {
        group: b.group,
        version: b.version,
        resource: b.resource,
        verb: b.verb,
        namespace: b.namespace,
      }),
    );
    const narrow = broad
      .filter((_, i) => !broadAllowed[i])
      .flatMap((b) => dedupe(b.checks).map((target) => ({ ...b, target })));
    const narrowAllowed = await mapLimited(narrow, CONCURRENCY, (n) =>
      this.allowed(user, {
        group: n.group,
        version: n.version,
        resource: n.resource,
        verb: n.verb,
        namespace: n.namespace,
        name: n.target.name,
      }),
    );
    narrow.forEach((n, i) => {
      if (!narrowAllowed[i]) {
        refusals.push({
          reason: 'denied',
          target: n.target,
          verb: n.verb,
          resource: n.group ? `${n.resource}.${n.group}` : n.resource,
        });
      }
    });
    return refusals;
  }

  private allowed(user: UserInfo, attrs: V1ResourceAttributes): Promise<boolean> {
    return userMay(this.authz, user, attrs);
  }
}

/** Whether the apiserver's authorizers let `user` do what `attrs` say (a SubjectAccessReview as that user). */
export async function userMay(
  authz: AuthorizationV1Api,
  user: UserInfo,
  attrs: V1ResourceAttributes,
): Promise<boolean> {
  const review: V1SubjectAccessReview = await authz.createSubjectAccessReview({
    body: {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: { user: user.username, uid: user.uid, groups: user.groups, extra: user.extra, resourceAttributes: attrs },
    },
  });
  return review.status?.allowed === true && review.status.denied !== true;
}

function groupBy<T>(items: T[], key: (t: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) out.set(key(item), [...(out.get(key(item)) ?? []), item]);
  return out;
}

/** One check per name (a request may name an object twice). */
function dedupe(checks: TargetCheck[]): TargetCheck[] {
  return [...new Map(checks.map((c) => [c.name, c])).values()];
}
