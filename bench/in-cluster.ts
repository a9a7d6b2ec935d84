/**
 * The installed product's figures: the stack with a real node (cold or warm node binaries as the
 * cache has them), the project's image, `helm install` until every role is Ready, a pool's agent
 * Pods Ready; then Fast CreateSandbox over the fast path Service's HTTP face one at a time (each
 * sandbox deleted and gone before the next), on an agent Pod whose warm containers of the image
 * are kept (warmImages). Run bench/fastpath.ts with DO_BENCH_RUNTIME=runc-warm in the same session
 * for the host-process stack beside it.
 *
 * Usage: npx tsx bench/in-cluster.ts [CREATES=30]
 */
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SandboxPoolKind } from '../src/api/sandbox.js';
import { RELEASE_NAMESPACE, agentTemplate, installRelease } from '../src/infra/in-cluster.js';
import { buildProjectImage, pushProjectImage } from '../src/infra/project-image.js';
import { LocalStack } from '../src/infra/stack.js';
import { KubeClient } from '../src/kube/client.js';
import { createEtcdClient } from '../src/tenancy/etcd.js';
import { TenantPublisher } from '../src/tenancy/publisher.js';

const creates = Number(process.argv[2] ?? 30);
const POOL = 'bench';
const POOL_NS = 'bench-sandboxes';
const TENANT = 9901;
const phases: Record<string, number> = {};
let t = Date.now();
const phase = (name: string) => {
  phases[name] = Date.now() - t;
  process.stderr.write(`[bench] ${name}: ${phases[name]} ms\n`);
  t = Date.now();
};

const stack = await LocalStack.start({ stateDir: path.resolve('.state/bench/in-cluster'), mode: 'test', node: true });
try {
  phase('stack with a node');
  const { info } = stack;
  const image = await buildProjectImage();
  const ref = await pushProjectImage(image, info.registry!.host);
  phase(`image (${image.built ? 'built' : 'cached'}) + push`);
  const kube = KubeClient.fromKubeconfig(info.kubeconfig);
  const etcd = createEtcdClient(info.tenantEtcd.endpoint);
  await new TenantPublisher(etcd, 'jxt/').putTenant({ id: TENANT, code: 'bench', name: 'Bench', status: 'active' });
  etcd.close();
  await installRelease(info, kube, {
    image: { repository: ref.slice(0, ref.lastIndexOf(':')), tag: image.tag },
    poolNamespaces: [POOL_NS],
  });
  phase('helm install, every role Ready');
  const busybox = info.registry!.images.busybox;
  await kube.create({
    apiVersion: SandboxPoolKind.apiVersion,
    kind: SandboxPoolKind.kind,
    metadata: { name: POOL, namespace: POOL_NS },
    spec: {
      capacity: { poolMin: 1, poolMax: 1, bufferMin: 0, bufferMax: 10 },
      maxSandboxesPerPod: 4,
      warmImages: [{ image: busybox, count: 2 }],
      agentTemplate: agentTemplate(info, ref, POOL),
    },
  });
  const svc = await kube.core.readNamespacedService({
    name: 'durable-operators-fastpath',
    namespace: RELEASE_NAMESPACE,
  });
  const base = `http://${svc.spec!.clusterIP}:${svc.spec!.ports!.find((p) => p.name === 'http')!.port}/api/v1`;
  const headers = { 'content-type': 'application/json', 'X-Tenant-ID': String(TENANT) };
  const create = (name: string) =>
    fetch(`${base}/sandboxes`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name, namespace: POOL_NS, poolRef: POOL, image: busybox, command: ['sleep', '3600'] }),
    });
  // The agent Pod Ready with its warm containers: the first create that is not refused for capacity.
  for (;;) {
    const res = await create('warmup');
    if (res.status === 201) break;
    await sleep(1000);
  }
  const gone = async (name: string) => {
    await fetch(`${base}/namespaces/${POOL_NS}/sandboxes/${name}`, { method: 'DELETE', headers });
    while ((await fetch(`${base}/namespaces/${POOL_NS}/sandboxes/${name}`, { headers })).status !== 404)
      await sleep(200);
  };
  await gone('warmup');
  phase('pool agent Pod Ready');
  await sleep(3000); // its warm containers refilled
  const ms: number[] = [];
  for (let i = 0; i < creates; i++) {
    const name = `sb-${i}`;
    const t0 = performance.now();
    const res = await create(name);
    ms.push(performance.now() - t0);
    if (res.status !== 201) throw new Error(`create ${name}: ${res.status} ${await res.text()}`);
    await gone(name);
    await sleep(500); // the warm container replaced, as one at a time lets it
  }
  ms.sort((a, b) => a - b);
  const q = (p: number) => ms[Math.min(ms.length - 1, Math.floor(p * ms.length))]!.toFixed(1);
  console.log(JSON.stringify({ phases, fastCreate: { n: ms.length, p50: q(0.5), p99: q(0.99) } }, null, 2));
} finally {
  await stack.stop();
}
