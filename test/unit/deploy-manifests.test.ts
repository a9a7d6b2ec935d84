/**
 * deploy/ rendered by `kustomize build deploy/` (the real kustomize, test/support/manifests.ts), then checked:
 * references resolve, RBAC is least-privilege in shape (no wildcards, the watcher never writes, the
 * worker and the fast path watch only what their own informers follow, no Secrets), the Deployments run hardened and configure the
 * processes the way src/config.ts reads them, and the CRDs are included. Each reference/RBAC check is a function
 * returning problems, and is also shown to catch a broken copy, so a check that silently passes
 * everything cannot hide here.
 *
 * The grants themselves are written once, in deploy/rbac, and not restated here: that they are
 * exactly what the code calls is proven against the real apiserver's audit log by
 * test/integration/deploy.test.ts.
 */
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { ALL_KINDS } from '../../src/api/index.js';
import { validatingWebhookConfiguration } from '../../src/admission/webhook.js';
import type { V1Pod } from '@kubernetes/client-node';
import { DEFAULT_AGENT_PORT } from '../../src/agent/server.js';
import { READINESS_CHECK_TIMEOUT_MS } from '../../src/health/probes.js';
import { AGENT_APP_LABEL, AGENT_APP_VALUE, AGENT_POOL_LABEL } from '../../src/api/sandbox.js';
import { loadConfig, loadFastPathConfig } from '../../src/config.js';
import { agentPod } from '../../src/domain/sandbox-pool.js';
import { agentPortOf } from '../../src/fastpath/registry.js';
import { isClusterScoped, kustomizeBuild, readObjects, type KubeObject } from '../support/manifests.js';
import { permissionsOf, type PolicyRule } from '../support/rbac.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const DEPLOY = path.join(ROOT, 'deploy');
const NAMESPACE = 'durable-operators';
const IMAGE_REPO = 'ghcr.io/durable-operators/durable-operators';
const WORKER_SA = { name: 'durable-operators-worker', namespace: NAMESPACE };
const WATCHER_SA = { name: 'durable-operators-watcher', namespace: NAMESPACE };
const ADMISSION_SA = { name: 'durable-operators-admission', namespace: NAMESPACE };
const FASTPATH_SA = { name: 'durable-operators-fastpath', namespace: NAMESPACE };
/** The agents' bearer token: one Secret of this name (key `token`) in every namespace that needs it. */
const AGENT_TOKEN_SECRET = 'sandbox-agent-token';

interface Subject {
  kind: string;
  name: string;
  namespace?: string;
}
interface Binding extends KubeObject {
  roleRef: { apiGroup: string; kind: string; name: string };
  subjects?: Subject[];
}
interface SecretVolume {
  name: string;
  secret?: { secretName: string; items?: { key: string; path: string }[]; defaultMode?: number; optional?: boolean };
  emptyDir?: { medium?: string; sizeLimit?: string };
}
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    secretKeyRef?: { name: string; key: string; optional?: boolean };
    fieldRef?: { fieldPath: string };
    configMapKeyRef?: unknown;
  };
}
interface Container {
  name: string;
  image: string;
  args?: string[];
  env?: EnvVar[];
  ports?: { name?: string; containerPort: number }[];
  livenessProbe?: { httpGet?: { path: string; port: number | string }; timeoutSeconds?: number };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    runAsNonRoot?: boolean;
    readOnlyRootFilesystem?: boolean;
    allowPrivilegeEscalation?: boolean;
    capabilities?: { drop?: string[]; add?: string[] };
    seccompProfile?: { type: string };
    privileged?: boolean;
  };
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  readinessProbe?: { httpGet?: { path: string; port: number | string; scheme?: string }; timeoutSeconds?: number };
  lifecycle?: unknown;
}
interface Deployment extends KubeObject {
  spec: {
    replicas?: number;
    selector: { matchLabels: Record<string, string> };
    template: {
      metadata: { labels: Record<string, string> };
      spec: {
        serviceAccountName?: string;
        automountServiceAccountToken?: boolean;
        terminationGracePeriodSeconds?: number;
        securityContext?: {
          runAsNonRoot?: boolean;
          runAsUser?: number;
          fsGroup?: number;
          seccompProfile?: { type: string };
        };
        containers: Container[];
        volumes?: SecretVolume[];
        topologySpreadConstraints?: unknown[];
      };
    };
  };
}

const objects = kustomizeBuild(DEPLOY);
const ofKind = <T extends KubeObject = KubeObject>(objs: KubeObject[], kind: string) =>
  objs.filter((o) => o.kind === kind) as T[];
const find = <T extends KubeObject = KubeObject>(objs: KubeObject[], kind: string, name: string, namespace?: string) =>
  objs.find((o) => o.kind === kind && o.metadata.name === name && o.metadata.namespace === namespace) as T | undefined;

/** Every reference between objects resolves inside the rendered set. */
function referenceProblems(objs: KubeObject[]): string[] {
  const problems: string[] = [];
  const namespaces = new Set(ofKind(objs, 'Namespace').map((n) => n.metadata.name));
  for (const o of objs) {
    if (isClusterScoped(o)) {
      if (o.metadata.namespace) problems.push(`${o.kind} ${o.metadata.name} is cluster-scoped but has a namespace`);
    } else if (!o.metadata.namespace || !namespaces.has(o.metadata.namespace)) {
      problems.push(
        `${o.kind} ${o.metadata.name} is in namespace '${o.metadata.namespace}', which the base does not create`,
      );
    }
  }
  for (const d of ofKind<Deployment>(objs, 'Deployment')) {
    const sa = d.spec.template.spec.serviceAccountName;
    if (!sa || sa === 'default') problems.push(`Deployment ${d.metadata.name} runs as the default ServiceAccount`);
    else if (!find(objs, 'ServiceAccount', sa, d.metadata.namespace)) {
      problems.push(`Deployment ${d.metadata.name} uses missing ServiceAccount ${d.metadata.namespace}/${sa}`);
    }
    if (d.spec.template.spec.automountServiceAccountToken === false) {
      problems.push(`Deployment ${d.metadata.name} does not mount its token (it talks to the apiserver)`);
    }
  }
  for (const b of [...ofKind<Binding>(objs, 'ClusterRoleBinding'), ...ofKind<Binding>(objs, 'RoleBinding')]) {
    const { roleRef } = b;
    const role =
      roleRef.kind === 'ClusterRole'
        ? find(objs, 'ClusterRole', roleRef.name)
        : find(objs, 'Role', roleRef.name, b.metadata.namespace);
    if (roleRef.apiGroup !== 'rbac.authorization.k8s.io' || !role) {
      problems.push(`${b.kind} ${b.metadata.name} refers to missing ${roleRef.kind} ${roleRef.name}`);
    }
    if (!b.subjects?.length) problems.push(`${b.kind} ${b.metadata.name} has no subjects`);
    for (const s of b.subjects ?? []) {
      if (s.kind !== 'ServiceAccount')
        problems.push(`${b.kind} ${b.metadata.name} binds ${s.kind} ${s.name}, not a ServiceAccount`);
      else if (!find(objs, 'ServiceAccount', s.name, s.namespace)) {
        problems.push(`${b.kind} ${b.metadata.name} binds missing ServiceAccount ${s.namespace}/${s.name}`);
      }
    }
  }
  return problems;
}

function rulesOf(objs: KubeObject[]): { owner: string; rule: PolicyRule }[] {
  return [...ofKind(objs, 'ClusterRole'), ...ofKind(objs, 'Role')].flatMap((r) =>
    ((r.rules ?? []) as PolicyRule[]).map((rule) => ({ owner: `${r.kind} ${r.metadata.name}`, rule })),
  );
}

/** No wildcards, no non-resource URLs, no aggregation: every grant is spelled out. */
function wildcardProblems(objs: KubeObject[]): string[] {
  const problems: string[] = [];
  for (const { owner, rule } of rulesOf(objs)) {
    for (const field of ['apiGroups', 'resources', 'verbs', 'resourceNames', 'nonResourceURLs'] as const) {
      if (rule[field]?.some((v) => v.includes('*'))) problems.push(`${owner}: '*' in ${field}`);
    }
    if (rule.nonResourceURLs?.length) problems.push(`${owner}: grants non-resource URLs`);
    if (!rule.apiGroups?.length || !rule.resources?.length || !rule.verbs.length)
      problems.push(`${owner}: incomplete rule`);
  }
  for (const r of ofKind(objs, 'ClusterRole'))
    if (r.aggregationRule) problems.push(`ClusterRole ${r.metadata.name} aggregates`);
  return problems;
}

/**
 * What each role may do, by shape: the watcher observes; the worker and the fast path never
 * update (their writes are merge patches pinned to a UID) and watch only what their own
 * informers follow (the watcher follows the rest): the fast path's agent registry the agent Pods
 * and SandboxPools, the worker's account workers the CloudflareCredentials.
 */
const OWN_INFORMERS: Record<string, ReadonlySet<string>> = {
  [WORKER_SA.name]: new Set(['networking.cloudflare-operator.io/cloudflarecredentials']),
  [FASTPATH_SA.name]: new Set(['core/pods', 'sandbox.fast.io/sandboxpools']),
};

function verbProblems(objs: KubeObject[]): string[] {
  const problems: string[] = [];
  const allowed = {
    [WORKER_SA.name]: new Set(['get', 'list', 'create', 'patch', 'delete']),
    [WATCHER_SA.name]: new Set(['list', 'watch']),
    [FASTPATH_SA.name]: new Set(['get', 'list', 'create', 'patch', 'delete']),
  };
  for (const sa of [WORKER_SA, WATCHER_SA, FASTPATH_SA]) {
    for (const [resource, verbs] of Object.entries(permissionsOf(objs, sa)))
      for (const v of verbs)
        if (!allowed[sa.name]!.has(v) && !(v === 'watch' && OWN_INFORMERS[sa.name]?.has(resource)))
          problems.push(`${sa.name} may ${v} ${resource}`);
  }
  return problems;
}

/**
 * The watcher's informers list then watch a kind, and the workflows its events start re-read the
 * object: a keeper (the worker) what it follows, a sandbox's workflow (in the fast path) its Sandbox.
 */
/**
 * Kinds the watcher follows only to hint the sources that refer to them (src/watcher/routes/
 * cloudflare.ts): the worker reads them by listing (src/activities/cloudflare/expand.ts).
 */
const FOLLOWED_FOR_HINTS = new Set([
  'networking.k8s.io/ingresses',
  'networking.k8s.io/ingressclasses',
  'gateway.networking.k8s.io/gatewayclasses',
  'gateway.networking.k8s.io/gateways',
  'gateway.networking.k8s.io/httproutes',
]);

function followProblems(objs: KubeObject[]): string[] {
  const problems: string[] = [];
  const readers = { worker: permissionsOf(objs, WORKER_SA), 'fast path': permissionsOf(objs, FASTPATH_SA) };
  for (const [resource, verbs] of Object.entries(permissionsOf(objs, WATCHER_SA))) {
    if (!verbs.includes('watch')) problems.push(`the watcher lists ${resource} but does not watch it`);
    if (!verbs.includes('list')) problems.push(`the watcher watches ${resource} but does not list it`);
    const reader = resource.startsWith('sandbox.fast.io/') ? 'fast path' : 'worker';
    const read = FOLLOWED_FOR_HINTS.has(resource) ? 'list' : 'get';
    if (!readers[reader][resource]?.includes(read))
      problems.push(`the watcher follows ${resource} but the ${reader} may not ${read} it`);
  }
  return problems;
}

interface PolicyRuleNp {
  from?: Record<string, unknown>[];
  to?: { ipBlock?: { cidr: string; except?: string[] } }[];
  ports?: { port: number | string; endPort?: number; protocol: string }[];
}
interface NetworkPolicy {
  metadata: { name: string; namespace?: string };
  spec: {
    podSelector: { matchLabels: Record<string, string> };
    policyTypes: string[];
    ingress: PolicyRuleNp[];
    egress: PolicyRuleNp[];
  };
}

describe('deploy/ kustomization', () => {
  it('renders the CRDs, the namespace, RBAC, the Deployments and the admission webhook', () => {
    const kinds = objects.map((o) => `${o.kind}/${o.metadata.name}`).sort();
    expect(kinds).toEqual(
      [
        ...ALL_KINDS.map((k) => `CustomResourceDefinition/${k.plural}.${k.group}`),
        ...[
          'ClusterRole',
          'ClusterRoleBinding',
          'Deployment',
          'PodDisruptionBudget',
          'Service',
          'ServiceAccount',
          'ValidatingWebhookConfiguration',
        ].map((kind) => `${kind}/${ADMISSION_SA.name}`),
        ...[
          'ClusterRole',
          'ClusterRoleBinding',
          'Deployment',
          'NetworkPolicy',
          'PodDisruptionBudget',
          'Service',
          'ServiceAccount',
        ].map((kind) => `${kind}/${FASTPATH_SA.name}`),
        'ClusterRole/durable-operators-capture-targets',
        'ClusterRole/durable-operators-fastpath-agent-pods',
        'ClusterRole/durable-operators-fastpath-sandbox-env',
        'ClusterRole/durable-operators-watcher',
        'ClusterRole/durable-operators-worker',
        'ClusterRoleBinding/durable-operators-capture-targets',
        'ClusterRoleBinding/durable-operators-watcher',
        'ClusterRoleBinding/durable-operators-worker',
        'Role/durable-operators-worker-secrets',
        'RoleBinding/durable-operators-worker-secrets',
        'Deployment/durable-operators-watcher',
        'Deployment/durable-operators-worker',
        'PodDisruptionBudget/durable-operators-watcher',
        'PodDisruptionBudget/durable-operators-worker',
        `Namespace/${NAMESPACE}`,
        'ServiceAccount/durable-operators-watcher',
        'ServiceAccount/durable-operators-worker',
        ...[
          'durable-operators-fastpath-agent-pods',
          'durable-operators-fastpath-agent-secrets',
          'durable-operators-sandbox-tenant',
          'durable-operators-worker-detach-claims',
          'durable-operators-worker-detach-volumes',
          'durable-operators-worker-tunnel-objects',
        ].flatMap((name) => [`ValidatingAdmissionPolicy/${name}`, `ValidatingAdmissionPolicyBinding/${name}`]),
      ].sort(),
    );
  });

  it('binds each admission policy (deploy/policies) to one role of deploy/rbac (or to everyone but it), denying, failing closed, every message naming the policy', () => {
    interface Policy {
      metadata: { name: string };
      spec: {
        failurePolicy: string;
        matchConditions: { expression: string }[];
        validations: { reason: string; messageExpression: string }[];
      };
    }
    const accounts = ofKind(objects, 'ServiceAccount').map(
      (sa) => `system:serviceaccount:${NAMESPACE}:${sa.metadata.name}`,
    );
    const policies = ofKind<KubeObject & Policy>(objects, 'ValidatingAdmissionPolicy');
    expect(policies.length).toBeGreaterThan(0);
    for (const p of policies) {
      const name = p.metadata.name;
      expect(p.spec.failurePolicy, name).toBe('Fail');
      const users = p.spec.matchConditions.map(
        (c) => /^request\.userInfo\.username [!=]= '([^']+)'$/.exec(c.expression)?.[1],
      );
      expect(users.length, name).toBe(1);
      expect(accounts, name).toContain(users[0]);
      for (const v of p.spec.validations) {
        expect(v.reason, name).toBe('Forbidden');
        expect(v.messageExpression.startsWith(`'${name}: `), `${name}: ${v.messageExpression}`).toBe(true);
      }
      expect(find(objects, 'ValidatingAdmissionPolicyBinding', name), name).toMatchObject({
        spec: { policyName: name, validationActions: ['Deny'] },
      });
    }
  });

  it('includes every CRD in deploy/crds, unchanged, one for each kind the project serves', () => {
    const crdDir = path.join(DEPLOY, 'crds');
    const files = readdirSync(crdDir).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
    const onDisk = files.flatMap((f) => readObjects(path.join(crdDir, f)));
    expect(onDisk.map((c) => c.metadata.name).sort()).toEqual(ALL_KINDS.map((k) => `${k.plural}.${k.group}`).sort());
    for (const crd of onDisk) {
      const rendered = find(objects, 'CustomResourceDefinition', crd.metadata.name);
      expect(rendered, crd.metadata.name).toBeDefined();
      const { labels, ...renderedMeta } = rendered!.metadata;
      expect(labels).toEqual({ 'app.kubernetes.io/part-of': 'durable-operators' });
      expect({ ...rendered, metadata: renderedMeta }).toEqual(crd);
    }
  });

  it('puts namespaced objects in durable-operators and labels everything as part of it', () => {
    for (const o of objects) {
      expect(o.metadata.namespace, `${o.kind} ${o.metadata.name}`).toBe(isClusterScoped(o) ? undefined : NAMESPACE);
      expect(o.metadata.labels?.['app.kubernetes.io/part-of']).toBe('durable-operators');
    }
  });

  it('has no dangling references (ServiceAccounts, roles, namespaces)', () => {
    expect(referenceProblems(objects)).toEqual([]);
  });

  it('reference checks catch a missing ServiceAccount, role or namespace', () => {
    const noSa = structuredClone(objects).filter(
      (o) => !(o.kind === 'ServiceAccount' && o.metadata.name === WORKER_SA.name),
    );
    expect(referenceProblems(noSa).join('\n')).toMatch(
      /Deployment durable-operators-worker uses missing ServiceAccount/,
    );
    expect(referenceProblems(noSa).join('\n')).toMatch(
      /ClusterRoleBinding durable-operators-worker binds missing ServiceAccount/,
    );

    const badRole = structuredClone(objects);
    find<Binding>(badRole, 'ClusterRoleBinding', 'durable-operators-watcher')!.roleRef.name = 'cluster-admin';
    expect(referenceProblems(badRole)).toEqual([
      'ClusterRoleBinding durable-operators-watcher refers to missing ClusterRole cluster-admin',
    ]);

    const wrongNs = structuredClone(objects);
    find<Binding>(wrongNs, 'ClusterRoleBinding', 'durable-operators-worker')!.subjects![0]!.namespace = 'default';
    expect(referenceProblems(wrongNs)).toEqual([
      'ClusterRoleBinding durable-operators-worker binds missing ServiceAccount default/durable-operators-worker',
    ]);

    const noNs = structuredClone(objects).filter((o) => o.kind !== 'Namespace');
    // Every namespaced object: 4 ServiceAccounts, 4 Deployments, their 4 disruption budgets, the
    // webhook's and the fast path's Services, the worker's Secret-reading Role and RoleBinding,
    // the fast path's NetworkPolicy.
    expect(referenceProblems(noNs).length).toBe(17);
  });
});

describe('NetworkPolicies', () => {
  it('the fast path’s API and metrics only from namespaces the operator labels, on its own ports', () => {
    const policy = find<KubeObject>(objects, 'NetworkPolicy', FASTPATH_SA.name, NAMESPACE) as unknown as NetworkPolicy;
    const fastpath = find<Deployment>(objects, 'Deployment', FASTPATH_SA.name, NAMESPACE)!;
    expect(policy.spec.podSelector.matchLabels).toEqual(fastpath.spec.template.metadata.labels);
    expect(policy.spec.policyTypes).toEqual(['Ingress']);
    const named = new Set(fastpath.spec.template.spec.containers[0]!.ports!.map((p) => p.name));
    expect(
      policy.spec.ingress.map((r) => ({
        from: r.from,
        ports: r.ports!.map((p) => {
          expect(named.has(String(p.port)), `port ${p.port}`).toBe(true);
          return p.port;
        }),
      })),
    ).toEqual([
      {
        from: [{ namespaceSelector: { matchLabels: { 'durable-operators.io/sandbox-api': 'allowed' } } }],
        ports: ['grpc', 'http'],
      },
      {
        from: [{ namespaceSelector: { matchLabels: { 'durable-operators.io/metrics': 'allowed' } } }],
        ports: ['metrics', 'sdk-metrics'],
      },
    ]);
  });
});

describe('RBAC', () => {
  it('uses no wildcards and no non-resource URLs', () => {
    expect(wildcardProblems(objects)).toEqual([]);
  });

  it('the wildcard check catches a `*`', () => {
    for (const field of ['verbs', 'resources', 'apiGroups'] as const) {
      const broken = structuredClone(objects);
      const role = find(broken, 'ClusterRole', 'durable-operators-watcher')!;
      (role.rules as PolicyRule[])[0]![field] = ['*'];
      expect(wildcardProblems(broken)).toEqual([`ClusterRole durable-operators-watcher: '*' in ${field}`]);
    }
  });

  it('the worker reads Secrets only by name in its own namespace (Cloudflare tokens); capturing them is an explicit opt-in', () => {
    const secrets = (sa: typeof WORKER_SA) =>
      Object.fromEntries(Object.entries(permissionsOf(objects, sa)).filter(([r]) => r.startsWith('core/secrets')));
    // Elsewhere it only creates and patches (a tunnel's credentials Secret): it never reads one.
    expect(secrets(WORKER_SA)).toEqual({
      'core/secrets': ['create', 'patch'],
      [`core/secrets (in ${NAMESPACE})`]: ['get'],
    });
    expect(permissionsOf(objects, WATCHER_SA)['core/secrets']).toBeUndefined();
    expect(secrets(WATCHER_SA)).toEqual({});
    // The agents' key reaches the fast path as a mounted volume, not through the API; it only
    // creates each pool's agent token Secret (never reads or changes one), and only in a namespace
    // that binds it there (deploy/examples/sandbox-pool.yaml): nowhere by deploy/ itself.
    expect(secrets(FASTPATH_SA)).toEqual({});
  });

  it('the watcher only lists and watches; the worker and the fast path read and write, watch only what their informers follow, never update', () => {
    expect(verbProblems(objects)).toEqual([]);
  });

  it('the verb check catches a watcher that writes, and a worker or fast path that watches beyond its informers or updates', () => {
    const broken = structuredClone(objects);
    (find(broken, 'ClusterRole', 'durable-operators-watcher')!.rules as PolicyRule[])[0]!.verbs.push('patch');
    (find(broken, 'ClusterRole', 'durable-operators-worker')!.rules as PolicyRule[])[0]!.verbs.push('watch');
    const fastpathRules = find(broken, 'ClusterRole', FASTPATH_SA.name)!.rules as PolicyRule[];
    fastpathRules[0]!.verbs.push('update');
    fastpathRules.find((r) => r.resources?.includes('sandboxes'))!.verbs.push('watch');
    expect(verbProblems(broken)).toEqual([
      'durable-operators-worker may watch deckhouse.io/objectkeepers',
      'durable-operators-watcher may patch deckhouse.io/objectkeepers',
      'durable-operators-fastpath may update core/pods',
      'durable-operators-fastpath may watch sandbox.fast.io/sandboxes',
    ]);
  });

  it('the fast path manages agent Pods (and their pool’s token Secret), SandboxPools and Sandboxes, nothing else', () => {
    // Shape only; that these are exactly the calls it makes is the audit-log test's job.
    const perms = permissionsOf(objects, FASTPATH_SA);
    expect(Object.keys(perms)).toEqual([
      'core/pods',
      'events.k8s.io/events',
      'sandbox.fast.io/sandboxes',
      'sandbox.fast.io/sandboxes/status',
      'sandbox.fast.io/sandboxpools',
      'sandbox.fast.io/sandboxpools/status',
    ]);
    // Cluster-wide it only lists and watches Pods (the registry); creating and deleting agent Pods, and their
    // token Secret, is granted per pool namespace (review N9): never in kube-system by default.
    expect(perms['core/pods']).toEqual(['list', 'watch']);
    const agentPods = 'durable-operators-fastpath-agent-pods';
    expect(find(objects, 'ClusterRole', agentPods)!.rules).toEqual([
      { apiGroups: [''], resources: ['pods'], verbs: ['create', 'delete'] },
      { apiGroups: [''], resources: ['secrets'], verbs: ['create', 'patch'] },
    ]);
    expect(
      [...ofKind<Binding>(objects, 'ClusterRoleBinding'), ...ofKind<Binding>(objects, 'RoleBinding')].filter(
        (b) => b.roleRef.name === agentPods,
      ),
    ).toEqual([]);
    const poolExample = readObjects(path.join(DEPLOY, 'examples', 'sandbox-pool.yaml'));
    const poolBinding = poolExample.find((o) => o.kind === 'RoleBinding') as Binding;
    expect(poolBinding.roleRef.name).toBe(agentPods);
    expect(poolBinding.metadata.namespace).toBe(poolExample.find((o) => o.kind === 'SandboxPool')!.metadata.namespace);
    expect(permissionsOf([...objects, poolBinding], FASTPATH_SA)).toMatchObject({
      'core/pods': ['list', 'watch'],
      'core/pods (in default)': ['create', 'delete'],
      'core/secrets (in default)': ['create', 'patch'],
    });
    expect(perms['sandbox.fast.io/sandboxpools']).toEqual(['get', 'list', 'patch', 'watch']);
    expect(perms['sandbox.fast.io/sandboxpools/status']).toEqual(['patch']);
    // Its Events: one per object and reason, a repeat counted in its series; never listed or deleted.
    expect(perms['events.k8s.io/events']).toEqual(['create', 'get', 'patch']);
    // It reads no Secret: Sandboxes' valueFrom needs a namespace's own RoleBinding of this ClusterRole.
    expect(perms['core/secrets']).toBeUndefined();
    const sandboxEnv = 'durable-operators-fastpath-sandbox-env';
    expect(find(objects, 'ClusterRole', sandboxEnv)!.rules).toEqual([
      { apiGroups: [''], resources: ['secrets', 'configmaps'], verbs: ['get'] },
    ]);
    const example = readObjects(path.join(DEPLOY, 'examples', 'sandbox-env-from.yaml'));
    expect(example.map((o) => [o.kind, (o as { roleRef?: { name: string } }).roleRef?.name])).toEqual([
      ['RoleBinding', sandboxEnv],
    ]);
    expect(permissionsOf([...objects, ...example], FASTPATH_SA)).toMatchObject({
      'core/secrets (in default)': ['get'],
      'core/configmaps (in default)': ['get'],
    });
  });

  it('every kind the watcher lists and watches, the worker may read (a keeper re-reads what it follows)', () => {
    expect(followProblems(objects)).toEqual([]);
    const broken = structuredClone(objects);
    (find(broken, 'ClusterRole', 'durable-operators-watcher')!.rules as PolicyRule[]).push({
      apiGroups: [''],
      resources: ['endpoints'],
      verbs: ['list'],
    });
    expect(followProblems(broken)).toEqual([
      'the watcher lists core/endpoints but does not watch it',
      'the watcher follows core/endpoints but the worker may not get it',
    ]);
    // Sandboxes are re-read by their workflows in the fast path, not by the worker.
    const noSandboxGet = structuredClone(objects);
    const sandboxes = (find(noSandboxGet, 'ClusterRole', FASTPATH_SA.name)!.rules as PolicyRule[]).find((r) =>
      r.resources?.includes('sandboxes'),
    )!;
    sandboxes.verbs = sandboxes.verbs.filter((v) => v !== 'get');
    expect(followProblems(noSandboxGet)).toEqual([
      'the watcher follows sandbox.fast.io/sandboxes but the fast path may not get it',
    ]);
  });
});

/** The source that serves a role's probes and sets its worker's shutdownGraceTime. */
const ROLE_SOURCE: Record<string, string> = {
  worker: 'src/workers/worker.ts',
  watcher: 'src/watcher/main.ts',
  fastpath: 'src/fastpath/main.ts',
};

describe.each([
  { role: 'worker', sa: WORKER_SA.name },
  { role: 'watcher', sa: WATCHER_SA.name },
  { role: 'fastpath', sa: FASTPATH_SA.name },
])('Deployment durable-operators-$role', ({ role, sa }) => {
  const d = find<Deployment>(objects, 'Deployment', `durable-operators-${role}`, NAMESPACE)!;
  const pod = d.spec.template.spec;
  const container = pod.containers[0]!;

  /**
   * The environment the process sees, with Secrets resolved from `secrets` (absent = unset): env
   * from Secret keys, and optional Secret volumes written into a directory per mount as the
   * kubelet mounts them (an absent Secret or key: no file), each variable naming a path under such
   * a mount pointed there.
   */
  const mountsRoot = mkdtempSync(path.join(tmpdir(), 'pod-mounts-'));
  afterAll(() => rmSync(mountsRoot, { recursive: true, force: true }));
  function processEnv(secrets: Record<string, Record<string, string>> = {}): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = {};
    for (const e of container.env ?? []) {
      if (e.value !== undefined) env[e.name] = e.value;
      else if (e.valueFrom?.secretKeyRef) {
        const ref = e.valueFrom.secretKeyRef;
        const v = secrets[ref.name]?.[ref.key];
        if (v === undefined && !ref.optional) throw new Error(`${e.name}: Secret ${ref.name} is required`);
        if (v !== undefined) env[e.name] = v;
      } else if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.name') env[e.name] = `${d.metadata.name}-abc12`;
      else throw new Error(`${e.name}: unsupported env source ${JSON.stringify(e.valueFrom)}`);
    }
    const root = mkdtempSync(path.join(mountsRoot, 'pod-'));
    const mounted: [string, string][] = [];
    for (const m of container.volumeMounts ?? []) {
      const secret = pod.volumes?.find((v) => v.name === m.name)?.secret;
      // The optional Secrets' files (Temporal credentials, payload keys) are present or not by
      // `secrets`; a required one's path stays as the manifest names it.
      if (!secret?.optional) continue;
      const dir = path.join(root, m.name);
      mkdirSync(dir);
      mounted.push([m.mountPath, dir]);
      const data = secrets[secret.secretName];
      const items = secret.items ?? Object.keys(data ?? {}).map((key) => ({ key, path: key }));
      for (const item of items)
        if (data?.[item.key] !== undefined) writeFileSync(path.join(dir, item.path), data[item.key]!);
    }
    for (const [name, value] of Object.entries(env))
      for (const [mountPath, dir] of mounted)
        if (value === mountPath || value?.startsWith(`${mountPath}/`)) env[name] = dir + value.slice(mountPath.length);
    return env;
  }

  it(`runs the '${role}' command of the released image as ${sa}`, () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(pod.containers).toHaveLength(1);
    expect(container.image).toBe(`${IMAGE_REPO}:${pkg.version}`);
    expect(container.args).toEqual([role]);
    expect(pod.serviceAccountName).toBe(sa);
  });

  it('selects its own pods', () => {
    expect(d.spec.template.metadata.labels).toMatchObject(d.spec.selector.matchLabels);
    expect(d.spec.selector.matchLabels['app.kubernetes.io/component']).toBe(role);
  });

  it('configures the process through the variables src/config.ts reads', () => {
    const cfg = loadConfig({}, processEnv());
    expect(cfg.temporal.address).toBe('temporal-frontend.temporal:7233');
    expect(cfg.temporal.namespace).toBe('default');
    expect(cfg.temporal.apiKey).toBeUndefined();
    expect(cfg.temporal.tls).toBeUndefined();
    expect(cfg.kubeconfig, 'in-cluster credentials, not a kubeconfig').toBeUndefined();
    expect(cfg.identity).toBe(`${d.metadata.name}-abc12`);
    expect(cfg.metricsPort).toBe({ worker: 9464, watcher: 9464, fastpath: 9091 }[role]);
  });

  if (role === 'worker') {
    it('talks to the real Cloudflare API, as the cluster its kube-system UID names, unless told otherwise', () => {
      const cfg = loadConfig({}, processEnv());
      expect(cfg.cloudflare.clusterId, 'unset: derived at start (src/kube/cluster-identity.ts)').toBe('');
      expect(cfg.cloudflare.baseURL, 'CLOUDFLARE_API_BASE_URL unset: the real API').toBeUndefined();
      // Shown, commented out, for a proxy or an emulator.
      expect(readFileSync(path.join(DEPLOY, 'worker.yaml'), 'utf8')).toMatch(/# +- name: CLOUDFLARE_API_BASE_URL\n/);
    });
  }

  it('takes the Temporal API key from a file of an optional Secret, re-read while it runs (and then uses TLS)', () => {
    const file = container.env!.find((e) => e.name === 'DO_TEMPORAL_API_KEY_FILE')!.value!;
    const mount = container.volumeMounts!.find((m) => file.startsWith(`${m.mountPath}/`))!;
    expect(pod.volumes!.find((v) => v.name === mount.name)?.secret).toMatchObject({
      secretName: 'durable-operators-temporal',
      optional: true,
      items: [{ key: 'api-key', path: path.basename(file) }],
    });
    const cfg = loadConfig({}, processEnv({ 'durable-operators-temporal': { 'api-key': 'secret-key' } }));
    expect(cfg.temporal.apiKey).toBe('secret-key');
    expect(cfg.temporal.tls).toBe(true);
    expect(cfg.temporal.files?.apiKey).toBeDefined();
  });

  it('takes an mTLS client certificate from files of an optional TLS Secret and a private server CA from the Temporal Secret', () => {
    const cfg = loadConfig(
      {},
      processEnv({
        'durable-operators-temporal-tls': { 'tls.crt': 'CERT PEM', 'tls.key': 'KEY PEM' },
        'durable-operators-temporal': { 'server-ca.crt': 'CA PEM' },
      }),
    );
    const tls = cfg.temporal.tls as {
      clientCertPair: { crt: Uint8Array; key: Uint8Array };
      serverRootCACertificate: Uint8Array;
    };
    expect(Buffer.from(tls.clientCertPair.crt).toString()).toBe('CERT PEM');
    expect(Buffer.from(tls.clientCertPair.key).toString()).toBe('KEY PEM');
    expect(Buffer.from(tls.serverRootCACertificate).toString()).toBe('CA PEM');
    // Re-read while the role runs: a renewed certificate needs no restart.
    expect(Object.keys(cfg.temporal.files ?? {}).sort()).toEqual(['clientCert', 'clientKey', 'serverCa']);
    // Without the Secrets nothing is set: plain gRPC to the in-cluster frontend (asserted above).
  });

  it('runs hardened: non-root, read-only root, no capabilities, no escalation, RuntimeDefault seccomp', () => {
    expect(pod.securityContext?.runAsNonRoot).toBe(true);
    expect(pod.securityContext?.runAsUser).toBeGreaterThan(0);
    expect(pod.securityContext?.seccompProfile?.type).toBe('RuntimeDefault');
    const sc = container.securityContext!;
    expect(sc.runAsNonRoot).toBe(true);
    expect(sc.readOnlyRootFilesystem).toBe(true);
    expect(sc.allowPrivilegeEscalation).toBe(false);
    expect(sc.privileged).not.toBe(true);
    expect(sc.capabilities?.drop).toEqual(['ALL']);
    expect(sc.capabilities?.add).toBeUndefined();
    expect(sc.seccompProfile?.type).toBe('RuntimeDefault');
    // With a read-only root, /tmp is a writable emptyDir.
    const tmp = container.volumeMounts?.find((m) => m.mountPath === '/tmp');
    expect(tmp && pod.volumes?.find((v) => v.name === tmp.name)?.emptyDir).toBeDefined();
  });

  it('requests and limits CPU and memory', () => {
    for (const kind of ['requests', 'limits'] as const) {
      expect(container.resources?.[kind]?.cpu, `${kind}.cpu`).toBeTruthy();
      expect(container.resources?.[kind]?.memory, `${kind}.memory`).toBeTruthy();
    }
  });

  if (role === 'worker' || role === 'fastpath') {
    it('gives in-flight activities 30 s to finish on shutdown', () => {
      // The Temporal worker's own shutdownGraceTime (src/workers/worker.ts, src/fastpath/main.ts) must fit inside this.
      const graceSource = readFileSync(path.join(ROOT, ROLE_SOURCE[role]!), 'utf8');
      const sdkGrace = Number(/shutdownGraceTime: '(\d+) seconds'/.exec(graceSource)?.[1]);
      expect(pod.terminationGracePeriodSeconds).toBe(30);
      expect(sdkGrace).toBeLessThan(30);
    });
  }

  it('exposes DO_METRICS_PORT with /healthz as liveness and /readyz as readiness probe there', () => {
    const port = Number(processEnv().DO_METRICS_PORT);
    const named = container.ports!.find((p) => p.containerPort === port);
    expect(named).toBeDefined();
    const [alive, ready] = [container.livenessProbe!.httpGet!, container.readinessProbe!.httpGet!];
    expect([alive.path, ready.path]).toEqual(['/healthz', '/readyz']);
    for (const probe of [alive, ready]) expect(probe.port === port || probe.port === named!.name).toBe(true);
    // The routes the probes hit are the ones the process serves (src/health/ops-server.ts, probes.ts).
    expect(readFileSync(path.join(ROOT, ROLE_SOURCE[role]!), 'utf8')).toMatch(/startOpsServer\(\{[^}]*probes/);
    expect(readFileSync(path.join(ROOT, 'src/health/ops-server.ts'), 'utf8')).toMatch(
      /for \(const path of \['\/healthz', '\/readyz'\]\)[^]*probes\?\.answer\(path\)/,
    );
  });

  it('waits for /readyz longer than its checks’ deadline (the kubelet’s default timeout is 1 s), and for /healthz as long', () => {
    for (const probe of [container.livenessProbe!, container.readinessProbe!])
      expect(probe.timeoutSeconds).toBeGreaterThanOrEqual(READINESS_CHECK_TIMEOUT_MS / 1000 + 2);
  });

  it('has a disruption budget over its own Pods that lets a drain evict one at a time', () => {
    const budget = find<KubeObject & { spec: unknown }>(objects, 'PodDisruptionBudget', d.metadata.name, NAMESPACE);
    expect(budget?.spec).toEqual({
      maxUnavailable: 1,
      unhealthyPodEvictionPolicy: 'AlwaysAllow',
      selector: { matchLabels: d.spec.selector.matchLabels },
    });
  });

  if (role === 'watcher' || role === 'fastpath') {
    // Watcher: deterministic workflow IDs deduplicate starts. Fast path: each replica keeps its
    // own placement table and the agents refuse what they have no room for.
    it('runs 2 replicas (safe, see the file header)', () => {
      expect(d.spec.replicas).toBe(2);
    });
  }

  if (role === 'fastpath') {
    const service = find<
      KubeObject & {
        spec: { selector: Record<string, string>; ports: { name: string; port: number; targetPort: string }[] };
      }
    >(objects, 'Service', d.metadata.name, NAMESPACE)!;
    const fp = () => loadFastPathConfig(processEnv());
    const mountOf = (file: string) =>
      container.volumeMounts!.find(
        (m) => file.startsWith(`${m.mountPath}/`) && !file.slice(m.mountPath.length + 1).includes('/'),
      );

    it('serves gRPC and HTTP/JSON on the ports the Service names', () => {
      expect(d.spec.template.metadata.labels).toMatchObject(service.spec.selector);
      const byName = Object.fromEntries(container.ports!.map((p) => [p.name, p.containerPort]));
      expect(service.spec.ports.map((p) => [p.name, p.port, byName[p.targetPort]])).toEqual([
        ['grpc', fp().grpcPort, fp().grpcPort],
        ['http', fp().httpPort, fp().httpPort],
      ]);
      expect([fp().grpcPort, fp().httpPort]).toEqual([9090, 9080]);
      expect(fp().host).toBe('0.0.0.0');
    });

    it('reads the agents’ token from the Secret sandbox-agent-token, mounted read-only', () => {
      const file = fp().agentTokenFile!;
      const mount = mountOf(file)!;
      expect(mount.readOnly).toBe(true);
      const volume = pod.volumes!.find((v) => v.name === mount.name)!;
      expect(volume.secret).toMatchObject({
        secretName: AGENT_TOKEN_SECRET,
        items: [{ key: 'token', path: path.basename(file) }],
        defaultMode: 0o440,
      });
      // No `optional`: without the token the Pod waits for the Secret instead of failing.
      expect(volume.secret).not.toHaveProperty('optional');
      expect(pod.securityContext?.fsGroup).toBe(1000);
      expect(container.env!.some((e) => e.name === 'DO_AGENT_TOKEN')).toBe(false);
    });

    it('keeps the tenant cache on a writable, memory-backed volume; tenants from etcd under jxt/', () => {
      const cfg = fp();
      expect(cfg.tenantEtcd).toMatch(/^http:\/\/[a-z0-9.-]+:2379$/);
      expect(cfg.tenantPrefix).toBe('jxt/');
      const mount = mountOf(cfg.tenantCacheFile!)!;
      expect(mount.readOnly).not.toBe(true);
      expect(pod.volumes!.find((v) => v.name === mount.name)?.emptyDir?.medium).toBe('Memory');
      expect(cfg.consistencyMode).toBe('fast');
      expect(cfg.namespace, 'every namespace, as its ClusterRole allows').toBeUndefined();
    });
  }
});

describe('admission webhook (deploy/webhook)', () => {
  interface Webhook {
    name: string;
    clientConfig: { service?: { namespace: string; name: string; path: string; port: number }; url?: string };
    [field: string]: unknown;
  }
  const vwc = find<KubeObject & { webhooks: Webhook[] }>(objects, 'ValidatingWebhookConfiguration', ADMISSION_SA.name)!;
  const service = find<
    KubeObject & { spec: { selector: Record<string, string>; ports: { port: number; targetPort: string }[] } }
  >(objects, 'Service', ADMISSION_SA.name, NAMESPACE)!;
  const d = find<Deployment>(objects, 'Deployment', ADMISSION_SA.name, NAMESPACE)!;
  const pod = d.spec.template.spec;
  const container = pod.containers[0]!;
  // Opt-in, next to the base, where cert-manager runs (deploy/webhook/cert-manager).
  const certManager = kustomizeBuild(path.join(DEPLOY, 'webhook', 'cert-manager'));
  const certificate = find<
    KubeObject & { spec: { secretName: string; dnsNames: string[]; issuerRef: { name: string } } }
  >(certManager, 'Certificate', ADMISSION_SA.name, NAMESPACE)!;

  it('registers what src/admission/webhook.ts registers in the local stack, through the Service', () => {
    const { service: svc, ...rest } = vwc.webhooks[0]!.clientConfig;
    expect(rest).toEqual({});
    const expected = validatingWebhookConfiguration({
      service: { namespace: NAMESPACE, name: service.metadata.name, port: 443 },
    });
    const { labels, annotations, ...meta } = vwc.metadata;
    expect(labels).toEqual({ 'app.kubernetes.io/part-of': 'durable-operators' });
    expect(annotations).toEqual({ 'cert-manager.io/inject-ca-from': `${NAMESPACE}/${certificate.metadata.name}` });
    expect({ ...vwc, metadata: meta }).toEqual(expected);
    expect(svc!.port).toBe(service.spec.ports[0]!.port);
  });

  it('fails closed and reviews only CREATE of the capture kinds, and CREATE/UPDATE of the Cloudflare sources, SandboxPools and Sandboxes naming a Secret', () => {
    const [capture, cloudflare, pools, sandboxEnv] = vwc.webhooks;
    expect(pools!.failurePolicy).toBe('Fail');
    expect(pools!.rules).toEqual([
      {
        apiGroups: ['sandbox.fast.io'],
        apiVersions: ['v1alpha1'],
        operations: ['CREATE', 'UPDATE'],
        resources: ['sandboxpools'],
        scope: 'Namespaced',
      },
    ]);
    expect(capture!.failurePolicy).toBe('Fail');
    expect(capture!.rules).toEqual([
      expect.objectContaining({ resources: ['manifestcapturerequests'], operations: ['CREATE'] }),
      expect.objectContaining({ resources: ['volumecapturerequests'], operations: ['CREATE'] }),
    ]);
    expect(cloudflare!.failurePolicy).toBe('Fail');
    expect(cloudflare!.rules).toEqual([
      expect.objectContaining({
        apiGroups: ['networking.cloudflare-operator.io'],
        apiVersions: ['v1alpha2'],
        operations: ['CREATE', 'UPDATE'],
        resources: expect.arrayContaining(['dnsrecords', 'accessidentityproviders', 'tunnels', 'clustertunnels']),
      }),
      // TunnelBinding is served at v1alpha1 only, as in the original.
      expect.objectContaining({
        apiVersions: ['v1alpha1'],
        operations: ['CREATE', 'UPDATE'],
        resources: ['tunnelbindings'],
      }),
    ]);
    // Sandboxes only when their envs name a Secret or ConfigMap: the fast path's record writes never wait for it.
    expect(sandboxEnv!.failurePolicy).toBe('Fail');
    expect(sandboxEnv!.rules).toEqual([
      expect.objectContaining({ resources: ['sandboxes'], operations: ['CREATE', 'UPDATE'] }),
    ]);
    expect(sandboxEnv!.matchConditions).toEqual([
      expect.objectContaining({ expression: expect.stringContaining('has(e.valueFrom)') }),
    ]);
    // Never the status subresource: the worker's status writes must not depend on the webhook.
    const resources = (cloudflare!.rules as { resources: string[] }[]).flatMap((r) => r.resources);
    expect(resources.some((r) => r.includes('/'))).toBe(false);
  });

  it('keeps one replica serving through a drain (it fails closed), on different nodes where it can, each waiting for its endpoint’s removal before it stops', () => {
    const budget = find<KubeObject & { spec: unknown }>(objects, 'PodDisruptionBudget', d.metadata.name, NAMESPACE);
    expect(budget?.spec).toEqual({
      minAvailable: 1,
      unhealthyPodEvictionPolicy: 'AlwaysAllow',
      selector: { matchLabels: d.spec.selector.matchLabels },
    });
    expect(d.spec.replicas).toBeGreaterThan(1);
    expect(pod.topologySpreadConstraints).toEqual([
      expect.objectContaining({
        topologyKey: 'kubernetes.io/hostname',
        whenUnsatisfiable: 'ScheduleAnyway',
        labelSelector: { matchLabels: d.spec.selector.matchLabels },
      }),
    ]);
    expect(container.lifecycle).toEqual({ preStop: { sleep: { seconds: 5 } } });
    for (const probe of [container.livenessProbe!, container.readinessProbe!])
      expect(probe.timeoutSeconds).toBeGreaterThanOrEqual(READINESS_CHECK_TIMEOUT_MS / 1000 + 2);
  });

  it('waits out a slow start: liveness counts only once /healthz has answered (a startup probe, up to 2 minutes)', () => {
    const startup = (container as Container & { startupProbe?: { periodSeconds: number; failureThreshold: number } })
      .startupProbe;
    expect(startup).toMatchObject({ httpGet: { path: '/healthz', port: 'https' } });
    expect(startup!.periodSeconds * startup!.failureThreshold).toBeGreaterThanOrEqual(120);
  });

  it('the Service reaches the Deployment on its HTTPS port', () => {
    expect(d.spec.template.metadata.labels).toMatchObject(service.spec.selector);
    const port = container.ports!.find((p) => p.name === service.spec.ports[0]!.targetPort);
    expect(port?.containerPort).toBe(9443);
    expect(readFileSync(path.join(ROOT, 'src/cli/main.ts'), 'utf8')).toMatch(
      /DO_ADMISSION_PORT'\)\.argParser\(portNumber\)\.default\(9443\)/,
    );
  });

  it("serves the Certificate's Secret, mounted where the CLI reads it, for the Service's DNS name", () => {
    const mount = container.volumeMounts!.find((m) => m.name === 'tls')!;
    const volume = (pod.volumes as { name: string; secret?: { secretName: string } }[]).find((v) => v.name === 'tls');
    expect(volume?.secret?.secretName).toBe(certificate.spec.secretName);
    const main = readFileSync(path.join(ROOT, 'src/cli/main.ts'), 'utf8');
    expect(main).toContain(`'${mount.mountPath}/tls.crt'`);
    expect(main).toContain(`'${mount.mountPath}/tls.key'`);
    expect(certificate.spec.dnsNames).toContain(`${service.metadata.name}.${NAMESPACE}.svc`);
    expect(find(certManager, 'Issuer', certificate.spec.issuerRef.name, NAMESPACE)).toBeDefined();
    expect(referenceProblems([...objects, ...certManager])).toEqual([]);
  });

  it("runs the 'admission' command of the released image, hardened, as its own ServiceAccount", () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(container.image).toBe(`${IMAGE_REPO}:${pkg.version}`);
    expect(container.args).toEqual(['admission']);
    expect(pod.serviceAccountName).toBe(ADMISSION_SA.name);
    expect(pod.securityContext?.runAsNonRoot).toBe(true);
    expect(container.securityContext).toMatchObject({
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
    expect(d.spec.replicas, 'failurePolicy Fail: one replica down must not block requests').toBeGreaterThan(1);
  });

  it('may only create SubjectAccessReviews, read CloudflareCredentials (who may use them) and get the tunnels sources name', () => {
    expect(permissionsOf(objects, ADMISSION_SA)).toEqual({
      'authorization.k8s.io/subjectaccessreviews': ['create'],
      'networking.cloudflare-operator.io/cloudflarecredentials': ['get', 'list'],
      'networking.cloudflare-operator.io/tunnels': ['get'],
      'networking.cloudflare-operator.io/clustertunnels': ['get'],
    });
  });
});

describe('deploy/examples', () => {
  const dir = path.join(DEPLOY, 'examples');
  const follow = readObjects(path.join(dir, 'objectkeeper-follow.yaml'));
  const ttl = readObjects(path.join(dir, 'objectkeeper-ttl.yaml'));

  it('follow: a ConfigMap and a FollowObject keeper pointing at it, uid left to fill in', () => {
    const cm = follow.find((o) => o.kind === 'ConfigMap')!;
    const keeper = follow.find((o) => o.kind === 'ObjectKeeper')!;
    expect(keeper.spec).toEqual({
      mode: 'FollowObject',
      followObjectRef: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        namespace: cm.metadata.namespace,
        name: cm.metadata.name,
        uid: 'REPLACE-WITH-CONFIGMAP-UID',
      },
    });
    expect(readFileSync(path.join(dir, 'objectkeeper-follow.yaml'), 'utf8')).toContain(
      `kubectl get cm ${cm.metadata.name} -o jsonpath={.metadata.uid}`,
    );
  });

  it('follow: grants get to the worker and list,watch to the watcher on ConfigMaps', () => {
    const all = [...objects, ...follow];
    expect(referenceProblems(all.filter((o) => o.kind !== 'ConfigMap' && o.kind !== 'ObjectKeeper'))).toEqual([]);
    expect(permissionsOf(all, WORKER_SA)['core/configmaps']).toContain('get');
    expect(permissionsOf(all, WATCHER_SA)['core/configmaps']).toEqual(expect.arrayContaining(['list', 'watch']));
    expect(wildcardProblems(follow)).toEqual([]);
  });

  it('ttl: a 2m TTL keeper and a ConfigMap whose controller owner is that keeper', () => {
    const keeper = ttl.find((o) => o.kind === 'ObjectKeeper')!;
    const cm = ttl.find((o) => o.kind === 'ConfigMap')!;
    expect(keeper.spec).toEqual({ mode: 'TTL', ttl: '2m' });
    expect(cm.metadata.ownerReferences).toEqual([
      {
        apiVersion: 'deckhouse.io/v1alpha1',
        kind: 'ObjectKeeper',
        name: keeper.metadata.name,
        uid: 'REPLACE-WITH-KEEPER-UID',
        controller: true,
      },
    ]);
  });

  describe('sandbox-pool and sandbox-agent-token', () => {
    const poolFile = readObjects(path.join(dir, 'sandbox-pool.yaml'));
    const tokenText = readFileSync(path.join(dir, 'sandbox-agent-token.yaml'), 'utf8');
    const secrets = readObjects(path.join(dir, 'sandbox-agent-token.yaml')) as (KubeObject & {
      data: Record<string, string>;
    })[];
    const pool = poolFile.find((o) => o.kind === 'SandboxPool') as KubeObject & {
      spec: { maxSandboxesPerPod: number; agentTemplate: Deployment['spec']['template'] };
    };
    const agents = poolFile.find((o) => o.kind === 'Deployment');
    const template = pool.spec.agentTemplate;
    const agent = template.spec.containers.find((c) => c.name === 'agent')!;
    const env = (name: string) => agent.env!.find((e) => e.name === name);

    it('labels the agent Pods the way the fast path finds them, with the port named `agent`', () => {
      expect(template.metadata.labels).toEqual({
        [AGENT_APP_LABEL]: AGENT_APP_VALUE,
        [AGENT_POOL_LABEL]: pool.metadata.name,
      });
      expect(agentPortOf(template as unknown as V1Pod)).toBe(DEFAULT_AGENT_PORT);
      expect(agent.ports!.find((p) => p.name === 'agent')?.containerPort).toBe(DEFAULT_AGENT_PORT);
      // The agent serves HTTPS only.
      expect(agent.readinessProbe?.httpGet).toEqual({ path: '/healthz', port: 'agent', scheme: 'HTTPS' });
      // Over TLS on a node busy with sandboxes: more than the kubelet's default 1 s.
      for (const probe of [agent.readinessProbe, agent.livenessProbe]) expect(probe?.timeoutSeconds).toBe(5);
    });

    it("runs the image's `agent` command with the downward API env the CLI reads", () => {
      const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
      expect(agent.image).toBe(`${IMAGE_REPO}:${pkg.version}`);
      expect(agent.args).toEqual(['agent']);
      expect(env('POD_NAME')?.valueFrom?.fieldRef?.fieldPath).toBe('metadata.name');
      expect(env('NODE_NAME')?.valueFrom?.fieldRef?.fieldPath).toBe('spec.nodeName');
      expect(env('POD_IP')?.valueFrom?.fieldRef?.fieldPath).toBe('status.podIP');
      expect(Number(env('AGENT_CAPACITY')?.value)).toBe(pool.spec.maxSandboxesPerPod);
      const cli = readFileSync(path.join(ROOT, 'src/cli/main.ts'), 'utf8');
      for (const name of [
        'POD_NAME',
        'NODE_NAME',
        'AGENT_CAPACITY',
        'DO_AGENT_TOKEN_FILE',
        'DO_AGENT_TLS_CERT_FILE',
        'DO_AGENT_TLS_KEY_FILE',
        'DO_AGENT_TLS_CA_FILE',
      ])
        expect(cli, name).toContain(`.env('${name}')`);
      expect(readFileSync(path.join(ROOT, 'src/agent/server.ts'), 'utf8')).toContain('process.env.POD_IP');
      expect(template.spec.automountServiceAccountToken).toBe(false);
    });

    it('names no token: the pool’s workflow mounts the pool’s own and sets DO_AGENT_TOKEN_FILE', () => {
      expect(env('DO_AGENT_TOKEN_FILE')).toBeUndefined();
      expect(template.spec.volumes!.filter((v) => v.secret)).toEqual([]);
      const pod = agentPod({
        namespace: pool.metadata.namespace!,
        pool: pool.metadata.name,
        poolUid: '0123abcd-0000-4000-8000-000000000000',
        name: 'demo-agent-x-0',
        perPod: pool.spec.maxSandboxesPerPod,
        template: template as never,
      }) as unknown as Deployment['spec']['template'];
      const c = pod.spec.containers.find((x) => x.name === 'agent')!;
      const file = c.env!.find((e) => e.name === 'DO_AGENT_TOKEN_FILE')!.value!;
      const mount = c.volumeMounts!.find((m) => path.dirname(file) === m.mountPath)!;
      expect(mount.readOnly).toBe(true);
      expect(pod.spec.volumes!.find((v) => v.name === mount.name)!.secret).toMatchObject({
        secretName: `${pool.metadata.name}-agent-token-0123abcd`,
      });
      // Its TLS files come from the same Secret, and its probes speak HTTPS.
      for (const [name, key] of [
        ['DO_AGENT_TLS_CERT_FILE', 'tls.crt'],
        ['DO_AGENT_TLS_KEY_FILE', 'tls.key'],
        ['DO_AGENT_TLS_CA_FILE', 'ca.crt'],
      ])
        expect(c.env!.find((e) => e.name === name)?.value).toBe(`${mount.mountPath}/${key}`);
      expect(c.readinessProbe?.httpGet?.scheme).toBe('HTTPS');
    });

    it("mounts the node's containerd socket and the FIFO directory at the node's own paths (the CLI's defaults)", () => {
      const cli = readFileSync(path.join(ROOT, 'src/cli/main.ts'), 'utf8');
      for (const [volume, cliDefault] of [
        ['containerd-socket', '/run/containerd/containerd.sock'],
        ['sandbox-io', '/run/fast-sandbox'],
      ]) {
        const v = template.spec.volumes!.find((x) => x.name === volume) as { hostPath?: { path: string } };
        const hostPath = v.hostPath!.path;
        expect(agent.volumeMounts!.find((m) => m.name === volume)!.mountPath).toBe(hostPath);
        expect(cli).toContain(`.default('${cliDefault}')`);
        expect(hostPath).toBe(cliDefault);
      }
      expect((pool.spec as { runtimeType?: string }).runtimeType).toBe('container');
    });

    it('runs no agents of its own: the pool’s workflow creates the Pods from agentTemplate', () => {
      expect(agents).toBeUndefined();
      expect(poolFile.map((o) => o.kind)).toEqual(['SandboxPool', 'NetworkPolicy', 'RoleBinding']);
    });

    it('its NetworkPolicy lets only the fast path reach the agent port, and sandboxes not reach the cluster or the metadata endpoint', () => {
      const policy = poolFile.find((o) => o.kind === 'NetworkPolicy') as unknown as NetworkPolicy;
      expect(policy.metadata.namespace).toBe(pool.metadata.namespace);
      expect(policy.spec.podSelector.matchLabels).toEqual(template.metadata.labels);
      expect(policy.spec.policyTypes).toEqual(['Ingress', 'Egress']);
      const fastpath = find<Deployment>(objects, 'Deployment', FASTPATH_SA.name, NAMESPACE)!;
      // Every rule that opens the agent port comes from the fast path's Pods in its namespace only.
      const opens = (r: PolicyRuleNp, port: number) =>
        (r.ports ?? []).some(
          (p) => p.protocol === 'TCP' && port >= Number(p.port) && port <= (p.endPort ?? Number(p.port)),
        );
      const agentRules = policy.spec.ingress.filter((r) => opens(r, DEFAULT_AGENT_PORT));
      expect(agentRules).toHaveLength(1);
      expect(agentRules[0]!.from).toEqual([
        {
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NAMESPACE } },
          podSelector: { matchLabels: fastpath.spec.template.metadata.labels },
        },
      ]);
      // Sandbox endpoints: every other TCP port is open.
      for (const port of [1, 80, 5757, 5759, 8080, 65535])
        expect(
          policy.spec.ingress.some((r) => opens(r, port)),
          `port ${port}`,
        ).toBe(true);
      const blocked = policy.spec.egress.flatMap((r) => r.to ?? []).flatMap((t) => t.ipBlock?.except ?? []);
      expect(blocked).toEqual(
        expect.arrayContaining(['169.254.0.0/16', '10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16']),
      );
    });

    it('the key Secret exists for the fast path only, with no usable key in it', () => {
      const fastpath = find<Deployment>(objects, 'Deployment', FASTPATH_SA.name, NAMESPACE)!;
      const fastpathSecret = fastpath.spec.template.spec.volumes!.find((v) => v.name === 'agent-token')!.secret!
        .secretName;
      expect(secrets.map((o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`)).toEqual([
        `Secret ${NAMESPACE}/${fastpathSecret}`,
      ]);
      expect(fastpathSecret).toBe(AGENT_TOKEN_SECRET);
      // A placeholder that is not base64, so applying the file unchanged fails; the instructions fill it in.
      for (const o of secrets) expect(o.data).toEqual({ token: 'REPLACE-WITH-BASE64-TOKEN' });
      expect(() => atob('REPLACE-WITH-BASE64-TOKEN')).toThrow();
      expect(tokenText).toContain(
        'sed "s|REPLACE-WITH-BASE64-TOKEN|$TOKEN_B64|" deploy/examples/sandbox-agent-token.yaml',
      );
      expect(tokenText).toMatch(/GENERATE YOUR OWN/);
    });
  });

  it('step 1 of each example (the label selector in its instructions) holds what must exist first', () => {
    const step1 = (objs: KubeObject[]) =>
      objs.filter((o) => o.metadata.labels?.['durable-operators.io/example-step'] === '1').map((o) => o.kind);
    expect(step1(follow).sort()).toEqual(['ClusterRole', 'ClusterRoleBinding', 'ConfigMap']);
    expect(step1(ttl)).toEqual(['ObjectKeeper']);
  });
});
