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
 *    values reach every role; agent pools are refused (installed after the chart); no cert-manager
 *    needs a caBundle; a platform team's Pod settings reach every role; disruption budgets follow
 *    the replicas; the fast path's TLS and the monitoring selectors come from values.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { KubernetesObject } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseAllowedCapabilities } from '../../src/domain/sandbox-capabilities.js';
import { READINESS_CHECK_TIMEOUT_MS } from '../../src/health/probes.js';
import { ensureBinary } from '../../src/infra/binaries.js';
import { INFRA_VERSIONS } from '../../src/infra/versions.js';
import { REPO_ROOT, kube } from '../support/env.js';
import {
  isClusterScoped,
  objectId,
  permissionsOf,
  readObjects,
  renderKustomization,
  type KubeObject,
} from '../support/kustomize.js';

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
  const args = ['template', 'durable-operators', CHART, '--namespace', NAMESPACE, '--include-crds'];
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
const serviceAccounts = (objs: KubeObject[]) =>
  ofKind(objs, 'ServiceAccount').map((sa) => ({ name: sa.metadata.name, namespace: sa.metadata.namespace! }));

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
  const base = renderKustomization(path.join(REPO_ROOT, 'deploy'));
  const inNamespace = (o: KubeObject) =>
    isClusterScoped(o) ? o : { ...o, metadata: { ...o.metadata, namespace: NAMESPACE } };
  const certManager = readObjects(path.join(REPO_ROOT, 'deploy/webhook/cert-manager/certificate.yaml')).map(
    inNamespace,
  );
  const monitoring = ['service.yaml', 'service-monitor.yaml', 'prometheus-rule.yaml']
    .flatMap((f) => readObjects(path.join(REPO_ROOT, 'deploy/monitoring', f)))
    .map(inNamespace);
  monitoring.push({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'durable-operators-dashboard', namespace: NAMESPACE, labels: { grafana_dashboard: '1' } },
    data: {
      'grafana-dashboard.json': readFileSync(path.join(REPO_ROOT, 'deploy/monitoring/grafana-dashboard.json'), 'utf8'),
    },
  });
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
    for (const name of [NAMESPACE, POOL_NAMESPACE])
      await k.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
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

  it('runs each role as deploy/ does: command, ServiceAccount, ports, probes, settings, volumes', () => {
    const { base } = kustomizeOutput();
    for (const role of ROLES) {
      const name = `durable-operators-${role}`;
      const mine = ofKind(chart, 'Deployment').find((d) => d.metadata.name === name)!;
      const theirs = ofKind(base, 'Deployment').find((d) => d.metadata.name === name)!;
      expect(processView(mine), name).toEqual(processView(theirs));
    }
    for (const kind of ['Service', 'NetworkPolicy', 'ValidatingWebhookConfiguration', 'PodDisruptionBudget'])
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
    expect(permissionsOf(none, fastpath)['core/pods']).toEqual(['list']);
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

  it('without cert-manager: no Certificate, the caBundle given (and required)', async () => {
    const objs = await render('admission.certManager=false', 'admission.caBundle=Q0EK');
    expect(ofKind(objs, 'Certificate')).toEqual([]);
    const webhook = ofKind(objs, 'ValidatingWebhookConfiguration')[0]!;
    expect(webhook.metadata.annotations).toBeUndefined();
    for (const w of webhook.webhooks as { clientConfig: { caBundle?: string } }[])
      expect(w.clientConfig.caBundle).toBe('Q0EK');
    await expect(render('admission.certManager=false')).rejects.toThrow(/admission.caBundle/);
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
