/**
 * Builds the agent's containerd runtime from its flags: the socket, the isolation the pool asks
 * for (`RUNTIME_TYPE` container → runc, gvisor → runsc), the sandboxes' network (a namespace of
 * their own each, under the pool's egress policy: src/agent/network) and the I/O directory.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import path from 'node:path';
import { ociCapability, sandboxCapabilities, type CapabilitiesSpec } from '../../domain/sandbox-capabilities.js';
import { ipv4Cidr, parseEgress } from '../../domain/sandbox-network.js';
import { SandboxNetwork } from '../network/sandbox-network.js';
import { claimSubnet } from '../network/subnets.js';
import { ContainerdClient } from './client.js';
import { parseQuantity } from './oci-spec.js';
import { pullSecretsAuth } from './pull-secrets.js';
import { ContainerdRuntime, type ContainerdRuntimeOptions, type WarmImage } from './runtime.js';

/**
 * The limits of a sandbox when neither its create nor its pool's `sandboxResources` sets one
 * (review N3): sandboxes run outside the kubelet's accounting, so none runs unbounded. One core
 * and 512Mi, the size of a small hosted sandbox (E2B's default is 512 MiB); a pool sets its own.
 */
export const DEFAULT_SANDBOX_CPU = '1';
export const DEFAULT_SANDBOX_MEMORY = '512Mi';
/**
 * The most a sandbox's writable layer may take when the pool sets no `ephemeralStorage`: a
 * sandbox that fills the node's disk would have the kubelet evict every Pod of the node.
 */
export const DEFAULT_SANDBOX_EPHEMERAL_STORAGE = '10Gi';
/** Where sandboxes' cgroups go when `--cgroup-parent` is not given (cgroupfs path). */
export const DEFAULT_CGROUP_PARENT = '/fast-sandbox';

export interface ContainerdFlags {
  socket: string;
  namespace: string;
  /** `container` (runc) or `gvisor` (runsc), as the pool's runtimeType. */
  runtimeType: string;
  /** runsc, or a wrapper that runs it with this node's flags; needed for gvisor. */
  runscBinary?: string;
  /** The sandboxes' IPv4 subnet in the agent's namespace, or `auto` (a free /24 of 198.18.0.0/16). */
  subnet: string;
  /** The pool's egress policy (JSON, SANDBOX_EGRESS); default `internet`. */
  egress?: string;
  /** CIDRs sandboxes never reach besides the non-public ranges: the cluster's Pod and Service ranges. */
  egressDeny?: string;
  /** The node's address (HOST_IP): never reached by sandboxes. */
  hostIp?: string;
  /** sandbox-netd, which wires the sandboxes' network namespaces (src/agent/netd). */
  netdBinary: string;
  /**
   * Names what this agent adds to the node (namespaces `fsb-<tag>-…`, table `fsb_<tag>_…`); by
   * default a hash of the containerd socket, so whoever owns that containerd finds them.
   */
  networkTag?: string;
  ioDir: string;
  /** runc's state directory (`--root`), when not its default. */
  runtimeRoot?: string;
  agentName: string;
  agentUid?: string;
  agentNamespace?: string;
  host?: string;
  defaults?: ContainerdRuntimeOptions['defaults'];
  /** The pool's `sandboxResources.ephemeralStorage` (a quantity); DEFAULT_SANDBOX_EPHEMERAL_STORAGE when unset. */
  ephemeralStorage?: string;
  /** sandbox-init, PID 1 of every sandbox container. */
  initBinary?: string;
  /** `image=count,image2=count` (count 1 when left out): the pool's warm images. */
  warm?: string;
  /** Where the pool's image pull Secrets are mounted (docker config JSON files). */
  pullSecretsDir?: string;
  /** The pool's sandboxSecurityContext.capabilities (Kubernetes names). */
  capabilities?: CapabilitiesSpec;
  /** Parent of the sandboxes' cgroups (cgroupfs path; default /fast-sandbox). */
  cgroupParent?: string;
}

/** `image=count,…` as warm images, or what is wrong with it. */
export function parseWarmImages(s: string): WarmImage[] {
  return s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean)
    .map((item) => {
      const eq = item.lastIndexOf('=');
      const image = eq > 0 ? item.slice(0, eq) : item;
      const count = eq > 0 ? Number(item.slice(eq + 1)) : 1;
      if (!Number.isInteger(count) || count < 0)
        throw new Error(`warm images: ${JSON.stringify(item)}: count is not a whole number`);
      return { image, count };
    });
}

/** The sandbox network of this agent from its flags, or what is wrong with them (the agent does not start). */
export function sandboxNetwork(flags: ContainerdFlags): SandboxNetwork {
  const policy = parseEgress(flags.egress);
  if ('error' in policy) throw new Error(`SANDBOX_EGRESS: ${policy.error}`);
  const stateDir = path.join(flags.ioDir, 'network');
  const claimed = flags.subnet === 'auto' ? claimSubnet(path.join(stateDir, 'subnet')) : undefined;
  const subnet = claimed?.subnet ?? ipv4Cidr(flags.subnet);
  if (!subnet || Number(subnet.split('/')[1]) > 29)
    throw new Error(
      `--sandbox-subnet ${JSON.stringify(flags.subnet)} is not auto or an IPv4 subnet of at least 8 addresses`,
    );
  const deny = (flags.egressDeny ?? '')
    .split(',')
    .map((c) => c.trim())
    .filter(Boolean);
  for (const c of deny) if (!ipv4Cidr(c)) throw new Error(`--egress-deny: ${JSON.stringify(c)} is not an IPv4 CIDR`);
  if (flags.hostIp && ipv4Cidr(flags.hostIp)) deny.push(flags.hostIp);
  const missing = SandboxNetwork.missing(flags.netdBinary);
  if (missing) throw new Error(`sandboxes need a network namespace each: ${missing}`);
  const tag = flags.networkTag || networkTagOf(flags.socket);
  const host = flags.host && flags.host !== '0.0.0.0' ? flags.host : undefined;
  return new SandboxNetwork({
    prefix: `fsb-${tag}-`,
    table: agentTable(tag, flags.agentNamespace, flags.agentName),
    subnet,
    podIps: host ? [host] : [],
    policy,
    denyCidrs: deny,
    netdBinary: flags.netdBinary,
    stateDir,
    onClose: claimed?.release,
  });
}

/** The nftables table of one agent: its node's tag and a hash of its Pod (agents may share a namespace in dev). */
export function agentTable(tag: string, agentNamespace: string | undefined, agentName: string): string {
  return `fsb_${tag}_${createHash('sha256')
    .update(`${agentNamespace ?? ''}/${agentName}`)
    .digest('hex')
    .slice(0, 6)}`;
}

/** The tag of what agents on the containerd at `socket` add to the node (see `networkTag`). */
export function networkTagOf(socket: string): string {
  return createHash('sha256').update(socket).digest('hex').slice(0, 8);
}

/** The cgroup parent as a cgroupfs path: absolute, normalised, never the root itself. */
export function cgroupParentOf(flag: string | undefined): string {
  if (!flag) return DEFAULT_CGROUP_PARENT;
  const p = path.posix.normalize(flag).replace(/\/+$/, '');
  if (!p.startsWith('/') || p === '' || p.split('/').includes('..'))
    throw new Error(
      `--cgroup-parent ${JSON.stringify(flag)}: not an absolute cgroup path below the root (e.g. /fast-sandbox)`,
    );
  return p;
}

/**
 * sandbox-init copied into the I/O directory, unless the copy there is already the same. Replaced
 * by a rename, never rewritten in place: the running sandboxes a restarted agent re-adopts execute
 * the old file (writing it would fail with ETXTBSY) and keep it.
 */
function placeInit(source: string, ioDir: string): string {
  const target = path.join(ioDir, 'sandbox-init');
  if (path.resolve(source) === target) return target;
  if (existsSync(target) && readFileSync(target).equals(readFileSync(source))) return target;
  const tmp = `${target}.tmp-${process.pid}`;
  copyFileSync(source, tmp);
  renameSync(tmp, target);
  return target;
}

export async function containerdRuntime(
  flags: ContainerdFlags,
): Promise<{ runtime: ContainerdRuntime; label: string }> {
  if (!existsSync(flags.socket))
    throw new Error(
      `no containerd socket at ${flags.socket} (mount the node's containerd socket, or --runtime process)`,
    );
  // A setting the agent cannot honour stops it: the pool's schema admits only known names.
  const caps = sandboxCapabilities(flags.capabilities);
  if ('error' in caps) throw new Error(`--capabilities-add/--capabilities-drop: ${caps.error}`);
  // PID 1 of every sandbox (it reaps orphans and forwards signals): no sandbox runs without it.
  if (!flags.initBinary || !existsSync(flags.initBinary))
    throw new Error(
      `the containerd runtime needs sandbox-init, the init of every sandbox (--init-binary or DO_SANDBOX_INIT${flags.initBinary ? `: ${flags.initBinary} does not exist` : ' is not set'})`,
    );
  const client = new ContainerdClient(flags.socket, flags.namespace);
  // A pool asking for what this node cannot do: the agent still runs, refuses every create with
  // the reason and reports it, so the pool shows Ready=False RuntimeUnsupported — never runc instead.
  let runtimeBinary: string | undefined;
  let unsupported: string | undefined;
  if (flags.runtimeType === 'gvisor') {
    if (flags.runscBinary && existsSync(flags.runscBinary)) runtimeBinary = flags.runscBinary;
    else
      unsupported = `runtimeType gvisor needs runsc on the node (--runsc-binary${flags.runscBinary ? ` ${flags.runscBinary} does not exist` : ' is not set'})`;
  } else if (flags.runtimeType !== 'container' && flags.runtimeType !== '')
    unsupported = `runtimeType ${flags.runtimeType} is not one of container, gvisor`;
  const disk = ephemeralStorageBytes(flags.ephemeralStorage || DEFAULT_SANDBOX_EPHEMERAL_STORAGE);
  if (typeof disk === 'string')
    throw new Error(`--default-ephemeral-storage (SANDBOX_DEFAULT_EPHEMERAL_STORAGE): ${disk}`);
  const network = sandboxNetwork(flags);
  const isolation = flags.runtimeType === 'gvisor' ? 'gvisor' : 'runc';
  const warm = parseWarmImages(flags.warm ?? '');
  // Bind-mounted by runc on the node: it must sit where the node sees it, in the I/O directory.
  mkdirSync(flags.ioDir, { recursive: true, mode: 0o700 });
  const initBinary = placeInit(flags.initBinary, flags.ioDir);
  const runtime = new ContainerdRuntime({
    client,
    agentName: flags.agentName,
    agentUid: flags.agentUid,
    agentNamespace: flags.agentNamespace,
    ioDir: flags.ioDir,
    network,
    runtimeBinary,
    runtimeRoot: flags.runtimeRoot,
    host: flags.host,
    defaults: {
      ...flags.defaults,
      cpu: flags.defaults?.cpu || DEFAULT_SANDBOX_CPU,
      memory: flags.defaults?.memory || DEFAULT_SANDBOX_MEMORY,
    },
    cgroupParent: cgroupParentOf(flags.cgroupParent),
    ephemeralStorageBytes: disk,
    initBinary,
    warm,
    unsupported,
    capabilities: caps.map(ociCapability),
    ...(flags.pullSecretsDir ? { pullAuth: pullSecretsAuth(flags.pullSecretsDir) } : {}),
  });
  return { runtime, label: `containerd/${isolation}` };
}

/** A quantity of bytes (`10Gi`, `500M`), at least 1Mi, or what is wrong with it. */
export function ephemeralStorageBytes(q: string): number | string {
  const bytes = parseQuantity(q);
  if (bytes === undefined || !Number.isFinite(bytes))
    return `${JSON.stringify(q)} is not a quantity of bytes (e.g. "10Gi")`;
  if (bytes < 2 ** 20) return `${q} is below the smallest limit, 1Mi`;
  return Math.round(bytes);
}
