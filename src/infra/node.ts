/**
 * A real Kubernetes node for the local stack: kubelet on the stack's own containerd (CRI), Pods
 * on a bridge network the stack owns (Debian's CNI `bridge` + `host-local`), Services through
 * kube-proxy (nftables mode), cluster DNS through CoreDNS, and kube-scheduler to place Pods. All
 * are real binaries built from the pinned sources (binaries.ts); everything they add to the host —
 * the bridge, kube-proxy's table, the kubelet's mounts and cgroups, the Pods' network namespaces —
 * is named in `<dir>/node.json` and removed by cleanupNode at stop, at the next start, or by the
 * lifeline after a crash.
 *
 * Addressing: the bridge's gateway address is the node's address. The servers Pods must reach
 * (apiserver, Temporal, the tenant etcd, the Cloudflare emulator) listen on it, so nothing of the
 * stack listens beyond this host.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { BaseComponent, httpsStatus } from './components.js';
import { mountPointsUnder } from './containerd.js';

/** The apiserver's Service range (components.ts) and the cluster DNS Service's address in it. */
export const SERVICE_CIDR = '10.0.0.0/24';
export const CLUSTER_DNS_IP = '10.0.0.10';
export const CLUSTER_DOMAIN = 'cluster.local';
/** kube-proxy's nftables table (family ip); one node per host runs it. */
const KUBE_PROXY_TABLE = 'kube-proxy';
const CGROUP_V1_ROOT = '/sys/fs/cgroup';

export interface NodeNetwork {
  /** The Linux bridge the Pods' veths join (≤ 15 characters). */
  bridge: string;
  /** The Pods' subnet, a /24 no route of the host uses yet. */
  podSubnet: string;
  /** The bridge's address: the node's address, where the stack's servers listen for Pods. */
  gateway: string;
}

/** What the node adds to the host, for cleanupNode. */
export interface NodeRecord {
  network: NodeNetwork;
  kubeletRoot: string;
  /** The kubelet's cgroup root (cgroupfs), in every v1 hierarchy. */
  cgroupRoot: string;
  ipamDir: string;
}

export const NODE_RECORD_FILE = 'node.json';

/**
 * The node's network: named by a hash of the stack's directory (so two stacks never share a
 * bridge), on the first 10.244.N.0/24 no route of the host covers — or the one an earlier run of
 * this stack chose, while it is still free for us.
 */
export function chooseNodeNetwork(stackDir: string, routes = ipv4Routes()): NodeNetwork {
  const bridge = `dob${createHash('sha256').update(stackDir).digest('hex').slice(0, 8)}`;
  const taken = new Set(routes.filter((r) => !r.dev || r.dev !== bridge).map((r) => r.dst));
  for (let n = 0; n < 256; n++) {
    const podSubnet = `10.244.${n}.0/24`;
    if (
      taken.has(podSubnet) ||
      overlapsAny(
        podSubnet,
        routes.filter((r) => r.dev !== bridge).map((r) => r.dst),
      )
    )
      continue;
    return { bridge, podSubnet, gateway: `10.244.${n}.1` };
  }
  throw new Error('no free /24 in 10.244.0.0/16 for the node’s Pods');
}

interface Route {
  dst: string;
  dev?: string;
}

function ipv4Routes(): Route[] {
  const r = spawnSync('ip', ['-j', '-4', 'route', 'show', 'table', 'all'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ip route: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { dst: string; dev?: string }[])
    .filter((x) => x.dst && x.dst !== 'default')
    .map((x) => ({ dst: x.dst.includes('/') ? x.dst : `${x.dst}/32`, dev: x.dev }));
}

function toRange(cidr: string): [number, number] {
  const [ip, bits] = cidr.split('/') as [string, string];
  const n = ip.split('.').reduce((a, o) => a * 256 + Number(o), 0);
  const size = 2 ** (32 - Number(bits));
  const start = n - (n % size);
  return [start, start + size - 1];
}

/** Whether `cidr` overlaps any of `others` (a host route into 10.244.N.0/24, a wider route over it). */
export function overlapsAny(cidr: string, others: string[]): boolean {
  const [a0, a1] = toRange(cidr);
  return others.some((o) => {
    if (o.startsWith('127.') || o.startsWith('224.') || o.startsWith('255.')) return false;
    const [b0, b1] = toRange(o);
    return a0 <= b1 && b0 <= a1;
  });
}

/** Creates the bridge with the gateway address (before any server binds to it), or keeps it. */
export function createBridge(net: NodeNetwork): void {
  const prefix = net.podSubnet.split('/')[1];
  const script = [
    'set -e',
    `ip link show ${net.bridge} >/dev/null 2>&1 || ip link add name ${net.bridge} type bridge`,
    `ip addr replace ${net.gateway}/${prefix} dev ${net.bridge}`,
    `ip link set ${net.bridge} up`,
  ].join('\n');
  const r = spawnSync('sh', ['-c', script], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`creating bridge ${net.bridge}: ${r.stderr.trim()}`);
}

/** The CNI network containerd's CRI gives every Pod: a veth on the stack's bridge, an address of its subnet. */
export function renderCniConflist(net: NodeNetwork, ipamDir: string): string {
  return JSON.stringify(
    {
      cniVersion: '1.0.0',
      name: 'durable-operators-node',
      plugins: [
        {
          type: 'bridge',
          bridge: net.bridge,
          isGateway: true,
          // Pods reach the stack's servers on the gateway. No masquerade: traffic a Pod sends beyond
          // the host would leave with its private source address and get no reply.
          ipMasq: false,
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            ranges: [[{ subnet: net.podSubnet, gateway: net.gateway }]],
            routes: [{ dst: '0.0.0.0/0' }],
            dataDir: ipamDir,
          },
        },
      ],
    },
    null,
    2,
  );
}

// ---------------------------------------------------------------------------------------------
// kubelet

export interface KubeletOptions {
  binary: string;
  /** Holds config, kubeconfig, root/ (pods' volumes), pki/, logs/pods. */
  dir: string;
  nodeName: string;
  network: NodeNetwork;
  kubeconfig: string;
  containerdSocket: string;
  port: number;
  healthzPort: number;
  cgroupRoot: string;
  logFile: string;
}

export function renderKubeletConfig(opts: KubeletOptions): string {
  return stringify({
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    address: opts.network.gateway,
    port: opts.port,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: opts.healthzPort,
    // Only the apiserver would call it (logs, exec), and it has no client certificate here.
    authentication: { anonymous: { enabled: false }, webhook: { enabled: true } },
    authorization: { mode: 'Webhook' },
    containerRuntimeEndpoint: `unix://${opts.containerdSocket}`,
    // cgroups v1 here (plus a v2 mount): kubelet 1.34 refuses v1 unless told (cgroup v1 is in maintenance).
    failCgroupV1: false,
    cgroupDriver: 'cgroupfs',
    cgroupRoot: opts.cgroupRoot,
    failSwapOn: false,
    clusterDNS: [CLUSTER_DNS_IP],
    clusterDomain: CLUSTER_DOMAIN,
    podLogsDir: path.join(opts.dir, 'logs', 'pods'),
    // A shared build machine's disk: evict only when it is really full, never collect images.
    evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '1%', 'imagefs.available': '1%' },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    serializeImagePulls: false,
    maxPods: 110,
    // Root here lacks CAP_SYS_RESOURCE: lowering its own oom_score_adj is refused (logged, harmless).
    oomScoreAdj: 0,
    shutdownGracePeriod: '0s',
    registerNode: true,
    nodeStatusUpdateFrequency: '5s',
  });
}

const KUBELET_START_ATTEMPTS = 3;

export class Kubelet extends BaseComponent {
  constructor(readonly opts: KubeletOptions) {
    super('kubelet');
  }
  static async start(opts: KubeletOptions): Promise<Kubelet> {
    const k = new Kubelet(opts);
    await k.launch();
    return k;
  }
  get root(): string {
    return path.join(this.opts.dir, 'root');
  }
  protected async launch(): Promise<void> {
    const { opts } = this;
    await mkdir(this.root, { recursive: true });
    await mkdir(path.join(opts.dir, 'logs', 'pods'), { recursive: true });
    const config = path.join(opts.dir, 'config.yaml');
    await writeFile(config, renderKubeletConfig(opts));
    const args = [
      `--config=${config}`,
      `--kubeconfig=${opts.kubeconfig}`,
      `--root-dir=${this.root}`,
      `--cert-dir=${path.join(opts.dir, 'pki')}`,
      `--hostname-override=${opts.nodeName}`,
      `--node-ip=${opts.network.gateway}`,
      '--v=1',
    ];
    // A node's kubelet is restarted by its service manager when it dies (systemd Restart=always):
    // 1.34.4 at times dies at start-up ("concurrent map iteration and map write" in its DRA
    // plugin manager, seen here once in ~20 starts); so does this one, twice at most.
    for (let attempt = 1; ; attempt++) {
      try {
        await this.spawnUntilReady(
          { binary: opts.binary, logFile: opts.logFile, args },
          async () => (await httpStatus(`http://127.0.0.1:${opts.healthzPort}/healthz`)) === 200,
          { timeoutMs: 60_000, intervalMs: 200 },
        );
        return;
      } catch (err) {
        // Only a kubelet that exited is started again; one that hangs is an error to report.
        if (attempt === KUBELET_START_ATTEMPTS || this.process.running) throw err;
        process.stderr.write(`[stack] kubelet exited while starting (attempt ${attempt}): starting it again\n`);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// kube-proxy

export interface KubeProxyOptions {
  binary: string;
  dir: string;
  nodeName: string;
  network: NodeNetwork;
  kubeconfig: string;
  healthzPort: number;
  metricsPort: number;
  logFile: string;
}

export function renderKubeProxyConfig(opts: KubeProxyOptions): string {
  return stringify({
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    clientConnection: { kubeconfig: opts.kubeconfig },
    mode: 'nftables',
    clusterCIDR: opts.network.podSubnet,
    hostnameOverride: opts.nodeName,
    bindAddress: opts.network.gateway,
    healthzBindAddress: `127.0.0.1:${opts.healthzPort}`,
    metricsBindAddress: `127.0.0.1:${opts.metricsPort}`,
    // NodePorts on the node's own address only, never on the host's other interfaces.
    nodePortAddresses: [`${opts.network.gateway}/32`],
    // The host's conntrack settings are not ours to change.
    conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
  });
}

export class KubeProxy extends BaseComponent {
  constructor(readonly opts: KubeProxyOptions) {
    super('kube-proxy');
  }
  static async start(opts: KubeProxyOptions): Promise<KubeProxy> {
    const k = new KubeProxy(opts);
    await k.launch();
    return k;
  }
  protected async launch(): Promise<void> {
    const { opts } = this;
    await mkdir(opts.dir, { recursive: true });
    const config = path.join(opts.dir, 'kube-proxy.yaml');
    await writeFile(config, renderKubeProxyConfig(opts));
    await this.spawnUntilReady(
      { binary: opts.binary, logFile: opts.logFile, args: [`--config=${config}`, '--v=1'] },
      // /healthz answers 200 once it has programmed the rules at least once.
      async () => (await httpStatus(`http://127.0.0.1:${opts.healthzPort}/healthz`)) === 200,
      { timeoutMs: 60_000, intervalMs: 200 },
    );
  }
}

// ---------------------------------------------------------------------------------------------
// kube-scheduler

export interface KubeSchedulerOptions {
  binary: string;
  dir: string;
  kubeconfig: string;
  port: number;
  logFile: string;
}

export class KubeScheduler extends BaseComponent {
  constructor(readonly opts: KubeSchedulerOptions) {
    super('kube-scheduler');
  }
  static async start(opts: KubeSchedulerOptions): Promise<KubeScheduler> {
    const k = new KubeScheduler(opts);
    await k.launch();
    return k;
  }
  protected async launch(): Promise<void> {
    const { opts } = this;
    await mkdir(opts.dir, { recursive: true });
    await this.spawnUntilReady(
      {
        binary: opts.binary,
        logFile: opts.logFile,
        args: [
          `--kubeconfig=${opts.kubeconfig}`,
          `--authentication-kubeconfig=${opts.kubeconfig}`,
          `--authorization-kubeconfig=${opts.kubeconfig}`,
          '--leader-elect=false',
          `--secure-port=${opts.port}`,
          '--bind-address=127.0.0.1',
          `--cert-dir=${path.join(opts.dir, 'pki')}`,
          '--v=1',
        ],
      },
      async () => (await httpsStatus(`https://127.0.0.1:${opts.port}/healthz`, undefined, undefined)) === 200,
      { timeoutMs: 60_000, intervalMs: 200 },
    );
  }
}

// ---------------------------------------------------------------------------------------------
// CoreDNS

export interface CoreDnsOptions {
  binary: string;
  dir: string;
  network: NodeNetwork;
  kubeconfig: string;
  /** Where it answers DNS on the gateway; the kube-dns Service forwards port 53 to it. */
  port: number;
  healthPort: number;
  logFile: string;
}

export function renderCorefile(opts: CoreDnsOptions): string {
  return [
    `.:${opts.port} {`,
    `    bind ${opts.network.gateway}`,
    '    errors',
    `    health 127.0.0.1:${opts.healthPort}`,
    `    kubernetes ${CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {`,
    `        kubeconfig ${opts.kubeconfig} durable-operators-local`,
    '        pods insecure',
    '        fallthrough in-addr.arpa ip6.arpa',
    '    }',
    '    forward . /etc/resolv.conf',
    '    cache 30',
    '}',
    '',
  ].join('\n');
}

export class CoreDns extends BaseComponent {
  constructor(readonly opts: CoreDnsOptions) {
    super('coredns');
  }
  static async start(opts: CoreDnsOptions): Promise<CoreDns> {
    const c = new CoreDns(opts);
    await c.launch();
    return c;
  }
  protected async launch(): Promise<void> {
    const { opts } = this;
    await mkdir(opts.dir, { recursive: true });
    const corefile = path.join(opts.dir, 'Corefile');
    await writeFile(corefile, renderCorefile(opts));
    await this.spawnUntilReady(
      { binary: opts.binary, logFile: opts.logFile, args: ['-conf', corefile] },
      async () => (await httpStatus(`http://127.0.0.1:${opts.healthPort}/health`)) === 200,
      { timeoutMs: 60_000, intervalMs: 200 },
    );
  }
}

/** The kube-dns Service (CLUSTER_DNS_IP:53) and its EndpointSlice: CoreDNS on the node's address. */
export function clusterDnsObjects(net: NodeNetwork, port: number): object[] {
  const ports = [
    { name: 'dns', protocol: 'UDP', port: 53, targetPort: port },
    { name: 'dns-tcp', protocol: 'TCP', port: 53, targetPort: port },
  ];
  return [
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'kube-dns', namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' } },
      spec: { clusterIP: CLUSTER_DNS_IP, ports },
    },
    {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name: 'kube-dns-stack',
        namespace: 'kube-system',
        labels: {
          'kubernetes.io/service-name': 'kube-dns',
          'endpointslice.kubernetes.io/managed-by': 'local-stack.durable-operators.io',
        },
      },
      addressType: 'IPv4',
      endpoints: [{ addresses: [net.gateway], conditions: { ready: true } }],
      ports: ports.map((p) => ({ name: p.name, protocol: p.protocol, port: p.targetPort })),
    },
  ];
}

// ---------------------------------------------------------------------------------------------
// cleanup

export async function writeNodeRecord(dir: string, record: NodeRecord): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, NODE_RECORD_FILE), JSON.stringify(record, null, 2));
}

/**
 * Removes what a node of `dir` added to the host, once its processes and containerd's shims are
 * gone: the kubelet's mounts (Secrets, projected tokens, emptyDirs), the Pods' network namespaces
 * and the bridge, kube-proxy's table, the kubelet's cgroups, the CNI address leases.
 */
export async function cleanupNode(dir: string): Promise<void> {
  const file = path.join(dir, NODE_RECORD_FILE);
  if (!existsSync(file)) return;
  const record = JSON.parse(await readFile(file, 'utf8')) as NodeRecord;
  for (const mountPoint of mountPointsUnder(readFileSync('/proc/self/mounts', 'utf8'), record.kubeletRoot)) {
    if (spawnSync('umount', [mountPoint], { stdio: 'ignore' }).status !== 0)
      spawnSync('umount', ['-l', mountPoint], { stdio: 'ignore' });
  }
  // The Pods' namespaces (containerd's CRI names them cni-<uuid>) whose veth is on our bridge go
  // with the bridge's ports: find them before the bridge is deleted.
  for (const ns of podNetnsOn(record.network.bridge)) {
    spawnSync('ip', ['netns', 'delete', ns], { stdio: 'ignore' });
  }
  spawnSync('ip', ['link', 'delete', record.network.bridge], { stdio: 'ignore' });
  spawnSync('nft', ['delete', 'table', 'ip', KUBE_PROXY_TABLE], { stdio: 'ignore' });
  spawnSync('nft', ['delete', 'table', 'ip6', KUBE_PROXY_TABLE], { stdio: 'ignore' });
  removeKubeletIptablesChains();
  removeCgroupTree(record.cgroupRoot);
  await rm(record.ipamDir, { recursive: true, force: true });
  await rm(file, { force: true });
}

/**
 * The chains the kubelet adds through iptables (`KUBE-FIREWALL` hooked into INPUT and OUTPUT, its
 * canaries): only those, never the tables (iptables-nft shares them with everything else on the
 * host). Each step tolerates what is already gone.
 */
function removeKubeletIptablesChains(): void {
  const run = (cmd: string, ...args: string[]) => spawnSync(cmd, ['-w', ...args], { stdio: 'ignore' });
  for (const cmd of ['iptables', 'ip6tables']) {
    for (const hook of ['INPUT', 'OUTPUT']) run(cmd, '-t', 'filter', '-D', hook, '-j', 'KUBE-FIREWALL');
    run(cmd, '-t', 'filter', '-F', 'KUBE-FIREWALL');
    run(cmd, '-t', 'filter', '-X', 'KUBE-FIREWALL');
    for (const table of ['filter', 'nat', 'mangle']) run(cmd, '-t', table, '-X', 'KUBE-KUBELET-CANARY');
    run(cmd, '-t', 'mangle', '-X', 'KUBE-IPTABLES-HINT');
  }
}

/** Named network namespaces whose `eth0` peer is a port of `bridge`. */
function podNetnsOn(bridge: string): string[] {
  const ports = spawnSync('ip', ['-j', 'link', 'show', 'master', bridge], { encoding: 'utf8' });
  if (ports.status !== 0) return [];
  const netnsIds = new Set(
    (JSON.parse(ports.stdout || '[]') as { link_netnsid?: number }[])
      .map((l) => l.link_netnsid)
      .filter((id): id is number => id !== undefined),
  );
  const list = spawnSync('ip', ['-j', 'netns', 'list-id'], { encoding: 'utf8' });
  if (list.status !== 0) return [];
  return (JSON.parse(list.stdout || '[]') as { nsid: number; name?: string }[])
    .filter((n) => netnsIds.has(n.nsid) && n.name?.startsWith('cni-'))
    .map((n) => n.name!);
}

/**
 * Creates the kubelet's cgroup root in every v1 hierarchy (the kubelet requires it to exist); a
 * new cpuset cgroup starts with no CPUs or memory nodes, so it gets its parent's.
 */
export function createCgroupRoot(cgroupRoot: string): void {
  if (!existsSync(CGROUP_V1_ROOT)) return;
  for (const hierarchy of readdirSync(CGROUP_V1_ROOT)) {
    const base = path.join(CGROUP_V1_ROOT, hierarchy);
    if (hierarchy === 'unified' || !existsSync(path.join(base, 'cgroup.procs'))) continue;
    const dir = path.join(base, cgroupRoot);
    mkdirSync(dir, { recursive: true });
    if (hierarchy === 'cpuset')
      for (const f of ['cpuset.cpus', 'cpuset.mems'])
        if (!readFileSync(path.join(dir, f), 'utf8').trim())
          writeFileSync(path.join(dir, f), readFileSync(path.join(base, f), 'utf8'));
  }
}

/** Removes a cgroupfs subtree (deepest first) in every v1 hierarchy; empty cgroups only. */
function removeCgroupTree(cgroupRoot: string): void {
  if (!existsSync(CGROUP_V1_ROOT)) return;
  for (const hierarchy of readdirSync(CGROUP_V1_ROOT)) {
    const top = path.join(CGROUP_V1_ROOT, hierarchy, cgroupRoot);
    if (!existsSync(top)) continue;
    const dirs: string[] = [];
    const walk = (d: string) => {
      dirs.push(d);
      for (const e of readdirSync(d, { withFileTypes: true })) if (e.isDirectory()) walk(path.join(d, e.name));
    };
    try {
      walk(top);
    } catch {
      continue;
    }
    for (const d of dirs.sort((a, b) => b.length - a.length)) {
      try {
        rmdirSync(d);
      } catch {
        /* a process still in it: left for the next cleanup */
      }
    }
  }
}

async function httpStatus(url: string): Promise<number> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(2000) })).status;
  } catch {
    return 0;
  }
}
