/**
 * The product installed as a platform team installs it: `helm install` of charts/durable-operators
 * with the project's image (built here, pushed to the stack's registry), every role a Pod the
 * kubelet runs under its own ServiceAccount, a SandboxPool whose agent Pods reach the node's
 * containerd by hostPath; then the operations end to end through the installed roles only (no
 * role runs on the host), and `helm uninstall`. Temporal and the Cloudflare emulator stay host
 * processes, on the node's address.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import Cloudflare from 'cloudflare';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CLOUDFLARE_API_VERSION } from '../../src/api/cloudflare.js';
import { SandboxPoolKind } from '../../src/api/sandbox.js';
import { createEtcdClient } from '../../src/tenancy/etcd.js';
import { TenantPublisher } from '../../src/tenancy/publisher.js';
import { EmulatorAdmin, startCloudflareEmulator, type RunningEmulator } from '../emulators/cloudflare/index.js';
import { REPO_ROOT, eventually, kube, listWorkflows, stackInfo, uniq } from '../support/env.js';
import { RELEASE, RELEASE_NAMESPACE as NS, agentTemplate, helm, installRelease } from '../../src/infra/in-cluster.js';
import { copyImage, kubectl, node } from '../support/cluster.js';

const k = kube();
const POOL_NS = 'sandboxes';
const POOL = 'agents';
const TENANT = 7100 + Math.floor(Math.random() * 1000);
const TENANT_PREFIX = 'jxt/';
const CF_TOKEN = `cf-${uniq('t')}`;
const CF_ACCOUNT = 'a'.repeat(32);
const ROLES = ['worker', 'watcher', 'fastpath', 'admission'] as const;

let emulator: RunningEmulator;
let fastPathHttp: string | undefined;
const tenantHeaders = { 'content-type': 'application/json', 'X-Tenant-ID': String(TENANT) };

/**
 * A Fast create through the fast path's HTTP face, retried while the pool's agent Pod is not
 * Ready yet (503: scale-up in progress); anything but 201 then fails the test.
 */
async function createWhenAgentReady(pool: string, name: string, script: string): Promise<unknown> {
  return eventually(
    `sandbox ${name} created on pool ${pool} (its agent Pod Ready first)`,
    async () => {
      const res = await fetch(`${fastPathBase()}/sandboxes`, {
        method: 'POST',
        headers: tenantHeaders,
        body: JSON.stringify({
          name,
          namespace: POOL_NS,
          poolRef: pool,
          image: stackInfo().registry!.images.busybox,
          command: ['/bin/sh', '-c', script],
        }),
      });
      if (res.status === 503) return undefined;
      expect(res.status, await res.clone().text()).toBe(201);
      return res.json();
    },
    { timeoutMs: 240_000, intervalMs: 2000 },
  );
}

/** The fast path's HTTP face through its Service's cluster IP (kube-proxy on this host). */
function fastPathBase(): string {
  if (!fastPathHttp) throw new Error('the release is not installed');
  return fastPathHttp;
}
let valuesFile: string;

beforeAll(async () => {
  emulator = await startCloudflareEmulator({ tokens: [{ token: CF_TOKEN }], host: node().address });
  await new EmulatorAdmin(emulator.url, emulator.adminToken).seed({ accounts: [{ id: CF_ACCOUNT, name: 'cluster' }] });

  // The tenant the sandbox test acts as.
  const etcd = createEtcdClient(stackInfo().tenantEtcd.endpoint);
  await new TenantPublisher(etcd, TENANT_PREFIX).putTenant({
    id: TENANT,
    code: `t${TENANT}`,
    name: 'Cluster',
    status: 'active',
    sandbox: { namespaces: [POOL_NS], pools: [POOL, `${POOL}-gvisor`] },
  });
  etcd.close();
}, 600_000);

afterAll(async () => {
  await emulator?.close();
});

describe('helm install', () => {
  it('every role runs as Pods under the kubelet, Ready, each under its own ServiceAccount', async () => {
    valuesFile = await installRelease(stackInfo(), k, {
      image: inject('projectImage'),
      poolNamespaces: [POOL_NS],
      cloudflareBaseUrl: emulator.baseURL,
      tenantPrefix: TENANT_PREFIX,
    });
    const pods = (await k.core.listNamespacedPod({ namespace: NS })).items;
    for (const role of ROLES) {
      const mine = pods.filter((p) => p.metadata?.labels?.['app.kubernetes.io/component'] === role);
      expect(mine.length, `${role} Pods`).toBeGreaterThan(0);
      for (const p of mine) {
        expect(p.spec?.nodeName).toBe(node().name);
        expect(p.spec?.serviceAccountName).toBe(`durable-operators-${role}`);
        expect(p.status?.conditions?.find((c) => c.type === 'Ready')?.status, `${p.metadata?.name} Ready`).toBe('True');
      }
    }
  });
});

/** docs/operations.md's least-privilege table: account, verb, resource[/subresource], namespace, may. */
async function leastPrivilegeTable(): Promise<
  { account: string; verb: string; resource: string; ns: string; may: boolean }[]
> {
  const doc = await readFile(path.join(REPO_ROOT, 'docs/operations.md'), 'utf8');
  return doc
    .split('\n')
    .map((line) =>
      line
        .trim()
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    )
    .filter((cells) => cells.length === 5 && cells[0]!.startsWith('durable-operators-'))
    .map(([account, verb, resource, ns, may]) => ({
      account: account!,
      verb: verb!,
      resource: resource!,
      ns: ns!,
      may: may === 'yes',
    }));
}

describe('least privilege', () => {
  it('each ServiceAccount may do exactly what docs/operations.md’s table says, as the cluster answers', async () => {
    const rows = await leastPrivilegeTable();
    expect(rows.length).toBeGreaterThan(20);
    await k.core.createNamespace({ body: { metadata: { name: 'other' } } }).catch(() => undefined);
    const wrong: string[] = [];
    for (const row of rows) {
      const [resource, subresource] = row.resource.split('/');
      const args = ['auth', 'can-i', row.verb, resource!, '--as', `system:serviceaccount:${NS}:${row.account}`];
      if (subresource) args.push('--subresource', subresource);
      if (row.ns !== '(cluster)') args.push('-n', row.ns);
      const { out } = await kubectl(args);
      const answer = out.trim().split('\n')[0];
      if ((answer === 'yes') !== row.may)
        wrong.push(`${row.account} ${row.verb} ${row.resource} in ${row.ns}: ${answer}`);
    }
    expect(wrong).toEqual([]);
  });
});

describe('through the installed product', () => {
  it('an ObjectKeeper expires: the worker Pod runs its workflow', async () => {
    const name = uniq('keeper');
    await k.create({
      apiVersion: 'deckhouse.io/v1alpha1',
      kind: 'ObjectKeeper',
      metadata: { name },
      spec: { mode: 'TTL', ttl: '5s' },
    });
    await eventually(
      'the keeper gone after its TTL',
      async () => !(await k.get({ apiVersion: 'deckhouse.io/v1alpha1', kind: 'ObjectKeeper', name })),
      { timeoutMs: 120_000, intervalMs: 1000 },
    );
  });

  it('a manifest capture is admitted by the webhook Service and completes', async () => {
    const ns = uniq('capture');
    await k.core.createNamespace({ body: { metadata: { name: ns } } });
    await k.core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: 'settings' }, data: { a: '1' } },
    });
    // Refused by the installed webhook (fail closed): a target that does not exist cannot be read by anyone.
    const request = (target: string) => ({
      apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1',
      kind: 'ManifestCaptureRequest',
      metadata: { name: uniq('req'), namespace: ns },
      spec: { targets: [{ apiVersion: 'v1', kind: 'ConfigMap', name: target }] },
    });
    const created = await k.create(request('settings'));
    await eventually(
      'the capture request Ready',
      async () => {
        const r = await k.get<{ status?: { conditions?: { type: string; status: string }[] } } & never>({
          apiVersion: created.apiVersion!,
          kind: created.kind!,
          namespace: ns,
          name: created.metadata!.name!,
        });
        const ready = (
          r as { status?: { conditions?: { type: string; status: string }[] } } | undefined
        )?.status?.conditions?.find((c) => c.type === 'Ready');
        return ready?.status === 'True';
      },
      { timeoutMs: 120_000, intervalMs: 1000 },
    );
  });

  it('a sandbox is created through the fast path Service on an agent Pod the kubelet runs; exec and delete work', async () => {
    const image = inject('projectImage');
    await k.create({
      apiVersion: SandboxPoolKind.apiVersion,
      kind: SandboxPoolKind.kind,
      metadata: { name: POOL, namespace: POOL_NS },
      spec: {
        capacity: { poolMin: 1, poolMax: 1, bufferMin: 0, bufferMax: 10 },
        maxSandboxesPerPod: 3,
        agentTemplate: agentTemplate(stackInfo(), `${image.repository}:${image.tag}`, POOL),
      },
    });
    const svc = await k.core.readNamespacedService({ name: 'durable-operators-fastpath', namespace: NS });
    fastPathHttp = `http://${svc.spec!.clusterIP}:${svc.spec!.ports!.find((p) => p.name === 'http')!.port}/api/v1`;
    const base = fastPathBase();
    const headers = tenantHeaders;
    const name = uniq('sb');
    const created = await createWhenAgentReady(POOL, name, 'echo started; sleep 3600');
    expect(created).toBeTruthy();
    const agents = (
      await k.core.listNamespacedPod({ namespace: POOL_NS, labelSelector: `fast-sandbox.io/pool=${POOL}` })
    ).items;
    expect(agents.length).toBe(1);
    expect(agents[0]!.spec?.nodeName).toBe(node().name);

    await eventually(
      'the sandbox Running',
      async () => {
        const res = await fetch(`${base}/namespaces/${POOL_NS}/sandboxes/${name}`, { headers });
        return res.ok && ((await res.json()) as { phase?: string }).phase === 'Running';
      },
      { timeoutMs: 120_000, intervalMs: 1000 },
    );
    const exec = await fetch(`${base}/namespaces/${POOL_NS}/sandboxes/${name}/exec`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ command: ['/bin/sh', '-c', 'echo from-exec; cat /proc/1/cmdline | tr "\\0" " "'] }),
    });
    const execText = await exec.text();
    expect(exec.status, execText).toBe(200);
    expect(execText).toContain('from-exec');

    const del = await fetch(`${base}/namespaces/${POOL_NS}/sandboxes/${name}`, { method: 'DELETE', headers });
    expect(del.status, await del.text()).toBeLessThan(300);
    await eventually(
      'the Sandbox gone',
      async () => !(await k.get({ apiVersion: SandboxPoolKind.apiVersion, kind: 'Sandbox', namespace: POOL_NS, name })),
      { timeoutMs: 120_000, intervalMs: 1000 },
    );
  });

  it('a gVisor pool: its agent Pod runs sandboxes under runsc, each in its own network namespace', async () => {
    const image = inject('projectImage');
    const pool = `${POOL}-gvisor`;
    await k.create({
      apiVersion: SandboxPoolKind.apiVersion,
      kind: SandboxPoolKind.kind,
      metadata: { name: pool, namespace: POOL_NS },
      spec: {
        runtimeType: 'gvisor',
        capacity: { poolMin: 1, poolMax: 1, bufferMin: 0, bufferMax: 10 },
        maxSandboxesPerPod: 2,
        agentTemplate: agentTemplate(stackInfo(), `${image.repository}:${image.tag}`, pool, { gvisor: true }),
      },
    });
    const name = uniq('gv');
    await createWhenAgentReady(pool, name, 'dmesg; ip -o -4 addr; sleep 3600');
    const logs = await eventually(
      'its kernel log',
      async () => {
        const res = await fetch(`${fastPathBase()}/namespaces/${POOL_NS}/sandboxes/${name}/logs`, {
          headers: tenantHeaders,
        });
        const text = res.ok ? await res.text() : '';
        return text.includes('eth0') && text;
      },
      { timeoutMs: 120_000, intervalMs: 1000 },
    );
    // gVisor's own kernel (the host's would refuse dmesg), and an address of the agent's sandbox subnet.
    expect(logs).toContain('Starting gVisor');
    expect(logs).toMatch(/eth0\s+inet 198\.18\.\d+\.\d+\//);
    await fetch(`${fastPathBase()}/namespaces/${POOL_NS}/sandboxes/${name}`, {
      method: 'DELETE',
      headers: tenantHeaders,
    });
  });

  it('a Cloudflare source reaches the emulator through the worker Pod', async () => {
    await k.core.createNamespacedSecret({
      namespace: NS,
      body: { metadata: { name: 'cloudflare-api-token' }, stringData: { CLOUDFLARE_API_TOKEN: CF_TOKEN } },
    });
    await k.create({
      apiVersion: CLOUDFLARE_API_VERSION,
      kind: 'CloudflareCredentials',
      metadata: { name: 'cluster' },
      spec: {
        accountId: CF_ACCOUNT,
        authType: 'apiToken',
        isDefault: true,
        secretRef: { name: 'cloudflare-api-token', namespace: NS, apiTokenKey: 'CLOUDFLARE_API_TOKEN' },
      },
    });
    const network = uniq('net');
    await k.create({
      apiVersion: CLOUDFLARE_API_VERSION,
      kind: 'VirtualNetwork',
      metadata: { name: network },
      spec: { comment: 'made by the installed worker', cloudflare: { credentialsRef: { name: 'cluster' } } },
    });
    const cf = new Cloudflare({ apiToken: CF_TOKEN, baseURL: emulator.baseURL });
    await eventually(
      'the virtual network in the emulator',
      async () => {
        for await (const n of cf.zeroTrust.networks.virtualNetworks.list({ account_id: CF_ACCOUNT, is_deleted: false }))
          if (n.name === network) return true;
        return false;
      },
      { timeoutMs: 120_000, intervalMs: 1000 },
    );
  });
});

/** An ObjectKeeper whose TTL runs out `ttl` from now: its workflow waits on a timer, then deletes it. */
async function keeperExpiringIn(ttl: string): Promise<string> {
  const name = uniq('keeper');
  await k.create({
    apiVersion: 'deckhouse.io/v1alpha1',
    kind: 'ObjectKeeper',
    metadata: { name },
    spec: { mode: 'TTL', ttl },
  });
  return name;
}

async function keeperGone(name: string, timeoutMs = 180_000): Promise<void> {
  await eventually(
    `ObjectKeeper ${name} gone after its TTL`,
    async () => !(await k.get({ apiVersion: 'deckhouse.io/v1alpha1', kind: 'ObjectKeeper', name })),
    { timeoutMs, intervalMs: 1000 },
  );
}

async function rolePods(role: string) {
  return (
    await k.core.listNamespacedPod({ namespace: NS, labelSelector: `app.kubernetes.io/component=${role}` })
  ).items.filter((p) => !p.metadata?.deletionTimestamp);
}

const readyPods = async (role: string) =>
  (await rolePods(role)).filter((p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));

describe('disruptions', () => {
  it('deleting the worker Pod mid-operation loses nothing: the operation completes on its replacement', async () => {
    const [before] = await readyPods('worker');
    const name = await keeperExpiringIn('20s');
    // Its workflow is running (waiting on its TTL timer) when the only worker goes.
    await eventually(
      'the keeper’s workflow started',
      async () => (await listWorkflows(`WorkflowId STARTS_WITH "objectkeeper/${name}/"`)).length > 0,
    );
    await k.core.deleteNamespacedPod({ namespace: NS, name: before!.metadata!.name! });
    await keeperGone(name);
    const [after] = await readyPods('worker');
    expect(after?.metadata?.name).not.toBe(before!.metadata!.name);
  });

  it('kubectl drain respects the admission webhook’s disruption budget: one replica always serves', async () => {
    expect((await readyPods('admission')).length).toBe(2);
    const drain = await kubectl(
      [
        'drain',
        node().name,
        '--ignore-daemonsets',
        '--delete-emptydir-data',
        '--pod-selector',
        'app.kubernetes.io/component=admission',
        '--timeout=40s',
      ],
      { timeoutMs: 120_000 },
    );
    try {
      // The first eviction goes through; the second would leave no webhook (its replacement cannot
      // be scheduled on the cordoned node), so the apiserver refuses it and the drain times out.
      expect(drain.code).not.toBe(0);
      expect(drain.out).toMatch(/disruption budget/);
      expect((await readyPods('admission')).length).toBe(1);
      // The webhook still admits (fail closed: without a replica every capture request is refused).
      const ns = uniq('drained');
      await k.core.createNamespace({ body: { metadata: { name: ns } } });
      await k.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'c' }, data: { a: '1' } } });
      await k.create({
        apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1',
        kind: 'ManifestCaptureRequest',
        metadata: { name: uniq('req'), namespace: ns },
        spec: { targets: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'c' }] },
      });
    } finally {
      await kubectl(['uncordon', node().name]);
    }
    await eventually('both webhook replicas Ready again', async () => (await readyPods('admission')).length === 2, {
      timeoutMs: 180_000,
      intervalMs: 1000,
    });
  });
});

describe('helm upgrade', () => {
  it('to a new image tag rolls every role with no operation failed or lost', async () => {
    const image = inject('projectImage');
    const tag = `${image.tag}-next`;
    await copyImage(`${image.repository}:${image.tag}`, `${image.repository}:${tag}`);
    const before = new Map(
      await Promise.all(ROLES.map(async (r) => [r, (await rolePods(r)).map((p) => p.metadata!.name!)] as const)),
    );
    const since = new Date().toISOString();
    // Operations in flight across the rollout: keepers expiring before, during and after it.
    const keepers = await Promise.all(['10s', '20s', '30s', '45s'].map(keeperExpiringIn));
    await helm(stackInfo(), [
      'upgrade',
      RELEASE,
      'charts/durable-operators',
      '-n',
      NS,
      '-f',
      valuesFile,
      '--set',
      `image.tag=${tag}`,
      '--wait',
      '--timeout',
      '8m',
    ]);
    for (const role of ROLES) {
      const pods = await rolePods(role);
      expect(
        pods.every((p) => p.spec?.containers[0]?.image?.endsWith(`:${tag}`)),
        `${role} on ${tag}`,
      ).toBe(true);
      expect(
        pods.some((p) => before.get(role)!.includes(p.metadata!.name!)),
        `${role} rolled`,
      ).toBe(false);
    }
    for (const name of keepers) await keeperGone(name);
    const failed = await listWorkflows(
      `ExecutionStatus IN ("Failed", "TimedOut", "Terminated") AND StartTime > "${since}"`,
    );
    expect(failed).toEqual([]);
  });
});

describe('helm uninstall', () => {
  it('leaves no object stuck on a finalizer', async () => {
    // As docs/helm.md says: sandboxes, pools and Cloudflare sources first, while the roles still run.
    await kubectl(['delete', 'sandboxes.sandbox.fast.io', '--all', '-A', '--wait', '--timeout=180s']);
    await kubectl(['delete', 'sandboxpools.sandbox.fast.io', '--all', '-A', '--wait', '--timeout=180s']);
    await kubectl(['delete', 'virtualnetworks.networking.cloudflare-operator.io', '--all', '--wait', '--timeout=180s']);
    await helm(stackInfo(), ['uninstall', RELEASE, '-n', NS, '--wait', '--timeout', '5m']);
    // Nothing is left terminating behind a finalizer no role is there to remove any more.
    const kinds = 'sandboxpools,sandboxes,virtualnetworks,cloudflarecredentials,objectkeepers,manifestcapturerequests';
    const listed = await kubectl(['get', kinds, '-A', '-o', 'json']);
    const items = (
      JSON.parse(listed.out) as {
        items: { kind: string; metadata: { name: string; deletionTimestamp?: string; finalizers?: string[] } }[];
      }
    ).items;
    expect(
      items
        .filter((o) => o.metadata.deletionTimestamp)
        .map((o) => `${o.kind}/${o.metadata.name} ${o.metadata.finalizers}`),
    ).toEqual([]);
    expect(items.filter((o) => o.kind === 'SandboxPool' || o.kind === 'Sandbox')).toEqual([]);
    // The roles' Pods end (their Deployments went with the release; the garbage collector takes the rest).
    await eventually(
      'no Pod of the release left',
      async () => (await k.core.listNamespacedPod({ namespace: NS })).items.length === 0,
      {
        timeoutMs: 180_000,
        intervalMs: 1000,
      },
    );
  });
});
