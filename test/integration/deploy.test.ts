/**
 * deploy/ against the real apiserver of the test stack (RBAC on):
 *
 * 1. every rendered object, and every example, passes a server-side dry-run apply (schema,
 *    CEL rules, defaulting — nothing persisted);
 * 2. the RBAC of deploy/rbac, applied for real, allows each ServiceAccount exactly the verbs it
 *    grants on every resource it names (SubjectAccessReview; the table is derived from the files);
 *    the chart's pool namespaces (fastpath.agentPodNamespaces) bind the fast path there only; the
 *    ValidatingAdmissionPolicies of deploy/policies, applied for real, refuse under each role's own
 *    token the writes its code never makes (a Pod no SandboxPool controls, a Deployment no Tunnel
 *    owns, a claim deleted without being detached, …), naming the policy, and admit those it makes;
 * 3. the worker, watcher and fastpath CLIs, run with tokens of their ServiceAccounts instead of the
 *    admin kubeconfig, drive every kind of operation: a TTL ObjectKeeper, manifest captures of every
 *    capture-target kind, volume capture (Snapshot, Detach) and restore with the test playing the
 *    CSI actors, request TTLs and the sweep Schedule, a restart that finds what a crashed attempt
 *    left, a Content-mode worker; sandboxes created, read, listed, updated and deleted through the
 *    fast path's API (Fast and Strong), one created with kubectl (the watcher's route), the
 *    janitor; Cloudflare aggregation against the emulator (credentials whose token Secret is in the
 *    operator's namespace; a ZoneRuleset, TransformRules, RedirectRules and DeviceSettingsPolicies,
 *    more than 16 on one target so the sync lists them, and a VirtualNetwork; all deleted again,
 *    finalizers released, SyncStates removed); a SandboxPool where no RoleBinding lets the fast
 *    path write says so on its status, and can still be deleted. All of it under the policies of
 *    deploy/policies. Then the apiserver's audit log (which the local
 *    stack keeps for ServiceAccount requests) must show no denied call, and a call for every grant
 *    of deploy/rbac — the RBAC is exactly what the code calls, no more, no less;
 * 4. the docker-compose search-attribute one-shot, run against the real Temporal server,
 *    registers every attribute the workflows set (and is safe to run twice).
 */
import { execFile } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import {
  AuthorizationV1Api,
  PatchStrategy,
  type KubernetesObject,
  type V1ConfigMap,
  type V1Pod,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { CHECKPOINT_LABEL } from '../../src/api/manifests.js';
import {
  CLOUDFLARE_API_VERSION,
  CLOUDFLARE_GROUP,
  DEFAULT_CREDENTIALS_NAMESPACE,
  ORIGINAL_CREDENTIALS_FINALIZER,
  ORIGINAL_GATEWAY_FINALIZER,
  ORIGINAL_INGRESS_FINALIZER,
  REDIRECT_PHASE,
  TRANSFORM_PHASES,
} from '../../src/api/cloudflare.js';
import { TUNNEL_BINDING_VERSION } from '../../src/api/cloudflare-tunnels.js';
import { GATEWAY_API, installGatewayApiCrds, tunnelGatewayClass } from '../support/gateway-api.js';
import type { ObjectKeeper } from '../../src/api/objectkeeper.js';
import {
  ALLOCATION_ANNOTATION,
  SANDBOX_FINALIZER,
  SandboxKind,
  SandboxPoolKind,
  type Sandbox,
  type SandboxPool,
} from '../../src/api/sandbox.js';
import { DETACHED_ANNOTATION, type VolumeCaptureRequest, type VolumeRestoreRequest } from '../../src/api/volumes.js';
import { syncStateName, type SyncTarget } from '../../src/domain/cloudflare/targets.js';
import { checkpointNameFor, chunkNameFor, snapshotNameFor } from '../../src/domain/requests.js';
import { sandboxTaskQueue } from '../../src/config.js';
import { janitorWorkflowId } from '../../src/fastpath/janitor.js';
import { AgentFleet } from '../../src/infra/agent-fleet.js';
import { ensureBinary, findBinary } from '../../src/infra/binaries.js';
import { INFRA_VERSIONS } from '../../src/infra/versions.js';
import { getFreePort, waitUntilReady, type ManagedProcess } from '../../src/infra/process.js';
import { KubeClient, apiMessage, statusCode, type ObjectRef } from '../../src/kube/client.js';
import { createEtcdClient } from '../../src/tenancy/etcd.js';
import { TenantPublisher } from '../../src/tenancy/publisher.js';
import { SEARCH_ATTRIBUTE_DEFINITIONS } from '../../src/temporal/search-attributes.js';
import { requestTtlSweepScheduleId } from '../../src/workers/schedules.js';
import { runJanitorPassUpdate } from '../../src/workflows/sandbox/contract.js';
import { parseExposition, ruleTestSeries, type Series } from '../support/metrics.js';
import {
  createCredentials,
  deleteCreatedCredentials,
  entrypointRules,
  hexId,
  includeList,
  startCloudflare,
  tunnelIngressClass,
  type CloudflareFixture,
} from '../support/cloudflare.js';
import {
  SNAPSHOT_API,
  createCsiVolume,
  createSnapshotClass,
  installSnapshotCrds,
  provisionerRestores,
  pvcProtectionReleases,
  snapshotControllerProvisions,
} from '../support/csi-actors.js';
import {
  REPO_ROOT,
  eventually,
  kube,
  serviceAccountKubeconfig,
  spawnRole,
  stackInfo,
  temporal,
  uniq,
  waitUntilAllowed,
} from '../support/env.js';
import {
  isClusterScoped,
  kustomizeBuild,
  objectId as objectIdOf,
  readObjects,
  type KubeObject,
} from '../support/manifests.js';
import { grantKey, grantsOf, type Grant } from '../support/rbac.js';
import { goneCheck, refOf as refOfRequest, waitTerminal, type RequestLike } from '../support/requests.js';
import { defaultClusterId } from '../../src/kube/cluster-identity.js';

const execFileAsync = promisify(execFile);
const k = kube();
const NAMESPACE = 'durable-operators';
const rendered = kustomizeBuild(path.join(REPO_ROOT, 'deploy'));
/** The placeholder of deploy/examples/sandbox-agent-token.yaml, which its instructions replace. */
const TOKEN_PLACEHOLDER = 'REPLACE-WITH-BASE64-TOKEN';
/** The token example's Secrets, with `tokenB64` where its instructions put a generated token. */
const tokenSecrets = (tokenB64: string): KubeObject[] =>
  parseAllDocuments(
    readFileSync(path.join(REPO_ROOT, 'deploy/examples/sandbox-agent-token.yaml'), 'utf8').replaceAll(
      TOKEN_PLACEHOLDER,
      tokenB64,
    ),
  ).map((d) => d.toJS() as KubeObject);
const examples = [
  ...[
    'objectkeeper-follow.yaml',
    'objectkeeper-ttl.yaml',
    'sandbox-pool.yaml',
    'cloudflare/credentials.yaml',
    'cloudflare/device-settings-policies.yaml',
    'cloudflare/zone-rulesets.yaml',
    'cloudflare/virtual-network.yaml',
    'sandbox-env-from.yaml',
  ].flatMap((f) => readObjects(path.join(REPO_ROOT, 'deploy/examples', f))),
  ...tokenSecrets(Buffer.from('0123456789abcdef').toString('base64')),
];

const refOf = (o: KubeObject): ObjectRef => ({
  apiVersion: o.apiVersion,
  kind: o.kind,
  namespace: o.metadata.namespace,
  name: o.metadata.name,
});
const describeObj = (o: KubeObject) =>
  `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;
const pick = (kind: string) => rendered.filter((o) => o.kind === kind);
/** `helm template` of charts/durable-operators into `namespace` (as test/integration/helm-chart.test.ts renders it). */
async function helmTemplate(namespace: string, ...set: string[]): Promise<KubeObject[]> {
  const helm = (await ensureBinary('helm')).path;
  const args = ['template', 'durable-operators', path.join(REPO_ROOT, 'charts/durable-operators'), '-n', namespace];
  args.push('--kube-version', INFRA_VERSIONS.kubernetes, ...set.flatMap((s) => ['--set', s]));
  const { stdout } = await execFileAsync(helm, args, { maxBuffer: 64 << 20 });
  return parseAllDocuments(stdout)
    .map((d) => d.toJS() as KubeObject | null)
    .filter((o): o is KubeObject => Boolean(o))
    .map((o) => (isClusterScoped(o) || o.metadata.namespace ? o : { ...o, metadata: { ...o.metadata, namespace } }));
}
const SNAPSHOTTER_API = 'state-snapshotter.deckhouse.io/v1alpha1';
const STORAGE_API = 'storage.deckhouse.io/v1alpha1';
/** Audit events from before this file started belong to another run. */
const FILE_STARTED = Date.now();

/** Where deploy/policies are tried with writes they must refuse (a namespace and a volume of their own). */
const POLICY_NS = uniq('deploy-policies');
const POLICY_PV = uniq('deploy-policies-pv');
/** A namespace holding a SandboxPool that no RoleBinding lets the fast path write in. */
const UNBOUND_POOL_NS = uniq('deploy-unbound-pool');

/**
 * Calls the tests below make on purpose with a ServiceAccount's token and that must be refused
 * (`mustAppear`: the test is sure to make it, so its absence means the audit log misses denials).
 * An RBAC denial unless `policy` names the ValidatingAdmissionPolicy that refuses it; `namespace`
 * or `uri` narrow it to the calls of that test, so the same call made by the code is still a failure.
 */
const DELIBERATE_DENIALS: {
  sa: string;
  call: string;
  why: string;
  mustAppear: boolean;
  policy?: string;
  namespace?: string;
  uri?: string;
}[] = [
  { sa: 'durable-operators-worker', call: 'deckhouse.io/objectkeepers list', why: 'identity probe', mustAppear: true },
  { sa: 'durable-operators-watcher', call: 'core/configmaps list', why: 'identity probe', mustAppear: true },
  { sa: 'durable-operators-worker', call: 'core/secrets get', why: 'a keeper following a Secret', mustAppear: true },
  { sa: 'durable-operators-watcher', call: 'core/secrets list', why: 'informer for that Secret', mustAppear: false },
  { sa: 'durable-operators-fastpath', call: 'core/configmaps list', why: 'identity probe', mustAppear: true },
  ...[
    ['durable-operators-fastpath', 'core/pods create', 'durable-operators-fastpath-agent-pods'],
    ['durable-operators-fastpath', 'core/pods delete', 'durable-operators-fastpath-agent-pods'],
    ['durable-operators-fastpath', 'core/secrets create', 'durable-operators-fastpath-agent-secrets'],
    ['durable-operators-fastpath', 'core/secrets patch', 'durable-operators-fastpath-agent-secrets'],
    ['durable-operators-worker', 'apps/deployments patch', 'durable-operators-worker-tunnel-objects'],
    ['durable-operators-worker', 'apps/deployments delete', 'durable-operators-worker-tunnel-objects'],
    ['durable-operators-worker', 'core/secrets create', 'durable-operators-worker-tunnel-objects'],
    ['durable-operators-worker', 'core/persistentvolumeclaims delete', 'durable-operators-worker-detach-claims'],
  ].map(([sa, call, policy]) => ({
    sa: sa!,
    call: call!,
    policy,
    namespace: POLICY_NS,
    why: policy!,
    mustAppear: true,
  })),
  // The pool's workflow tries its Secret (and would try its Pods) there, then says why on the pool.
  ...(['core/secrets patch', 'core/secrets create', 'core/pods create'] as const).map((call) => ({
    sa: 'durable-operators-fastpath',
    call,
    namespace: UNBOUND_POOL_NS,
    why: 'a SandboxPool where no RoleBinding lets the fast path write',
    mustAppear: call === 'core/secrets patch',
  })),
  {
    sa: 'durable-operators-worker',
    call: 'core/persistentvolumes patch',
    policy: 'durable-operators-worker-detach-volumes',
    uri: `/persistentvolumes/${POLICY_PV}`,
    why: 'durable-operators-worker-detach-volumes',
    mustAppear: true,
  },
];
const isDeliberate = (d: (typeof DELIBERATE_DENIALS)[number], c: AuditedCall) =>
  d.call === c.call &&
  d.policy === c.policy &&
  (!d.namespace || d.namespace === c.namespace) &&
  (!d.uri || c.uri.split('?')[0]!.endsWith(d.uri));

/**
 * Grants of deploy/rbac no drive of this file exercises, each with why it cannot be exercised
 * here (`<group>/<resource> <verb>` → reason). Keep it empty whenever a drive can do it.
 */
const NOT_EXERCISED: Record<string, string> = {};

interface CaptureFixture {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  [field: string]: unknown;
}
const podTemplate = (app: string) => ({
  metadata: { labels: { app } },
  spec: { restartPolicy: 'Always', containers: [{ name: 'c', image: 'registry.example/app:1' }] },
});
const jobTemplate = { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'registry.example/job:1' }] } };
/**
 * A minimal object of each kind the capture-targets role names (keyed like the grants), for the
 * capture drive; the kinds themselves come from deploy/rbac.
 */
const CAPTURE_FIXTURES: Record<string, (name: string) => CaptureFixture> = {
  'core/configmaps': (name) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { a: 'b' } }),
  'core/services': (name) => ({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name },
    spec: { clusterIP: 'None', ports: [{ port: 80 }] },
  }),
  'core/serviceaccounts': (name) => ({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name } }),
  'core/persistentvolumeclaims': (name) => ({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
  }),
  'core/limitranges': (name) => ({
    apiVersion: 'v1',
    kind: 'LimitRange',
    metadata: { name },
    spec: { limits: [{ type: 'Container', default: { cpu: '100m' } }] },
  }),
  'core/resourcequotas': (name) => ({
    apiVersion: 'v1',
    kind: 'ResourceQuota',
    metadata: { name },
    spec: { hard: { pods: '10' } },
  }),
  'apps/deployments': (name) => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: { selector: { matchLabels: { app: name } }, template: podTemplate(name) },
  }),
  'apps/statefulsets': (name) => ({
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name },
    spec: { serviceName: name, selector: { matchLabels: { app: name } }, template: podTemplate(name) },
  }),
  'apps/daemonsets': (name) => ({
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name },
    spec: { selector: { matchLabels: { app: name } }, template: podTemplate(name) },
  }),
  'batch/jobs': (name) => ({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name },
    spec: { template: jobTemplate },
  }),
  'batch/cronjobs': (name) => ({
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: { name },
    spec: { schedule: '0 0 1 1 *', suspend: true, jobTemplate: { spec: { template: jobTemplate } } },
  }),
  'networking.k8s.io/ingresses': (name) => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name },
    spec: { defaultBackend: { service: { name, port: { number: 80 } } } },
  }),
  'networking.k8s.io/networkpolicies': (name) => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name },
    spec: { podSelector: {} },
  }),
  'rbac.authorization.k8s.io/roles': (name) => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name },
    rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
  }),
  'rbac.authorization.k8s.io/rolebindings': (name) => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
  }),
  'policy/poddisruptionbudgets': (name) => ({
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name },
    spec: { minAvailable: 1, selector: { matchLabels: { app: name } } },
  }),
  'autoscaling/horizontalpodautoscalers': (name) => ({
    apiVersion: 'autoscaling/v2',
    kind: 'HorizontalPodAutoscaler',
    metadata: { name },
    spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name }, minReplicas: 1, maxReplicas: 2 },
  }),
};

/** One request as the kube-apiserver audit log records it (level Metadata, stage ResponseComplete). */
interface AuditEvent {
  stage: string;
  verb: string;
  requestURI: string;
  requestReceivedTimestamp: string;
  user: { username: string };
  objectRef?: { apiGroup?: string; resource?: string; subresource?: string; namespace?: string };
  responseStatus?: { code?: number; message?: string };
  annotations?: Record<string, string>;
}
interface AuditedCall {
  user: string;
  /** `<group or core>/<resource>[/<subresource>] <verb>` (as grantKey names grants), or `<verb> <path>`. */
  call: string;
  /** The namespace of a namespaced resource's call (a Role's grant is used only there). */
  namespace?: string;
  uri: string;
  denied: boolean;
  reason?: string;
  /** The ValidatingAdmissionPolicy that refused the call (an admission denial, not RBAC's). */
  policy?: string;
}

/** The calls in the audit log (and its rotated backups) received since `since` (ms). */
function auditedCalls(file: string, since: number): AuditedCall[] {
  const dir = path.dirname(file);
  const base = path.basename(file, '.log');
  const files = readdirSync(dir).filter((f) => f.startsWith(base) && f.endsWith('.log'));
  const out: AuditedCall[] = [];
  for (const f of files) {
    for (const line of readFileSync(path.join(dir, f), 'utf8').split('\n')) {
      let e: AuditEvent;
      try {
        e = JSON.parse(line) as AuditEvent;
      } catch {
        continue; // blank, or the line being written right now
      }
      if (e.stage !== 'ResponseComplete' || Date.parse(e.requestReceivedTimestamp) < since) continue;
      const o = e.objectRef;
      const denied = e.responseStatus?.code === 403 || e.annotations?.['authorization.k8s.io/decision'] === 'forbid';
      const policy = denied
        ? /ValidatingAdmissionPolicy '([^']+)'/.exec(e.responseStatus?.message ?? '')?.[1]
        : undefined;
      // A server-side apply (a PATCH) that would create the object is authorized a second time, as
      // `create`: logged as a patch answered 201 when allowed, or refused with "cannot create".
      const applyCreate =
        e.verb === 'patch' &&
        (denied ? /cannot create resource/.test(e.responseStatus?.message ?? '') : e.responseStatus?.code === 201);
      for (const verb of applyCreate ? (denied ? ['create'] : ['patch', 'create']) : [e.verb]) {
        const call = o?.resource
          ? grantKey({
              group: o.apiGroup ?? '',
              resource: o.subresource ? `${o.resource}/${o.subresource}` : o.resource,
              verb,
            })
          : `${verb} ${e.requestURI.split('?')[0]}`;
        out.push({
          user: e.user.username,
          call,
          namespace: o?.namespace,
          uri: e.requestURI,
          denied,
          reason:
            denied && (applyCreate || policy)
              ? e.responseStatus?.message
              : e.annotations?.['authorization.k8s.io/reason'],
          ...(policy ? { policy } : {}),
        });
      }
    }
  }
  return out;
}

/** Objects this file created for real, deleted again at the end (most recent first). */
const created: ObjectRef[] = [];
async function applyForReal(obj: KubeObject): Promise<void> {
  const existed = await k.get(refOf(obj));
  await k.apply(structuredClone(obj) as KubernetesObject);
  if (!existed) created.unshift(refOf(obj));
}

beforeAll(async () => {
  // Namespaced dry runs need their namespace to exist.
  await applyForReal(pick('Namespace')[0]!);
});

afterAll(async () => {
  await deleteCreatedCredentials(kube());
  for (const ref of created) await k.delete(ref).catch(() => undefined);
});

describe('server-side dry run', () => {
  it('accepts every object of deploy/ and persists none of them', async () => {
    expect(rendered.length).toBeGreaterThan(0);
    for (const obj of rendered) {
      const before = await k.get(refOf(obj));
      const out = await k.apply(structuredClone(obj) as KubernetesObject, { dryRun: true }).catch((err: unknown) => {
        throw new Error(`${describeObj(obj)}: ${String((err as { body?: unknown }).body ?? err)}`);
      });
      expect(out.kind, describeObj(obj)).toBe(obj.kind);
      expect(out.metadata?.name).toBe(obj.metadata.name);
      expect(out.metadata?.namespace).toBe(obj.metadata.namespace);
      expect(out.metadata?.labels).toMatchObject(obj.metadata.labels ?? {});
      if (!before) expect(await k.get(refOf(obj)), `${describeObj(obj)} was persisted by a dry run`).toBeUndefined();
    }
  });

  it('returns the Deployments as the apiserver would store them (defaulted)', async () => {
    for (const d of pick('Deployment')) {
      const out = (await k.apply(structuredClone(d) as KubernetesObject, { dryRun: true })) as KubernetesObject & {
        spec: { strategy?: { type?: string }; template: { spec: { containers: { imagePullPolicy?: string }[] } } };
      };
      expect(out.spec.strategy?.type).toBe('RollingUpdate');
      expect(out.spec.template.spec.containers[0]!.imagePullPolicy).toBe('IfNotPresent');
    }
  });

  it('rejects an invalid object (the dry run really validates)', async () => {
    const bad = structuredClone(pick('Deployment')[0]!) as KubeObject & { spec: { replicas: number } };
    bad.spec.replicas = -1;
    await expect(k.apply(bad as KubernetesObject, { dryRun: true })).rejects.toSatisfy(
      (err) => statusCode(err) === 422,
    );
  });

  it('accepts every object of deploy/examples (CEL rules included)', async () => {
    expect(examples.map((o) => o.kind)).toEqual(
      expect.arrayContaining([
        'ObjectKeeper',
        'SandboxPool',
        'Secret',
        'CloudflareCredentials',
        'DeviceSettingsPolicy',
        'ZoneRuleset',
      ]),
    );
    for (const obj of examples) {
      const out = await k.apply(structuredClone(obj) as KubernetesObject, { dryRun: true }).catch((err: unknown) => {
        throw new Error(`${describeObj(obj)}: ${String((err as { body?: unknown }).body ?? err)}`);
      });
      expect(out.metadata?.name, describeObj(obj)).toBe(obj.metadata.name);
    }
  });

  it('refuses the agent token example applied unchanged (its placeholder is not base64)', async () => {
    const unchanged = tokenSecrets(TOKEN_PLACEHOLDER);
    expect(unchanged.map((o) => o.kind)).toEqual(['Secret']);
    for (const obj of unchanged)
      await expect(k.apply(structuredClone(obj) as KubernetesObject, { dryRun: true })).rejects.toSatisfy(
        // Server-side apply answers 500 for it, a create 400: either way, refused for this reason.
        (err) => /illegal base64 data/.test(apiMessage(err)),
      );
  });
});

describe('RBAC, applied for real', () => {
  const worker = 'durable-operators-worker';
  const watcher = 'durable-operators-watcher';
  const fastpath = 'durable-operators-fastpath';
  const roles = [
    { sa: worker, ref: { name: worker, namespace: NAMESPACE } },
    { sa: watcher, ref: { name: watcher, namespace: NAMESPACE } },
    { sa: fastpath, ref: { name: fastpath, namespace: NAMESPACE } },
  ];
  const userOf = (sa: string) => `system:serviceaccount:${NAMESPACE}:${sa}`;
  const authz = k.kc.makeApiClient(AuthorizationV1Api);
  /** Every verb a resource request can carry; each is checked, granted or not. */
  const VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'];

  beforeAll(async () => {
    // deploy/policies too: the drives below write under them.
    for (const kind of [
      'ServiceAccount',
      'ClusterRole',
      'ClusterRoleBinding',
      'Role',
      'RoleBinding',
      'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicyBinding',
    ])
      for (const o of pick(kind)) await applyForReal(o);
  });

  interface Check {
    verb: string;
    resource: string;
    group?: string;
    subresource?: string;
    namespace?: string;
    /** One object's name, for a grant limited by resourceNames. */
    name?: string;
  }

  async function allowed(sa: string, c: Check): Promise<boolean> {
    const review = await authz.createSubjectAccessReview({
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          user: userOf(sa),
          groups: ['system:serviceaccounts', `system:serviceaccounts:${NAMESPACE}`, 'system:authenticated'],
          resourceAttributes: {
            verb: c.verb,
            resource: c.resource,
            group: c.group ?? '',
            subresource: c.subresource,
            namespace: c.namespace,
            name: c.name,
          },
        },
      },
    });
    return review.status?.allowed === true;
  }

  it.each(roles)(
    'the apiserver allows $sa exactly the verbs deploy/rbac grants on each resource it names',
    async ({ sa, ref }) => {
      const grants = grantsOf(rendered, ref);
      expect(grants.length).toBeGreaterThan(0);
      // A Role's grant holds in its RoleBinding's namespace only: checked there.
      const where = (g: { namespace?: string }) => (g.namespace ? ` (in ${g.namespace})` : '');
      const keyOf = (g: Pick<Grant, 'group' | 'resource' | 'verb' | 'namespace'>) => `${grantKey(g)}${where(g)}`;
      const granted = new Set(grants.map(keyOf));
      const resources = [...new Map(grants.map((g) => [`${g.group}/${g.resource}${where(g)}`, g])).values()];
      const checks = resources.flatMap((g) => VERBS.map((verb) => ({ ...g, verb })));
      const review = (c: (typeof checks)[number]) => {
        const [resource, subresource] = c.resource.split('/');
        // A grant limited by resourceNames is asked about the first object it names.
        const name = c.names?.[0];
        return allowed(sa, {
          verb: c.verb,
          group: c.group,
          resource: resource!,
          subresource,
          namespace: c.namespace,
          name,
        });
      };
      // The authorizer sees new bindings through its informers: wait for every grant's first verb.
      for (const g of new Map(grants.map((x) => [x.role, x])).values())
        await eventually(`${sa} grants of ${g.role} visible`, () => review(g));
      const actual = await Promise.all(checks.map(review));
      // The whole table at once, so a failure shows every wrong answer.
      // A ClusterRole's grant holds in every namespace, a Role's namespace included.
      const expected = (c: (typeof checks)[number]) =>
        granted.has(keyOf(c)) || (!!c.namespace && granted.has(keyOf({ ...c, namespace: undefined })));
      expect(checks.map((c, i) => `${keyOf(c)}: ${actual[i]}`)).toEqual(
        checks.map((c) => `${keyOf(c)}: ${expected(c)}`),
      );
    },
  );

  it('only the worker may read Secrets, by name, in its own namespace only (capturing them is an explicit opt-in); the fast path only creates and patches them (reading them for Sandboxes is a per-namespace opt-in)', async () => {
    // The worker gets a Cloudflare token from the Secret its CloudflareCredentials names; a
    // Secret elsewhere needs a Role there (deploy/rbac/worker.yaml).
    await waitUntilAllowed(
      { namespace: NAMESPACE, name: worker },
      { group: '', resource: 'secrets', verb: 'get', namespace: NAMESPACE },
    );
    for (const { sa } of roles)
      for (const verb of ['get', 'list', 'watch'])
        for (const namespace of [undefined, 'default', NAMESPACE])
          expect(
            await allowed(sa, { verb, resource: 'secrets', namespace }),
            `${sa} ${verb} secrets in ${namespace ?? 'every namespace'}`,
          ).toBe(sa === worker && verb === 'get' && namespace === NAMESPACE);
    // The fast path creates each pool's agent token Secret only where a namespace binds it for its
    // pools (below), and can change none.
    for (const verb of ['create', 'update', 'patch', 'delete'])
      expect(await allowed(fastpath, { verb, resource: 'secrets', namespace: 'default' }), `fast path ${verb}s`).toBe(
        false,
      );
    // Sandboxes' valueFrom: a ClusterRole bound nowhere by deploy/ (a namespace opts in with
    // deploy/examples/sandbox-env-from.yaml), granting get on Secrets and ConfigMaps and nothing else.
    expect(pick('ClusterRole').find((r) => r.metadata.name === 'durable-operators-fastpath-sandbox-env')).toMatchObject(
      {
        rules: [{ apiGroups: [''], resources: ['secrets', 'configmaps'], verbs: ['get'] }],
      },
    );
    expect(
      [...pick('ClusterRoleBinding'), ...pick('RoleBinding')].filter(
        (b) => (b as { roleRef?: { name?: string } }).roleRef?.name === 'durable-operators-fastpath-sandbox-env',
      ),
    ).toEqual([]);
  });

  it('the fast path creates Pods and Secrets only in namespaces bound for pools, never cluster-wide (review N9)', async () => {
    const agentPods = 'durable-operators-fastpath-agent-pods';
    expect(
      [...pick('ClusterRoleBinding'), ...pick('RoleBinding')].filter(
        (b) => (b as { roleRef?: { name?: string } }).roleRef?.name === agentPods,
      ),
    ).toEqual([]);
    const poolNs = uniq('deploy-pools');
    await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: poolNs } });
    try {
      // As deploy/examples/sandbox-pool.yaml binds its pool's namespace.
      const binding = readObjects(path.join(REPO_ROOT, 'deploy/examples/sandbox-pool.yaml')).find(
        (o) => o.kind === 'RoleBinding',
      )!;
      await k.create({ ...binding, metadata: { ...binding.metadata, namespace: poolNs } } as never);
      await waitUntilAllowed(
        { namespace: NAMESPACE, name: fastpath },
        { group: '', resource: 'pods', verb: 'create', namespace: poolNs },
      );
      const answers: string[] = [];
      const expected: string[] = [];
      for (const namespace of [poolNs, 'kube-system', 'default', NAMESPACE, undefined])
        for (const [resource, verb] of [
          ['pods', 'create'],
          ['pods', 'delete'],
          ['secrets', 'create'],
          ['secrets', 'patch'],
        ] as const) {
          const what = `${verb} ${resource} in ${namespace ?? 'every namespace'}`;
          answers.push(`${what}: ${await allowed(fastpath, { verb, resource, namespace })}`);
          expected.push(`${what}: ${namespace === poolNs}`);
        }
      expect(answers).toEqual(expected);
    } finally {
      await k.core.deleteNamespace({ name: poolNs }).catch(() => undefined);
    }
  });

  describe('deploy/policies: each role writes only what its code writes, refused by the apiserver under its own ServiceAccount', () => {
    let asFastpath: KubeClient;
    let asWorker: KubeClient;
    /** Every write here is a server-side dry run: admitted or refused as for real, nothing kept. */
    const DRY = 'All';
    /** The refusal of `write` by `policy` (a 403 naming it), once the policy is in force. */
    const refusedBy = (policy: string, write: () => Promise<unknown>) =>
      eventually(
        `refused by ValidatingAdmissionPolicy ${policy}`,
        async () => {
          const err = await write().then(
            () => undefined,
            (e: unknown) => e,
          );
          if (err === undefined) return false; // admitted: the policy is not in force (yet)
          const message = apiMessage(err);
          if (statusCode(err) === 403 && message.includes(`ValidatingAdmissionPolicy '${policy}'`)) return message;
          throw err;
        },
        { timeoutMs: 30_000, intervalMs: 500 },
      );
    const poolOwnerRef = (name: string) => ({
      apiVersion: SandboxPoolKind.apiVersion,
      kind: SandboxPoolKind.kind,
      name,
      uid: '0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0',
      controller: true,
    });
    const tunnelOwnerRef = (kind: 'Tunnel' | 'ClusterTunnel', name: string) => ({
      apiVersion: CLOUDFLARE_API_VERSION,
      kind,
      name,
      uid: '1b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0',
      controller: true,
    });
    const pod = (metadata: Record<string, unknown>) =>
      ({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { namespace: POLICY_NS, ...metadata },
        spec: { containers: [{ name: 'c', image: 'registry.example/app:1' }] },
      }) as KubernetesObject;
    const secret = (metadata: Record<string, unknown>) =>
      ({ apiVersion: 'v1', kind: 'Secret', metadata: { namespace: POLICY_NS, ...metadata } }) as KubernetesObject;

    beforeAll(async () => {
      await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: POLICY_NS } });
      created.unshift({ apiVersion: 'v1', kind: 'Namespace', name: POLICY_NS });
      // A pool namespace as the chart binds one (fastpath.agentPodNamespaces).
      for (const b of (await helmTemplate(NAMESPACE, `fastpath.agentPodNamespaces={${POLICY_NS}}`)).filter(
        (o) => o.kind === 'RoleBinding' && o.metadata.namespace === POLICY_NS,
      ))
        await k.create(b as never);
      await waitUntilAllowed(
        { namespace: NAMESPACE, name: fastpath },
        { group: '', resource: 'pods', verb: 'create', namespace: POLICY_NS },
      );
      asFastpath = KubeClient.fromKubeconfig(await serviceAccountKubeconfig(NAMESPACE, fastpath, 'policies'));
      asWorker = KubeClient.fromKubeconfig(await serviceAccountKubeconfig(NAMESPACE, worker, 'policies'));
    });

    it('the chart’s namespaced mode (fastpath.agentPodNamespaces): the fast path may create Pods and Secrets in the pool namespace, nowhere else (SubjectAccessReview)', async () => {
      const answers: string[] = [];
      const expected: string[] = [];
      for (const namespace of [POLICY_NS, 'default', 'kube-system', NAMESPACE, undefined])
        for (const resource of ['pods', 'secrets']) {
          const what = `create ${resource} in ${namespace ?? 'every namespace'}`;
          answers.push(`${what}: ${await allowed(fastpath, { verb: 'create', resource, namespace })}`);
          expected.push(`${what}: ${namespace === POLICY_NS}`);
        }
      expect(answers).toEqual(expected);
    });

    it('the chart renders deploy/policies for the ServiceAccounts of its release namespace', async () => {
      const mine = (await helmTemplate('team-ops')).filter((o) => o.kind.startsWith('ValidatingAdmissionPolicy'));
      const theirs = [...pick('ValidatingAdmissionPolicy'), ...pick('ValidatingAdmissionPolicyBinding')];
      expect(theirs.length).toBeGreaterThan(0);
      expect(mine.map(objectIdOf).sort()).toEqual(theirs.map(objectIdOf).sort());
      // Keys sorted: kustomize writes them sorted, helm as the file has them.
      const sortedKeys = (v: unknown): unknown =>
        Array.isArray(v)
          ? v.map(sortedKeys)
          : v && typeof v === 'object'
            ? Object.fromEntries(
                Object.entries(v)
                  .sort(([a], [b]) => a.localeCompare(b))
                  .map(([k, x]) => [k, sortedKeys(x)]),
              )
            : v;
      const text = (objs: KubeObject[]) => objs.map((o) => JSON.stringify([objectIdOf(o), sortedKeys(o.spec)])).sort();
      expect(text(mine)).toEqual(
        text(theirs).map((t) =>
          t.replaceAll('system:serviceaccount:durable-operators:', 'system:serviceaccount:team-ops:'),
        ),
      );
      expect(text(mine).join()).not.toContain(':durable-operators:');
    });

    it('the fast path: only agent Pods (app=sandbox-agent, controlled by a SandboxPool), created or deleted', async () => {
      const policy = 'durable-operators-fastpath-agent-pods';
      const name = uniq('not-an-agent');
      const message = await refusedBy(policy, () => asFastpath.objects.create(pod({ name }), undefined, DRY));
      expect(message).toContain(
        `${policy}: the fast path writes only agent Pods (labels app=sandbox-agent and fast-sandbox.io/pool=<pool>, controlled by that SandboxPool`,
      );
      expect(message).toContain(`Pod ${POLICY_NS}/${name} is not one`);
      // The labels alone are not enough: the pool must control it.
      const labels = { app: 'sandbox-agent', 'fast-sandbox.io/pool': 'pool-a' };
      await refusedBy(policy, () => asFastpath.objects.create(pod({ name, labels }), undefined, DRY));
      // What createAgentPods writes is admitted.
      await asFastpath.objects.create(pod({ name, labels, ownerReferences: [poolOwnerRef('pool-a')] }), undefined, DRY);
      // Another workload's Pod in the pool's namespace is not the fast path's to delete.
      await k.create(pod({ name: 'workload' }) as never);
      await refusedBy(policy, () => asFastpath.objects.delete(pod({ name: 'workload' }), undefined, DRY));
    });

    it('the fast path: only its pools’ agent Secrets, created or changed', async () => {
      const policy = 'durable-operators-fastpath-agent-secrets';
      const message = await refusedBy(policy, () =>
        asFastpath.objects.create(secret({ name: 'stolen-token' }), undefined, DRY),
      );
      expect(message).toContain(`${policy}: the fast path writes only its pools' agent Secrets`);
      // An agent Secret's name carries its pool's UID (agentTokenSecretName).
      const owner = poolOwnerRef('pool-a');
      const labels = { 'fast-sandbox.io/pool': 'pool-a' };
      await refusedBy(policy, () =>
        asFastpath.objects.create(
          secret({ name: 'pool-a-agent-token-ffffffff', labels, ownerReferences: [owner] }),
          undefined,
          DRY,
        ),
      );
      await asFastpath.objects.create(
        secret({ name: `pool-a-agent-token-${owner.uid.slice(0, 8)}`, labels, ownerReferences: [owner] }),
        undefined,
        DRY,
      );
      // Someone else's Secret cannot be overwritten, nor adopted by adding the owner.
      await k.create(secret({ name: 'app-credentials' }) as never);
      await refusedBy(policy, () =>
        asFastpath.objects.patch(
          secret({ name: 'app-credentials', labels, ownerReferences: [owner] }),
          undefined,
          DRY,
          undefined,
          undefined,
          PatchStrategy.MergePatch,
        ),
      );
    });

    it('the worker: Secrets and Deployments only for tunnels (controlled by their Tunnel, named after it)', async () => {
      const policy = 'durable-operators-worker-tunnel-objects';
      // As kube-system's own: a Deployment no Tunnel owns, which the worker may neither change nor delete.
      const system = {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'coredns', namespace: POLICY_NS },
        spec: { selector: { matchLabels: { app: 'coredns' } }, template: podTemplate('coredns') },
      } as KubernetesObject;
      await k.create(structuredClone(system) as never);
      const scaled = { ...system, spec: { replicas: 5 } } as KubernetesObject;
      const message = await refusedBy(policy, () =>
        asWorker.objects.patch(scaled, undefined, DRY, undefined, undefined, PatchStrategy.MergePatch),
      );
      expect(message).toContain(`${policy}: the worker writes Secrets and Deployments only for tunnels`);
      expect(message).toContain(`Deployment ${POLICY_NS}/coredns is not one`);
      // Adding a Tunnel as owner does not make it one.
      await refusedBy(policy, () =>
        asWorker.objects.patch(
          { ...system, metadata: { ...system.metadata, ownerReferences: [tunnelOwnerRef('Tunnel', 'coredns')] } },
          undefined,
          DRY,
          undefined,
          undefined,
          PatchStrategy.MergePatch,
        ),
      );
      await refusedBy(policy, () => asWorker.objects.delete(system, undefined, DRY));
      await refusedBy(policy, () => asWorker.objects.create(secret({ name: 'db-password' }), undefined, DRY));
      // A ClusterTunnel's objects live in cloudflare-operator-system only.
      await refusedBy(policy, () =>
        asWorker.objects.create(
          secret({ name: 'edge', ownerReferences: [tunnelOwnerRef('ClusterTunnel', 'edge')] }),
          undefined,
          DRY,
        ),
      );
      // What writeCredentials writes is admitted.
      await asWorker.objects.create(
        secret({ name: 'edge', ownerReferences: [tunnelOwnerRef('Tunnel', 'edge')] }),
        undefined,
        DRY,
      );
    });

    it('the worker: only a claim it detaches deleted (bound, UID precondition); a volume changed only to detach it', async () => {
      const claims = 'durable-operators-worker-detach-claims';
      const claim = (name: string, volumeName?: string) =>
        ({
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          metadata: { name, namespace: POLICY_NS },
          spec: {
            accessModes: ['ReadWriteOnce'],
            resources: { requests: { storage: '1Gi' } },
            ...(volumeName ? { volumeName } : {}),
          },
        }) as KubernetesObject;
      const unbound = await k.create<KubernetesObject>(claim('unbound') as never);
      const bound = await k.create<KubernetesObject>(claim('bound', POLICY_PV) as never);
      const deleteAsWorker = (c: KubernetesObject, uid?: string) =>
        asWorker.objects.delete(c, undefined, DRY, undefined, undefined, 'Background', {
          ...(uid ? { preconditions: { uid } } : {}),
        });
      const message = await refusedBy(claims, () => deleteAsWorker(unbound, unbound.metadata!.uid));
      expect(message).toContain(`${claims}: the worker only deletes a PersistentVolumeClaim it is detaching`);
      await refusedBy(claims, () => deleteAsWorker(bound));
      await deleteAsWorker(bound, bound.metadata!.uid);

      const volumes = 'durable-operators-worker-detach-volumes';
      const pv = await k.create<KubernetesObject>({
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name: POLICY_PV },
        spec: {
          capacity: { storage: '1Gi' },
          accessModes: ['ReadWriteOnce'],
          persistentVolumeReclaimPolicy: 'Delete',
          csi: { driver: 'policies.csi.test', volumeHandle: POLICY_PV },
          claimRef: {
            apiVersion: 'v1',
            kind: 'PersistentVolumeClaim',
            namespace: POLICY_NS,
            name: 'bound',
            uid: bound.metadata!.uid,
          },
        },
      } as never);
      created.unshift({ apiVersion: 'v1', kind: 'PersistentVolume', name: POLICY_PV });
      const patchAsWorker = ({ metadata, spec }: { metadata?: object; spec?: object }) =>
        asWorker.objects.patch(
          {
            apiVersion: 'v1',
            kind: 'PersistentVolume',
            metadata: { ...metadata, name: POLICY_PV },
            ...(spec ? { spec } : {}),
          } as KubernetesObject,
          undefined,
          DRY,
          undefined,
          undefined,
          PatchStrategy.MergePatch,
        );
      const mark = {
        annotations: { [DETACHED_ANNOTATION]: 'true' },
        ownerReferences: [
          {
            apiVersion: 'deckhouse.io/v1alpha1',
            kind: 'ObjectKeeper',
            name: 'keeper',
            uid: pv.metadata!.uid,
            controller: true,
          },
        ],
      };
      expect(
        await refusedBy(volumes, () => patchAsWorker({ spec: { persistentVolumeReclaimPolicy: 'Retain' } })),
      ).toContain(`${volumes}: the worker changes a PersistentVolume only to detach it`);
      // Marked, but still deleted with its claim: refused.
      await refusedBy(volumes, () => patchAsWorker({ metadata: mark }));
      // Handed to another claim in the same write: refused.
      await refusedBy(volumes, () =>
        patchAsWorker({
          metadata: mark,
          spec: { persistentVolumeReclaimPolicy: 'Retain', claimRef: { name: 'stranger', uid: null } },
        }),
      );
      // detachVolume's step (a) is admitted.
      await patchAsWorker({ metadata: mark, spec: { persistentVolumeReclaimPolicy: 'Retain' } });
    });
  });

  describe('worker, watcher and fast path running as their ServiceAccounts', () => {
    const taskQueue = uniq('tq-deploy');
    const ns = uniq('deploy-e2e');
    const captureNs = uniq('deploy-capture');
    // A CSI driver of this file's own, so other files' snapshot classes never interfere.
    const driver = `${uniq('deploy')}.csi.test`;
    const storageClassName = `${driver}-sc`;
    const procs: ManagedProcess[] = [];
    let workerKubeconfig: string;
    let watcherKubeconfig: string;
    let fastpathKubeconfig: string;
    /** Cloudflare, for the worker: the emulator, in this process (CLOUDFLARE_API_BASE_URL). */
    let fx: CloudflareFixture;
    const logs = () => procs.map((p) => `--- ${p.spec.name}\n${p.logTail(20)}`).join('\n');
    /** Runs a drive; on failure, adds the processes' last log lines. */
    const withLogs = async <T>(drive: () => Promise<T>): Promise<T> => {
      try {
        return await drive();
      } catch (err) {
        throw new Error(`${(err as Error).message}\n${logs()}`);
      }
    };
    /** Each role's metrics ports (`metrics`: ours; `sdk`: the Temporal SDK's), and what was scraped there. */
    const ports = { worker: 0, workerSdk: 0, watcher: 0, fastpath: 0, fastpathSdk: 0 };
    const scrapes: Record<string, { series: Series[]; declared: Set<string> }> = {};
    const scrape = async (role: string, url: string) => {
      const res = await fetch(url);
      expect(res.status, `${role}: GET ${url}`).toBe(200);
      return (scrapes[role] = parseExposition(await res.text()));
    };
    /** A request reaped by the worker's sweep once DO_REQUEST_TTL has passed since it completed. */
    const REQUEST_TTL = '15s';
    const startWorker = (env: NodeJS.ProcessEnv = {}) =>
      procs.push(
        spawnRole('worker', taskQueue, uniq('deploy-sa-worker'), {
          KUBECONFIG: workerKubeconfig,
          DO_METRICS_PORT: String(ports.worker),
          DO_WORKER_METRICS_ADDRESS: `127.0.0.1:${ports.workerSdk}`,
          DO_REQUEST_TTL: REQUEST_TTL,
          DO_REQUEST_TTL_SWEEP_INTERVAL: '5s',
          CLOUDFLARE_API_BASE_URL: fx.emulator.baseURL,
          // The emulator needs no throttle; a short debounce keeps the Cloudflare drive quick.
          DO_CLOUDFLARE_ACTIVITIES_PER_SECOND: '50',
          DO_CLOUDFLARE_DEBOUNCE: '200ms',
          ...env,
        }),
      );
    const requestsOf = (kind: string) => (kind === 'ManifestCaptureRequest' ? SNAPSHOTTER_API : STORAGE_API);
    const reaped = (req: KubernetesObject) =>
      eventually(`${req.kind} ${req.metadata!.name} reaped after its TTL`, goneCheck(k, refOfRequest(req)), {
        timeoutMs: 120_000,
      });

    const kubeconfigFor = (sa: string) => serviceAccountKubeconfig(NAMESPACE, sa, taskQueue);

    async function request<T extends KubernetesObject>(kind: string, namespace: string, spec: unknown): Promise<T> {
      return k.create<T>({
        apiVersion: requestsOf(kind),
        kind,
        metadata: { name: uniq(kind.toLowerCase().slice(0, 10)), namespace },
        spec,
      } as never);
    }

    beforeAll(async () => {
      for (const role of Object.keys(ports) as (keyof typeof ports)[]) ports[role] = await getFreePort();
      workerKubeconfig = await kubeconfigFor(worker);
      watcherKubeconfig = await kubeconfigFor(watcher);
      fastpathKubeconfig = await kubeconfigFor(fastpath);
      fx = await startCloudflare();
      for (const name of [ns, captureNs]) {
        await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
        created.unshift({ apiVersion: 'v1', kind: 'Namespace', name });
      }
      await installSnapshotCrds(k);
      await createSnapshotClass(k, { name: uniq('vsc'), driver, isDefault: true });
    });

    afterAll(async () => {
      await Promise.all(procs.map((p) => p.stop()));
      await fx?.close();
    });

    it('the tokens carry the ServiceAccount identity, not the admin one', async () => {
      const asWorker = KubeClient.fromKubeconfig(workerKubeconfig);
      const asWatcher = KubeClient.fromKubeconfig(watcherKubeconfig);
      await expect(asWorker.listPage('deckhouse.io/v1alpha1', 'ObjectKeeper')).rejects.toSatisfy(
        (e) => statusCode(e) === 403,
      );
      await expect(asWatcher.listPage('deckhouse.io/v1alpha1', 'ObjectKeeper')).resolves.toHaveProperty('items');
      await expect(asWatcher.listPage('v1', 'ConfigMap', { namespace: ns })).rejects.toSatisfy(
        (e) => statusCode(e) === 403,
      );
      const asFastpath = KubeClient.fromKubeconfig(fastpathKubeconfig);
      await expect(asFastpath.listPage('v1', 'ConfigMap', { namespace: ns })).rejects.toSatisfy(
        (e) => statusCode(e) === 403,
      );
    });

    it('take a TTL ObjectKeeper through its life, and the GC removes what it owned', async () => {
      startWorker();
      procs.push(
        spawnRole('watcher', taskQueue, uniq('deploy-sa-watcher'), {
          KUBECONFIG: watcherKubeconfig,
          DO_METRICS_PORT: String(ports.watcher),
        }),
      );
      // The TTL runs from the keeper's creation: create it once both are up, or a slow start on a
      // loaded machine eats the TTL and the GC takes the ConfigMap before the test looks.
      for (const [p, ready] of [
        [procs.at(-2)!, 'worker running'],
        [procs.at(-1)!, 'watcher running'],
      ] as const)
        await waitUntilReady(p.spec.name, async () => p.logTail(200).includes(ready), {
          timeoutMs: 120_000,
          process: p,
        });

      const keeper = await k.create<ObjectKeeper>({
        apiVersion: 'deckhouse.io/v1alpha1',
        kind: 'ObjectKeeper',
        metadata: { name: uniq('deploy-ttl') },
        spec: { mode: 'TTL', ttl: '20s' },
      });
      const keeperRef = { apiVersion: 'deckhouse.io/v1alpha1', kind: 'ObjectKeeper', name: keeper.metadata!.name! };
      created.unshift(keeperRef);
      const owned = await k.create<V1ConfigMap>({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name: 'artifact',
          namespace: ns,
          ownerReferences: [
            {
              apiVersion: 'deckhouse.io/v1alpha1',
              kind: 'ObjectKeeper',
              name: keeper.metadata!.name!,
              uid: keeper.metadata!.uid!,
              controller: true,
            },
          ],
        },
        data: { kept: 'alive' },
      });
      const ownedRef = { apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name: owned.metadata!.name! };

      await withLogs(async () => {
        // watcher (list/watch) → workflow → worker: get + status patch …
        const waiting = await eventually(
          'keeper status WaitingTTL, written by the worker',
          async () => {
            const kp = await k.get<ObjectKeeper>(keeperRef);
            return kp?.status?.phase === 'WaitingTTL' ? kp : undefined;
          },
          { timeoutMs: 120_000 },
        );
        expect(waiting.status!.expiresAt).toBeDefined();
        expect(await k.get(ownedRef)).toBeDefined();
        // … then delete once the TTL expires, and the garbage collector takes the ConfigMap.
        await eventually('keeper deleted by the worker', async () => !(await k.get(keeperRef)), { timeoutMs: 120_000 });
        await eventually('owned ConfigMap garbage-collected', async () => !(await k.get(ownedRef)), {
          timeoutMs: 120_000,
        });
      });
      for (const p of procs) expect(p.running, `${p.spec.name} still running\n${logs()}`).toBe(true);
    });

    it('capture every kind the capture-targets role names: one of each (a GET each), eight of each (a LIST per kind)', async () => {
      // The kinds come from deploy/rbac, not from a list here; each needs a minimal object below.
      const captureRole = pick('ClusterRole').find((r) => r.metadata.name === 'durable-operators-capture-targets')!;
      const kinds = grantsOf([captureRole, ...pick('ClusterRoleBinding')], { name: worker, namespace: NAMESPACE })
        .filter((g) => g.verb === 'get')
        .map((g) => `${g.group || 'core'}/${g.resource}`);
      const missing = kinds.filter((key) => !CAPTURE_FIXTURES[key]);
      expect(missing, 'capture-target kinds without an object to capture in CAPTURE_FIXTURES').toEqual([]);
      const targets: { apiVersion: string; kind: string; name: string }[][] = [];
      for (const key of kinds) {
        const objs = Array.from({ length: 8 }, (_, i) => CAPTURE_FIXTURES[key]!(`obj-${i}`));
        for (const o of objs) await k.create({ ...o, metadata: { ...o.metadata, namespace: captureNs } } as never);
        targets.push(objs.map((o) => ({ apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name })));
      }
      const one = await request('ManifestCaptureRequest', captureNs, { targets: targets.map((t) => t[0]!) });
      const eight = await request('ManifestCaptureRequest', captureNs, { targets: targets.flat() });
      await withLogs(async () => {
        for (const req of [one, eight]) {
          const done = await waitTerminal(k, req);
          expect(done.ready, `${req.metadata!.name}`).toMatchObject({ status: 'True', reason: 'Completed' });
        }
        for (const req of [one, eight]) await reaped(req);
      });
    });

    it('a keeper following a kind the worker may not read says so on its status', async () => {
      // Secrets are deliberately outside the worker's RBAC: the read fails with 403.
      const secret = await k.create<V1ConfigMap>({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'followed', namespace: ns },
      } as never);
      const keeper = await k.create<ObjectKeeper>({
        apiVersion: 'deckhouse.io/v1alpha1',
        kind: 'ObjectKeeper',
        metadata: { name: uniq('deploy-forbidden') },
        spec: {
          mode: 'FollowObject',
          followObjectRef: {
            apiVersion: 'v1',
            kind: 'Secret',
            namespace: ns,
            name: 'followed',
            uid: secret.metadata!.uid!,
          },
        },
      });
      const keeperRef = { apiVersion: 'deckhouse.io/v1alpha1', kind: 'ObjectKeeper', name: keeper.metadata!.name! };
      created.unshift(keeperRef);
      const status = await eventually(
        'FollowedObjectUnreadable on the keeper',
        async () => {
          const kp = await k.get<ObjectKeeper>(keeperRef);
          const active = kp?.status?.conditions?.find((c) => c.type === 'Active');
          return active?.reason === 'FollowedObjectUnreadable' ? { kp, active } : undefined;
        },
        { timeoutMs: 120_000 },
      );
      expect(status.active.status).toBe('Unknown');
      expect(status.active.message).toMatch(/cannot read Secret .*forbidden/i);
      // Unreadable is not gone: the keeper, and so whatever it owns, stays.
      expect(status.kp?.metadata?.deletionTimestamp).toBeUndefined();
    });

    it('volume capture (Snapshot, Detach) and restore, each request reaped after its TTL', async () => {
      await createCsiVolume(k, { namespace: ns, pvcName: 'data', driver, storageClassName });
      await createCsiVolume(k, { namespace: ns, pvcName: 'to-detach', driver, storageClassName });
      const pvc = (name: string) => ({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', name });
      await withLogs(async () => {
        const snap = await request<VolumeCaptureRequest>('VolumeCaptureRequest', ns, {
          mode: 'Snapshot',
          targets: [pvc('data')],
        });
        // The snapshot-controller and the CSI sidecar, for the VolumeSnapshot the worker creates.
        const vsName = snapshotNameFor(snap.metadata!.uid!, 0);
        await eventually(`VolumeSnapshot ${vsName}`, () =>
          k.get({ apiVersion: SNAPSHOT_API, kind: 'VolumeSnapshot', namespace: ns, name: vsName }),
        );
        const content = await snapshotControllerProvisions(k, ns, vsName);
        expect((await waitTerminal(k, snap)).ready).toMatchObject({ status: 'True', reason: 'Completed' });

        const detach = await request<VolumeCaptureRequest>('VolumeCaptureRequest', ns, {
          mode: 'Detach',
          targets: [pvc('to-detach')],
        });
        // The pvc-protection controller, once the claim is terminating and no pod uses it.
        await eventually('claim deleted', () => pvcProtectionReleases(k, ns, 'to-detach'));
        expect((await waitTerminal(k, detach)).ready).toMatchObject({ status: 'True', reason: 'Completed' });

        const restore = await request<VolumeRestoreRequest>('VolumeRestoreRequest', ns, {
          sourceRef: { kind: 'VolumeSnapshotContent', name: content.metadata!.name! },
          storageClassName,
          targetNamespace: ns,
          targetPVCName: 'restored',
          volumeMode: 'Filesystem',
        });
        // The external provisioner, once the request waits for it.
        await eventually('restore waiting for the provisioner', async () => {
          const now = await k.get<RequestLike>(refOfRequest(restore));
          return now?.status?.conditions?.some((c) => c.message.includes('waiting for the external provisioner'));
        });
        await provisionerRestores(k, { namespace: ns, pvcName: 'restored', storageClassName, driver });
        expect((await waitTerminal(k, restore)).ready).toMatchObject({ status: 'True', reason: 'Completed' });

        for (const req of [snap, detach, restore]) await reaped(req);
      });
    });

    it('the TTL sweep Schedule the worker keeps lists every request kind', async () => {
      const c = await temporal();
      const schedule = c.schedule.getHandle(requestTtlSweepScheduleId(taskQueue));
      // Recent actions keep the last 10 only: a new one is told by its workflow ID.
      const before = (await schedule.describe()).info.recentActions.at(-1)?.action.workflow.workflowId;
      await schedule.trigger();
      const run = await eventually('a sweep started by the Schedule', async () => {
        const last = (await schedule.describe()).info.recentActions.at(-1)?.action.workflow;
        return last && last.workflowId !== before ? last : undefined;
      });
      await withLogs(() => c.workflow.getHandle(run.workflowId, run.firstExecutionRunId).result());
    });

    it('a worker restarted after a crash finds what an earlier attempt left, and a Content-mode worker creates contents', async () => {
      // No worker while the requests arrive: the watcher starts their workflows, which wait.
      const running = procs.find((p) => p.spec.name === 'worker' && p.running)!;
      await running.stop();
      await k.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: ns } } as never);
      const mcr = await request('ManifestCaptureRequest', ns, {
        targets: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'settings' }],
      });
      // What a worker killed mid-capture leaves: the checkpoint, and a chunk with other content.
      const checkpoint = await k.create<KubernetesObject>({
        apiVersion: SNAPSHOTTER_API,
        kind: 'ManifestCheckpoint',
        metadata: { name: checkpointNameFor(mcr.metadata!.uid!) },
        spec: {
          sourceNamespace: ns,
          manifestCaptureRequestRef: { name: mcr.metadata!.name!, namespace: ns, uid: mcr.metadata!.uid! },
        },
      } as never);
      const checkpointName = checkpoint.metadata!.name!;
      created.unshift({ apiVersion: SNAPSHOTTER_API, kind: 'ManifestCheckpoint', name: checkpointName });
      const stale = await k.create<KubernetesObject>({
        apiVersion: SNAPSHOTTER_API,
        kind: 'ManifestCheckpointContentChunk',
        metadata: {
          name: chunkNameFor(checkpointName, 0),
          labels: { [CHECKPOINT_LABEL]: checkpointName },
        },
        spec: {
          checkpointName,
          index: 0,
          data: Buffer.from('stale').toString('base64'),
          objectsCount: 0,
          checksum: '0'.repeat(64),
        },
      } as never);
      await createCsiVolume(k, { namespace: ns, pvcName: 'content-mode', driver, storageClassName });
      const vcr = await request<VolumeCaptureRequest>('VolumeCaptureRequest', ns, {
        mode: 'Snapshot',
        targets: [{ apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: 'content-mode' }],
      });

      startWorker({ DO_VOLUME_SNAPSHOT_MODE: 'Content' });
      await withLogs(async () => {
        expect((await waitTerminal(k, mcr)).ready).toMatchObject({ status: 'True', reason: 'Completed' });
        const chunk = await k.get<KubernetesObject>({
          apiVersion: SNAPSHOTTER_API,
          kind: 'ManifestCheckpointContentChunk',
          name: chunkNameFor(checkpointName, 0),
        });
        expect(chunk!.metadata!.uid, 'the stale chunk was replaced').not.toBe(stale.metadata!.uid);
        // The upstream VolumeSnapshotContent CRD refuses a content without a VolumeSnapshot (422).
        expect((await waitTerminal(k, vcr)).ready).toMatchObject({ status: 'False', reason: 'Incompatible' });
      });
    });

    it('Cloudflare: a token Secret in the operator namespace; rulesets, transform, redirect and device policies synced (listed past 16 sources on a target), a virtual network, a DNS record, a zone setting, a gateway setting, an Access group, an identity provider and tunnels (Tunnel, ClusterTunnel, binding, Ingress, HTTPRoute), then removed', async () => {
      const account = hexId();
      const creds = uniq('deploy-cf');
      const zoneName = `${uniq('deploy-cf')}.example.com`;
      const { zones } = await fx.admin.seed({
        accounts: [{ id: account }],
        // 17 rules in a phase: more than the Free plan's 10 transform or redirect rules.
        zones: [{ name: zoneName, account_id: account, plan: 'business' }],
      });
      const zoneId = zones[0]!.id;
      // As deploy/examples/cloudflare/credentials.yaml has it: the Secret in the operator's namespace.
      await createCredentials(k, { name: creds, namespace: NAMESPACE, accountId: account });
      // As the original operator leaves its objects: its finalizers, which the worker releases with its own RBAC.
      await k.mergePatch(
        { apiVersion: CLOUDFLARE_API_VERSION, kind: 'CloudflareCredentials', name: creds },
        {
          metadata: { finalizers: [ORIGINAL_CREDENTIALS_FINALIZER] },
        },
      );
      created.unshift(
        { apiVersion: 'v1', kind: 'Secret', namespace: NAMESPACE, name: `${creds}-token` },
        { apiVersion: CLOUDFLARE_API_VERSION, kind: 'CloudflareCredentials', name: creds },
      );
      const cfNs = uniq('deploy-cf');
      await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: cfNs } });
      created.unshift({ apiVersion: 'v1', kind: 'Namespace', name: cfNs });

      const credentialsRef = { name: creds };
      /** More than 16 sources on a target: its sync lists their kinds instead of a GET each. */
      const MANY = 17;
      const sources: KubeObject[] = [];
      const source = (kind: string, name: string, spec: Record<string, unknown>, namespace?: string) =>
        sources.push({
          apiVersion: CLOUDFLARE_API_VERSION,
          kind,
          metadata: { name, ...(namespace ? { namespace } : {}) },
          spec,
        });
      // Phase http_request_transform: a ZoneRuleset and 16 TransformRules (url_rewrite).
      const transformPhase = TRANSFORM_PHASES.url_rewrite;
      source(
        'ZoneRuleset',
        uniq('zr'),
        {
          zone: zoneName,
          phase: transformPhase,
          credentialsRef,
          rules: [
            {
              description: 'rewrite /old',
              expression: 'http.request.uri.path eq "/old"',
              action: 'rewrite',
              actionParameters: { uri: { path: { value: '/new' } } },
            },
          ],
        },
        cfNs,
      );
      for (let i = 1; i < MANY; i++)
        source(
          'TransformRule',
          uniq(`tr${i}`),
          {
            zone: zoneName,
            type: 'url_rewrite',
            credentialsRef,
            rules: [
              {
                name: `rewrite ${i}`,
                expression: `http.request.uri.path eq "/t${i}"`,
                urlRewrite: { path: { static: `/u${i}` } },
              },
            ],
          },
          cfNs,
        );
      // Phase http_request_dynamic_redirect: 17 RedirectRules.
      for (let i = 0; i < MANY; i++)
        source(
          'RedirectRule',
          uniq(`rr${i}`),
          {
            zone: zoneName,
            credentialsRef,
            rules: [
              {
                name: `redirect ${i}`,
                expression: `http.request.uri.path eq "/r${i}"`,
                target: { url: `https://${zoneName}/moved/${i}` },
              },
            ],
          },
          cfNs,
        );
      // The account's split tunnel include list: 17 DeviceSettingsPolicies (cluster-scoped).
      for (let i = 0; i < MANY; i++)
        source('DeviceSettingsPolicy', uniq(`dsp${i}`), {
          splitTunnelMode: 'include',
          splitTunnelInclude: [{ address: `10.${i}.0.0/16`, description: `net ${i}` }],
          cloudflare: { credentialsRef },
        });
      // A VirtualNetwork: its own target, one network (the worker GETs it, never lists the kind).
      const vnet = uniq('vnet');
      source('VirtualNetwork', vnet, { comment: 'deploy test', cloudflare: { credentialsRef } });
      const vnetTarget: SyncTarget = { resourceType: 'VirtualNetwork', accountId: account, name: vnet };
      const networks = async () => {
        const out: { name: string; comment: string }[] = [];
        for await (const n of fx.cf.zeroTrust.networks.virtualNetworks.list({ account_id: account, is_deleted: false }))
          out.push({ name: n.name, comment: n.comment });
        return out;
      };
      // A DNSRecord: its own target, the record set (the worker GETs it, never lists the kind).
      const dnsName = uniq('dns');
      source(
        'DNSRecord',
        dnsName,
        { name: 'www', type: 'A', content: '192.0.2.10', cloudflare: { credentialsRef, domain: zoneName } },
        cfNs,
      );
      const dnsTarget: SyncTarget = {
        resourceType: 'DNSRecord',
        accountId: account,
        zoneId,
        zone: zoneName,
        name: `www.${zoneName}`,
        type: 'A',
      };
      // A CloudflareDomain: the zone's settings (one target per zone; the worker GETs it, never lists).
      const domainName = uniq('dom');
      source('CloudflareDomain', domainName, {
        domain: zoneName,
        credentialsRef,
        restoreOnDelete: true,
        ssl: { minTLSVersion: '1.3' },
      });
      const domainTarget: SyncTarget = { resourceType: 'CloudflareDomain', accountId: account, zoneId };
      // A GatewayConfiguration: the account's gateway settings (one target per account).
      source('GatewayConfiguration', uniq('gw'), {
        settings: { tlsDecrypt: { enabled: true } },
        cloudflare: { credentialsRef },
      });
      const gatewayTarget: SyncTarget = { resourceType: 'GatewayConfiguration', accountId: account };
      // An AccessGroup: one group, owned by the ID its SyncState remembers.
      const groupName = uniq('grp');
      source('AccessGroup', groupName, { include: [{ everyone: true }], cloudflare: { credentialsRef } });
      const groupTarget: SyncTarget = { resourceType: 'AccessGroup', accountId: account, name: groupName };
      // An AccessIdentityProvider whose client secret the worker reads from a Secret in its namespace.
      const idpName = uniq('idp');
      await k.apply({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: `${idpName}-secret`, namespace: NAMESPACE },
        stringData: { clientSecret: 'deploy-test-client-secret' },
      } as never);
      created.unshift({ apiVersion: 'v1', kind: 'Secret', namespace: NAMESPACE, name: `${idpName}-secret` });
      source('AccessIdentityProvider', idpName, {
        type: 'github',
        config: { clientId: 'deploy-test' },
        configSecretRef: { name: `${idpName}-secret`, key: 'clientSecret', namespace: NAMESPACE },
        cloudflare: { credentialsRef },
      });
      const idpTarget: SyncTarget = { resourceType: 'AccessIdentityProvider', accountId: account, name: idpName };
      const providers = async () => {
        const out: string[] = [];
        for await (const p of fx.cf.zeroTrust.identityProviders.list({ account_id: account }))
          out.push((p as { name?: string }).name ?? '');
        return out;
      };
      const accessGroups = async () => {
        const out: string[] = [];
        for await (const g of fx.cf.zeroTrust.access.groups.list({ account_id: account })) out.push(g.name!);
        return out;
      };
      const tlsDecrypt = async () =>
        (
          (await fx.cf.zeroTrust.gateway.configurations.get({ account_id: account })).settings as
            { tls_decrypt?: { enabled?: boolean } } | undefined
        )?.tls_decrypt?.enabled;
      const minTls = async () =>
        ((await fx.cf.zones.settings.get('min_tls_version', { zone_id: zoneId })) as { value?: unknown }).value;
      const dnsRecords = async () => {
        const out: { name: string; comment: string | null }[] = [];
        for await (const r of fx.cf.dns.records.list({ zone_id: zoneId }))
          out.push({ name: r.name, comment: r.comment ?? null });
        return out;
      };
      // Tunnels: a Tunnel (credentials Secret in its namespace) and a ClusterTunnel (Secret in the
      // original's cloudflare-operator-system), a TunnelBinding to a Service, a TunnelIngressClassConfig
      // with its IngressClass and an Ingress; their hostnames' CNAMEs in the zone.
      if (!(await k.get({ apiVersion: 'v1', kind: 'Namespace', name: DEFAULT_CREDENTIALS_NAMESPACE }))) {
        await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: DEFAULT_CREDENTIALS_NAMESPACE } });
        created.unshift({ apiVersion: 'v1', kind: 'Namespace', name: DEFAULT_CREDENTIALS_NAMESPACE });
      }
      const tunName = uniq('tun');
      const cfTunnelName = uniq('deploy-tunnel');
      const clusterTunName = uniq('ctun');
      source(
        'Tunnel',
        tunName,
        { newTunnel: { name: cfTunnelName }, cloudflare: { credentialsRef, domain: zoneName } },
        cfNs,
      );
      source('ClusterTunnel', clusterTunName, {
        newTunnel: { name: uniq('deploy-ctunnel') },
        cloudflare: { credentialsRef },
      });
      await k.create({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'web', namespace: cfNs },
        spec: { ports: [{ port: 80, targetPort: 80 }] },
      } as never);
      sources.push({
        apiVersion: `${CLOUDFLARE_GROUP}/${TUNNEL_BINDING_VERSION}`,
        kind: 'TunnelBinding',
        metadata: { name: uniq('bind'), namespace: cfNs },
        subjects: [{ name: 'web' }],
        tunnelRef: { kind: 'Tunnel', name: tunName },
      } as KubeObject);
      const ingressClass = uniq('deploy-tunnel-class');
      source('TunnelIngressClassConfig', 'tunnel-ingress', { tunnelRef: { kind: 'Tunnel', name: tunName } }, cfNs);
      await k.create(tunnelIngressClass(ingressClass, 'tunnel-ingress', cfNs) as never);
      created.unshift({ apiVersion: 'networking.k8s.io/v1', kind: 'IngressClass', name: ingressClass });
      await k.create({
        apiVersion: 'networking.k8s.io/v1',
        kind: 'Ingress',
        metadata: { name: 'site', namespace: cfNs, finalizers: [ORIGINAL_INGRESS_FINALIZER] },
        spec: {
          ingressClassName: ingressClass,
          rules: [
            {
              host: `site.${zoneName}`,
              http: {
                paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } }],
              },
            },
          ],
        },
      } as never);
      // The Gateway API (upstream CRDs): a TunnelGatewayClassConfig, its GatewayClass, a Gateway, an HTTPRoute.
      await installGatewayApiCrds(k);
      const gatewayClass = uniq('deploy-gateway-class');
      source('TunnelGatewayClassConfig', 'tunnel-gateway', { tunnelRef: { kind: 'Tunnel', name: tunName } }, cfNs);
      await k.create(tunnelGatewayClass(gatewayClass, 'tunnel-gateway', cfNs) as never);
      created.unshift({ apiVersion: GATEWAY_API, kind: 'GatewayClass', name: gatewayClass });
      await k.create({
        apiVersion: GATEWAY_API,
        kind: 'Gateway',
        metadata: { name: 'edge', namespace: cfNs, finalizers: [ORIGINAL_GATEWAY_FINALIZER] },
        spec: {
          gatewayClassName: gatewayClass,
          // Routes chosen by namespace label: the worker reads the routes' namespaces (its grant).
          listeners: [
            {
              name: 'web',
              protocol: 'HTTP',
              port: 80,
              allowedRoutes: {
                namespaces: { from: 'Selector', selector: { matchLabels: { 'kubernetes.io/metadata.name': cfNs } } },
              },
            },
          ],
        },
      } as never);
      await k.create({
        apiVersion: GATEWAY_API,
        kind: 'HTTPRoute',
        metadata: { name: 'shop', namespace: cfNs },
        spec: {
          parentRefs: [{ name: 'edge' }],
          hostnames: [`shop.${zoneName}`],
          rules: [{ backendRefs: [{ name: 'web', port: 80 }] }],
        },
      } as never);
      const tunnelStatus = async (kind: string, name: string, namespace?: string) =>
        (
          (await k.get({ apiVersion: CLOUDFLARE_API_VERSION, kind, name, namespace })) as
            { status?: { tunnelId?: string } } | undefined
        )?.status?.tunnelId;
      const tunnelRules = async (tunnelId: string) =>
        (
          (await fx.cf.zeroTrust.tunnels.cloudflared.configurations.get(tunnelId, { account_id: account })) as {
            config?: { ingress?: Array<{ hostname?: string; service: string }> } | null;
          }
        ).config?.ingress ?? [];
      const liveTunnels = async () => {
        const out: string[] = [];
        for await (const t of fx.cf.zeroTrust.tunnels.cloudflared.list({ account_id: account, is_deleted: false }))
          out.push((t as { id: string }).id);
        return out;
      };
      const targets: SyncTarget[] = [
        { resourceType: 'ZoneRuleset', accountId: account, zoneId, phase: transformPhase },
        { resourceType: 'ZoneRuleset', accountId: account, zoneId, phase: REDIRECT_PHASE },
        { resourceType: 'DeviceSettingsPolicy', accountId: account, list: 'include' },
      ];
      const syncStateRef = (t: SyncTarget) => ({
        apiVersion: CLOUDFLARE_API_VERSION,
        kind: 'CloudflareSyncState',
        name: syncStateName(t),
      });
      const counts = async () => ({
        transform: (await entrypointRules(fx.cf, zoneId, transformPhase)).length,
        redirect: (await entrypointRules(fx.cf, zoneId, REDIRECT_PHASE)).length,
        include: (await includeList(fx.cf, account).catch(() => [])).length,
      });

      await withLogs(async () => {
        for (const o of sources) await k.create(structuredClone(o) as never);
        // Every source's items in Cloudflare: each target synced with all of its 17 sources.
        await eventually(
          'every source synced to Cloudflare',
          async () => {
            const c = await counts();
            return c.transform === MANY && c.redirect === MANY && c.include === MANY ? c : undefined;
          },
          { timeoutMs: 300_000, intervalMs: 1000 },
        );
        await eventually(`VirtualNetwork ${vnet} in Cloudflare, SyncState Synced`, async () => {
          const found = (await networks()).filter((n) => n.name === vnet);
          const st = await k.get<KubernetesObject & { status?: { syncStatus?: string } }>(syncStateRef(vnetTarget));
          return (
            found.length === 1 &&
            found[0]!.comment.startsWith('deploy test [managed-by:') &&
            found[0]!.comment.endsWith(`:VirtualNetwork/${vnet}]`) &&
            st?.status?.syncStatus === 'Synced'
          );
        });
        await eventually(`CloudflareDomain ${domainName}: min_tls_version 1.3`, async () => (await minTls()) === '1.3');
        await eventually('GatewayConfiguration: tls_decrypt on', async () => (await tlsDecrypt()) === true);
        await eventually(`AccessGroup ${groupName} in Cloudflare`, async () =>
          (await accessGroups()).includes(groupName),
        );
        await eventually(`AccessIdentityProvider ${idpName} in Cloudflare`, async () =>
          (await providers()).includes(idpName),
        );
        // deploy/ leaves DO_CLUSTER_ID unset: the worker's id is derived from kube-system's UID.
        const cluster = await defaultClusterId(k);
        await eventually(`DNSRecord ${dnsName} in Cloudflare`, async () => {
          const found = (await dnsRecords()).filter((r) => r.name === `www.${zoneName}`);
          return found.length === 1 && found[0]!.comment === `[managed-by:${cluster}:DNSRecord/${cfNs}/${dnsName}]`;
        });
        // The tunnel: its ID, both rules in one configuration with the catch-all last, their CNAMEs.
        const tunnelId = await eventually(`Tunnel ${tunName} has its tunnel`, () =>
          tunnelStatus('Tunnel', tunName, cfNs),
        );
        const clusterTunnelId = await eventually(`ClusterTunnel ${clusterTunName} has its tunnel`, () =>
          tunnelStatus('ClusterTunnel', clusterTunName),
        );
        await eventually('the tunnel configuration: the route, the Ingress, the binding, the catch-all', async () => {
          const rules = await tunnelRules(tunnelId);
          return (
            JSON.stringify(rules.map((r) => r.hostname ?? r.service)) ===
            JSON.stringify([`shop.${zoneName}`, `site.${zoneName}`, `web.${zoneName}`, 'http_status:404'])
          );
        });
        await eventually('a CNAME per tunnel hostname', async () => {
          const names = (await dnsRecords()).map((r) => r.name);
          return [`shop.${zoneName}`, `site.${zoneName}`, `web.${zoneName}`].every((n) => names.includes(n));
        });
        // The credentials Secrets, owned by their tunnels (one in the original's namespace for the ClusterTunnel).
        await eventually(
          "the tunnels' credentials Secrets",
          async () =>
            (await k.get({ apiVersion: 'v1', kind: 'Secret', namespace: cfNs, name: tunName })) &&
            (await k.get({
              apiVersion: 'v1',
              kind: 'Secret',
              namespace: DEFAULT_CREDENTIALS_NAMESPACE,
              name: clusterTunName,
            })),
        );
        // A spec change makes the Tunnel's workflow ensure its tunnel again: the Secret exists, so it is
        // patched (only because this Tunnel owns it).
        await k.mergePatch(
          { apiVersion: CLOUDFLARE_API_VERSION, kind: 'Tunnel', namespace: cfNs, name: tunName },
          { spec: { fallbackTarget: 'http_status:410' } },
        );
        await eventually(
          'the new catch-all',
          async () => (await tunnelRules(tunnelId)).at(-1)?.service === 'http_status:410',
        );
        expect(await liveTunnels()).toEqual(expect.arrayContaining([tunnelId, clusterTunnelId]));
        // Their connectors: a cloudflared Deployment next to each Secret (written with the worker's RBAC).
        const connectors = [
          { apiVersion: 'apps/v1', kind: 'Deployment', namespace: cfNs, name: tunName },
          { apiVersion: 'apps/v1', kind: 'Deployment', namespace: DEFAULT_CREDENTIALS_NAMESPACE, name: clusterTunName },
        ];
        for (const ref of connectors) await eventually(`connector ${ref.namespace}/${ref.name}`, () => k.get(ref));
        for (const ref of [
          { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', namespace: cfNs, name: 'site' },
          { apiVersion: GATEWAY_API, kind: 'Gateway', namespace: cfNs, name: 'edge' },
          { apiVersion: CLOUDFLARE_API_VERSION, kind: 'CloudflareCredentials', name: creds },
        ])
          await eventually(
            `the original operator's finalizer released from ${ref.kind} ${ref.name}`,
            async () =>
              (await k.get(ref))?.metadata?.finalizers?.every(
                (f) =>
                  ![ORIGINAL_INGRESS_FINALIZER, ORIGINAL_GATEWAY_FINALIZER, ORIGINAL_CREDENTIALS_FINALIZER].includes(f),
              ) ?? true,
          );
        await k.delete({ apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', namespace: cfNs, name: 'site' });

        for (const t of targets)
          await eventually(`CloudflareSyncState ${syncStateName(t)} Synced with ${MANY} sources`, async () => {
            const st = await k.get<
              KubernetesObject & { spec: { sources?: unknown[] }; status?: { syncStatus?: string } }
            >(syncStateRef(t));
            return st?.spec.sources?.length === MANY && st.status?.syncStatus === 'Synced';
          });

        // Deleting releases each finalizer once Cloudflare no longer has the source's items.
        for (const o of sources) await k.delete(refOf(o));
        await eventually(
          'every managed item gone from Cloudflare',
          async () => {
            const c = await counts();
            const vnets = (await networks()).length;
            const dns = (await dnsRecords()).length;
            const restored = (await minTls()) === '1.0'; // the emulator's default for a new zone
            const groupsLeft = (await accessGroups()).length + (await providers()).length;
            const tunnelsLeft = (await liveTunnels()).length;
            return tunnelsLeft === 0 &&
              c.transform === 0 &&
              c.redirect === 0 &&
              c.include === 0 &&
              vnets === 0 &&
              dns === 0 &&
              restored &&
              groupsLeft === 0
              ? c
              : undefined;
          },
          { timeoutMs: 300_000, intervalMs: 1000 },
        );
        for (const o of sources)
          await eventually(`${describeObj(o)} gone (finalizer released)`, async () => !(await k.get(refOf(o))), {
            timeoutMs: 120_000,
          });
        for (const ref of connectors)
          await eventually(`connector ${ref.namespace}/${ref.name} deleted`, async () => !(await k.get(ref)));
        const tunnelTargets: SyncTarget[] = [
          { resourceType: 'TunnelConfiguration', accountId: account, tunnelId },
          { resourceType: 'TunnelConfiguration', accountId: account, tunnelId: clusterTunnelId },
          { resourceType: 'TunnelDNS', accountId: account, zoneId, zone: zoneName },
        ];
        for (const t of [
          ...targets,
          ...tunnelTargets,
          vnetTarget,
          dnsTarget,
          domainTarget,
          gatewayTarget,
          groupTarget,
          idpTarget,
        ])
          await eventually(
            `CloudflareSyncState ${syncStateName(t)} deleted`,
            async () => !(await k.get(syncStateRef(t))),
            {
              timeoutMs: 120_000,
            },
          );
      });
    }, 600_000);

    it('the fast path: sandboxes through its API (Fast, Strong), one created with kubectl, the janitor', async () => {
      // Its own namespace, pool, agent (a real process; its Pod written as a kubelet would) and tenant.
      const sbxNs = uniq('deploy-sbx');
      const pool = 'pool-a';
      await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: sbxNs } });
      created.unshift({ apiVersion: 'v1', kind: 'Namespace', name: sbxNs });
      // The namespace opts in to valueFrom as deploy/examples/sandbox-env-from.yaml shows: the fast
      // path may then get its Secrets (the kubectl Sandbox below takes one), and only here.
      for (const binding of readObjects(path.join(REPO_ROOT, 'deploy/examples/sandbox-env-from.yaml')))
        await k.create({ ...binding, metadata: { ...binding.metadata, namespace: sbxNs } } as never);
      // It holds a pool: the fast path may create and delete agent Pods here, as
      // deploy/examples/sandbox-pool.yaml binds its namespace (nowhere else).
      for (const binding of readObjects(path.join(REPO_ROOT, 'deploy/examples/sandbox-pool.yaml')).filter(
        (o) => o.kind === 'RoleBinding',
      ))
        await k.create({ ...binding, metadata: { ...binding.metadata, namespace: sbxNs } } as never);
      // Before the pool exists: its workflow's first Pod create must not race the binding (a denial).
      await waitUntilAllowed(
        { namespace: NAMESPACE, name: 'durable-operators-fastpath' },
        { group: '', resource: 'pods', verb: 'create', namespace: sbxNs },
      );
      await k.create({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'app', namespace: sbxNs },
        stringData: { token: uniq('deploy-env-s3cr3t') },
      } as never);
      await k.create({
        apiVersion: SandboxPoolKind.apiVersion,
        kind: SandboxPoolKind.kind,
        metadata: { name: pool, namespace: sbxNs },
        spec: {
          // Two Pods: the pool's workflow creates one beside the fleet's agent below.
          capacity: { poolMin: 2, poolMax: 2, bufferMin: 0, bufferMax: 2 },
          maxSandboxesPerPod: 4,
          agentTemplate: {},
        },
      } as never);
      const tenant = String(40_000 + Math.floor(Math.random() * 50_000));
      const prefix = `${uniq('deploy-tenants')}/`;
      const etcd = createEtcdClient(stackInfo().tenantEtcd.endpoint);
      await new TenantPublisher(etcd, prefix).putTenant({
        id: Number(tenant),
        code: `t${tenant}`,
        name: 'Deploy',
        status: 'active',
      });
      const stateDir = path.join(stackInfo().stateDir, 'deploy-fastpath', taskQueue);
      await mkdir(stateDir, { recursive: true });
      const token = uniq('agent-token');
      const tokenFile = path.join(stateDir, 'fastpath-token');
      await writeFile(tokenFile, token, { mode: 0o600 });
      const fleet = await AgentFleet.start({
        kube: k,
        namespace: sbxNs,
        pool,
        count: 1,
        capacity: 4,
        agentKey: token,
        stateDir,
        killGraceMs: 500,
      });
      fleet.runKubelet();
      const httpPort = await getFreePort();
      // As deploy/fastpath.yaml runs it: every namespace (no DO_FASTPATH_NAMESPACE).
      const proc = spawnRole('fastpath', taskQueue, uniq('deploy-sa-fastpath'), {
        KUBECONFIG: fastpathKubeconfig,
        DO_FASTPATH_HOST: '127.0.0.1',
        DO_FASTPATH_GRPC_PORT: String(await getFreePort()),
        DO_FASTPATH_HTTP_PORT: String(httpPort),
        DO_FASTPATH_POLL_INTERVAL: '500ms',
        DO_FASTPATH_JANITOR_INTERVAL: '1h',
        DO_TENANT_ETCD: stackInfo().tenantEtcd.endpoint,
        DO_TENANT_PREFIX: prefix,
        DO_AGENT_TOKEN_FILE: tokenFile,
        // A write refused for good is reported after two attempts, not after an RBAC rollout's ten.
        DO_RBAC_ROLLOUT_ATTEMPTS: '2',
        DO_METRICS_PORT: String(ports.fastpath),
        DO_WORKER_METRICS_ADDRESS: `127.0.0.1:${ports.fastpathSdk}`,
      });
      procs.push(proc);
      const base = `http://127.0.0.1:${httpPort}`;
      const api = async <T = Record<string, unknown>>(method: string, route: string, body?: unknown): Promise<T> => {
        const res = await fetch(`${base}${route}`, {
          method,
          headers: { 'x-tenant-id': tenant, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const answer = (await res.json()) as T;
        if (!res.ok) throw new Error(`${method} ${route}: HTTP ${res.status} ${JSON.stringify(answer)}`);
        return answer;
      };
      const sandboxRef = (name: string) => ({
        apiVersion: SandboxKind.apiVersion,
        kind: SandboxKind.kind,
        namespace: sbxNs,
        name,
      });
      /** Running on the agent, the allocation handed off to status, the cleanup finalizer on. */
      const running = (name: string) =>
        eventually(
          `Sandbox ${name} Running`,
          async () => {
            const sb = await k.get<Sandbox>(sandboxRef(name));
            return sb?.status?.phase === 'Running' &&
              !sb.metadata?.annotations?.[ALLOCATION_ANNOTATION] &&
              sb.metadata?.finalizers?.includes(SANDBOX_FINALIZER)
              ? sb
              : undefined;
          },
          { timeoutMs: 120_000 },
        );
      const gone = (name: string) =>
        eventually(`Sandbox ${name} gone`, async () => !(await k.get(sandboxRef(name))), { timeoutMs: 120_000 });
      const spec = {
        image: 'node',
        poolRef: pool,
        command: [process.execPath, '-e', 'setInterval(() => {}, 1 << 30)'],
      };
      const [fast, strong, kubectl] = [uniq('fast'), uniq('strong'), uniq('kubectl')];
      try {
        await withLogs(async () => {
          await eventually(
            'the fast path serving',
            async () => {
              if (!proc.running) throw new Error(`fastpath exited: ${proc.logTail(10)}`);
              return (await fetch(`${base}/healthz`).catch(() => undefined))?.ok;
            },
            { timeoutMs: 180_000 },
          );
          // A pool where no RoleBinding lets the fast path write: said on the pool, never a silent
          // stop (checked below, once the drive has given its workflow time).
          const unboundPool = {
            apiVersion: SandboxPoolKind.apiVersion,
            kind: SandboxPoolKind.kind,
            namespace: UNBOUND_POOL_NS,
            name: 'unbound',
          };
          await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: UNBOUND_POOL_NS } });
          created.unshift({ apiVersion: 'v1', kind: 'Namespace', name: UNBOUND_POOL_NS });
          await k.create({
            apiVersion: unboundPool.apiVersion,
            kind: unboundPool.kind,
            metadata: { name: unboundPool.name, namespace: UNBOUND_POOL_NS },
            spec: { capacity: { poolMin: 1, poolMax: 1, bufferMin: 0, bufferMax: 1 }, agentTemplate: {} },
          } as never);
          // Pods and SandboxPools listed by the registry; each create: the record (create; get), its
          // workflow's status patch, the allocation annotation's removal (patch).
          await api('POST', '/api/v1/sandboxes', { ...spec, name: fast, namespace: sbxNs });
          await api('POST', '/api/v1/sandboxes', {
            ...spec,
            name: strong,
            namespace: sbxNs,
            consistencyMode: 'STRONG',
          });
          // kubectl-created: the watcher (list + watch) starts its workflow, which adds the finalizer;
          // its env from a Secret is read by the fast path (get, allowed by the example's RoleBinding).
          await k.create({
            apiVersion: SandboxKind.apiVersion,
            kind: SandboxKind.kind,
            metadata: { name: kubectl, namespace: sbxNs },
            spec: { ...spec, envs: [{ name: 'TOKEN', valueFrom: { secretKeyRef: { name: 'app', key: 'token' } } }] },
          } as never);
          for (const name of [fast, strong, kubectl]) await running(name);

          expect(await api('GET', `/api/v1/namespaces/${sbxNs}/sandboxes/${fast}`)).toMatchObject({
            sandboxName: fast,
            phase: 'Running',
          });
          const listed = await api<{ items: { sandboxName: string }[] }>(
            'GET',
            `/api/v1/namespaces/${sbxNs}/sandboxes`,
          );
          expect(listed.items.map((i) => i.sandboxName).sort()).toEqual([fast, strong].sort());
          expect(
            await api('PATCH', `/api/v1/namespaces/${sbxNs}/sandboxes/${fast}`, { failurePolicy: 'AUTO_RECREATE' }),
          ).toMatchObject({ success: true });
          expect((await k.get<Sandbox>(sandboxRef(fast)))?.spec.failurePolicy).toBe('AutoRecreate');

          // The janitor: every agent's report against every Sandbox (a cluster-wide list).
          const c = await temporal();
          const summary = await c.workflow
            .getHandle(janitorWorkflowId(sandboxTaskQueue(taskQueue)))
            .executeUpdate(runJanitorPassUpdate);
          expect(summary).toMatch(/agents and \d+ Sandboxes checked/);

          // Deletes: through the API (delete, UID precondition) and with kubectl; each workflow
          // removes the sandbox from its agent, then its finalizer (patch).
          await api('DELETE', `/api/v1/namespaces/${sbxNs}/sandboxes/${fast}`);
          await api('DELETE', `/api/v1/namespaces/${sbxNs}/sandboxes/${strong}`);
          await k.delete(sandboxRef(kubectl));
          for (const name of [fast, strong, kubectl]) await gone(name);

          // The pool's workflow (started by the watcher): it read the pool (get) and its Pods and
          // Sandboxes (list), added its finalizer (patch), wrote its status (patch status), and
          // created its agent token Secret (create) and the agent Pod poolMin asks for beyond the
          // fleet's (create), which the fleet's kubelet runs with that Secret's token. Deleting
          // the pool drains and removes both agents (delete), then its finalizer.
          const poolRef = {
            apiVersion: SandboxPoolKind.apiVersion,
            kind: SandboxPoolKind.kind,
            namespace: sbxNs,
            name: pool,
          };
          const poolPods = async () => {
            const page = await k.listPage<V1Pod>('v1', 'Pod', {
              namespace: sbxNs,
              labelSelector: `fast-sandbox.io/pool=${pool}`,
            });
            return page.items.map((p) => p.metadata!.name!);
          };
          await eventually('the pool created its agent Pod', async () => (await poolPods()).length === 2, {
            timeoutMs: 120_000,
          });
          await eventually(
            'the pool has a status',
            async () => {
              const p = await k.get<SandboxPool>(poolRef);
              return p?.status?.currentPods === 2 && p.status.conditions?.some((c) => c.type === 'Ready') === true;
            },
            { timeoutMs: 120_000 },
          );
          // Every role's metrics while all of them have worked (the last test compares them with
          // the series the alert rules read).
          const local = (port: number) => `http://127.0.0.1:${port}/metrics`;
          await scrape('worker', local(ports.worker));
          await scrape('worker sdk', local(ports.workerSdk));
          await scrape('watcher', local(ports.watcher));
          await scrape('fastpath sdk', local(ports.fastpathSdk));
          await scrape('admission', stackInfo().admission!.metricsUrl!);
          const pooled = (s: Series) => s.labels.pool_namespace === sbxNs;
          expect((await scrape('fastpath', local(ports.fastpath))).series.filter(pooled)).not.toEqual([]);
          await k.delete(poolRef);
          await eventually('the SandboxPool is gone', async () => !(await k.get(poolRef)), { timeoutMs: 120_000 });

          const refused = await eventually(
            'the unbound pool says why it has no agents',
            async () =>
              (await k.get<SandboxPool>(unboundPool))?.status?.conditions?.find(
                (c) => c.type === 'Ready' && c.reason === 'Forbidden',
              ),
            { timeoutMs: 120_000 },
          );
          expect(refused.status).toBe('False');
          expect(refused.message).toContain(`in namespace ${UNBOUND_POOL_NS}: renew the agent Secret`);
          expect(refused.message).toMatch(
            /is forbidden: User "system:serviceaccount:durable-operators:durable-operators-fastpath"/,
          );
          expect(refused.message).toContain('ClusterRole durable-operators-fastpath-agent-pods');
          expect(refused.message).toContain('fastpath.agentPodNamespaces');
          // Nothing was made there, and the pool can still be deleted (its finalizer released).
          await k.delete(unboundPool);
          await eventually('the unbound pool is gone', async () => !(await k.get(unboundPool)), { timeoutMs: 120_000 });
          await eventually('its agent Pods gone', async () => (await poolPods()).length === 0, { timeoutMs: 60_000 });
          // A deleted pool's gauges go with it: a full pool deleted does not alert for ever (review M2).
          await eventually(
            'the deleted pool has no series',
            async () => {
              const now = parseExposition(await (await fetch(local(ports.fastpath))).text());
              return now.series.some(pooled) ? undefined : true;
            },
            { timeoutMs: 60_000 },
          );
          expect(proc.running, `fastpath still running\n${proc.logTail(20)}`).toBe(true);
        });
      } finally {
        await (
          await temporal()
        ).workflow
          .getHandle(janitorWorkflowId(sandboxTaskQueue(taskQueue)))
          .terminate('test done')
          .catch(() => undefined);
        await fleet.stop();
        etcd.close();
      }
    }, 420_000);

    /**
     * The alert rules' unit tests (deploy/monitoring/tests, run by promtool) feed them series of
     * the shape written there: each is one a role exported above, with every label the test gives
     * it. A counter that only failures create is declared (`# TYPE`) without a sample; the
     * Temporal SDK's failure counters appear only on a failure, so their labels are checked on the
     * same family's latency, which every task has.
     */
    it('every series the alert rules read is one the roles export, with its labels', () => {
      const all = Object.values(scrapes);
      expect(Object.keys(scrapes).sort()).toEqual(
        ['admission', 'fastpath', 'fastpath sdk', 'watcher', 'worker', 'worker sdk'].sort(),
      );
      const failureOnly: Record<string, string> = {
        temporal_workflow_task_execution_failed_total: 'temporal_workflow_task_execution_latency_bucket',
        temporal_activity_execution_failed_total: 'temporal_activity_execution_latency_bucket',
      };
      const hasLabels = (want: Series) => (s: Series) =>
        s.name === want.name && Object.keys(want.labels).every((k) => k in s.labels);
      const missing = ruleTestSeries().filter((want) => {
        if (all.some((scrape) => scrape.series.some(hasLabels(want)))) return false;
        const sibling = failureOnly[want.name];
        if (sibling && all.some((scrape) => scrape.series.some(hasLabels({ ...want, name: sibling })))) return false;
        // Declared by prom-client before its first sample; its labels are the code's (metric-names.test.ts).
        const base = want.name.replace(/_(bucket|count|sum)$/, '');
        if (all.some((scrape) => scrape.declared.has(base) && !scrape.series.some((s) => s.name.startsWith(base))))
          return false;
        return true;
      });
      expect(missing.map((s) => `${s.name}{${Object.keys(s.labels).join(',')}}`)).toEqual([]);
      // What the SLO, the admission and the apiserver alerts read, with real values.
      const series = all.flatMap((scrape) => scrape.series);
      expect(series).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ name: 'fastpath_create_sandbox_duration_seconds_count' }),
          expect.objectContaining({
            name: 'durable_operators_admission_reviews_total',
            labels: expect.objectContaining({ allowed: 'true', code: '200' }),
          }),
          expect.objectContaining({
            name: 'durable_operators_kube_requests_total',
            labels: { method: 'PATCH', code: '200' },
          }),
        ]),
      );
    });

    /**
     * The apiserver's audit log (the local stack logs every ServiceAccount request) against
     * deploy/rbac: no call was refused, and every grant was used by some call of the drives above.
     */
    it('the audit log: no call of the code was denied, and every grant of deploy/rbac was used', async () => {
      // A watch is logged when it ends: stop the processes first.
      await Promise.all(procs.map((p) => p.stop()));
      const problems = () => {
        const calls = auditedCalls(stackInfo().kube.auditLog, FILE_STARTED);
        const out = new Set<string>(); // a refused call is retried: name it once
        const granted = new Set<string>();
        const used = new Set<string>();
        for (const { sa, ref } of roles) {
          const mine = calls.filter((c) => c.user === userOf(sa));
          const deliberate = DELIBERATE_DENIALS.filter((d) => d.sa === sa);
          for (const c of mine.filter((x) => x.denied && !deliberate.some((d) => isDeliberate(d, x))))
            out.add(`${sa}: denied ${c.call} (${c.uri.split('?')[0]}${c.reason ? `: ${c.reason}` : ''})`);
          for (const d of deliberate.filter((x) => x.mustAppear))
            if (!mine.some((c) => c.denied && isDeliberate(d, c)))
              out.add(`${sa}: the deliberate denial of ${d.call} (${d.why}) is not in the audit log`);
          const ok = mine.filter((c) => !c.denied);
          for (const grant of grantsOf(rendered, ref)) {
            const g = grantKey(grant);
            granted.add(g);
            // A Role's grant counts as used only by a call in its namespace.
            if (ok.some((c) => c.call === g && (!grant.namespace || c.namespace === grant.namespace))) used.add(g);
            else if (!NOT_EXERCISED[g])
              out.add(`${sa}: granted but never used: ${g}${grant.namespace ? ` (in ${grant.namespace})` : ''}`);
          }
        }
        for (const g of Object.keys(NOT_EXERCISED)) {
          if (!granted.has(g)) out.add(`NOT_EXERCISED names ${g}, which deploy/rbac does not grant`);
          else if (used.has(g)) out.add(`NOT_EXERCISED names ${g}, which a drive does use: drop it`);
        }
        return [...out].sort();
      };
      // Events of the last requests (the watches just closed) may still be on their way to the file.
      let found = problems();
      for (let i = 0; i < 25 && found.length; i++) {
        await sleep(200);
        found = problems();
      }
      expect(found, 'deploy/rbac against what the code called (kube-apiserver audit log)').toEqual([]);
    });
  });
});

describe('docker-compose search-attributes one-shot', () => {
  interface ComposeService {
    environment: Record<string, string>;
    entrypoint: string[];
    command: string[];
  }
  const compose = parse(readFileSync(path.join(REPO_ROOT, 'docker-compose.yml'), 'utf8')) as {
    services: Record<string, ComposeService>;
  };
  const svc = compose.services['search-attributes']!;
  // Compose turns `$$` into `$` before the shell sees the script.
  const script = svc.command[0]!.replaceAll('$$', '$');

  it('registers every search attribute on a real Temporal server, and re-running is a no-op', async () => {
    const temporalBin = findBinary('temporal');
    expect(temporalBin, 'temporal CLI of the local stack').toBeDefined();
    const address = stackInfo().temporal.address;
    const namespace = uniq('sa-oneshot');
    await execFileAsync(temporalBin!.path, [
      'operator',
      'namespace',
      'create',
      '--namespace',
      namespace,
      '--address',
      address,
    ]);

    const env = {
      ...process.env,
      ...svc.environment,
      PATH: `${path.dirname(temporalBin!.path)}${path.delimiter}${process.env.PATH}`,
      TEMPORAL_ADDRESS: address,
      TEMPORAL_NAMESPACE: namespace,
    };
    expect(svc.entrypoint).toEqual(['/bin/sh', '-c']);
    // A new namespace takes a moment to reach the frontend's cache.
    await eventually('one-shot succeeds', () => execFileAsync('/bin/sh', ['-c', script], { env }).then(() => true), {
      timeoutMs: 60_000,
      intervalMs: 1000,
    });
    await execFileAsync('/bin/sh', ['-c', script], { env }); // idempotent

    const { stdout } = await execFileAsync(temporalBin!.path, [
      'operator',
      'search-attribute',
      'list',
      '--namespace',
      namespace,
      '--address',
      address,
      '--output',
      'json',
    ]);
    const custom = (JSON.parse(stdout) as { customAttributes: Record<string, string> }).customAttributes;
    expect(custom).toEqual(
      Object.fromEntries(
        // KeywordList → INDEXED_VALUE_TYPE_KEYWORD_LIST
        SEARCH_ATTRIBUTE_DEFINITIONS.map((d) => [
          d.name,
          `INDEXED_VALUE_TYPE_${d.cliType.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase()}`,
        ]),
      ),
    );
  });

  it('fails loudly when an attribute exists with another type', async () => {
    const temporalBin = findBinary('temporal')!;
    const address = stackInfo().temporal.address;
    const namespace = uniq('sa-clash');
    await execFileAsync(temporalBin.path, [
      'operator',
      'namespace',
      'create',
      '--namespace',
      namespace,
      '--address',
      address,
    ]);
    const base = { ...process.env, TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: namespace };
    await eventually(
      'namespace usable',
      () =>
        execFileAsync(
          temporalBin.path,
          ['operator', 'search-attribute', 'create', '--name', 'K8sKind', '--type', 'Text'],
          { env: base },
        ).then(() => true),
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    const env = {
      ...base,
      ...svc.environment,
      TEMPORAL_ADDRESS: address,
      TEMPORAL_NAMESPACE: namespace,
      PATH: `${path.dirname(temporalBin.path)}${path.delimiter}${process.env.PATH}`,
    };
    await expect(execFileAsync('/bin/sh', ['-c', script], { env })).rejects.toThrow(/already exists/);
  });
});
