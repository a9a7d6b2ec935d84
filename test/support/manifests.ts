/**
 * Kubernetes objects as the tests read them: from YAML files, and from `kustomize build` of a
 * kustomization directory by the real kustomize (pinned in src/infra/versions.ts and provisioned
 * with the other test tools by `npm run infra`), so deploy/ is checked as `kubectl apply -k` renders it.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { findBinary } from '../../src/infra/binaries.js';

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
const CLUSTER_SCOPED_KINDS = new Set([
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

export function isClusterScoped(obj: Pick<KubeObject, 'kind'>): boolean {
  return CLUSTER_SCOPED_KINDS.has(obj.kind);
}

/** `<group>/<kind>/<namespace>/<name>`: what kustomize considers the same object. */
export function objectId(obj: KubeObject): string {
  const group = obj.apiVersion.includes('/') ? obj.apiVersion.split('/')[0] : '';
  return `${group}/${obj.kind}/${obj.metadata.namespace ?? ''}/${obj.metadata.name}`;
}

/** Parses multi-document YAML into objects; empty documents are skipped. `source` names it in errors. */
export function parseObjects(text: string, source: string): KubeObject[] {
  const out: KubeObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length) throw new Error(`${source}: ${doc.errors.map((e) => e.message).join('; ')}`);
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) continue;
    const obj = value as Partial<KubeObject>;
    if (typeof obj !== 'object' || !obj.apiVersion || !obj.kind || !obj.metadata?.name) {
      throw new Error(`${source}: every document must have apiVersion, kind and metadata.name`);
    }
    out.push(obj as KubeObject);
  }
  return out;
}

/** The objects of a multi-document YAML file. */
export function readObjects(file: string): KubeObject[] {
  return parseObjects(readFileSync(file, 'utf8'), file);
}

/** `kustomize build dir` by the real kustomize, as objects. */
export function kustomizeBuild(dir: string): KubeObject[] {
  const attempts: string[] = [];
  const kustomize = findBinary('kustomize', attempts);
  if (!kustomize) throw new Error(`kustomize is missing (npm run infra provisions it): ${attempts.join('; ')}`);
  const yaml = execFileSync(kustomize.path, ['build', dir], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return parseObjects(yaml, `kustomize build ${dir}`);
}
