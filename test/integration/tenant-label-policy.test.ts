/**
 * The ValidatingAdmissionPolicy `durable-operators-sandbox-tenant` (deploy/policies/fastpath.yaml)
 * on the stack's real apiserver: a Sandbox's label `sandbox.fast.io/tenant` puts it in that
 * tenant's list and quota, so setting or changing it needs `use` on `tenants.sandbox.fast.io`
 * named by the tenant. Before it, anyone who could create Sandboxes in some namespace could fill
 * another tenant's quota. Each write is a server-side dry run, under a ServiceAccount's own token.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SandboxKind } from '../../src/api/sandbox.js';
import { TENANT_LABEL } from '../../src/domain/sandbox.js';
import { KubeClient, apiMessage, statusCode } from '../../src/kube/client.js';
import { REPO_ROOT, eventually, kube, serviceAccountKubeconfig, uniq, waitUntilAllowed } from '../support/env.js';
import { kustomizeBuild } from '../support/manifests.js';

const POLICY = 'durable-operators-sandbox-tenant';
const k = kube();
const ns = uniq('tenant-label');
const role = uniq('tenant-label-sandboxes');
const use4001 = uniq('tenant-4001-user');
/** The fast path's ServiceAccount, as the policy names it (deploy/rbac's namespace). */
const FASTPATH = { namespace: 'durable-operators', name: 'durable-operators-fastpath' };
let user: KubeClient;
let fastpath: KubeClient;

const policyObjects = () =>
  kustomizeBuild(path.join(REPO_ROOT, 'deploy/policies')).filter((o) => o.metadata.name === POLICY);

const sandbox = (name: string, tenant?: string, extra: Record<string, string> = {}) =>
  ({
    apiVersion: SandboxKind.apiVersion,
    kind: SandboxKind.kind,
    metadata: { name, namespace: ns, labels: { ...(tenant ? { [TENANT_LABEL]: tenant } : {}), ...extra } },
    spec: { image: 'registry.example/app:1', poolRef: 'pool-a' },
  }) as KubernetesObject;

/** A dry-run write: admitted, or the policy's refusal message (any other error fails the test). */
async function attempt(write: () => Promise<unknown>): Promise<string> {
  try {
    await write();
    return 'admitted';
  } catch (err) {
    if (statusCode(err) === 403 && apiMessage(err).includes(`ValidatingAdmissionPolicy '${POLICY}'`))
      return apiMessage(err);
    throw err;
  }
}
const tryCreate = (as: KubeClient, obj: KubernetesObject) => attempt(() => as.objects.create(obj, undefined, 'All'));

beforeAll(async () => {
  await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  // The operator's namespace may exist already (another file of this stack's run made it).
  if (!(await k.get({ apiVersion: 'v1', kind: 'Namespace', name: FASTPATH.namespace })))
    await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: FASTPATH.namespace } });
  for (const sa of [{ namespace: ns, name: 'team-user' }, FASTPATH])
    if (!(await k.get({ apiVersion: 'v1', kind: 'ServiceAccount', ...sa })))
      await k.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: sa });
  // Both may write Sandboxes in the namespace: RBAC lets them; the policy decides about the label.
  await k.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: role },
    rules: [{ apiGroups: ['sandbox.fast.io'], resources: ['sandboxes'], verbs: ['create', 'update', 'get'] }],
  });
  await k.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: role, namespace: ns },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
    subjects: [
      { kind: 'ServiceAccount', namespace: ns, name: 'team-user' },
      { kind: 'ServiceAccount', ...FASTPATH },
    ],
  });
  for (const o of policyObjects()) await k.apply(o as KubernetesObject);
  for (const sa of [{ namespace: ns, name: 'team-user' }, FASTPATH])
    await waitUntilAllowed(sa, { group: 'sandbox.fast.io', resource: 'sandboxes', verb: 'create', namespace: ns });
  user = KubeClient.fromKubeconfig(await serviceAccountKubeconfig(ns, 'team-user', 'tenant-label'));
  fastpath = KubeClient.fromKubeconfig(
    await serviceAccountKubeconfig(FASTPATH.namespace, FASTPATH.name, 'tenant-label'),
  );
});

afterAll(async () => {
  for (const o of policyObjects()) await k.delete({ apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name });
  await k.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', name: use4001 });
  await k.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', name: use4001 });
  await k.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', name: role });
  await k.delete({ apiVersion: 'v1', kind: 'Namespace', name: ns });
});

it("a user who may create Sandboxes may not put one in a tenant's list and quota without `use` on that tenant", async () => {
  // Once the policy is in force (it is compiled a moment after it is created).
  const refusal = await eventually(
    'the policy in force',
    async () => {
      const r = await tryCreate(user, sandbox('squat', '4001'));
      return r !== 'admitted' && r;
    },
    { timeoutMs: 30_000, intervalMs: 500 },
  );
  expect(refusal).toContain('sandbox.fast.io/tenant=4001');
  expect(refusal).toContain(
    `system:serviceaccount:${ns}:team-user needs \`use\` on tenants.sandbox.fast.io named 4001`,
  );
  // Without the label it belongs to no tenant: admitted as before.
  expect(await tryCreate(user, sandbox('mine'))).toBe('admitted');
  // Adding or changing the label on an existing Sandbox is judged the same way.
  const unlabelled = await k.create(sandbox(uniq('unlabelled')));
  const labelled = await k.create(sandbox(uniq('labelled'), '4002'));
  const withLabels = (o: KubernetesObject, labels: Record<string, string>) =>
    ({ ...o, metadata: { ...o.metadata, labels: { ...o.metadata?.labels, ...labels } } }) as KubernetesObject;
  const tryUpdate = (o: KubernetesObject) => attempt(() => user.objects.replace(o, undefined, 'All'));
  expect(await tryUpdate(withLabels(unlabelled, { [TENANT_LABEL]: '4001' }))).toContain('tenant=4001');
  expect(await tryUpdate(withLabels(labelled, { [TENANT_LABEL]: '4001' }))).toContain('tenant=4001');
  // A change that leaves the label as it is (another label, the spec) needs nothing more.
  expect(await tryUpdate(withLabels(labelled, { team: 'a' }))).toBe('admitted');
});

it('`use` on one tenant lets its holder label Sandboxes for that tenant only; the fast path labels its callers’ Sandboxes', async () => {
  await k.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: use4001 },
    rules: [{ apiGroups: ['sandbox.fast.io'], resources: ['tenants'], resourceNames: ['4001'], verbs: ['use'] }],
  });
  await k.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: use4001 },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: use4001 },
    subjects: [{ kind: 'ServiceAccount', namespace: ns, name: 'team-user' }],
  });
  await eventually(
    'tenant 4001 usable',
    async () => (await tryCreate(user, sandbox('granted', '4001'))) === 'admitted',
    { timeoutMs: 30_000, intervalMs: 500 },
  );
  expect(await tryCreate(user, sandbox('other', '4002'))).toContain('named 4002');
  // The fast path's own ServiceAccount is exempt: it labels what authenticated callers create.
  expect(await tryCreate(fastpath, sandbox('api-made', '4002'))).toBe('admitted');
});
