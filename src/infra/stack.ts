/**
 * The local stack shared by `dev` and the test harness: etcd + kube-apiserver +
 * kube-controller-manager (GC, namespaces), the Temporal dev server, and a separate etcd for
 * tenant configuration. Everything is a real server started from the provisioned binaries.
 *
 * `dev` mode keeps state (etcd data, Temporal SQLite, credentials, ports) under the state dir so
 * re-running `dev` picks up where it left off; `test` mode uses free ports and in-memory Temporal.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ensureAllBinaries, type ProgressLog } from './binaries.js';
import {
  AUDIT_POLICY,
  ControllerManager,
  Etcd,
  KubeApiServer,
  TemporalDevServer,
  ensureCredentials,
  renderKubeconfig,
  type Component,
} from './components.js';
import { getFreePort, isPortFree, reapStale, writePidFile } from './process.js';
import { installCrds } from '../kube/crds.js';
import { LocalAdmissionWebhook } from '../admission/local.js';

export type StackMode = 'dev' | 'test';

export interface StackOptions {
  stateDir: string;
  mode: StackMode;
  log?: ProgressLog;
  /** Apply the project's CRDs once the apiserver is up (default true). */
  installCrds?: boolean;
}

export interface StackInfo {
  mode: StackMode;
  stateDir: string;
  logsDir: string;
  /** Admin kubeconfig (token auth, RBAC on). */
  kubeconfig: string;
  /** `auditLog`: the apiserver's audit log (JSON lines; ServiceAccount requests only, see AUDIT_POLICY). */
  kube: { server: string; caFile: string; auditLog: string };
  kubeEtcd: { endpoint: string };
  tenantEtcd: { endpoint: string };
  temporal: { address: string; namespace: string; uiUrl?: string };
  /** The admission webhook the apiserver calls on CREATE of capture requests (see src/admission/). */
  admission: { url: string; caFile: string; logFile: string };
}

interface Ports {
  kubeEtcdClient: number;
  kubeEtcdPeer: number;
  tenantEtcdClient: number;
  tenantEtcdPeer: number;
  apiserver: number;
  controllerManager: number;
  temporal: number;
  temporalUi: number;
  admission: number;
}

const DEV_PREFERRED_PORTS: Ports = {
  kubeEtcdClient: 12379,
  kubeEtcdPeer: 12380,
  tenantEtcdClient: 22379,
  tenantEtcdPeer: 22380,
  apiserver: 16443,
  controllerManager: 10257,
  temporal: 7233,
  temporalUi: 8233,
  admission: 18443,
};

export const STACK_INFO_FILE = 'stack.json';
/** The apiserver's audit log, in the logs dir (rotated at 100 MB, one backup kept). */
const AUDIT_LOG = 'kube-apiserver-audit.log';

export class LocalStack {
  private constructor(
    readonly info: StackInfo,
    readonly kubeEtcd: Etcd,
    readonly apiserver: KubeApiServer,
    readonly controllerManager: ControllerManager,
    readonly temporal: TemporalDevServer,
    readonly tenantEtcd: Etcd,
    readonly admission: LocalAdmissionWebhook,
  ) {}

  get components(): Component[] {
    return [this.admission, this.controllerManager, this.apiserver, this.kubeEtcd, this.temporal, this.tenantEtcd];
  }

  get pids(): number[] {
    return this.components.map((c) => c.process.pid);
  }

  static async start(opts: StackOptions): Promise<LocalStack> {
    const log = opts.log ?? ((l: string) => process.stderr.write(`[stack] ${l}\n`));
    const stateDir = path.resolve(opts.stateDir);
    const logsDir = path.join(stateDir, 'logs');
    await mkdir(logsDir, { recursive: true });
    const pidFile = path.join(stateDir, 'pids.json');
    const reaped = await reapStale(pidFile);
    if (reaped.length)
      log(`reaped ${reaped.length} processes left by an earlier run: ${reaped.map((r) => r.name).join(', ')}`);

    const bins = await ensureAllBinaries(log);
    const ports = await choosePorts(stateDir, opts.mode);
    const started: Component[] = [];
    const track = async () =>
      writePidFile(
        pidFile,
        started.map((c) => ({ name: c.name, pid: c.process.pid, command: c.process.spec.command })),
      );
    const t0 = Date.now();
    let admissionP: Promise<LocalAdmissionWebhook> | undefined;
    try {
      if (opts.mode === 'test') {
        // Tests start from a clean slate each run.
        await rm(path.join(stateDir, 'kube-etcd'), { recursive: true, force: true });
        await rm(path.join(stateDir, 'tenant-etcd'), { recursive: true, force: true });
        await rm(path.join(logsDir, AUDIT_LOG), { force: true });
      }
      // Independent servers start concurrently; the apiserver waits for its etcd.
      const kubeEtcdP = Etcd.start({
        name: 'kube-etcd',
        binary: bins.etcd.path,
        dataDir: path.join(stateDir, 'kube-etcd'),
        clientPort: ports.kubeEtcdClient,
        peerPort: ports.kubeEtcdPeer,
        logFile: path.join(logsDir, 'kube-etcd.log'),
      });
      const tenantEtcdP = Etcd.start({
        name: 'tenant-etcd',
        binary: bins.etcd.path,
        dataDir: path.join(stateDir, 'tenant-etcd'),
        clientPort: ports.tenantEtcdClient,
        peerPort: ports.tenantEtcdPeer,
        logFile: path.join(logsDir, 'tenant-etcd.log'),
      });
      const temporalP = TemporalDevServer.start({
        binary: bins.temporal.path,
        port: ports.temporal,
        uiPort: opts.mode === 'dev' ? ports.temporalUi : undefined,
        dbFile: opts.mode === 'dev' ? path.join(stateDir, 'temporal.sqlite') : undefined,
        namespace: 'default',
        logFile: path.join(logsDir, 'temporal.log'),
      });
      const settled = await Promise.allSettled([kubeEtcdP, tenantEtcdP, temporalP]);
      for (const s of settled) if (s.status === 'fulfilled') started.push(s.value);
      await track();
      for (const s of settled) if (s.status === 'rejected') throw s.reason;
      const [kubeEtcd, tenantEtcd, temporal] = started as [Etcd, Etcd, TemporalDevServer];
      log(`etcd x2 and temporal ready (${Date.now() - t0} ms)`);

      const credentials = await ensureCredentials(path.join(stateDir, 'pki'));
      const audit = { policyFile: path.join(stateDir, 'audit-policy.yaml'), logFile: path.join(logsDir, AUDIT_LOG) };
      await writeFile(audit.policyFile, AUDIT_POLICY);
      const apiserver = await KubeApiServer.start({
        binary: bins['kube-apiserver'].path,
        etcdEndpoint: kubeEtcd.endpoint,
        port: ports.apiserver,
        certDir: path.join(stateDir, 'pki', 'apiserver'),
        credentials,
        logFile: path.join(logsDir, 'kube-apiserver.log'),
        audit,
      });
      started.push(apiserver);
      await track();
      log(`kube-apiserver ready at ${apiserver.url} (${Date.now() - t0} ms)`);

      const caData = (await readFile(apiserver.caFile)).toString('base64');
      const kubeconfig = path.join(stateDir, 'kubeconfig');
      await writeFile(kubeconfig, renderKubeconfig(apiserver.url, caData, 'admin', credentials.adminToken), {
        mode: 0o600,
      });
      const kcmKubeconfig = path.join(stateDir, 'pki', 'controller-manager.kubeconfig');
      await writeFile(
        kcmKubeconfig,
        renderKubeconfig(apiserver.url, caData, 'system:kube-controller-manager', credentials.controllerManagerToken),
        { mode: 0o600 },
      );
      // Capture requests are admitted only if their creator may read every target (fail closed).
      // The webhook (a Node process) boots while the controller manager starts.
      admissionP = LocalAdmissionWebhook.start({
        port: ports.admission,
        certDir: path.join(stateDir, 'pki', 'admission'),
        kubeconfig,
        logFile: path.join(logsDir, 'admission.log'),
      });
      admissionP.catch(() => {}); // awaited below; a failure surfaces there
      const controllerManager = await ControllerManager.start({
        binary: bins['kube-controller-manager'].path,
        kubeconfig: kcmKubeconfig,
        port: ports.controllerManager,
        certDir: path.join(stateDir, 'pki', 'controller-manager'),
        logFile: path.join(logsDir, 'kube-controller-manager.log'),
      });
      started.push(controllerManager);
      await track();
      log(`kube-controller-manager ready (${Date.now() - t0} ms)`);

      const admission = await admissionP;
      started.push(admission);
      await track();
      await admission.register(kubeconfig);
      log(`admission webhook ready at ${admission.url} (${Date.now() - t0} ms)`);

      const info: StackInfo = {
        mode: opts.mode,
        stateDir,
        logsDir,
        kubeconfig,
        kube: { server: apiserver.url, caFile: apiserver.caFile, auditLog: audit.logFile },
        kubeEtcd: { endpoint: kubeEtcd.endpoint },
        tenantEtcd: { endpoint: tenantEtcd.endpoint },
        temporal: { address: temporal.address, namespace: 'default', uiUrl: temporal.uiUrl },
        admission: { url: admission.url, caFile: admission.caFile, logFile: admission.opts.logFile },
      };
      await writeFile(path.join(stateDir, STACK_INFO_FILE), JSON.stringify(info, null, 2));
      const stack = new LocalStack(info, kubeEtcd, apiserver, controllerManager, temporal, tenantEtcd, admission);
      if (opts.installCrds !== false) {
        await installCrds(kubeconfig);
        log(`CRDs installed (${Date.now() - t0} ms)`);
      }
      return stack;
    } catch (err) {
      await Promise.allSettled(started.map((c) => c.stop()));
      // Still starting when something else failed: not in `started` yet.
      await admissionP?.then((a) => a.stop()).catch(() => {});
      throw err;
    }
  }

  /** Stops every server; resolves once no process of the stack is left. */
  async stop(): Promise<void> {
    // Dependents first: the webhook, the controller manager and apiserver before their etcd.
    await this.admission.stop();
    await this.controllerManager.stop();
    await this.apiserver.stop();
    await Promise.all([this.kubeEtcd.stop(), this.temporal.stop(), this.tenantEtcd.stop()]);
    await rm(path.join(this.info.stateDir, 'pids.json'), { force: true });
  }
}

/** Reads the info file a running stack wrote (used by CLI commands and test helpers). */
export async function readStackInfo(stateDir: string): Promise<StackInfo | undefined> {
  const file = path.join(stateDir, STACK_INFO_FILE);
  if (!existsSync(file)) return undefined;
  return JSON.parse(await readFile(file, 'utf8')) as StackInfo;
}

async function choosePorts(stateDir: string, mode: StackMode): Promise<Ports> {
  const portsFile = path.join(stateDir, 'ports.json');
  let preferred: Partial<Ports> = {};
  if (mode === 'dev') {
    preferred = existsSync(portsFile) ? JSON.parse(await readFile(portsFile, 'utf8')) : DEV_PREFERRED_PORTS;
  }
  const chosen = {} as Ports;
  const taken = new Set<number>();
  for (const key of Object.keys(DEV_PREFERRED_PORTS) as (keyof Ports)[]) {
    const want = preferred[key];
    let port = want !== undefined && !taken.has(want) && (await isPortFree(want)) ? want : await getFreePort();
    while (taken.has(port)) port = await getFreePort();
    taken.add(port);
    chosen[key] = port;
  }
  if (mode === 'dev') await writeFile(portsFile, JSON.stringify(chosen, null, 2));
  return chosen;
}
