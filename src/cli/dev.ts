/**
 * `durable-operators dev`: the real local stack plus worker and watcher, in one process tree.
 * Worker and watcher run as child processes of this one (as they would as separate Deployments),
 * and Ctrl-C stops everything, children first.
 */
import path from 'node:path';
import { LocalStack } from '../infra/stack.js';
import { ManagedProcess } from '../infra/process.js';
import { untilShutdownSignal } from './signals.js';
import { DEMO_TENANT, seedDemoTenant } from './tenants.js';

export interface DevOptions {
  stateDir: string;
  worker: boolean;
  watcher: boolean;
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
  await stack.stop();
  console.log('stopped.');
}
