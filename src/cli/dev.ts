/**
 * `durable-operators dev`: the real local stack plus worker, watcher and the sandbox fast path
 * with a default pool of agents, in one process tree. Worker, watcher and fast path run as child
 * processes of this one (as they would as separate Deployments); the agents run as processes
 * whose Pods dev writes the way a kubelet would (there is no kubelet here). Ctrl-C stops
 * everything, children first.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { AGENT_APP_LABEL, AGENT_APP_VALUE, AGENT_POOL_LABEL, SandboxPoolKind } from '../api/sandbox.js';
import { AgentFleet } from '../infra/agent-fleet.js';
import { LocalStack } from '../infra/stack.js';
import { ManagedProcess, getFreePort, isPortFree } from '../infra/process.js';
import { KubeClient } from '../kube/client.js';
import { untilShutdownSignal } from './signals.js';
import { DEMO_TENANT, seedDemoTenant } from './tenants.js';

/** The pool `dev` keeps ready in namespace `default`. */
export const DEV_POOL = 'default-pool';
const DEV_AGENTS = 2;
const DEV_AGENT_CAPACITY = 5;

/** The agents' token, generated once per state dir (0600), shared by the fast path and the agents. */
async function devAgentToken(stateDir: string): Promise<{ token: string; file: string }> {
  const file = path.join(stateDir, 'agent-token');
  if (!existsSync(file)) await writeFile(file, randomBytes(24).toString('hex'), { mode: 0o600 });
  return { token: (await readFile(file, 'utf8')).trim(), file };
}

async function portOr(preferred: number): Promise<number> {
  return (await isPortFree(preferred)) ? preferred : getFreePort();
}

export interface DevOptions {
  stateDir: string;
  worker: boolean;
  watcher: boolean;
  /** The fast path and its default pool of agents. */
  fastpath?: boolean;
}

export async function runDev(opts: DevOptions): Promise<void> {
  const stack = await LocalStack.start({ stateDir: opts.stateDir, mode: 'dev' });
  const { info } = stack;
  const env = {
    ...process.env,
    TEMPORAL_ADDRESS: info.temporal.address,
    TEMPORAL_NAMESPACE: info.temporal.namespace,
    KUBECONFIG: info.kubeconfig,
  };
  // A demo tenant (and the default resolver config unless one is set) in the tenant etcd.
  await seedDemoTenant(info.tenantEtcd.endpoint);
  // Re-run this same CLI (same Node flags, e.g. the tsx loader) for each role.
  const self = [...process.execArgv, process.argv[1]!];
  const children: ManagedProcess[] = [];
  if (opts.worker) {
    children.push(
      ManagedProcess.start({
        name: 'worker',
        command: process.execPath,
        args: [...self, 'worker'],
        env,
        logFile: path.join(info.logsDir, 'worker.log'),
      }),
    );
  }
  if (opts.watcher) {
    children.push(
      ManagedProcess.start({
        name: 'watcher',
        command: process.execPath,
        args: [...self, 'watcher', '--metrics-port', '0'],
        env,
        logFile: path.join(info.logsDir, 'watcher.log'),
      }),
    );
  }
  let fleet: AgentFleet | undefined;
  let fastpathPorts: { grpc: number; http: number } | undefined;
  if (opts.fastpath !== false) {
    const kube = KubeClient.fromKubeconfig(info.kubeconfig);
    const { token, file: tokenFile } = await devAgentToken(opts.stateDir);
    await kube.apply({
      apiVersion: SandboxPoolKind.apiVersion,
      kind: SandboxPoolKind.kind,
      metadata: { name: DEV_POOL, namespace: 'default' },
      spec: {
        capacity: { poolMin: DEV_AGENTS, poolMax: DEV_AGENTS, bufferMin: 0, bufferMax: DEV_AGENT_CAPACITY },
        maxSandboxesPerPod: DEV_AGENT_CAPACITY,
        agentTemplate: {},
      },
    });
    // Agent Pods of an earlier run: their processes died with it (a node that went away).
    for await (const pod of kube.listAll('v1', 'Pod', {
      namespace: 'default',
      labelSelector: `${AGENT_APP_LABEL}=${AGENT_APP_VALUE},${AGENT_POOL_LABEL}=${DEV_POOL}`,
    }))
      await kube.core
        .deleteNamespacedPod({ name: pod.metadata!.name!, namespace: 'default', gracePeriodSeconds: 0 })
        .catch(() => undefined);
    fleet = await AgentFleet.start({
      kube,
      namespace: 'default',
      pool: DEV_POOL,
      count: DEV_AGENTS,
      capacity: DEV_AGENT_CAPACITY,
      token,
      stateDir: opts.stateDir,
    });
    fastpathPorts = { grpc: await portOr(9090), http: await portOr(9080) };
    children.push(
      ManagedProcess.start({
        name: 'fastpath',
        command: process.execPath,
        args: [
          ...self,
          'fastpath',
          '--grpc-port',
          String(fastpathPorts.grpc),
          '--http-port',
          String(fastpathPorts.http),
          '--host',
          '127.0.0.1',
          '--metrics-port',
          '0',
        ],
        env: { ...env, DO_AGENT_TOKEN_FILE: tokenFile, DO_TENANT_ETCD: info.tenantEtcd.endpoint },
        logFile: path.join(info.logsDir, 'fastpath.log'),
      }),
    );
  }
  // Short paths when under the working directory, absolute otherwise.
  const rel = (p: string) => {
    const r = path.relative(process.cwd(), p);
    return r && !r.startsWith('..') ? r : p;
  };
  console.log(
    [
      '',
      'durable-operators dev is running. Ctrl-C stops everything.',
      '',
      `  Temporal UI       ${info.temporal.uiUrl}`,
      `  Temporal gRPC     ${info.temporal.address}  (temporal --address ${info.temporal.address} workflow list)`,
      `  kube-apiserver    ${info.kube.server}`,
      `  admission webhook ${info.admission.url}  (capture requests: their creator must be able to read each target)`,
      `  kubeconfig        ${rel(info.kubeconfig)}`,
      `  tenant etcd       ${info.tenantEtcd.endpoint}  (demo tenant ${DEMO_TENANT.id}: npm run cli -- tenants get ${DEMO_TENANT.id} --etcd ${info.tenantEtcd.endpoint})`,
      `  logs              ${rel(info.logsDir)}/  (worker.log, watcher.log, kube-apiserver.log, ...)`,
      '',
      'Try it:',
      `  export KUBECONFIG=${rel(info.kubeconfig)}`,
      '  kubectl apply -f deploy/examples/objectkeeper-ttl.yaml -l durable-operators.io/example-step=1',
      '  kubectl get objectkeepers        # then follow the steps in deploy/examples/*.yaml',
      `  open ${info.temporal.uiUrl}  and search: K8sKind="ObjectKeeper"`,
      '',
      '  kubectl apply -f deploy/examples/manifest-capture.yaml && kubectl get mcr capture-demo -w',
      '  npm run cli -- checkpoint export "$(kubectl get mcr capture-demo -o jsonpath={.status.checkpointName})"',
      `  open ${info.temporal.uiUrl}  and search: K8sKind="ManifestCaptureRequest"`,
      '',
      ...(fastpathPorts
        ? [
            `Sandbox fast path (pool ${DEV_POOL} in namespace default: ${DEV_AGENTS} agents × ${DEV_AGENT_CAPACITY} sandboxes; tenant ${DEMO_TENANT.id}):`,
            `  gRPC  127.0.0.1:${fastpathPorts.grpc}  (fastpath.v1.FastPathService, src/api/proto/fastpath/v1/fastpath.proto)`,
            `  HTTP  http://127.0.0.1:${fastpathPorts.http}/api/v1/sandboxes`,
            `  grpcurl -plaintext -import-path src/api/proto -proto fastpath/v1/fastpath.proto -H 'x-tenant-id: ${DEMO_TENANT.id}' \\`,
            `    -d '{"name":"hello","image":"demo","pool_ref":"${DEV_POOL}","command":["/bin/sleep","3600"]}' \\`,
            `    127.0.0.1:${fastpathPorts.grpc} fastpath.v1.FastPathService/CreateSandbox`,
            `  curl -H 'x-tenant-id: ${DEMO_TENANT.id}' -d '{"name":"hi","image":"demo","poolRef":"${DEV_POOL}","command":["/bin/sleep","3600"]}' \\`,
            `    http://127.0.0.1:${fastpathPorts.http}/api/v1/sandboxes`,
            `  curl -H 'x-tenant-id: ${DEMO_TENANT.id}' http://127.0.0.1:${fastpathPorts.http}/api/v1/namespaces/default/sandboxes`,
            `  curl -X DELETE -H 'x-tenant-id: ${DEMO_TENANT.id}' http://127.0.0.1:${fastpathPorts.http}/api/v1/namespaces/default/sandboxes/hi`,
            '  kubectl get sandboxes -o wide   # Phase, Agent, Endpoints',
            `  open ${info.temporal.uiUrl}  and search: K8sKind="Sandbox"`,
            '',
          ]
        : []),
    ].join('\n'),
  );
  let stopping = false;
  for (const c of children) {
    void c.exited.then((code) => {
      if (!stopping) console.error(`${c.spec.name} exited unexpectedly (${code}); see ${c.spec.logFile}`);
    });
  }
  await untilShutdownSignal();
  stopping = true;
  console.log('stopping…');
  await Promise.all(children.map((c) => c.stop()));
  if (fleet) {
    console.log('stopping the agents…');
    await fleet.stop();
  }
  console.log('stopping the local stack…');
  await stack.stop();
  console.log('stopped.');
}
