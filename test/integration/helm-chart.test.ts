/**
 * charts/durable-operators rendered by the real `helm` (built from its Go module and cached by
 * `npm run infra`, src/infra/binaries.ts), then:
 *
 * 1. a server-side dry run of every object against the stack's apiserver (schemas, CEL rules of
 *    the CRDs for the agent pools, RBAC objects, webhook configuration); only kinds this apiserver
 *    does not serve (the Prometheus Operator's and cert-manager's) are left out, and named;
 * 2. against the kustomize base (deploy/, plus its webhook/cert-manager and monitoring/ parts):
 *    the same objects (kind, name, namespace) but the Namespace (Helm's release namespace), the
 *    same RBAC for every ServiceAccount, the same CRDs, the same Deployments in what the processes
 *    see (command, ServiceAccount, ports, probes, environment variable names, volumes);
 * 3. the values: roles switched off leave out their Deployment and RBAC; the payload keys'
 *    optional Secret is mounted and named by DO_PAYLOAD_KEYS_DIR in every role; the Temporal connection's
 *    values reach every role, its credentials as files of the optional Secrets; agent pools are
 *    refused (installed after the chart); the webhook's certificate by cert-manager, Helm (generated
 *    once, kept on upgrade) or provided with a caBundle; the tenant etcd's endpoints, TLS and auth;
 *    a platform team's Pod settings reach every role; disruption budgets follow the replicas; the
 *    fast path's TLS and the monitoring selectors come from values;
 * 4. the codec server, off by default; switched on, it is run with the env and files its
 *    Deployment gives it, and decodes only for a token or an access token granting the namespace;
 * 5. a chart version bump leaves every Pod template as it was (no Pod rolls for it).
 */
import { execFile } from 'node:child_process';
import { createPrivateKey, randomBytes, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { KubernetesObject } from '@kubernetes/client-node';
import { defaultPayloadConverter } from '@temporalio/common';
import { parse as parseYaml, parseAllDocuments, stringify as stringifyYaml } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseAllowedCapabilities } from '../../src/domain/sandbox-capabilities.js';
import { loadWorkerVersioning } from '../../src/config.js';
import { ensureServingCert } from '../../src/admission/certs.js';
import { READINESS_CHECK_TIMEOUT_MS } from '../../src/health/probes.js';
import { ensureBinary } from '../../src/infra/binaries.js';
import { ManagedProcess } from '../../src/infra/process.js';
import { INFRA_VERSIONS } from '../../src/infra/versions.js';
import { EncryptionCodec, PayloadKeyRing } from '../../src/temporal/payload-encryption.js';
import { REPO_ROOT, eventually, kube, stackInfo } from '../support/env.js';
import { startIssuer } from '../support/oidc.js';
import { isClusterScoped, kustomizeBuild, objectId, readObjects, type KubeObject } from '../support/manifests.js';
import { permissionsOf } from '../support/rbac.js';

const run = promisify(execFile);
const CHART = path.join(REPO_ROOT, 'charts/durable-operators');
const NAMESPACE = 'durable-operators';
const ROLES = ['worker', 'watcher', 'fastpath', 'admission'] as const;
const k = kube();
/** The namespace the agent pools of these tests live in (fastpath.agentPodNamespaces). */
const POOL_NAMESPACE = 'sandboxes';
let helm: string;

/**
 * `helm template` of the chart into NAMESPACE, namespaced objects placed there as `helm install`
 * does; each `set` is a `--set`, or (`key=` and a JSON array or object) a `--set-json`.
 */
async function render(...set: string[]): Promise<KubeObject[]> {
  return renderChart(CHART, ...set);
}

async function renderChart(chart: string, ...set: string[]): Promise<KubeObject[]> {
  const args = ['template', 'durable-operators', chart, '--namespace', NAMESPACE, '--include-crds'];
  args.push('--kube-version', INFRA_VERSIONS.kubernetes);
  for (const s of set) args.push(/^[\w.]+=(\[|\{")/.test(s) ? '--set-json' : '--set', s);
  const { stdout } = await run(helm, args, { maxBuffer: 64 << 20 });
  return parseAllDocuments(stdout)
    .map((d) => d.toJS() as KubeObject | null)
    .filter((o): o is KubeObject => Boolean(o))
    .map((o) =>
      isClusterScoped(o) || o.metadata.namespace ? o : { ...o, metadata: { ...o.metadata, namespace: NAMESPACE } },
    );
}

const ids = (objs: KubeObject[]) => objs.map(objectId).sort();
const ofKind = (objs: KubeObject[], kind: string) => objs.filter((o) => o.kind === kind);
/** Sorted: kustomize orders its output by kind and name, helm by template. */
const serviceAccounts = (objs: KubeObject[]) =>
  ofKind(objs, 'ServiceAccount')
    .map((sa) => ({ name: sa.metadata.name, namespace: sa.metadata.namespace! }))
    .sort((a, b) => a.name.localeCompare(b.name));

/** What a Deployment's process sees, and where it runs, without labels and values that depend on the installation. */
function processView(d: KubeObject) {
  const pod = (d.spec as { template: { spec: Record<string, unknown> } }).template.spec;
  const containers = pod.containers as Record<string, unknown>[];
  return {
    serviceAccountName: pod.serviceAccountName,
    securityContext: pod.securityContext,
    terminationGracePeriodSeconds: pod.terminationGracePeriodSeconds,
    topologySpreadConstraints: pod.topologySpreadConstraints,
    nodeSelector: pod.nodeSelector,
    tolerations: pod.tolerations,
    affinity: pod.affinity,
    priorityClassName: pod.priorityClassName,
    volumes: pod.volumes,
    containers: containers.map((c) => ({
      name: c.name,
      args: c.args,
      ports: c.ports,
      livenessProbe: c.livenessProbe,
      startupProbe: c.startupProbe,
      readinessProbe: c.readinessProbe,
      lifecycle: c.lifecycle,
      envFrom: c.envFrom,
      securityContext: c.securityContext,
      resources: c.resources,
      volumeMounts: c.volumeMounts,
      env: ((c.env ?? []) as { name: string }[]).map((e) => e.name).sort(),
    })),
  };
}

/** The kustomize base with the parts the chart renders by default (cert-manager) or on request (monitoring). */
function kustomizeOutput(): { base: KubeObject[]; certManager: KubeObject[]; monitoring: KubeObject[] } {
  const base = kustomizeBuild(path.join(REPO_ROOT, 'deploy'));
  // Both parts are added to an overlay that sets the namespace, as the base does.
  const inNamespace = (o: KubeObject) =>
    isClusterScoped(o) ? o : { ...o, metadata: { ...o.metadata, namespace: NAMESPACE } };
  const certManager = kustomizeBuild(path.join(REPO_ROOT, 'deploy/webhook/cert-manager')).map(inNamespace);
  const monitoring = kustomizeBuild(path.join(REPO_ROOT, 'deploy/monitoring')).map(inNamespace);
  return { base, certManager, monitoring };
}

beforeAll(async () => {
  const started = Date.now();
  helm = (await ensureBinary('helm')).path;
  console.log(`[helm-chart] helm ready in ${Date.now() - started} ms: ${helm}`);
}, 3_600_000); // a cold build of helm (no cache) takes about 16 minutes on 2 busy cores

describe('the chart, rendered by helm', () => {
  let chart: KubeObject[];
  beforeAll(async () => {
    chart = await render(
      'monitoring.serviceMonitor.enabled=true',
      'monitoring.prometheusRule.enabled=true',
      'monitoring.dashboard.enabled=true',
      `fastpath.agentPodNamespaces={${POOL_NAMESPACE}}`,
    );
  });

  it('passes a server-side dry run of every object the apiserver serves, persisting none', async () => {
    for (const name of [NAMESPACE, POOL_NAMESPACE]) {
      // Another file (deploy.test.ts) may have just deleted it: wait until it is gone, not Terminating.
      await eventually(`namespace ${name} not terminating`, async () => {
        const ns = await k.get({ apiVersion: 'v1', kind: 'Namespace', name });
        return !ns?.metadata?.deletionTimestamp;
      });
      await k.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    }
    const notServed: string[] = [];
    for (const obj of chart) {
      if (!(await k.objects.servedResource(obj.apiVersion, obj.kind))) {
        notServed.push(`${obj.apiVersion} ${obj.kind}`);
        continue;
      }
      const ref = {
        apiVersion: obj.apiVersion,
        kind: obj.kind,
        namespace: obj.metadata.namespace,
        name: obj.metadata.name,
      };
      const before = await k.get(ref);
      // An object the stack already holds (the local admission registers the same webhook
      // configuration with a url) would be merged by the apply, not checked: try it under another
      // name. CRDs keep theirs (their name is their plural and group), and deploy/crds is theirs.
      const probe = structuredClone(obj) as KubernetesObject;
      if (before && obj.kind !== 'CustomResourceDefinition') probe.metadata!.name = `${obj.metadata.name}-helm-dry-run`;
      const out = await k.apply(probe, { dryRun: true }).catch((err: unknown) => {
        throw new Error(`${objectId(obj)}: ${String((err as { body?: unknown }).body ?? err)}`);
      });
      expect(out.metadata?.name, objectId(obj)).toBe(probe.metadata!.name);
      if (!before) expect(await k.get(ref), `${objectId(obj)} persisted by a dry run`).toBeUndefined();
    }
    // Only the Prometheus Operator's and cert-manager's kinds, which this cluster does not run.
    expect([...new Set(notServed)].sort()).toEqual([
      'cert-manager.io/v1 Certificate',
      'cert-manager.io/v1 Issuer',
      'monitoring.coreos.com/v1 PrometheusRule',
      'monitoring.coreos.com/v1 ServiceMonitor',
    ]);
  });

  it('renders the objects of the kustomize base (but its Namespace), cert-manager and monitoring, and the pools’ RoleBinding', () => {
    const { base, certManager, monitoring } = kustomizeOutput();
    const expected = [
      ...base.filter((o) => o.kind !== 'Namespace'),
      ...certManager,
      ...monitoring,
      poolBinding(POOL_NAMESPACE),
    ];
    expect(ids(chart)).toEqual(ids(expected));
  });

  it('grants every ServiceAccount exactly what deploy/ grants it, with the agent pools’ namespace bound as deploy/examples/sandbox-pool.yaml does', () => {
    const { base } = kustomizeOutput();
    const withPool = [...base, poolBinding(POOL_NAMESPACE)];
    expect(serviceAccounts(chart)).toEqual(serviceAccounts(base));
    for (const sa of serviceAccounts(base))
      expect(permissionsOf(chart, sa), sa.name).toEqual(permissionsOf(withPool, sa));
  });

  it('installs the CRDs of deploy/crds, unchanged', () => {
    const { base } = kustomizeOutput();
    const crds = (objs: KubeObject[]) =>
      Object.fromEntries(ofKind(objs, 'CustomResourceDefinition').map((c) => [c.metadata.name, c.spec]));
    expect(Object.keys(crds(chart)).length).toBeGreaterThan(20);
    expect(crds(chart)).toEqual(crds(base));
  });

  it('runs each role as deploy/ does: command, ServiceAccount, ports, probes, settings, volumes, admission policies', () => {
    const { base } = kustomizeOutput();
    for (const role of ROLES) {
      const name = `durable-operators-${role}`;
      const mine = ofKind(chart, 'Deployment').find((d) => d.metadata.name === name)!;
      const theirs = ofKind(base, 'Deployment').find((d) => d.metadata.name === name)!;
      expect(processView(mine), name).toEqual(processView(theirs));
    }
    const kinds = [
      'Service',
      'NetworkPolicy',
      'ValidatingWebhookConfiguration',
      'PodDisruptionBudget',
      'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicyBinding',
    ];
    for (const kind of kinds)
      for (const theirs of ofKind(base, kind)) {
        const mine = ofKind(chart, kind).find((o) => o.metadata.name === theirs.metadata.name)!;
        const { metadata: _m, ...mineRest } = mine;
        const { metadata: _t, ...theirsRest } = theirs;
        expect(mineRest, `${kind} ${theirs.metadata.name}`).toEqual(theirsRest);
      }
  });

  it('renders the monitoring of deploy/monitoring', () => {
    const { monitoring } = kustomizeOutput();
    for (const theirs of monitoring) {
      const mine = chart.find((o) => objectId(o) === objectId(theirs))!;
      const { metadata: _m, ...mineRest } = mine;
      const { metadata: _t, ...theirsRest } = theirs;
      expect(mineRest, objectId(theirs)).toEqual(theirsRest);
    }
  });

  it('gives every probe a timeout the readiness checks’ deadline fits under (the kubelet’s default is 1 s)', () => {
    for (const d of ofKind(chart, 'Deployment'))
      for (const c of processView(d).containers)
        for (const [kind, p] of Object.entries({ liveness: c.livenessProbe, readiness: c.readinessProbe })) {
          const timeout = (p as { timeoutSeconds?: number } | undefined)?.timeoutSeconds;
          expect(timeout, `${d.metadata.name} ${kind}`).toBeGreaterThanOrEqual(READINESS_CHECK_TIMEOUT_MS / 1000 + 2);
        }
  });

  it('keeps helm.sh/chart off the Pod templates (a chart bump alone rolls no Pod), on the objects', () => {
    for (const d of ofKind(chart, 'Deployment')) {
      expect(d.metadata.labels, d.metadata.name).toHaveProperty(['helm.sh/chart']);
      const template = (d.spec as { template: { metadata: { labels: Record<string, string> } } }).template;
      expect(Object.keys(template.metadata.labels), d.metadata.name).not.toContain('helm.sh/chart');
      expect(template.metadata.labels).toMatchObject({ 'app.kubernetes.io/instance': 'durable-operators' });
    }
  });

  it('a disruption budget per role, the webhook’s keeping one replica serving; the fast path and the webhook spread over nodes and wait for endpoint removal on stop', () => {
    const budgets = Object.fromEntries(ofKind(chart, 'PodDisruptionBudget').map((p) => [p.metadata.name, p.spec]));
    expect(Object.keys(budgets).sort()).toEqual(ROLES.map((r) => `durable-operators-${r}`).sort());
    expect(budgets['durable-operators-admission']).toMatchObject({ minAvailable: 1 });
    for (const role of ['worker', 'watcher', 'fastpath'])
      expect(budgets[`durable-operators-${role}`], role).toMatchObject({ maxUnavailable: 1 });
    for (const role of ['fastpath', 'admission']) {
      const view = processView(deployment(chart, role));
      expect(view.topologySpreadConstraints, role).toEqual([
        {
          maxSkew: 1,
          topologyKey: 'kubernetes.io/hostname',
          whenUnsatisfiable: 'ScheduleAnyway',
          labelSelector: {
            matchLabels: { 'app.kubernetes.io/name': 'durable-operators', 'app.kubernetes.io/component': role },
          },
          matchLabelKeys: ['pod-template-hash'],
        },
      ]);
      expect(view.containers[0]!.lifecycle, role).toEqual({ preStop: { sleep: { seconds: 5 } } });
    }
  });
});

/** A role's Deployment in a rendering. */
function deployment(objs: KubeObject[], role: string): KubeObject {
  const d = ofKind(objs, 'Deployment').find((o) => o.metadata.name === `durable-operators-${role}`);
  if (!d) throw new Error(`no Deployment durable-operators-${role}`);
  return d;
}

interface PodSpec {
  containers: { env?: { name: string }[]; volumeMounts?: unknown[]; envFrom?: unknown[] }[];
  volumes?: unknown[];
  [key: string]: unknown;
}
const podTemplate = (d: KubeObject) =>
  (d.spec as { template: { metadata: Record<string, Record<string, string>>; spec: PodSpec } }).template;

/** deploy/examples/sandbox-pool.yaml's RoleBinding (the fast path may create agent Pods there), in `namespace`. */
function poolBinding(namespace: string): KubeObject {
  const example = readObjects(path.join(REPO_ROOT, 'deploy/examples/sandbox-pool.yaml')).find(
    (o) => o.kind === 'RoleBinding',
  )!;
  return { ...example, metadata: { ...example.metadata, namespace } };
}

describe('the values', () => {
  it('fastpath.agentPodNamespaces: the fast path may create agent Pods in those namespaces only (review N9)', async () => {
    const fastpath = { name: 'durable-operators-fastpath', namespace: NAMESPACE };
    const bindings = (objs: KubeObject[]) =>
      ofKind(objs, 'RoleBinding').filter((b) => b.metadata.name === 'durable-operators-fastpath-agent-pods');
    const none = await render();
    expect(bindings(none)).toEqual([]);
    expect(permissionsOf(none, fastpath)['core/pods']).toEqual(['list', 'watch']);
    const objs = await render('fastpath.agentPodNamespaces={team-a,team-b,team-a}');
    expect(bindings(objs)).toEqual(['team-a', 'team-b'].map(poolBinding));
    const perms = permissionsOf(objs, fastpath);
    expect(Object.keys(perms).filter((r) => r.startsWith('core/pods') || r.startsWith('core/secrets'))).toEqual([
      'core/pods',
      'core/pods (in team-a)',
      'core/pods (in team-b)',
      'core/secrets (in team-a)',
      'core/secrets (in team-b)',
    ]);
    expect(perms['core/pods (in team-a)']).toEqual(['create', 'delete']);
    expect(perms['core/secrets (in team-b)']).toEqual(['create', 'patch']);
  });

  it('a role switched off: no Deployment, no RBAC of its own, no alert that it is down', async () => {
    const objs = await render(
      'watcher.enabled=false',
      'fastpath.enabled=false',
      'monitoring.prometheusRule.enabled=true',
    );
    const alerts = (
      ofKind(objs, 'PrometheusRule')[0] as unknown as { spec: { groups: { rules: { alert: string }[] }[] } }
    ).spec.groups.flatMap((g) => g.rules.map((r) => r.alert));
    expect(alerts.filter((a) => a.endsWith('Down')).sort()).toEqual([
      'DurableOperatorsAdmissionDown',
      'DurableOperatorsDown',
      'DurableOperatorsWorkerDown',
    ]);
    expect(
      ofKind(objs, 'Deployment')
        .map((d) => d.metadata.name)
        .sort(),
    ).toEqual(['durable-operators-admission', 'durable-operators-worker']);
    expect(ofKind(objs, 'ClusterRole').map((r) => r.metadata.name)).not.toContain('durable-operators-watcher');
    expect(ofKind(objs, 'NetworkPolicy')).toEqual([]);
  });

  it("sandboxEnvNamespaces: deploy/examples/sandbox-env-from.yaml's RoleBinding in each namespace listed, none by default", async () => {
    const example = readObjects(path.join(REPO_ROOT, 'deploy/examples/sandbox-env-from.yaml'))[0]!;
    const bindings = (objs: KubeObject[]) =>
      ofKind(objs, 'RoleBinding').filter((b) => b.metadata.name === example.metadata.name);
    expect(bindings(await render())).toEqual([]);
    const objs = await render('fastpath.sandboxEnvNamespaces={team-a,team-b}');
    expect(bindings(objs)).toEqual(
      ['team-a', 'team-b'].map((ns) => ({ ...example, metadata: { ...example.metadata, namespace: ns } })),
    );
    expect(permissionsOf(objs, { name: 'durable-operators-fastpath', namespace: NAMESPACE })).toMatchObject({
      'core/secrets (in team-a)': ['get'],
      'core/configmaps (in team-b)': ['get'],
    });
  });

  it('payload keys: the optional Secret mounted read-only in every role that talks to Temporal, DO_PAYLOAD_KEYS_DIR naming it', async () => {
    const deployment = (objs: KubeObject[], role: string) =>
      (
        ofKind(objs, 'Deployment').find((d) => d.metadata.name === `durable-operators-${role}`)!.spec as {
          template: { spec: { containers: Record<string, unknown>[]; volumes: Record<string, unknown>[] } };
        }
      ).template.spec;
    const objs = await render('payloadKeys.secretName=team-keys', 'payloadKeys.encryptKeyId=2026-11');
    for (const role of ['worker', 'watcher', 'fastpath']) {
      const pod = deployment(objs, role);
      const c = pod.containers[0]!;
      expect(c.env, role).toContainEqual({ name: 'DO_PAYLOAD_KEYS_DIR', value: '/etc/durable-operators/payload-keys' });
      expect(c.env, role).toContainEqual({ name: 'DO_PAYLOAD_KEY_ID', value: '2026-11' });
      expect(c.volumeMounts, role).toContainEqual({
        name: 'payload-keys',
        mountPath: '/etc/durable-operators/payload-keys',
        readOnly: true,
      });
      expect(pod.volumes, role).toContainEqual({
        name: 'payload-keys',
        secret: { secretName: 'team-keys', optional: true, defaultMode: 0o440 },
      });
    }
    // Switched off: no mount, no variable (payloads plain, each role says so at start).
    const off = await render('payloadKeys.secretName=');
    for (const role of ['worker', 'watcher', 'fastpath'])
      expect(JSON.stringify(deployment(off, role)), role).not.toMatch(/payload-keys|DO_PAYLOAD_KEY/);
  });

  it('the Temporal connection reaches every role: address, namespace, TLS server name, any envconfig variable', async () => {
    const objs = await render(
      'temporal.address=my-ns.a1b2c.tmprl.cloud:7233',
      'temporal.namespace=my-ns.a1b2c',
      'temporal.tls.serverName=my-ns.a1b2c.tmprl.cloud',
      'temporal.extraEnv.TEMPORAL_TLS=true',
    );
    for (const role of ['worker', 'watcher', 'fastpath']) {
      const env = (
        ofKind(objs, 'Deployment').find((d) => d.metadata.name === `durable-operators-${role}`)!.spec as {
          template: { spec: { containers: { env: unknown[] }[] } };
        }
      ).template.spec.containers[0]!.env;
      expect(env, role).toEqual(
        expect.arrayContaining([
          { name: 'TEMPORAL_ADDRESS', value: 'my-ns.a1b2c.tmprl.cloud:7233' },
          { name: 'TEMPORAL_NAMESPACE', value: 'my-ns.a1b2c' },
          { name: 'TEMPORAL_TLS_SERVER_NAME', value: 'my-ns.a1b2c.tmprl.cloud' },
          { name: 'TEMPORAL_TLS', value: 'true' },
        ]),
      );
    }
  });

  it('tracing: tracing.otlpEndpoint (and its extra OTEL_* variables) reaches every role that talks to Temporal; none by default', async () => {
    const env = (objs: KubeObject[], role: string) =>
      (
        ofKind(objs, 'Deployment').find((d) => d.metadata.name === `durable-operators-${role}`)!.spec as {
          template: { spec: { containers: { env?: unknown[] }[] } };
        }
      ).template.spec.containers[0]!.env ?? [];
    const objs = await render(
      'tracing.otlpEndpoint=http://otel-collector.observability:4318',
      'tracing.extraEnv.OTEL_TRACES_SAMPLER=parentbased_traceidratio',
    );
    for (const role of ['worker', 'watcher', 'fastpath'])
      expect(env(objs, role), role).toEqual(
        expect.arrayContaining([
          { name: 'OTEL_EXPORTER_OTLP_ENDPOINT', value: 'http://otel-collector.observability:4318' },
          { name: 'OTEL_TRACES_SAMPLER', value: 'parentbased_traceidratio' },
        ]),
      );
    // The webhook runs no Temporal client: nothing of its own to trace.
    expect(JSON.stringify(env(objs, 'admission'))).not.toContain('OTEL_');
    const off = await render('tracing.extraEnv.OTEL_TRACES_SAMPLER=always_on');
    for (const role of ['worker', 'watcher', 'fastpath', 'admission'])
      expect(JSON.stringify(env(off, role)), role).not.toContain('OTEL_');
  });

  it('versioning: the worker and the fast path poll as the image tag’s build, as the mode says; off by default', async () => {
    const env = (objs: KubeObject[], role: string) =>
      (
        ofKind(objs, 'Deployment').find((d) => d.metadata.name === `durable-operators-${role}`)!.spec as {
          template: { spec: { containers: { env?: { name: string; value?: string }[] }[] } };
        }
      ).template.spec.containers[0]!.env ?? [];
    const versioning = (objs: KubeObject[], role: string) =>
      loadWorkerVersioning(Object.fromEntries(env(objs, role).map((e) => [e.name, e.value])));
    const objs = await render('versioning.mode=auto-promote', 'image.tag=0.3.1');
    for (const role of ['worker', 'fastpath'])
      expect(versioning(objs, role), role).toEqual({ mode: 'auto-promote', buildId: '0.3.1' });
    // The watcher and the webhook run no Worker.
    for (const role of ['watcher', 'admission']) expect(versioning(objs, role).mode, role).toBe('off');
    const appVersion = /appVersion: '(.+)'/.exec(readFileSync(path.join(CHART, 'Chart.yaml'), 'utf8'))![1];
    expect(versioning(await render('versioning.mode=on'), 'worker')).toEqual({ mode: 'on', buildId: appVersion });
    expect(versioning(await render('versioning.mode=on', 'versioning.buildId=b7'), 'worker').buildId).toBe('b7');
    expect(versioning(await render(), 'worker').mode).toBe('off');
  });

  it('admission.sandboxCapabilities reaches the webhook as DO_ADMISSION_SANDBOX_CAPABILITIES, which it reads; unset by default', async () => {
    const env = (objs: KubeObject[]) =>
      (
        ofKind(objs, 'Deployment').find((d) => d.metadata.name === 'durable-operators-admission')!.spec as {
          template: { spec: { containers: { env?: { name: string; value: string }[] }[] } };
        }
      ).template.spec.containers[0]!.env ?? [];
    const objs = await render(
      'admission.sandboxCapabilities.NET_RAW={team-a,team-b}',
      'admission.sandboxCapabilities.SYS_PTRACE={*}',
    );
    const [setting] = env(objs).filter((e) => e.name === 'DO_ADMISSION_SANDBOX_CAPABILITIES');
    expect(parseAllowedCapabilities(setting?.value)).toEqual({ NET_RAW: ['team-a', 'team-b'], SYS_PTRACE: ['*'] });
    expect(env(await render()).map((e) => e.name)).not.toContain('DO_ADMISSION_SANDBOX_CAPABILITIES');
  });

  it('admission.certs: cert-manager issues and injects; helm generates a CA and certificate once, kept across upgrades; provided takes the caBundle (and requires it)', async () => {
    const webhookOf = (objs: KubeObject[]) => ofKind(objs, 'ValidatingWebhookConfiguration')[0]!;
    const caBundles = (objs: KubeObject[]) =>
      (webhookOf(objs).webhooks as { clientConfig: { caBundle?: string } }[]).map((w) => w.clientConfig.caBundle);
    const tlsSecret = (objs: KubeObject[]) =>
      ofKind(objs, 'Secret').find((o) => o.metadata.name === 'durable-operators-admission-tls') as
        (KubeObject & { type: string; data: Record<string, string> }) | undefined;

    const certManager = await render();
    expect(ofKind(certManager, 'Certificate').map((c) => c.metadata.name)).toEqual(['durable-operators-admission']);
    expect(webhookOf(certManager).metadata.annotations).toHaveProperty(['cert-manager.io/inject-ca-from']);
    expect(tlsSecret(certManager)).toBeUndefined();

    const generated = await render('admission.certs=helm');
    expect(ofKind(generated, 'Certificate')).toEqual([]);
    expect(webhookOf(generated).metadata.annotations).toBeUndefined();
    const secret = tlsSecret(generated)!;
    expect(secret.type).toBe('kubernetes.io/tls');
    expect(caBundles(generated).every((b) => b === secret.data['ca.crt'])).toBe(true);
    const pem = (k: string) => Buffer.from(secret.data[k]!, 'base64');
    const ca = new X509Certificate(pem('ca.crt'));
    const serving = new X509Certificate(pem('tls.crt'));
    expect(serving.verify(ca.publicKey)).toBe(true);
    expect(serving.subjectAltName).toContain(`DNS:durable-operators-admission.${NAMESPACE}.svc`);
    expect(serving.checkPrivateKey(createPrivateKey(pem('tls.key')))).toBe(true);

    // An upgrade: the Secret the install made is found (lookup) and kept, not generated anew.
    const namespace = `helm-certs-${Date.now().toString(36)}`;
    await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
    try {
      await k.create({ ...secret, metadata: { name: secret.metadata.name, namespace } });
      const { stdout } = await run(
        helm,
        ['template', 'durable-operators', CHART, '--namespace', namespace, '--set', 'admission.certs=helm'].concat([
          '--kube-version',
          INFRA_VERSIONS.kubernetes,
          '--dry-run=server',
          '--kubeconfig',
          stackInfo().kubeconfig,
        ]),
        { maxBuffer: 64 << 20 },
      );
      const upgraded = parseAllDocuments(stdout)
        .map((d) => d.toJS() as KubeObject | null)
        .filter((o): o is KubeObject => Boolean(o));
      expect(tlsSecret(upgraded)!.data).toEqual(secret.data);
      expect(caBundles(upgraded).every((b) => b === secret.data['ca.crt'])).toBe(true);
    } finally {
      await k.delete({ apiVersion: 'v1', kind: 'Namespace', name: namespace });
    }

    for (const provided of [
      await render('admission.certs=provided', 'admission.caBundle=Q0EK'),
      await render('admission.certManager=false', 'admission.caBundle=Q0EK'), // the older switch
    ]) {
      expect(ofKind(provided, 'Certificate')).toEqual([]);
      expect(tlsSecret(provided)).toBeUndefined();
      expect(webhookOf(provided).metadata.annotations).toBeUndefined();
      expect(caBundles(provided).every((b) => b === 'Q0EK')).toBe(true);
    }
    await expect(render('admission.certs=provided')).rejects.toThrow(/admission.caBundle/);
    await expect(render('admission.certManager=false')).rejects.toThrow(/admission.caBundle/);
    await expect(render('admission.certs=self')).rejects.toThrow(/admission.certs/);
  });

  it('Temporal credentials: the optional Secrets mounted as files (re-read on renewal) and named by the _PATH variables, not copied into the environment', async () => {
    for (const [objs, names] of [
      [
        await render(),
        {
          apiKey: 'durable-operators-temporal',
          tls: 'durable-operators-temporal-tls',
          ca: 'durable-operators-temporal',
        },
      ],
      [
        await render(
          'temporal.apiKey.secretName=cloud-key',
          'temporal.apiKey.key=key',
          'temporal.tls.clientSecretName=client-cert',
          'temporal.tls.serverCA.secretName=frontend-ca',
          'temporal.tls.serverCA.key=ca.pem',
        ),
        { apiKey: 'cloud-key', tls: 'client-cert', ca: 'frontend-ca' },
      ],
    ] as const)
      for (const role of ['worker', 'watcher', 'fastpath']) {
        const { spec } = podTemplate(deployment(objs, role));
        const c = spec.containers[0]!;
        expect(c.env, role).toEqual(
          expect.arrayContaining([
            { name: 'DO_TEMPORAL_CREDENTIAL_FILES_OPTIONAL', value: 'true' },
            { name: 'DO_TEMPORAL_API_KEY_FILE', value: '/etc/durable-operators/temporal-api-key/api-key' },
            { name: 'TEMPORAL_TLS_CLIENT_CERT_PATH', value: '/etc/durable-operators/temporal-tls/tls.crt' },
            { name: 'TEMPORAL_TLS_CLIENT_KEY_PATH', value: '/etc/durable-operators/temporal-tls/tls.key' },
            { name: 'TEMPORAL_TLS_SERVER_CA_CERT_PATH', value: '/etc/durable-operators/temporal-ca/ca.crt' },
          ]),
        );
        expect(JSON.stringify(c.env), role).not.toMatch(/_DATA|TEMPORAL_API_KEY"/);
        expect(c.volumeMounts, role).toEqual(
          expect.arrayContaining(
            ['temporal-api-key', 'temporal-tls', 'temporal-ca'].map((name) => ({
              name,
              mountPath: `/etc/durable-operators/${name}`,
              readOnly: true,
            })),
          ),
        );
        const volume = (name: string) =>
          (spec.volumes as { name: string; secret: Record<string, unknown> }[]).find((v) => v.name === name)!;
        expect(volume('temporal-api-key').secret, role).toMatchObject({ secretName: names.apiKey, optional: true });
        expect(volume('temporal-tls').secret, role).toMatchObject({ secretName: names.tls, optional: true });
        expect(volume('temporal-ca').secret, role).toMatchObject({ secretName: names.ca, optional: true });
      }
    const none = await render(
      'temporal.apiKey.secretName=',
      'temporal.tls.clientSecretName=',
      'temporal.tls.serverCA.secretName=',
    );
    expect(JSON.stringify(podTemplate(deployment(none, 'worker')))).not.toMatch(
      /temporal-(tls|ca|api-key)|DO_TEMPORAL_/,
    );
  });

  it("fastpath.tenantEtcd: the release's namespace in the default endpoint; the TLS and auth Secrets mounted and named by DO_TENANT_ETCD_*; the older string form kept", async () => {
    const envOf = async (...set: string[]) => podTemplate(deployment(await render(...set), 'fastpath')).spec;
    const plain = await envOf();
    expect(plain.containers[0]!.env).toContainEqual({
      name: 'DO_TENANT_ETCD',
      value: `http://tenant-etcd.${NAMESPACE}:2379`,
    });
    expect(JSON.stringify(plain)).not.toMatch(/DO_TENANT_ETCD_|tenant-etcd-(tls|auth)/);
    expect((await envOf('fastpath.tenantEtcd=http://etcd.elsewhere:2379')).containers[0]!.env).toContainEqual({
      name: 'DO_TENANT_ETCD',
      value: 'http://etcd.elsewhere:2379',
    });
    const secured = await envOf(
      'fastpath.tenantEtcd.tls.secretName=etcd-client',
      'fastpath.tenantEtcd.auth.secretName=etcd-user',
    );
    expect(secured.containers[0]!.env).toEqual(
      expect.arrayContaining([
        { name: 'DO_TENANT_ETCD', value: `https://tenant-etcd.${NAMESPACE}:2379` },
        { name: 'DO_TENANT_ETCD_CA', value: '/etc/durable-operators/tenant-etcd-tls/ca.crt' },
        { name: 'DO_TENANT_ETCD_CERT', value: '/etc/durable-operators/tenant-etcd-tls/tls.crt' },
        { name: 'DO_TENANT_ETCD_KEY', value: '/etc/durable-operators/tenant-etcd-tls/tls.key' },
        { name: 'DO_TENANT_ETCD_USER', valueFrom: { secretKeyRef: { name: 'etcd-user', key: 'username' } } },
        { name: 'DO_TENANT_ETCD_PASSWORD_FILE', value: '/etc/durable-operators/tenant-etcd-auth/password' },
      ]),
    );
    expect(secured.volumes).toEqual(
      expect.arrayContaining([
        { name: 'tenant-etcd-tls', secret: { secretName: 'etcd-client', defaultMode: 0o440 } },
        {
          name: 'tenant-etcd-auth',
          secret: { secretName: 'etcd-user', items: [{ key: 'password', path: 'password' }], defaultMode: 0o440 },
        },
      ]),
    );
  });

  it('Pod Security: every role’s Pod is admitted where `restricted` is enforced; an agent Pod (deploy/examples/sandbox-pool.yaml) only where `privileged` is', async () => {
    const labelled = async (name: string, level: string) =>
      k.apply({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name, labels: { 'pod-security.kubernetes.io/enforce': level } },
      });
    await labelled('helm-psa-restricted', 'restricted');
    await labelled('helm-psa-baseline', 'baseline');
    await labelled('helm-psa-privileged', 'privileged');
    const pod = (namespace: string, name: string, spec: unknown) =>
      ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace }, spec }) as KubernetesObject;
    const objs = await render();
    for (const role of ROLES)
      await k.apply(pod('helm-psa-restricted', role, podTemplate(deployment(objs, role)).spec), { dryRun: true });
    const pool = readObjects(path.join(REPO_ROOT, 'deploy/examples/sandbox-pool.yaml')).find(
      (o) => o.kind === 'SandboxPool',
    )!;
    const agent = (pool.spec as { agentTemplate: { spec: unknown } }).agentTemplate.spec;
    await k.apply(pod('helm-psa-privileged', 'agent', agent), { dryRun: true });
    for (const ns of ['helm-psa-restricted', 'helm-psa-baseline'])
      await expect(k.apply(pod(ns, 'agent', agent), { dryRun: true }), ns).rejects.toSatisfy((err) =>
        /violates PodSecurity/.test(String((err as { body?: unknown }).body ?? err)),
      );
  });

  it('a misspelt value is refused with its path (values.schema.json), not silently ignored', async () => {
    await expect(render('worker.replica=3')).rejects.toThrow(
      /at '\/worker': additional properties 'replica' not allowed/,
    );
    await expect(render('fastpath.tls.secret=fastpath-cert')).rejects.toThrow(/\/fastpath\/tls/);
  });

  it('agentPools: refused, saying why and what to do instead (pools are applied after the install)', async () => {
    await expect(render(`agentPools=[{"name":"pool-a","spec":{}}]`)).rejects.toThrow(
      /agentPools: no longer in the chart.*docs\/helm.md#sandbox-pools/,
    );
  });

  it('the Pod settings a platform team sets reach every role’s Pods: global ones, each role’s merged over them', async () => {
    const objs = await render(
      'nodeSelector.pool=operators',
      'tolerations=[{"key":"dedicated","operator":"Equal","value":"operators","effect":"NoSchedule"}]',
      'affinity={"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"arch","operator":"In","values":["amd64"]}]}]}}}',
      'priorityClassName=platform',
      'podAnnotations.reloader\\.stakater\\.com/auto=true',
      'podLabels.team=platform',
      'extraVolumes=[{"name":"ca","configMap":{"name":"corp-ca"}}]',
      'extraVolumeMounts=[{"name":"ca","mountPath":"/etc/corp-ca","readOnly":true}]',
      'extraEnv=[{"name":"NODE_EXTRA_CA_CERTS","value":"/etc/corp-ca/ca.crt"}]',
      'extraEnvFrom=[{"configMapRef":{"name":"proxy"}}]',
      // A role's own: its map keys win, its lists come after, its scalar replaces.
      'worker.nodeSelector.pool=workers',
      'worker.podLabels.tier=temporal',
      'worker.tolerations=[{"key":"workers","operator":"Exists"}]',
      'worker.priorityClassName=workers',
      'worker.extraEnv=[{"name":"DO_EXTRA","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}]',
    );
    for (const role of ROLES) {
      const { metadata, spec } = podTemplate(deployment(objs, role));
      const c = spec.containers[0]!;
      const worker = role === 'worker';
      expect(spec.nodeSelector, role).toEqual({ pool: worker ? 'workers' : 'operators' });
      expect(spec.tolerations, role).toEqual([
        { key: 'dedicated', operator: 'Equal', value: 'operators', effect: 'NoSchedule' },
        ...(worker ? [{ key: 'workers', operator: 'Exists' }] : []),
      ]);
      expect(spec.affinity, role).toHaveProperty(['nodeAffinity']);
      expect(spec.priorityClassName, role).toBe(worker ? 'workers' : 'platform');
      expect(metadata.annotations, role).toEqual({ 'reloader.stakater.com/auto': 'true' });
      expect(metadata.labels, role).toMatchObject({
        team: 'platform',
        'app.kubernetes.io/component': role,
        ...(worker ? { tier: 'temporal' } : {}),
      });
      expect(spec.volumes, role).toContainEqual({ name: 'ca', configMap: { name: 'corp-ca' } });
      expect(c.volumeMounts, role).toContainEqual({ name: 'ca', mountPath: '/etc/corp-ca', readOnly: true });
      expect(c.env, role).toContainEqual({ name: 'NODE_EXTRA_CA_CERTS', value: '/etc/corp-ca/ca.crt' });
      expect(c.envFrom, role).toEqual([{ configMapRef: { name: 'proxy' } }]);
      expect(c.env!.map((e) => e.name).includes('DO_EXTRA'), role).toBe(worker);
    }
    // Valid where they go: the apiserver takes every Deployment so rendered (a dry run).
    await k.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
    for (const d of ofKind(objs, 'Deployment'))
      await k.apply(structuredClone(d) as KubernetesObject, { dryRun: true }).catch((err: unknown) => {
        throw new Error(`${objectId(d)}: ${String((err as { body?: unknown }).body ?? err)}`);
      });
    // podLabels never replace the labels the Deployment selects its Pods by.
    const relabelled = await render('podLabels.app\\.kubernetes\\.io/component=x');
    for (const role of ROLES)
      expect(podTemplate(deployment(relabelled, role)).metadata.labels, role).toMatchObject({
        'app.kubernetes.io/component': role,
      });
  });

  it('disruption budgets: one per role with two replicas or more, none with one (it would block every drain), one kind of bound', async () => {
    const budgets = (objs: KubeObject[]) =>
      ofKind(objs, 'PodDisruptionBudget')
        .map((p) => p.metadata.name)
        .sort();
    const single = await render('admission.replicas=1', 'worker.replicas=1');
    expect(budgets(single)).toEqual(['durable-operators-fastpath', 'durable-operators-watcher']);
    expect(budgets(await render('watcher.podDisruptionBudget.enabled=false'))).not.toContain(
      'durable-operators-watcher',
    );
    const scaled = await render('admission.replicas=3', 'admission.podDisruptionBudget.minAvailable=2');
    expect(ofKind(scaled, 'PodDisruptionBudget').find((p) => p.metadata.name.endsWith('admission'))!.spec).toEqual({
      minAvailable: 2,
      unhealthyPodEvictionPolicy: 'AlwaysAllow',
      selector: {
        matchLabels: { 'app.kubernetes.io/name': 'durable-operators', 'app.kubernetes.io/component': 'admission' },
      },
    });
    await expect(render('admission.podDisruptionBudget.maxUnavailable=1')).rejects.toThrow(
      /admission.podDisruptionBudget: set minAvailable or maxUnavailable, not both/,
    );
  });

  it('fastpath.tls: the certificate Secret and the client CA mounted read-only, named by DO_FASTPATH_TLS_*; refused when incomplete', async () => {
    const objs = await render(
      'fastpath.tls.secretName=fastpath-cert',
      'fastpath.tls.clientCASecretName=tenant-ca',
      'fastpath.tls.clientCAKey=bundle.pem',
      'fastpath.tls.requireClientCert=true',
    );
    const { spec } = podTemplate(deployment(objs, 'fastpath'));
    const c = spec.containers[0]!;
    expect(c.env).toEqual(
      expect.arrayContaining([
        { name: 'DO_FASTPATH_TLS_CERT_FILE', value: '/etc/durable-operators/fastpath-tls/tls.crt' },
        { name: 'DO_FASTPATH_TLS_KEY_FILE', value: '/etc/durable-operators/fastpath-tls/tls.key' },
        { name: 'DO_FASTPATH_TLS_CLIENT_CA_FILE', value: '/etc/durable-operators/fastpath-client-ca/ca.crt' },
        { name: 'DO_FASTPATH_TLS_REQUIRE_CLIENT_CERT', value: 'true' },
      ]),
    );
    expect(c.volumeMounts).toEqual(
      expect.arrayContaining([
        { name: 'fastpath-tls', mountPath: '/etc/durable-operators/fastpath-tls', readOnly: true },
        { name: 'fastpath-client-ca', mountPath: '/etc/durable-operators/fastpath-client-ca', readOnly: true },
      ]),
    );
    expect(spec.volumes).toEqual(
      expect.arrayContaining([
        {
          name: 'fastpath-tls',
          secret: {
            secretName: 'fastpath-cert',
            items: [
              { key: 'tls.crt', path: 'tls.crt' },
              { key: 'tls.key', path: 'tls.key' },
            ],
            defaultMode: 0o440,
          },
        },
        {
          name: 'fastpath-client-ca',
          secret: { secretName: 'tenant-ca', items: [{ key: 'bundle.pem', path: 'ca.crt' }], defaultMode: 0o444 },
        },
      ]),
    );
    // Off by default: plain text, as deploy/fastpath.yaml.
    expect(JSON.stringify(podTemplate(deployment(await render(), 'fastpath')))).not.toMatch(
      /FASTPATH_TLS|fastpath-tls/,
    );
    await expect(render('fastpath.tls.clientCASecretName=tenant-ca')).rejects.toThrow(/set fastpath.tls.secretName/);
    await expect(render('fastpath.tls.secretName=c', 'fastpath.tls.requireClientCert=true')).rejects.toThrow(
      /needs fastpath.tls.clientCASecretName/,
    );
  });

  it('monitoring: the labels a Prometheus selects by, the scrape interval and timeout, more rule groups; the old booleans refused', async () => {
    const group = { name: 'team', rules: [{ alert: 'TeamAlert', expr: 'vector(1)', labels: { severity: 'info' } }] };
    const objs = await render(
      'monitoring.serviceMonitor.enabled=true',
      'monitoring.serviceMonitor.additionalLabels.release=kube-prometheus-stack',
      'monitoring.serviceMonitor.interval=15s',
      'monitoring.serviceMonitor.scrapeTimeout=5s',
      'monitoring.prometheusRule.enabled=true',
      'monitoring.prometheusRule.additionalLabels.release=kube-prometheus-stack',
      `monitoring.prometheusRule.rules=[${JSON.stringify(group)}]`,
    );
    const monitor = ofKind(objs, 'ServiceMonitor')[0]!;
    expect(monitor.metadata.labels).toEqual({
      'app.kubernetes.io/name': 'durable-operators',
      release: 'kube-prometheus-stack',
    });
    expect((monitor.spec as { endpoints: unknown[] }).endpoints).toEqual([
      { port: 'metrics', interval: '15s', scrapeTimeout: '5s' },
      { port: 'sdk-metrics', interval: '15s', scrapeTimeout: '5s' },
    ]);
    const rule = ofKind(objs, 'PrometheusRule')[0]!;
    expect(rule.metadata.labels).toMatchObject({ release: 'kube-prometheus-stack' });
    const groups = (rule.spec as { groups: { name: string }[] }).groups;
    expect(groups.map((g) => g.name)).toEqual(['durable-operators', 'team']);
    expect(groups[1]).toEqual(group);
    await expect(render('monitoring.serviceMonitor=true')).rejects.toThrow(
      /monitoring.serviceMonitor is a map now: set monitoring.serviceMonitor.enabled/,
    );
  });
});

describe('the codec server', () => {
  const codecObjects = (objs: KubeObject[]) => objs.filter((o) => o.metadata.name === 'durable-operators-codec-server');

  it('is off by default; on, a Deployment without Kubernetes credentials, its Service, budget and Ingress, each valid for the apiserver', async () => {
    expect(codecObjects(await render())).toEqual([]);
    const objs = await render(
      'codecServer.enabled=true',
      'codecServer.tls.secretName=codec-tls',
      'codecServer.ingress.enabled=true',
      'codecServer.ingress.host=codec.example',
      'codecServer.ingress.tlsSecretName=codec-ingress-tls',
    );
    const mine = codecObjects(objs);
    expect(mine.map((o) => o.kind).sort()).toEqual(['Deployment', 'Ingress', 'PodDisruptionBudget', 'Service']);
    const pod = podTemplate(mine.find((o) => o.kind === 'Deployment')!).spec;
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.serviceAccountName).toBeUndefined();
    expect(mine.find((o) => o.kind === 'Service')!.spec).toMatchObject({
      ports: [{ name: 'https', port: 443, targetPort: 'https' }],
    });
    await k.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
    for (const o of mine)
      await k.apply(structuredClone(o) as KubernetesObject, { dryRun: true }).catch((err: unknown) => {
        throw new Error(`${objectId(o)}: ${String((err as { body?: unknown }).body ?? err)}`);
      });
    // Nobody could decode, or nothing to decode with: refused at render.
    await expect(render('codecServer.enabled=true', 'codecServer.tokens.secretName=')).rejects.toThrow(
      /set tokens.secretName, oidc.issuer, or both/,
    );
    await expect(render('codecServer.enabled=true', 'payloadKeys.secretName=')).rejects.toThrow(
      /set payloadKeys.secretName/,
    );
    await expect(render('codecServer.enabled=true', 'codecServer.oidc.issuer=https://idp.example')).rejects.toThrow(
      /set oidc.jwksUrl too/,
    );
  });

  it('run with the env and Secret files its Deployment gives it: refuses no token and a JWT for another namespace, decodes for the right one', async () => {
    const issuer = await startIssuer();
    const root = await mkdtemp(path.join(tmpdir(), 'codec-chart-'));
    let proc: ManagedProcess | undefined;
    try {
      const objs = await render(
        'codecServer.enabled=true',
        'codecServer.corsOrigins={https://temporal.example}',
        'codecServer.tls.secretName=codec-tls',
        `codecServer.oidc.issuer=${issuer.issuer}`,
        `codecServer.oidc.jwksUrl=${issuer.jwksUrl}`,
        'codecServer.oidc.roles={read}',
      );
      const { spec } = podTemplate(deployment(objs, 'codec-server'));
      const c = spec.containers[0] as unknown as {
        args: string[];
        env: { name: string; value: string }[];
        volumeMounts: { name: string; mountPath: string }[];
      };
      // The Secrets the Deployment names, written where its mounts put them (under `root`).
      const certs = await ensureServingCert(path.join(root, 'ca'));
      const key = randomBytes(32).toString('base64');
      const token = `codec-${randomBytes(8).toString('hex')}`;
      const secrets: Record<string, Record<string, string>> = {
        'durable-operators-payload-keys': { '2026-11': key },
        'durable-operators-codec-tokens': { tokens: `${token}\n` },
        'codec-tls': { 'tls.crt': certs.certPem, 'tls.key': await readFile(path.join(root, 'ca', 'tls.key'), 'utf8') },
      };
      const volumes = spec.volumes as {
        name: string;
        secret?: { secretName: string; items?: { key: string; path: string }[] };
      }[];
      for (const m of c.volumeMounts) {
        const secret = volumes.find((v) => v.name === m.name)!.secret!;
        const data = secrets[secret.secretName]!;
        await mkdir(path.join(root, m.mountPath), { recursive: true });
        for (const item of secret.items ?? Object.keys(data).map((k) => ({ key: k, path: k })))
          await writeFile(path.join(root, m.mountPath, item.path), data[item.key]!);
      }
      const env = Object.fromEntries(
        c.env.map((e) => [e.name, e.value.startsWith('/etc/') ? path.join(root, e.value) : e.value]),
      );
      // Its port and address are the test's: several stacks share this machine.
      Object.assign(env, { DO_CODEC_SERVER_PORT: '0', DO_CODEC_SERVER_HOST: '127.0.0.1' });
      const logFile = path.join(stackInfo().logsDir, 'helm-codec-server.log');
      await writeFile(logFile, '');
      proc = ManagedProcess.start({
        name: 'codec-server',
        command: process.execPath,
        args: ['--import', 'tsx', path.join(REPO_ROOT, 'src/cli/main.ts'), ...c.args],
        cwd: REPO_ROOT,
        logFile,
        env,
      });
      const url = await eventually('the codec server running', async () => {
        const line = (await readFile(logFile, 'utf8')).split('\n').find((l) => l.includes('codec server running'));
        return line ? (JSON.parse(line) as { url: string }).url : undefined;
      });
      expect(url).toMatch(/^https:/);

      const [sealed] = await new EncryptionCodec(
        new PayloadKeyRing({ dir: path.join(root, '/etc/durable-operators/payload-keys') }),
      ).encode([defaultPayloadConverter.toPayload('decoded for team-a')]);
      const body = JSON.stringify({
        payloads: [
          {
            metadata: Object.fromEntries(
              Object.entries(sealed!.metadata!).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
            ),
            data: Buffer.from(sealed!.data!).toString('base64'),
          },
        ],
      });
      const post = (headers: Record<string, string>) =>
        new Promise<{ status: number; text: string }>((resolve, reject) => {
          const req = https.request(
            `${url}/decode`,
            { method: 'POST', ca: certs.caPem, headers: { 'content-type': 'application/json', ...headers } },
            (res) => {
              let text = '';
              res.on('data', (chunk: Buffer) => (text += chunk.toString()));
              res.on('end', () => resolve({ status: res.statusCode!, text }));
            },
          );
          req.on('error', reject);
          req.end(body);
        });
      const jwt = `Bearer ${await issuer.token({ permissions: ['team-a:read'] })}`;
      const plain = (text: string) =>
        ((JSON.parse(text) as { payloads?: { data: string }[] }).payloads ?? [])
          .map((p) => Buffer.from(p.data, 'base64').toString())
          .join('');
      const none = await post({ 'x-namespace': 'team-a' });
      expect(none.status).toBe(401);
      const other = await post({ authorization: jwt, 'x-namespace': 'team-b' });
      expect(other.status).toBe(403);
      expect(other.text).not.toContain('decoded for team-a');
      const right = await post({ authorization: jwt, 'x-namespace': 'team-a' });
      expect(right.status).toBe(200);
      expect(plain(right.text)).toContain('decoded for team-a');
      // The tokens Secret's token decodes too (the CLI's --codec-auth); the path form is off.
      expect((await post({ authorization: `Bearer ${token}`, 'x-namespace': 'team-b' })).status).toBe(200);
    } finally {
      await proc?.stop();
      await issuer.close();
      await rm(root, { recursive: true, force: true });
    }
  });
});

it('a chart version bump alone leaves every Pod template unchanged (no Pod rolls for it); the objects carry the new version', async () => {
  const bumped = await mkdtemp(path.join(tmpdir(), 'chart-bump-'));
  try {
    await cp(CHART, bumped, { recursive: true, dereference: true });
    const chartFile = path.join(bumped, 'Chart.yaml');
    const meta = parseYaml(await readFile(chartFile, 'utf8')) as { version: string };
    const version = `${meta.version}-bump.1`;
    await writeFile(chartFile, stringifyYaml({ ...meta, version }));
    const values = ['codecServer.enabled=true', `fastpath.agentPodNamespaces={${POOL_NAMESPACE}}`];
    const before = await render(...values);
    const after = await renderChart(bumped, ...values);
    const templates = (objs: KubeObject[]) =>
      Object.fromEntries(ofKind(objs, 'Deployment').map((d) => [d.metadata.name, podTemplate(d)]));
    expect(Object.keys(templates(before))).toHaveLength(ROLES.length + 1);
    expect(templates(after)).toEqual(templates(before));
    for (const d of ofKind(after, 'Deployment'))
      expect(d.metadata.labels!['helm.sh/chart'], d.metadata.name).toBe(`durable-operators-${version}`);
  } finally {
    await rm(bumped, { recursive: true, force: true });
  }
});
