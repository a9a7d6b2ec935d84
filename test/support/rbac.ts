/**
 * RBAC, read from rendered objects: deploy/rbac is the one place the grants are written; tests
 * derive what they check from it instead of restating it.
 */
import type { KubeObject } from './manifests.js';

export interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

export interface ServiceAccountRef {
  name: string;
  namespace: string;
}

interface Binding extends KubeObject {
  roleRef: { apiGroup: string; kind: string; name: string };
  subjects?: { kind: string; name: string; namespace?: string }[];
}

/** One permission: `resource` is `<plural>` or `<plural>/<subresource>`; group '' is the core group. */
export interface Grant {
  group: string;
  resource: string;
  verb: string;
  /** The role granting it, and for a RoleBinding the namespace it is limited to. */
  role: string;
  namespace?: string;
  /** The rule's resourceNames: the grant holds for these objects only. */
  names?: string[];
}

/** `<group or core>/<resource>[/<subresource>] <verb>`: how grants and audited calls are named. */
export function grantKey(g: Pick<Grant, 'group' | 'resource' | 'verb'>): string {
  return `${g.group || 'core'}/${g.resource} ${g.verb}`;
}

function findRole(objs: KubeObject[], b: Binding): KubeObject | undefined {
  return objs.find(
    (o) =>
      o.kind === b.roleRef.kind &&
      o.metadata.name === b.roleRef.name &&
      (b.roleRef.kind === 'ClusterRole' || o.metadata.namespace === b.metadata.namespace),
  );
}

/** Every (group, resource, verb) the ServiceAccount is granted by the roles bound to it in `objs`. */
export function grantsOf(objs: KubeObject[], sa: ServiceAccountRef): Grant[] {
  const out: Grant[] = [];
  for (const b of objs.filter((o) => o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding') as Binding[]) {
    if (!b.subjects?.some((s) => s.kind === 'ServiceAccount' && s.name === sa.name && s.namespace === sa.namespace))
      continue;
    const role = findRole(objs, b);
    const namespace = b.kind === 'RoleBinding' ? b.metadata.namespace : undefined;
    for (const rule of (role?.rules ?? []) as PolicyRule[]) {
      for (const group of rule.apiGroups ?? [])
        for (const resource of rule.resources ?? [])
          for (const verb of rule.verbs)
            out.push({
              group,
              resource,
              verb,
              role: `${b.roleRef.kind} ${b.roleRef.name}`,
              namespace,
              ...(rule.resourceNames ? { names: rule.resourceNames } : {}),
            });
    }
  }
  return out;
}

/** What a ServiceAccount may do, as `<group or core>/<resource>[ (in <namespace>)]: <verbs, sorted>`. */
export function permissionsOf(objs: KubeObject[], sa: ServiceAccountRef): Record<string, string[]> {
  const grants = new Map<string, Set<string>>();
  for (const g of grantsOf(objs, sa)) {
    const key = `${g.group || 'core'}/${g.resource}${g.namespace ? ` (in ${g.namespace})` : ''}`;
    grants.set(key, (grants.get(key) ?? new Set<string>()).add(g.verb));
  }
  return Object.fromEntries([...grants].sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, [...v].sort()]));
}
