/**
 * deploy/ against the real apiserver of the test stack (RBAC on):
 *
 * 1. every rendered object, and every example, passes a server-side dry-run apply (schema,
 *    CEL rules, defaulting — nothing persisted);
 * 2. the RBAC, applied for real, allows exactly the calls the roles make (SubjectAccessReview);
 * 3. the worker and watcher CLIs, run with tokens of their ServiceAccounts instead of the admin
 *    kubeconfig, take a TTL ObjectKeeper through its whole life: proof the grants suffice;
 * 4. the docker-compose search-attribute one-shot, run against the real Temporal server,
 *    registers every attribute the workflows set (and is safe to run twice).
 */
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { AuthorizationV1Api, CoreV1Api, type KubernetesObject, type V1ConfigMap } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { ObjectKeeper } from '../../src/api/objectkeeper.js';
import { findBinary } from '../../src/infra/binaries.js';
import { renderKubeconfig } from '../../src/infra/components.js';
import type { ManagedProcess } from '../../src/infra/process.js';
import { KubeClient, statusCode, type ObjectRef } from '../../src/kube/client.js';
import { SEARCH_ATTRIBUTE_DEFINITIONS } from '../../src/temporal/search-attributes.js';
import { REPO_ROOT, eventually, kube, spawnRole, stackInfo, uniq } from '../support/env.js';
import { readObjects, renderKustomization, type KubeObject } from '../support/kustomize.js';
import { waitTerminal } from '../support/requests.js';

const execFileAsync = promisify(execFile);
const k = kube();
const NAMESPACE = 'durable-operators';
const rendered = renderKustomization(path.join(REPO_ROOT, 'deploy'));
const examples = ['objectkeeper-follow.yaml', 'objectkeeper-ttl.yaml'].flatMap((f) =>
  readObjects(path.join(REPO_ROOT, 'deploy/examples', f)),
);

const refOf = (o: KubeObject): ObjectRef => ({
  apiVersion: o.apiVersion,
  kind: o.kind,
  namespace: o.metadata.namespace,
  name: o.metadata.name,
});
const describeObj = (o: KubeObject) =>
  `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;
const pick = (kind: string) => rendered.filter((o) => o.kind === kind);

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
    expect(examples.map((o) => o.kind)).toContain('ObjectKeeper');
    for (const obj of examples) {
      const out = await k.apply(structuredClone(obj) as KubernetesObject, { dryRun: true }).catch((err: unknown) => {
        throw new Error(`${describeObj(obj)}: ${String((err as { body?: unknown }).body ?? err)}`);
      });
      expect(out.metadata?.name, describeObj(obj)).toBe(obj.metadata.name);
    }
  });
});

describe('RBAC, applied for real', () => {
  const worker = 'durable-operators-worker';
  const watcher = 'durable-operators-watcher';
  const authz = k.kc.makeApiClient(AuthorizationV1Api);

  beforeAll(async () => {
    for (const kind of ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding'])
      for (const o of pick(kind)) await applyForReal(o);
  });

  interface Check {
    verb: string;
    resource: string;
    group?: string;
    subresource?: string;
    namespace?: string;
    want: boolean;
  }

  async function allowed(sa: string, c: Omit<Check, 'want'>): Promise<boolean> {
    const review = await authz.createSubjectAccessReview({
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          user: `system:serviceaccount:${NAMESPACE}:${sa}`,
          groups: ['system:serviceaccounts', `system:serviceaccounts:${NAMESPACE}`, 'system:authenticated'],
          resourceAttributes: {
            verb: c.verb,
            resource: c.resource,
            group: c.group ?? '',
            subresource: c.subresource,
            namespace: c.namespace,
          },
        },
      },
    });
    return review.status?.allowed === true;
  }

  /** Runs every check and compares the whole table, so a failure shows every wrong answer. */
  async function expectChecks(sa: string, checks: Check[]): Promise<void> {
    const label = (c: Check) =>
      `${c.verb} ${c.group ? `${c.group}/` : ''}${c.resource}${c.subresource ? `/${c.subresource}` : ''}`;
    const actual = await Promise.all(checks.map((c) => allowed(sa, c)));
    expect(checks.map((c, i) => `${label(c)}: ${actual[i]}`)).toEqual(checks.map((c) => `${label(c)}: ${c.want}`));
  }

  const keepers = { group: 'deckhouse.io', resource: 'objectkeepers' };
  const followed = [
    { group: 'state-snapshotter.deckhouse.io', resource: 'manifestcapturerequests', namespace: 'default' },
    { group: 'storage.deckhouse.io', resource: 'volumecapturerequests', namespace: 'default' },
    { group: 'storage.deckhouse.io', resource: 'volumerestorerequests', namespace: 'default' },
  ];

  it('the worker may run keepers and requests and read capture targets — nothing more', async () => {
    // The authorizer sees new bindings through its informers: wait for the first grant.
    await eventually('worker grant visible', () => allowed(worker, { verb: 'get', ...keepers }));
    await expectChecks(worker, [
      { verb: 'get', ...keepers, want: true },
      { verb: 'create', ...keepers, want: true },
      { verb: 'delete', ...keepers, want: true },
      { verb: 'patch', ...keepers, subresource: 'status', want: true },
      ...followed.flatMap((f) => [
        { verb: 'get', ...f, want: true },
        { verb: 'list', ...f, want: true },
        { verb: 'delete', ...f, want: true },
        { verb: 'patch', ...f, subresource: 'status', want: true },
        { verb: 'patch', ...f, want: false },
        { verb: 'update', ...f, want: false },
        { verb: 'watch', ...f, want: false },
      ]),
      { verb: 'create', group: 'state-snapshotter.deckhouse.io', resource: 'manifestcheckpoints', want: true },
      { verb: 'delete', group: 'state-snapshotter.deckhouse.io', resource: 'manifestcheckpoints', want: false },
      {
        verb: 'create',
        group: 'snapshot.storage.k8s.io',
        resource: 'volumesnapshots',
        namespace: 'default',
        want: true,
      },
      {
        verb: 'delete',
        group: 'snapshot.storage.k8s.io',
        resource: 'volumesnapshots',
        namespace: 'default',
        want: false,
      },
      { verb: 'delete', resource: 'persistentvolumeclaims', namespace: 'default', want: true },
      { verb: 'create', resource: 'persistentvolumeclaims', namespace: 'default', want: false },
      { verb: 'list', ...keepers, want: false },
      { verb: 'watch', ...keepers, want: false },
      { verb: 'patch', ...keepers, want: false },
      { verb: 'update', ...keepers, subresource: 'status', want: false },
      { verb: 'get', resource: 'configmaps', namespace: 'default', want: true },
      { verb: 'list', resource: 'configmaps', namespace: 'default', want: false },
      { verb: 'get', resource: 'secrets', namespace: 'default', want: false },
      { verb: 'get', resource: 'secrets', namespace: NAMESPACE, want: false },
    ]);
  });

  it('the watcher may list and watch keepers and followed requests — nothing more', async () => {
    await eventually('watcher grant visible', () => allowed(watcher, { verb: 'list', ...keepers }));
    await expectChecks(watcher, [
      { verb: 'list', ...keepers, want: true },
      { verb: 'watch', ...keepers, want: true },
      // Cluster-wide, as the informers list and watch.
      ...followed.flatMap(({ group, resource }) =>
        ['list', 'watch'].map((verb) => ({ verb, group, resource, want: true })),
      ),
      { verb: 'get', ...keepers, want: false },
      { verb: 'delete', ...keepers, want: false },
      { verb: 'patch', ...keepers, subresource: 'status', want: false },
      { verb: 'create', ...keepers, want: false },
      ...followed.map((f) => ({ verb: 'get', ...f, want: false })),
      { verb: 'list', resource: 'configmaps', want: false },
      { verb: 'list', resource: 'secrets', want: false },
    ]);
  });

  describe('worker and watcher running as their ServiceAccounts', () => {
    const taskQueue = uniq('tq-deploy');
    const ns = uniq('deploy-e2e');
    const procs: ManagedProcess[] = [];
    let workerKubeconfig: string;
    let watcherKubeconfig: string;

    async function kubeconfigFor(sa: string): Promise<string> {
      const info = stackInfo();
      const core = k.kc.makeApiClient(CoreV1Api);
      const tr = await core.createNamespacedServiceAccountToken({
        name: sa,
        namespace: NAMESPACE,
        body: { spec: { audiences: [], expirationSeconds: 3600 } },
      });
      const token = tr.status?.token;
      if (!token) throw new Error(`no token issued for ${sa}`);
      const file = path.join(info.stateDir, `${sa}-${taskQueue}.kubeconfig`);
      const ca = readFileSync(info.kube.caFile).toString('base64');
      writeFileSync(file, renderKubeconfig(info.kube.server, ca, sa, token), { mode: 0o600 });
      return file;
    }

    beforeAll(async () => {
      workerKubeconfig = await kubeconfigFor(worker);
      watcherKubeconfig = await kubeconfigFor(watcher);
      await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
      created.unshift({ apiVersion: 'v1', kind: 'Namespace', name: ns });
    });

    afterAll(async () => {
      await Promise.all(procs.map((p) => p.stop()));
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
    });

    it('take a TTL ObjectKeeper through its life, and the GC removes what it owned', async () => {
      procs.push(spawnRole('worker', taskQueue, `deploy-sa-worker`, { KUBECONFIG: workerKubeconfig }));
      procs.push(spawnRole('watcher', taskQueue, `deploy-sa-watcher`, { KUBECONFIG: watcherKubeconfig }));
      const logs = () => procs.map((p) => `--- ${p.spec.name}\n${p.logTail(20)}`).join('\n');

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

      try {
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
      } catch (err) {
        throw new Error(`${(err as Error).message}\n${logs()}`);
      }
      for (const p of procs) expect(p.running, `${p.spec.name} still running\n${logs()}`).toBe(true);
    });

    it('capture a namespace as the worker ServiceAccount: every permission a request needs is granted', async () => {
      const logs = () => procs.map((p) => `--- ${p.spec.name}\n${p.logTail(20)}`).join('\n');
      await k.create({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'settings', namespace: ns },
        data: { a: 'b' },
      });
      await k.create({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'web', namespace: ns },
        spec: { ports: [{ port: 80 }] },
      } as never);
      const mcr = await k.create<KubernetesObject>({
        apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1',
        kind: 'ManifestCaptureRequest',
        metadata: { name: 'as-sa', namespace: ns },
        spec: {
          targets: [
            { apiVersion: 'v1', kind: 'ConfigMap', name: 'settings' },
            { apiVersion: 'v1', kind: 'Service', name: 'web' },
          ],
        },
      } as never);
      try {
        const done = await waitTerminal(k, mcr);
        expect(done.ready).toMatchObject({ status: 'True', reason: 'Completed' });
      } catch (err) {
        throw new Error(`${(err as Error).message}\n${logs()}`);
      }
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
        SEARCH_ATTRIBUTE_DEFINITIONS.map((d) => [d.name, `INDEXED_VALUE_TYPE_${d.cliType.toUpperCase()}`]),
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
