/**
 * A tiny kustomize resolver for tests: renders a kustomization directory to the list of objects
 * `kustomize build` would produce, for the subset of kustomize that deploy/ uses:
 *
 * - `resources`: YAML files (multi-document) and directories holding a kustomization.yaml,
 *   recursively; each directory's own transformers apply to its resources before its parent's;
 * - `namespace`: sets metadata.namespace of namespaced objects, renames Namespace objects (as
 *   kustomize does), and fills in the namespace of RoleBinding/ClusterRoleBinding subjects that
 *   are ServiceAccounts named `default`;
 * - `labels` (pairs, includeSelectors, includeTemplates) and `commonLabels`.
 *
 * Anything else in a kustomization is an error rather than silently ignored, so a base that
 * starts using more of kustomize fails here until the resolver learns it. Like kustomize, two
 * objects with the same identity are an error.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [key: string]: unknown;
  };
  [key: string]: unknown;
}

/** Kinds kustomize treats as cluster-scoped (never given a namespace). */
export const CLUSTER_SCOPED_KINDS = new Set([
  'APIService',
  'CertificateSigningRequest',
  'ClusterRole',
  'ClusterRoleBinding',
  'CSIDriver',
  'CSINode',
  'CustomResourceDefinition',
  'IngressClass',
  'MutatingWebhookConfiguration',
  'Namespace',
  'Node',
  'PersistentVolume',
  'PodSecurityPolicy',
  'PriorityClass',
  'RuntimeClass',
  'StorageClass',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
  'ValidatingWebhookConfiguration',
  'VolumeAttachment',
  // Like kustomize, custom kinds are not listed: kustomize does not know their scope either and
  // treats them as namespaced, so keep cluster-scoped custom objects out of namespaced bases.
]);

const KUSTOMIZATION_FILES = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'];
const SUPPORTED_FIELDS = new Set([
  'apiVersion',
  'kind',
  'metadata',
  'resources',
  'namespace',
  'labels',
  'commonLabels',
]);
const WORKLOAD_KINDS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job']);

interface Kustomization {
  resources?: string[];
  namespace?: string;
  labels?: { pairs: Record<string, string>; includeSelectors?: boolean; includeTemplates?: boolean }[];
  commonLabels?: Record<string, string>;
}

export function isClusterScoped(obj: Pick<KubeObject, 'kind'>): boolean {
  return CLUSTER_SCOPED_KINDS.has(obj.kind);
}

/** `<group>/<kind>/<namespace>/<name>`: what kustomize considers the same object. */
export function objectId(obj: KubeObject): string {
  const group = obj.apiVersion.includes('/') ? obj.apiVersion.split('/')[0] : '';
  return `${group}/${obj.kind}/${obj.metadata.namespace ?? ''}/${obj.metadata.name}`;
}

/** Parses a multi-document YAML file into objects; empty documents are skipped. */
export function readObjects(file: string): KubeObject[] {
  const docs = parseAllDocuments(readFileSync(file, 'utf8'));
  const out: KubeObject[] = [];
  for (const doc of docs) {
    if (doc.errors.length) throw new Error(`${file}: ${doc.errors.map((e) => e.message).join('; ')}`);
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) continue;
    const obj = value as Partial<KubeObject>;
    if (typeof obj !== 'object' || !obj.apiVersion || !obj.kind || !obj.metadata?.name) {
      throw new Error(`${file}: every document must have apiVersion, kind and metadata.name`);
    }
    out.push(obj as KubeObject);
  }
  return out;
}

function kustomizationFile(dir: string): string {
  const found = KUSTOMIZATION_FILES.map((f) => path.join(dir, f)).filter((f) => {
    try {
      return statSync(f).isFile();
    } catch {
      return false;
    }
  });
  if (found.length === 0)
    throw new Error(`${dir}: no kustomization.yaml (found ${readdirSync(dir).join(', ') || 'nothing'})`);
  if (found.length > 1) throw new Error(`${dir}: more than one kustomization file: ${found.join(', ')}`);
  return found[0]!;
}

function readKustomization(dir: string): Kustomization {
  const file = kustomizationFile(dir);
  const k = readMapping(file);
  for (const key of Object.keys(k)) {
    if (!SUPPORTED_FIELDS.has(key))
      throw new Error(`${file}: field '${key}' is not supported by test/support/kustomize.ts`);
  }
  if (k.resources !== undefined && !Array.isArray(k.resources)) throw new Error(`${file}: resources must be a list`);
  return k as Kustomization;
}

function readMapping(file: string): Record<string, unknown> {
  const docs = parseAllDocuments(readFileSync(file, 'utf8'));
  if (docs.length !== 1) throw new Error(`${file}: a kustomization is exactly one YAML document`);
  const doc = docs[0]!;
  if (doc.errors.length) throw new Error(`${file}: ${doc.errors.map((e) => e.message).join('; ')}`);
  const value: unknown = doc.toJS();
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`${file}: not a mapping`);
  return value as Record<string, unknown>;
}

/** Renders the kustomization in `dir` (a directory), like `kustomize build dir`. */
export function renderKustomization(dir: string): KubeObject[] {
  return build(path.resolve(dir), []);
}

function build(dir: string, stack: string[]): KubeObject[] {
  if (stack.includes(dir)) throw new Error(`kustomization cycle: ${[...stack, dir].join(' → ')}`);
  const k = readKustomization(dir);
  const objects: KubeObject[] = [];
  for (const entry of k.resources ?? []) {
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(entry) || entry.startsWith('github.com/')) {
      throw new Error(`${dir}: remote resource '${entry}' is not supported`);
    }
    const target = path.resolve(dir, entry);
    let stat;
    try {
      stat = statSync(target);
    } catch {
      throw new Error(`${dir}: resource '${entry}' does not exist`);
    }
    const found = stat.isDirectory() ? build(target, [...stack, dir]) : readObjects(target);
    objects.push(...found);
  }
  // Kustomize refuses two resources with the same identity.
  const seen = new Set<string>();
  for (const obj of objects) {
    const id = objectId(obj);
    if (seen.has(id)) throw new Error(`${dir}: duplicate resource ${id}`);
    seen.add(id);
  }
  if (k.namespace) for (const obj of objects) setNamespace(obj, k.namespace);
  for (const l of k.labels ?? []) {
    for (const obj of objects) addLabels(obj, l.pairs, l.includeTemplates || l.includeSelectors, l.includeSelectors);
  }
  if (k.commonLabels) for (const obj of objects) addLabels(obj, k.commonLabels, true, true);
  return objects;
}

function setNamespace(obj: KubeObject, namespace: string): void {
  if (obj.kind === 'Namespace') {
    obj.metadata.name = namespace;
    return;
  }
  if (!isClusterScoped(obj)) obj.metadata.namespace = namespace;
  if (obj.kind === 'RoleBinding' || obj.kind === 'ClusterRoleBinding') {
    for (const s of (obj.subjects ?? []) as { kind: string; name: string; namespace?: string }[]) {
      if (s.kind === 'ServiceAccount' && s.name === 'default') s.namespace = namespace;
    }
  }
}

function addLabels(
  obj: KubeObject,
  pairs: Record<string, string>,
  templates: boolean | undefined,
  selectors: boolean | undefined,
): void {
  obj.metadata.labels = { ...obj.metadata.labels, ...pairs };
  const spec = obj.spec as
    | {
        selector?: { matchLabels?: Record<string, string> } | Record<string, string>;
        template?: { metadata?: { labels?: Record<string, string> } };
      }
    | undefined;
  if (!spec) return;
  if (templates && WORKLOAD_KINDS.has(obj.kind) && spec.template) {
    spec.template.metadata = { ...spec.template.metadata, labels: { ...spec.template.metadata?.labels, ...pairs } };
  }
  if (selectors) {
    if (WORKLOAD_KINDS.has(obj.kind) && obj.kind !== 'Job') {
      const sel = (spec.selector ?? {}) as { matchLabels?: Record<string, string> };
      spec.selector = { ...sel, matchLabels: { ...sel.matchLabels, ...pairs } };
    } else if (obj.kind === 'Service') {
      spec.selector = { ...(spec.selector as Record<string, string> | undefined), ...pairs };
    }
  }
}

// ---------------------------------------------------------------------------------------------
// RBAC, read from the rendered objects: deploy/rbac is the one place the grants are written;
// tests derive what they check from it instead of restating it.

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
