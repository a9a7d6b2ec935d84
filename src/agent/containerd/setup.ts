/**
 * Builds the agent's containerd runtime from its flags: the socket, the isolation the pool asks
 * for (`RUNTIME_TYPE` container → runc, gvisor → runsc), the network namespace sandboxes join,
 * and the I/O directory. Finding the agent Pod's network namespace follows the original: the
 * agent's own container ID from /proc/self/cgroup, then that container's spec in containerd.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ociCapability, sandboxCapabilities, type CapabilitiesSpec } from '../../domain/sandbox-capabilities.js';
import { ContainerdClient } from './client.js';
import { pullSecretsAuth } from './pull-secrets.js';
import { ContainerdRuntime, type ContainerdRuntimeOptions, type WarmImage } from './runtime.js';

/**
 * The limits of a sandbox when neither its create nor its pool's `sandboxResources` sets one
 * (review N3): sandboxes run outside the kubelet's accounting, so none runs unbounded. One core
 * and 512Mi, the size of a small hosted sandbox (E2B's default is 512 MiB); a pool sets its own.
 */
export const DEFAULT_SANDBOX_CPU = '1';
export const DEFAULT_SANDBOX_MEMORY = '512Mi';
/** Where sandboxes' cgroups go when `--cgroup-parent` is not given (cgroupfs path). */
export const DEFAULT_CGROUP_PARENT = '/fast-sandbox';

export interface ContainerdFlags {
  socket: string;
  namespace: string;
  /** `container` (runc) or `gvisor` (runsc), as the pool's runtimeType. */
  runtimeType: string;
  /** runsc, or a wrapper that runs it with this node's flags; needed for gvisor. */
  runscBinary?: string;
  /** `discover` (the agent Pod's, found through containerd), `self` (this process's), `none`, or a path. */
  netns: string;
  ioDir: string;
  /** runc's state directory (`--root`), when not its default. */
  runtimeRoot?: string;
  agentName: string;
  agentUid?: string;
  agentNamespace?: string;
  host?: string;
  defaults?: ContainerdRuntimeOptions['defaults'];
  /** sandbox-init, for warm containers. */
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

/** The agent's container ID, from the cgroup paths the kubelet/containerd give it. */
export function ownContainerId(procSelfCgroup: string): string | undefined {
  for (const line of procSelfCgroup.split('\n')) {
    const p = line.split(':')[2] ?? '';
    const m = /cri-containerd[-:]([0-9a-f]{64})/.exec(p) ?? /\/([0-9a-f]{64})(?:\.scope)?$/.exec(p);
    if (m) return m[1];
  }
  return undefined;
}

async function discoverNetns(client: ContainerdClient): Promise<string> {
  const id = ownContainerId(readFileSync('/proc/self/cgroup', 'utf8'));
  if (!id)
    throw new Error(
      'cannot find the agent container in /proc/self/cgroup to join its Pod network namespace; pass --sandbox-netns',
    );
  const c = await client.getContainer(id);
  const spec = JSON.parse(c.spec?.value.toString('utf8') ?? '{}') as {
    linux?: { namespaces?: { type: string; path?: string }[] };
  };
  const path = spec.linux?.namespaces?.find((n) => n.type === 'network')?.path;
  if (!path) throw new Error(`the agent container ${id} has no network namespace path in containerd`);
  return path;
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
  const netnsPath =
    flags.netns === 'discover'
      ? await discoverNetns(client)
      : flags.netns === 'self'
        ? `/proc/${process.pid}/ns/net`
        : flags.netns === 'none'
          ? undefined
          : flags.netns;
  const isolation = flags.runtimeType === 'gvisor' ? 'gvisor' : 'runc';
  const warm = parseWarmImages(flags.warm ?? '');
  let initBinary: string | undefined;
  if (warm.length) {
    if (!flags.initBinary || !existsSync(flags.initBinary))
      throw new Error(
        `warm images need sandbox-init (--init-binary${flags.initBinary ? ` ${flags.initBinary} does not exist` : ' is not set'})`,
      );
    // Bind-mounted by runc on the node: it must sit where the node sees it, in the I/O directory.
    mkdirSync(flags.ioDir, { recursive: true, mode: 0o700 });
    initBinary = path.join(flags.ioDir, 'sandbox-init');
    if (path.resolve(flags.initBinary) !== initBinary) copyFileSync(flags.initBinary, initBinary);
  }
  const runtime = new ContainerdRuntime({
    client,
    agentName: flags.agentName,
    agentUid: flags.agentUid,
    agentNamespace: flags.agentNamespace,
    ioDir: flags.ioDir,
    netnsPath,
    runtimeBinary,
    runtimeRoot: flags.runtimeRoot,
    host: flags.host,
    defaults: {
      ...flags.defaults,
      cpu: flags.defaults?.cpu || DEFAULT_SANDBOX_CPU,
      memory: flags.defaults?.memory || DEFAULT_SANDBOX_MEMORY,
    },
    cgroupParent: cgroupParentOf(flags.cgroupParent),
    initBinary,
    warm,
    unsupported,
    capabilities: caps.map(ociCapability),
    ...(flags.pullSecretsDir ? { pullAuth: pullSecretsAuth(flags.pullSecretsDir) } : {}),
  });
  return { runtime, label: `containerd/${isolation}` };
}
