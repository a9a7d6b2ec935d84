/**
 * Builds the agent's containerd runtime from its flags: the socket, the isolation the pool asks
 * for (`RUNTIME_TYPE` container → runc, gvisor → runsc), the network namespace sandboxes join,
 * and the I/O directory. Finding the agent Pod's network namespace follows the original: the
 * agent's own container ID from /proc/self/cgroup, then that container's spec in containerd.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import path from 'node:path';
import { ContainerdClient } from './client.js';
import { pullSecretsAuth } from './pull-secrets.js';
import { ContainerdRuntime, type ContainerdRuntimeOptions, type WarmImage } from './runtime.js';

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
  /** sandbox-init, PID 1 of every sandbox container. */
  initBinary?: string;
  /** `image=count,image2=count` (count 1 when left out): the pool's warm images. */
  warm?: string;
  /** Where the pool's image pull Secrets are mounted (docker config JSON files). */
  pullSecretsDir?: string;
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
  // Bind-mounted by runc on the node: it must sit where the node sees it, in the I/O directory.
  mkdirSync(flags.ioDir, { recursive: true, mode: 0o700 });
  const initBinary = placeInit(flags.initBinary, flags.ioDir);
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
    defaults: flags.defaults,
    initBinary,
    warm,
    unsupported,
    ...(flags.pullSecretsDir ? { pullAuth: pullSecretsAuth(flags.pullSecretsDir) } : {}),
  });
  return { runtime, label: `containerd/${isolation}` };
}
