/**
 * A private containerd for the local stack: its own root, state, sockets and registry hosts, all
 * under one directory (in the stack `<stateDir>/containerd`), never the host's /run/containerd
 * socket or /var/lib/containerd. The sandbox agent talks to it on `socket`, in `namespace`.
 *
 * Shims outlive containerd by design (each is its own process group), so they and the containers
 * under them are killed by stop(), not by a restart: a restart is a containerd outage, and real
 * containers survive those.
 *
 * Its shims and their runc calls are its children: they stay in containerd's cgroup and count in
 * its CPU (cpu-accounting.ts); the containers do not, runc moves each into the cgroup it names.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { chmod, mkdir, open, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { networkTagOf } from '../agent/containerd/setup.js';
import { cleanupSandboxNetworks } from '../agent/network/sandbox-network.js';
import { BaseComponent } from './components.js';
import { isAlive } from './process.js';

export interface ContainerdOptions {
  binary: string;
  /** Holds root/, state/, config.toml, certs.d/, bin/ (and the sockets when the path is short enough). */
  dir: string;
  /** Registries (`host:port`) pulled from over plain HTTP: the stack's own. */
  plainHttpRegistries: string[];
  /** gVisor's runsc; when set, `runscBinary` is a wrapper with the flags this host needs. */
  runsc?: string;
  logFile: string;
  readyTimeoutMs?: number;
  /** The stack runs a node: the kubelet's Pods through CRI (see renderContainerdConfig). */
  node?: NodeCri;
}

export interface NodeCri {
  /** The Pods' CNI network (node.ts renderCniConflist), written into `<dir>/net.d`. */
  cniConflist: string;
  /** The pause image's name, imported before the kubelet starts (no registry is reached for it). */
  sandboxImage: string;
}

/** Debian's containernetworking-plugins. */
export const DEBIAN_CNI_DIR = '/usr/lib/cni';

/** The namespace CRI pulls into, and the one the original fast-sandbox agent used. */
export const CONTAINERD_NAMESPACE = 'k8s.io';

/** sun_path is 108 bytes including the terminating NUL. */
const MAX_SOCKET_PATH = 107;

/**
 * `<dir>/containerd.sock` when it (and its `.ttrpc` sibling) fits in a unix socket address;
 * otherwise a short directory under /run named by a hash of `dir`, so deep state dirs still work
 * and each stack still has its own socket.
 */
export function containerdSocketPath(dir: string): string {
  const inDir = path.join(dir, 'containerd.sock');
  if (Buffer.byteLength(`${inDir}.ttrpc`) <= MAX_SOCKET_PATH) return inDir;
  const hash = createHash('sha256').update(dir).digest('hex').slice(0, 16);
  return path.join('/run/durable-operators', hash, 'containerd.sock');
}

/** TOML basic strings take JSON's escapes. */
const q = (s: string) => JSON.stringify(s);

export function renderContainerdConfig(c: {
  root: string;
  state: string;
  socket: string;
  dir: string;
  node?: { sandboxImage: string; runcRoot: string };
}): string {
  const cri = '[plugins."io.containerd.grpc.v1.cri"';
  // Keys of the CRI table itself come before its sub-tables (TOML puts keys under the last header).
  const nodeKeys = c.node
    ? [
        `  sandbox_image = ${q(c.node.sandboxImage)}`,
        // Root here lacks CAP_SYS_RESOURCE: CRI's -998 for the pause container would be refused.
        '  restrict_oom_score_adj = true',
      ]
    : [];
  const nodeTables = c.node
    ? [
        `  ${cri}.cni]`,
        `    bin_dir = ${q(DEBIAN_CNI_DIR)}`,
        `    conf_dir = ${q(path.join(c.dir, 'net.d'))}`,
        `  ${cri}.containerd.runtimes.runc]`,
        '    runtime_type = "io.containerd.runc.v2"',
        `  ${cri}.containerd.runtimes.runc.options]`,
        // The Pods' runc state apart from any other containerd's, as the agents' containers'.
        `    Root = ${q(c.node.runcRoot)}`,
      ]
    : [];
  return [
    'version = 2',
    `root = ${q(c.root)}`,
    `state = ${q(c.state)}`,
    '',
    '[grpc]',
    `  address = ${q(c.socket)}`,
    '',
    '[ttrpc]',
    `  address = ${q(`${c.socket}.ttrpc`)}`,
    '',
    // Defaults to /opt/containerd, outside the directory.
    '[plugins."io.containerd.internal.v1.opt"]',
    `  path = ${q(path.join(c.dir, 'opt'))}`,
    '',
    // CRI stays on: the agent pulls with its ImageService, and a node's kubelet runs its Pods
    // through it. Without a node it has no CNI config: it logs an error and carries on.
    `${cri}]`,
    ...nodeKeys,
    `  ${cri}.containerd]`,
    '    snapshotter = "overlayfs"',
    `  ${cri}.registry]`,
    `    config_path = ${q(path.join(c.dir, 'certs.d'))}`,
    ...nodeTables,
    '',
  ].join('\n');
}

/** certs.d/<host>/hosts.toml: pull from `host` over plain HTTP. */
export function renderHostsToml(host: string): string {
  const url = `http://${host}`;
  return [`server = ${q(url)}`, '', `[host.${q(url)}]`, '  capabilities = ["pull", "resolve"]', ''].join('\n');
}

/**
 * runsc with this host's flags: ptrace is its default platform anyway (no KVM needed); spelled
 * out. Every sandbox is in a network namespace of its own, wired by the agent and held to its
 * pool's policy there; `--network=host` has gVisor use that namespace through the host kernel's
 * stack, because this runsc (Debian's 2022 snapshot) takes any namespace of a kernel ≥ 6.x for
 * the root one and refuses its own netstack there (google/gvisor#10704, fixed in later runsc).
 * No `--ignore-cgroups`: cgroups v1 work here, and with it memory limits are not applied.
 */
export function renderRunscWrapper(runsc: string): string {
  return `#!/bin/sh\nexec ${runsc} --platform=ptrace --network=host "$@"\n`;
}

export class Containerd extends BaseComponent {
  constructor(readonly opts: ContainerdOptions) {
    super('containerd');
  }
  get socket(): string {
    return containerdSocketPath(this.opts.dir);
  }
  get namespace(): string {
    return CONTAINERD_NAMESPACE;
  }
  get root(): string {
    return path.join(this.opts.dir, 'root');
  }
  get state(): string {
    return path.join(this.opts.dir, 'state');
  }
  /**
   * The runc/runsc state root for this containerd's containers. The shim's default is
   * /run/containerd/runc/<namespace>, shared with every other containerd on the host; a client
   * sets this one as the `root` runc option when it creates a container.
   */
  get runcRoot(): string {
    return path.join(this.state, 'runc');
  }
  get runscBinary(): string | undefined {
    return this.opts.runsc ? path.join(this.opts.dir, 'bin', 'runsc-sandbox') : undefined;
  }
  static async start(opts: ContainerdOptions): Promise<Containerd> {
    const c = new Containerd(opts);
    await c.launch();
    return c;
  }
  protected async launch(): Promise<void> {
    const { opts } = this;
    const config = path.join(opts.dir, 'config.toml');
    const certsDir = path.join(opts.dir, 'certs.d');
    await mkdir(path.dirname(this.socket), { recursive: true });
    await rm(certsDir, { recursive: true, force: true }); // earlier runs' registry ports
    for (const host of opts.plainHttpRegistries) {
      await mkdir(path.join(certsDir, host), { recursive: true });
      await writeFile(path.join(certsDir, host, 'hosts.toml'), renderHostsToml(host));
    }
    const netD = path.join(opts.dir, 'net.d');
    await rm(netD, { recursive: true, force: true });
    if (opts.node) {
      await mkdir(netD, { recursive: true });
      await writeFile(path.join(netD, '10-durable-operators.conflist'), opts.node.cniConflist);
    }
    await writeFile(
      config,
      renderContainerdConfig({
        root: this.root,
        state: this.state,
        socket: this.socket,
        dir: opts.dir,
        ...(opts.node && { node: { sandboxImage: opts.node.sandboxImage, runcRoot: this.runcRoot } }),
      }),
    );
    if (opts.runsc && this.runscBinary) {
      await mkdir(path.dirname(this.runscBinary), { recursive: true });
      await writeFile(this.runscBinary, renderRunscWrapper(opts.runsc));
      await chmod(this.runscBinary, 0o755);
    }
    // The log is appended to across restarts: only this start's lines count.
    const logOffset = existsSync(opts.logFile) ? statSync(opts.logFile).size : 0;
    await this.spawnUntilReady(
      { binary: opts.binary, logFile: opts.logFile, args: ['--config', config] },
      async () =>
        (await logContains(opts.logFile, logOffset, 'containerd successfully booted')) &&
        (await canConnect(this.socket)),
      { timeoutMs: opts.readyTimeoutMs ?? 30_000, intervalMs: 50 },
    );
  }
  override async stop(): Promise<void> {
    await super.stop();
    await cleanupContainerd(this.opts.dir);
  }
}

/**
 * What a containerd using `dir` leaves behind once it is gone: kills its shims (their command
 * line names its socket) with every process under them, i.e. the containers, then unmounts what
 * is still mounted under `dir` (container root filesystems), deepest first. Also run at stack
 * start, for what a crashed run left.
 */
export async function cleanupContainerd(dir: string): Promise<void> {
  const socket = containerdSocketPath(dir);
  for (let pass = 0; pass < 5; pass++) {
    const pids = shimTrees(socket);
    if (!pids.length) break;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    for (let i = 0; i < 50 && pids.some(isAlive); i++) await sleep(100);
  }
  // The sandboxes' network namespaces and the agents' nftables tables (their containers are gone).
  await cleanupSandboxNetworks(networkTagOf(socket));
  for (const mountPoint of mountPointsUnder(readFileSync('/proc/self/mounts', 'utf8'), dir)) {
    // A plain unmount; a lazy one if something still holds it, so the directory can be removed.
    if (spawnSync('umount', [mountPoint], { stdio: 'ignore' }).status !== 0)
      spawnSync('umount', ['-l', mountPoint], { stdio: 'ignore' });
  }
}

/** Pids of the shims serving `socket` and of all their descendants. */
function shimTrees(socket: string): number[] {
  const children = new Map<number, number[]>();
  const roots: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    let stat: string;
    let argv: string[];
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue; // exited meanwhile
    }
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]); // after `pid (comm) state`
    children.set(ppid, [...(children.get(ppid) ?? []), pid]);
    if (path.basename(argv[0] ?? '').startsWith('containerd-shim') && argv.includes(socket)) roots.push(pid);
  }
  const out: number[] = [];
  for (let todo = roots; todo.length; todo = todo.flatMap((p) => children.get(p) ?? [])) out.push(...todo);
  return out;
}

/** Mount points at or under `dir` in a /proc/mounts text, deepest first. */
export function mountPointsUnder(mounts: string, dir: string): string[] {
  return mounts
    .split('\n')
    .map((line) => line.split(' ')[1])
    .filter((field): field is string => field !== undefined)
    .map((field) => field.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8))))
    .filter((mp) => mp === dir || mp.startsWith(`${dir}/`))
    .sort((a, b) => b.split('/').length - a.split('/').length);
}

async function logContains(file: string, offset: number, text: string): Promise<boolean> {
  const fh = await open(file, 'r');
  try {
    const { size } = await fh.stat();
    const buf = Buffer.alloc(Math.max(0, size - offset));
    await fh.read(buf, 0, buf.length, offset);
    return buf.includes(text);
  } finally {
    await fh.close();
  }
}

function canConnect(socket: string): Promise<boolean> {
  return new Promise((resolve) => {
    const conn = net.connect({ path: socket });
    conn.setTimeout(1000);
    conn.once('connect', () => {
      conn.destroy();
      resolve(true);
    });
    conn.once('error', () => resolve(false));
    conn.once('timeout', () => {
      conn.destroy();
      resolve(false);
    });
  });
}
