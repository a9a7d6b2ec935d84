/**
 * The local stack shared by `dev` and the test harness: etcd + kube-apiserver +
 * kube-controller-manager (GC, namespaces), the Temporal dev server, and a separate etcd for
 * tenant configuration. Everything is a real server started from the provisioned binaries.
 * Where it can run (root on Linux, the host tools installed), also a private containerd and an
 * image registry holding the project's demo images, for the sandbox agent's containerd runtime.
 *
 * `dev` mode keeps state (etcd data, Temporal SQLite, credentials, ports) under the state dir so
 * re-running `dev` picks up where it left off; `test` mode uses free ports and in-memory Temporal.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { clientConfigToToml } from '@temporalio/envconfig';
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
import { Containerd, cleanupContainerd } from './containerd.js';
import { CPU_ACCOUNTING_ENV, CpuAccounting } from './cpu-accounting.js';
import { LocalNode, nodeBinaries, prepareNode, type NodeInfo, type NodePort } from './node-stack.js';
import { findHostTools, requireHostTools, type HostTools } from './host-tools.js';
import { ensureImageLayout, pushImages, type SandboxImages } from './images.js';
import { LEDGER_ENV, recordCgroups, recordContainerd, recordNode } from './ledger.js';
import { Lifeline, reapLedger } from './lifeline.js';
import { getFreePort, isPortFree } from './process.js';
import { ImageRegistry } from './registry.js';
import { ensureSandboxInit, ensureSandboxNetd } from './go-programs.js';
import { installCrds } from '../kube/crds.js';
import { LocalAdmissionWebhook } from '../admission/local.js';
import type { AllowedCapabilities } from '../domain/sandbox-capabilities.js';

export type StackMode = 'dev' | 'test';

export interface StackOptions {
  stateDir: string;
  mode: StackMode;
  log?: ProgressLog;
  /** Apply the project's CRDs once the apiserver is up (default true). */
  installCrds?: boolean;
  /**
   * Start containerd and the image registry (default: when running as root on Linux with the
   * host tools installed; `DO_CONTAINERD=0` turns it off whatever this says).
   */
  containerd?: boolean;
  /** The Web UI's remote codec (`--ui-codec-endpoint`): the codec server dev starts after the stack. */
  uiCodecEndpoint?: string;
  /** The admission webhook's sandbox capabilities allowed per namespace (none by default). */
  admissionSandboxCapabilities?: AllowedCapabilities;
  /**
   * Run a real node (node-stack.ts): kubelet, kube-proxy, kube-scheduler, CoreDNS and Pods on a
   * bridge; the servers Pods reach listen on the node's address. Needs root and the host tools.
   * The stack's own admission webhook is then not registered: the installed chart brings its own.
   */
  node?: boolean;
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
  /** `configFile`: a temporal.toml whose default profile is this server (see localTemporalEnv). */
  temporal: { address: string; namespace: string; uiUrl?: string; configFile: string };
  /** The admission webhook the apiserver calls on CREATE of capture requests (see src/admission/); none with a node. */
  admission?: { url: string; caFile: string; logFile: string; metricsUrl?: string };
  /** The stack's node, when it runs one. */
  node?: NodeInfo;
  /**
   * The stack's own containerd. `runscBinary`: a runsc wrapper to give as the runc `binary_name`
   * option (absent without runsc); `runcRoot`: the runc `root` option, so this containerd's
   * containers keep their runc state apart from any other containerd's. `initBinary`:
   * sandbox-init, PID 1 of every sandbox container (built from src/agent/init); `netdBinary`:
   * sandbox-netd, the agents' network helper (built from src/agent/netd).
   */
  containerd?: {
    socket: string;
    namespace: string;
    runscBinary?: string;
    runcRoot: string;
    initBinary: string;
    netdBinary: string;
  };
  /** The local registry (plain HTTP) and the demo images pushed to it. */
  registry?: { host: string; images: SandboxImages };
  /** Why sandboxes run without containerd or without gVisor, and the command that fixes it (sandboxIsolation). */
  isolationNote?: string;
  /** The components' cgroups (cpu-accounting.ts: CpuAccounting.open reads them); absent when the host has none for us. */
  cpuAccounting?: { dir: string; version: 1 | 2 };
}

interface ServerPorts {
  kubeEtcdClient: number;
  kubeEtcdPeer: number;
  tenantEtcdClient: number;
  tenantEtcdPeer: number;
  apiserver: number;
  controllerManager: number;
  temporal: number;
  temporalUi: number;
  admission: number;
  admissionMetrics: number;
  registry: number;
}

type Ports = ServerPorts & Record<NodePort, number>;

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
  admissionMetrics: 18464,
  registry: 15000,
  kubelet: 10250,
  kubeletHealthz: 10248,
  kubeProxyHealthz: 10256,
  kubeProxyMetrics: 10249,
  scheduler: 10259,
  coredns: 10053,
  corednsHealth: 10054,
};

export const STACK_INFO_FILE = 'stack.json';
/** Every process of the stack, for the lifeline and the next start (see ledger.ts). */
const LEDGER_FILE = 'processes.jsonl';
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
    readonly admission: LocalAdmissionWebhook | undefined,
    private readonly lifeline: Lifeline,
    private readonly outerLedger: string | undefined,
    private readonly accounting: StackAccounting,
    readonly registry?: ImageRegistry,
    readonly containerd?: Containerd,
    readonly node?: LocalNode,
  ) {}

  /** CPU per component, including the processes that exited (undefined without cgroupfs or root). */
  get cpu(): CpuAccounting | undefined {
    return this.accounting.cpu;
  }

  get components(): Component[] {
    const sandbox = [this.containerd, this.registry].filter((c) => c !== undefined);
    return [
      ...(this.admission ? [this.admission] : []),
      ...(this.node?.components ?? []),
      this.controllerManager,
      this.apiserver,
      this.kubeEtcd,
      this.temporal,
      this.tenantEtcd,
      ...sandbox,
    ];
  }

  get pids(): number[] {
    return this.components.map((c) => c.process.pid);
  }

  static async start(opts: StackOptions): Promise<LocalStack> {
    const log = opts.log ?? ((l: string) => process.stderr.write(`[stack] ${l}\n`));
    const stateDir = path.resolve(opts.stateDir);
    const logsDir = path.join(stateDir, 'logs');
    await mkdir(logsDir, { recursive: true });
    // Whatever a run that ended without stopping left (its watchdog lost too): killed first.
    const ledgerFile = path.join(stateDir, LEDGER_FILE);
    const reaped = await reapLedger(ledgerFile);
    if (reaped.length) log(`reaped ${reaped.length} processes left by an earlier run: ${reaped.join(', ')}`);
    await rm(ledgerFile, { force: true });

    const bins = await ensureAllBinaries(log);
    const { tools, isolation } = opts.node
      ? { tools: requireHostTools(), isolation: undefined }
      : containerdTools(opts, log);
    const nodeBins = opts.node ? await nodeBinaries(log) : undefined;
    const ports = await choosePorts(stateDir, opts.mode);
    const started: Component[] = [];
    // From here on every process this one starts (and its children start) is in the ledger, and
    // the lifeline kills all of them if this process ends without stopping the stack.
    const outerLedger = process.env[LEDGER_ENV];
    process.env[LEDGER_ENV] = ledgerFile;
    const lifeline = Lifeline.start(ledgerFile, path.join(logsDir, 'lifeline.log'));
    const accounting = startAccounting(stateDir, ledgerFile, log);
    const t0 = Date.now();
    let admissionP: Promise<LocalAdmissionWebhook> | undefined;
    const containerdDir = path.join(stateDir, 'containerd');
    // A crashed run's containers: their shims outlive containerd, and nobody owns them any more.
    if (existsSync(containerdDir)) await cleanupContainerd(containerdDir);
    if (tools) recordContainerd(ledgerFile, containerdDir);
    const nodeDir = path.join(stateDir, 'node');
    // An earlier node's leftovers (mounts, bridge, tables, cgroups) go; with a node, its bridge comes first.
    const nodePrep = await prepareNode(nodeDir, stateDir, opts.node === true, nodeBins?.pause.reference);
    if (nodePrep) recordNode(ledgerFile, nodeDir);
    const nodeAddress = nodePrep?.network.gateway;
    try {
      if (opts.mode === 'test') {
        // Tests start from a clean slate each run (the image layouts stay cached, see images.ts).
        await rm(path.join(stateDir, 'kube-etcd'), { recursive: true, force: true });
        await rm(path.join(stateDir, 'tenant-etcd'), { recursive: true, force: true });
        await rm(path.join(logsDir, AUDIT_LOG), { force: true });
        await rm(containerdDir, { recursive: true, force: true });
        await rm(path.join(stateDir, 'registry'), { recursive: true, force: true });
      }
      // The images are built (or found in the cache) while the servers start.
      const layoutP = tools ? ensureImageLayout(tools, log) : undefined;
      layoutP?.catch(() => {}); // awaited below; a failure surfaces there
      const initP = tools ? ensureSandboxInit() : undefined;
      initP?.catch(() => {}); // awaited below; a failure surfaces there
      // Built (or found in the cache) for the agents, which find it there (src/cli/main.ts).
      const netdP = tools ? ensureSandboxNetd() : undefined;
      netdP?.catch(() => {}); // awaited below; a failure surfaces there
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
        ...(nodeAddress && { extraClientHost: nodeAddress }),
      });
      const temporalP = TemporalDevServer.start({
        binary: bins.temporal.path,
        port: ports.temporal,
        uiPort: opts.mode === 'dev' ? ports.temporalUi : undefined,
        ...(opts.uiCodecEndpoint && { uiCodecEndpoint: opts.uiCodecEndpoint }),
        dbFile: opts.mode === 'dev' ? path.join(stateDir, 'temporal.sqlite') : undefined,
        namespace: 'default',
        logFile: path.join(logsDir, 'temporal.log'),
      });
      const registryHost = `127.0.0.1:${ports.registry}`;
      const sandboxP = tools
        ? [
            ImageRegistry.start({
              binary: tools['docker-registry'],
              dir: path.join(stateDir, 'registry'),
              port: ports.registry,
              logFile: path.join(logsDir, 'registry.log'),
            }),
            Containerd.start({
              binary: tools.containerd,
              dir: containerdDir,
              plainHttpRegistries: [registryHost],
              runsc: tools.runsc,
              logFile: path.join(logsDir, 'containerd.log'),
              ...(nodePrep && { node: nodePrep.cri }),
            }),
          ]
        : [];
      const settled = await Promise.allSettled([kubeEtcdP, tenantEtcdP, temporalP, ...sandboxP]);
      for (const s of settled) if (s.status === 'fulfilled') started.push(s.value);
      for (const s of settled) if (s.status === 'rejected') throw s.reason;
      const [kubeEtcd, tenantEtcd, temporal, registry, containerd] = started as [
        Etcd,
        Etcd,
        TemporalDevServer,
        ImageRegistry?,
        Containerd?,
      ];
      log(`etcd x2, temporal${tools ? ', registry and containerd' : ''} ready (${Date.now() - t0} ms)`);
      // Pushed while the control plane starts.
      const imagesP = tools && layoutP?.then((layout) => pushImages(layout, registryHost, tools.skopeo));
      imagesP?.catch(() => {}); // awaited below; a failure surfaces there

      const credentials = await ensureCredentials(path.join(stateDir, 'pki'));
      const audit = { policyFile: path.join(stateDir, 'audit-policy.yaml'), logFile: path.join(logsDir, AUDIT_LOG) };
      await writeFile(audit.policyFile, AUDIT_POLICY);
      const apiserver = await KubeApiServer.start({
        binary: bins['kube-apiserver'].path,
        etcdEndpoint: kubeEtcd.endpoint,
        port: ports.apiserver,
        // Its self-signed certificate names the address it serves on.
        certDir: path.join(stateDir, 'pki', nodeAddress ? 'apiserver-node' : 'apiserver'),
        credentials,
        logFile: path.join(logsDir, 'kube-apiserver.log'),
        audit,
        ...(nodeAddress && { nodeAddress }),
      });
      started.push(apiserver);
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
      admissionP = nodePrep
        ? undefined
        : LocalAdmissionWebhook.start({
            port: ports.admission,
            metricsPort: ports.admissionMetrics,
            certDir: path.join(stateDir, 'pki', 'admission'),
            kubeconfig,
            logFile: path.join(logsDir, 'admission.log'),
            ...(opts.admissionSandboxCapabilities ? { sandboxCapabilities: opts.admissionSandboxCapabilities } : {}),
          });
      admissionP?.catch(() => {}); // awaited below; a failure surfaces there
      const controllerManager = await ControllerManager.start({
        binary: bins['kube-controller-manager'].path,
        kubeconfig: kcmKubeconfig,
        port: ports.controllerManager,
        certDir: path.join(stateDir, 'pki', 'controller-manager'),
        logFile: path.join(logsDir, 'kube-controller-manager.log'),
        ...(nodePrep && { node: { rootCaFile: apiserver.caFile } }),
      });
      started.push(controllerManager);
      log(`kube-controller-manager ready (${Date.now() - t0} ms)`);

      const admission = await admissionP;
      if (admission) {
        started.push(admission);
        await admission.register(kubeconfig);
        log(`admission webhook ready at ${admission.url} (${Date.now() - t0} ms)`);
      }

      const node =
        nodePrep &&
        (await LocalNode.start({
          prep: nodePrep,
          binaries: nodeBins!,
          dir: nodeDir,
          kubeconfig,
          containerd: containerd!,
          ports,
          logsDir,
          temporalPort: ports.temporal,
          onStarted: (c) => started.push(c),
          log: (l) => log(`${l} (${Date.now() - t0} ms)`),
        }));

      const images = await imagesP;
      if (images) log(`images pushed to ${registryHost} (${Date.now() - t0} ms)`);

      const temporalConfigFile = path.join(stateDir, 'temporal.toml');
      await writeFile(
        temporalConfigFile,
        clientConfigToToml({ profiles: { default: { address: temporal.address, namespace: 'default' } } }),
      );
      const info: StackInfo = {
        mode: opts.mode,
        stateDir,
        logsDir,
        kubeconfig,
        kube: { server: apiserver.url, caFile: apiserver.caFile, auditLog: audit.logFile },
        kubeEtcd: { endpoint: kubeEtcd.endpoint },
        tenantEtcd: { endpoint: tenantEtcd.endpoint },
        temporal: {
          address: temporal.address,
          namespace: 'default',
          uiUrl: temporal.uiUrl,
          configFile: temporalConfigFile,
        },
        ...(admission && {
          admission: {
            url: admission.url,
            caFile: admission.caFile,
            logFile: admission.opts.logFile,
            metricsUrl: admission.metricsUrl,
          },
        }),
        ...(node && { node: node.info }),
        containerd: containerd && {
          socket: containerd.socket,
          namespace: containerd.namespace,
          runscBinary: containerd.runscBinary,
          runcRoot: containerd.runcRoot,
          initBinary: (await initP)!,
          netdBinary: (await netdP)!,
        },
        registry: registry && images && { host: registry.host, images },
        ...(isolation?.message && { isolationNote: isolation.message }),
        ...(accounting.cpu && { cpuAccounting: { dir: accounting.cpu.dir, version: accounting.cpu.version } }),
      };
      await writeFile(path.join(stateDir, STACK_INFO_FILE), JSON.stringify(info, null, 2));
      const stack = new LocalStack(
        info,
        kubeEtcd,
        apiserver,
        controllerManager,
        temporal,
        tenantEtcd,
        admission,
        lifeline,
        outerLedger,
        accounting,
        registry,
        containerd,
        node,
      );
      if (opts.installCrds !== false) {
        await installCrds(kubeconfig);
        log(`CRDs installed (${Date.now() - t0} ms)`);
      }
      return stack;
    } catch (err) {
      await Promise.allSettled(started.map((c) => c.stop()));
      // Still starting when something else failed: not in `started` yet.
      await admissionP?.then((a) => a.stop()).catch(() => {});
      await lifeline.close();
      restoreLedgerEnv(outerLedger);
      await stopAccounting(accounting);
      throw err;
    }
  }

  /** Stops every server; resolves once no process of the stack is left. */
  async stop(): Promise<void> {
    // Dependents first: the webhook, the node, the controller manager and apiserver before their etcd.
    await this.admission?.stop();
    await this.node?.stop();
    await this.controllerManager.stop();
    await this.apiserver.stop();
    // containerd's stop also kills its shims and containers (the agents are stopped by now).
    await Promise.all([
      this.kubeEtcd.stop(),
      this.temporal.stop(),
      this.tenantEtcd.stop(),
      this.containerd?.stop(),
      this.registry?.stop(),
    ]);
    // Its Pods' containers went with containerd: now the bridge, tables, mounts and cgroups.
    await this.node?.cleanup();
    // Anything else still in the ledger (a role or agent its starter did not stop) goes now.
    await this.lifeline.close();
    restoreLedgerEnv(this.outerLedger);
    // Every process of the stack is gone by now: its cgroups can go.
    await stopAccounting(this.accounting);
    await rm(path.join(this.info.stateDir, LEDGER_FILE), { force: true });
  }
}

interface StackAccounting {
  cpu?: CpuAccounting;
  /** The enclosing stack's DO_STACK_CGROUP, this process's again once this stack stops. */
  outer: string | undefined;
}

/**
 * Each component of the stack in a cgroup of its own from here on: every process started through
 * ManagedProcess under this stack (here, in dev's roles, in the tests' forks) finds the directory
 * in DO_STACK_CGROUP, as it finds the ledger. Without cgroupfs or root: one line, no accounting.
 */
function startAccounting(stateDir: string, ledgerFile: string, log: ProgressLog): StackAccounting {
  const outer = process.env[CPU_ACCOUNTING_ENV];
  const cpu = CpuAccounting.forStack(stateDir);
  if ('unavailable' in cpu) {
    log(`CPU accounting per component off: ${cpu.unavailable}`);
    delete process.env[CPU_ACCOUNTING_ENV]; // not the enclosing stack's: its components are not this one's
    return { outer };
  }
  recordCgroups(ledgerFile, cpu.dir);
  process.env[CPU_ACCOUNTING_ENV] = cpu.dir;
  return { cpu, outer };
}

async function stopAccounting(accounting: StackAccounting): Promise<void> {
  if (accounting.outer === undefined) delete process.env[CPU_ACCOUNTING_ENV];
  else process.env[CPU_ACCOUNTING_ENV] = accounting.outer;
  await accounting.cpu?.remove();
}

/** The ledger of an enclosing stack (a test starting a stack of its own), if any, is this process's again. */
function restoreLedgerEnv(outer: string | undefined): void {
  if (outer === undefined) delete process.env[LEDGER_ENV];
  else process.env[LEDGER_ENV] = outer;
}

/** The host tools for containerd and the registry, or undefined when the stack runs without them. */
function containerdTools(opts: StackOptions, log: ProgressLog): { tools?: HostTools; isolation: SandboxIsolation } {
  const disabled = process.env.DO_CONTAINERD === '0' || opts.containerd === false;
  if (opts.containerd && !disabled) return { tools: requireHostTools(), isolation: { containerd: true } };
  const root = process.getuid?.() === 0;
  // A non-root user's PATH may lack the sbin directories sudo's gives root (nft, ip).
  const { tools, missing } = findHostTools(root ? [] : ['/usr/local/sbin', '/usr/sbin', '/sbin']);
  const isolation = sandboxIsolation({
    disabled,
    linux: process.platform === 'linux',
    root,
    missing,
    runsc: tools.runsc !== undefined,
  });
  if (isolation.message)
    log(
      isolation.containerd
        ? isolation.message
        : `${isolation.message} (sandboxes run as plain processes of this user: NOT ISOLATED)`,
    );
  return { tools: isolation.containerd ? (tools as HostTools) : undefined, isolation };
}

/** Whether the stack runs containerd for the sandboxes, and when not (or without gVisor) why and how to get it. */
export interface SandboxIsolation {
  containerd: boolean;
  message?: string;
}

/**
 * Decides the sandboxes' isolation from the host's facts, and says what the user lacks and the
 * command that gets it: `dev` never runs sandboxes unisolated without saying so. It only says:
 * installing is `npm run infra`'s job (apt-get installs host-wide services), never `dev`'s.
 */
export function sandboxIsolation(host: {
  /** DO_CONTAINERD=0 (or a caller's containerd: false). */
  disabled: boolean;
  linux: boolean;
  root: boolean;
  /** The required host tools that are missing (host-tools.ts). */
  missing: readonly string[];
  runsc: boolean;
}): SandboxIsolation {
  const off = (why: string): SandboxIsolation => ({ containerd: false, message: `containerd isolation off: ${why}` });
  if (host.disabled) return off('DO_CONTAINERD=0 — unset it to run them under containerd');
  if (!host.linux) return off('not Linux — containerd isolation needs a Linux host');
  const missing = host.missing.join(', ');
  if (!host.root)
    return off(
      host.missing.length
        ? `not root, and missing ${missing} — run \`sudo npm run infra\` once, then \`sudo npm run dev\``
        : 'not root — run `sudo npm run dev`',
    );
  if (host.missing.length)
    return off(`missing ${missing} — run \`sudo npm run infra\`, then \`sudo npm run dev\` again`);
  if (!host.runsc)
    return {
      containerd: true,
      message:
        'gVisor off: runsc missing — sandboxes run under runc only; `sudo npm run infra` installs runsc where apt has it',
    };
  return { containerd: true };
}

/**
 * The environment of a process run against the stack's Temporal (`dev`'s roles, the tests'):
 * pinned to the dev server by the stack's own temporal.toml, with the user's TEMPORAL_*
 * variables left out. Otherwise a user's Temporal Cloud profile or API key (the roles read the
 * temporal CLI's configuration) would send them to Cloud, or TLS to the plain dev server.
 */
export function localTemporalEnv(info: StackInfo, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(base).filter(([name]) => !name.startsWith('TEMPORAL_')));
  return {
    ...env,
    TEMPORAL_CONFIG_FILE: info.temporal.configFile,
    TEMPORAL_ADDRESS: info.temporal.address,
    TEMPORAL_NAMESPACE: info.temporal.namespace,
  };
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
