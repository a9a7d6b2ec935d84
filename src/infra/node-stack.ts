/**
 * The stack's node, put together (the parts are in node.ts): its network before any server
 * starts (they listen on its address), the pause image in containerd before the kubelet asks for
 * it, then kube-scheduler, kubelet, kube-proxy and CoreDNS once the control plane is up, and the
 * cluster DNS Service. Ready when the Node is Ready and Services resolve.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { KubernetesObject } from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureBinary, type ProgressLog } from './binaries.js';
import { startTimeOf } from './ledger.js';
import { ensurePauseImage } from './pause-image.js';
import type { NODE_BINARIES } from './versions.js';
import type { Component } from './components.js';
import type { Containerd, NodeCri } from './containerd.js';
import {
  CLUSTER_DNS_IP,
  CLUSTER_DOMAIN,
  CoreDns,
  KubeProxy,
  KubeScheduler,
  Kubelet,
  NODE_RECORD_FILE,
  chooseNodeNetwork,
  cleanupNode,
  clusterDnsObjects,
  createBridge,
  createCgroupRoot,
  renderCniConflist,
  writeNodeRecord,
  type NodeNetwork,
} from './node.js';
import { TcpForward } from './tcp-forward.js';
import { KubeClient, loadKubeConfig } from '../kube/client.js';

/** The node's name: the one Node of the stack. */
export const NODE_NAME = 'local-node';

export interface NodeInfo {
  name: string;
  /** The node's address (the bridge's gateway), where the stack's servers listen for Pods. */
  address: string;
  podSubnet: string;
  bridge: string;
  clusterDnsIp: string;
  clusterDomain: string;
  /** The kubelet's Pod logs (`<namespace>_<pod>_<uid>/<container>/<n>.log`), as `kubectl logs` would show. */
  podLogsDir: string;
  /** Temporal's frontend as Pods reach it (forwarded to the dev server on loopback). */
  temporalAddress: string;
}

export interface NodeBinaries {
  kubelet: string;
  'kube-proxy': string;
  'kube-scheduler': string;
  coredns: string;
  pause: { archive: string; reference: string };
}

/** The ports the node's components serve on (the stack chooses them with its own). */
export type NodePort =
  'kubelet' | 'kubeletHealthz' | 'kubeProxyHealthz' | 'kubeProxyMetrics' | 'scheduler' | 'coredns' | 'corednsHealth';

export interface NodePrep {
  network: NodeNetwork;
  cri: NodeCri;
}

/**
 * Removes what an earlier node of `dir` left; with `wanted`, makes this one's bridge (the
 * servers bind its address) and records what the node will add, for cleanupNode.
 */
export async function prepareNode(
  dir: string,
  stackDir: string,
  wanted: boolean,
  pauseReference = 'registry.k8s.io/pause:3.10.1',
): Promise<NodePrep | undefined> {
  if (existsSync(path.join(dir, NODE_RECORD_FILE))) await cleanupNode(dir);
  if (!wanted) return undefined;
  await claimNodeHost(stackDir);
  const network = chooseNodeNetwork(stackDir);
  const ipamDir = path.join(dir, 'cni-ipam');
  await writeNodeRecord(dir, {
    network,
    kubeletRoot: path.join(dir, 'kubelet', 'root'),
    cgroupRoot: `/durable-operators-${network.bridge}`,
    ipamDir,
  });
  createBridge(network);
  createCgroupRoot(`/durable-operators-${network.bridge}`);
  return { network, cri: { cniConflist: renderCniConflist(network, ipamDir), sandboxImage: pauseReference } };
}

export interface LocalNodeOptions {
  prep: NodePrep;
  binaries: NodeBinaries;
  dir: string;
  /** The admin kubeconfig: the node's components act as the cluster's administrator here. */
  kubeconfig: string;
  containerd: Containerd;
  ports: Record<NodePort, number>;
  logsDir: string;
  /** The Temporal dev server's port on loopback: forwarded from the node's address. */
  temporalPort: number;
  onStarted: (c: Component) => void;
  log: ProgressLog;
}

export class LocalNode {
  private constructor(
    readonly info: NodeInfo,
    readonly components: Component[],
    private readonly dir: string,
    private readonly temporalForward: TcpForward,
  ) {}

  static async start(opts: LocalNodeOptions): Promise<LocalNode> {
    const { network } = opts.prep;
    importImage(opts.containerd, opts.binaries.pause.archive, opts.binaries.pause.reference);
    const components: Component[] = [];
    const track = <T extends Component>(c: T): T => (opts.onStarted(c), components.push(c), c);
    const kubeletDir = path.join(opts.dir, 'kubelet');
    await mkdir(kubeletDir, { recursive: true });
    const record = { cgroupRoot: `/durable-operators-${network.bridge}` };
    const settled = await Promise.allSettled([
      KubeScheduler.start({
        binary: opts.binaries['kube-scheduler'],
        dir: path.join(opts.dir, 'kube-scheduler'),
        kubeconfig: opts.kubeconfig,
        port: opts.ports.scheduler,
        logFile: path.join(opts.logsDir, 'kube-scheduler.log'),
      }).then(track),
      Kubelet.start({
        binary: opts.binaries.kubelet,
        dir: kubeletDir,
        nodeName: NODE_NAME,
        network,
        kubeconfig: opts.kubeconfig,
        containerdSocket: opts.containerd.socket,
        port: opts.ports.kubelet,
        healthzPort: opts.ports.kubeletHealthz,
        cgroupRoot: record.cgroupRoot,
        logFile: path.join(opts.logsDir, 'kubelet.log'),
      }).then(track),
      KubeProxy.start({
        binary: opts.binaries['kube-proxy'],
        dir: path.join(opts.dir, 'kube-proxy'),
        nodeName: NODE_NAME,
        network,
        kubeconfig: opts.kubeconfig,
        healthzPort: opts.ports.kubeProxyHealthz,
        metricsPort: opts.ports.kubeProxyMetrics,
        logFile: path.join(opts.logsDir, 'kube-proxy.log'),
      }).then(track),
      CoreDns.start({
        binary: opts.binaries.coredns,
        dir: path.join(opts.dir, 'coredns'),
        network,
        kubeconfig: opts.kubeconfig,
        port: opts.ports.coredns,
        healthPort: opts.ports.corednsHealth,
        logFile: path.join(opts.logsDir, 'coredns.log'),
      }).then(track),
    ]);
    for (const s of settled) if (s.status === 'rejected') throw s.reason;
    opts.log('kube-scheduler, kubelet, kube-proxy and CoreDNS running');
    const temporalForward = await TcpForward.start(
      { host: network.gateway, port: opts.temporalPort },
      { host: '127.0.0.1', port: opts.temporalPort },
    );
    const kube = new KubeClient(loadKubeConfig(opts.kubeconfig));
    for (const obj of clusterDnsObjects(network, opts.ports.coredns)) await kube.apply(obj as KubernetesObject);
    await waitForNodeReady(kube, NODE_NAME, 120_000);
    opts.log(`node ${NODE_NAME} Ready at ${network.gateway}, Pods on ${network.podSubnet}`);
    return new LocalNode(
      {
        name: NODE_NAME,
        address: network.gateway,
        podSubnet: network.podSubnet,
        bridge: network.bridge,
        clusterDnsIp: CLUSTER_DNS_IP,
        clusterDomain: CLUSTER_DOMAIN,
        podLogsDir: path.join(kubeletDir, 'logs', 'pods'),
        temporalAddress: `${network.gateway}:${opts.temporalPort}`,
      },
      components,
      opts.dir,
      temporalForward,
    );
  }

  /** The kubelet first (it stops starting Pods), then the rest. */
  async stop(): Promise<void> {
    const kubelet = this.components.find((c) => c.name === 'kubelet');
    await kubelet?.stop();
    await Promise.all(this.components.filter((c) => c !== kubelet).map((c) => c.stop()));
    await this.temporalForward.close();
  }

  /** What the node added to the host; after containerd stopped (its Pods' containers are gone). */
  async cleanup(): Promise<void> {
    await cleanupNode(this.dir);
  }
}

/** Which stack runs this host's node (kube-proxy's nftables table and the kubelet's ports are host-wide). */
const NODE_OWNER_FILE = '/run/durable-operators/node-owner.json';

interface NodeOwner {
  stackDir: string;
  pid: number;
  startTime: string;
}

/** Another live stack's node, or nothing: a stale claim (its owner gone) or our own is no conflict. */
export function otherNodeOwner(claim: NodeOwner | undefined, stackDir: string, alive: (owner: NodeOwner) => boolean) {
  return claim && claim.stackDir !== stackDir && alive(claim) ? claim : undefined;
}

/** Claims the host's one node for this stack, or says which stack holds it. */
async function claimNodeHost(stackDir: string): Promise<void> {
  const claim = existsSync(NODE_OWNER_FILE)
    ? (JSON.parse(await readFile(NODE_OWNER_FILE, 'utf8')) as NodeOwner)
    : undefined;
  const other = otherNodeOwner(claim, stackDir, (owner) => startTimeOf(owner.pid) === owner.startTime);
  if (other)
    throw new Error(
      `the stack in ${other.stackDir} (pid ${other.pid}) runs this host's node: one node per host (kube-proxy's table and the kubelet are host-wide); stop it first`,
    );
  await mkdir(path.dirname(NODE_OWNER_FILE), { recursive: true });
  const mine: NodeOwner = { stackDir, pid: process.pid, startTime: startTimeOf(process.pid)! };
  await writeFile(NODE_OWNER_FILE, JSON.stringify(mine));
}

/** The node's binaries and the pause image, from the cache or built (binaries.ts, pause-image.ts). */
export async function nodeBinaries(log: ProgressLog): Promise<NodeBinaries> {
  const path = async (b: (typeof NODE_BINARIES)[number]) => (await ensureBinary(b, log)).path;
  return {
    kubelet: await path('kubelet'),
    'kube-proxy': await path('kube-proxy'),
    'kube-scheduler': await path('kube-scheduler'),
    coredns: await path('coredns'),
    pause: await ensurePauseImage(log),
  };
}

/** Imports an OCI archive into containerd's CRI namespace under `reference` (`ctr`, from the containerd package). */
function importImage(containerd: Containerd, archive: string, reference: string): void {
  const ctr = (args: string[]) =>
    spawnSync('ctr', ['--address', containerd.socket, '--namespace', containerd.namespace, ...args], {
      encoding: 'utf8',
    });
  if (ctr(['images', 'check', `name==${reference}`]).stdout.includes(reference)) return;
  const repo = reference.slice(0, reference.lastIndexOf(':'));
  const r = ctr(['images', 'import', '--base-name', repo, '--digests', archive]);
  if (r.status !== 0) throw new Error(`ctr images import ${archive}: ${r.stderr.trim()}`);
  // The archive names its manifest by tag (or not at all): give it the reference CRI asks for.
  const imported = ctr(['images', 'list', '-q'])
    .stdout.split('\n')
    .find((n) => n.startsWith(`${repo}`));
  if (!imported) throw new Error(`ctr images import ${archive}: no ${repo} image afterwards`);
  if (imported !== reference) {
    const t = ctr(['images', 'tag', '--force', imported, reference]);
    if (t.status !== 0) throw new Error(`ctr images tag ${imported} ${reference}: ${t.stderr.trim()}`);
  }
}

async function waitForNodeReady(kube: KubeClient, name: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'not registered';
  while (Date.now() < deadline) {
    try {
      const node = await kube.core.readNode({ name });
      const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
      if (ready?.status === 'True') return;
      last = `${ready?.reason ?? 'no Ready condition'}: ${ready?.message ?? ''}`;
    } catch {
      /* not registered yet */
    }
    await sleep(500);
  }
  throw new Error(`node ${name} not Ready after ${timeoutMs / 1000} s (${last}); see kubelet.log`);
}
