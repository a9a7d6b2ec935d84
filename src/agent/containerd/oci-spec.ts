/**
 * The OCI runtime spec of a sandbox's container, decided from the image's config, the create
 * request and the agent's limits. Pure: no I/O, unit-tested.
 *
 * Built on containerd's own default spec (./oci-defaults.json, generated from its Go package
 * `oci` by `npm run seccomp`, ./seccomp-gen): its mounts, new PID, mount, IPC, UTS and network
 * namespaces (the network one made and wired by the agent: src/agent/network; its resolv.conf
 * the one bind besides sandbox-init), the image's root filesystem and nothing of the agent's,
 * `noNewPrivileges`, masked and read-only /proc and /sys paths, the device cgroup's deny-all,
 * RLIMIT_NOFILE and the default PATH; containerd's default seccomp profile (./seccomp.ts). The
 * project's own: containerd's default capability set less five (or the pool's), the image's
 * user, the highest OOM score. Limits: memory (no swap), CPU quota, pids.
 */
import { DEFAULT_CAPABILITY_NAMES, ociCapability } from '../../domain/sandbox-capabilities.js';
import generated from './oci-defaults.json' with { type: 'json' };
import { defaultSeccompProfile } from './seccomp.js';

/** The parts of containerd's default spec (oci-defaults.json, written by seccomp-gen/oci.go) used here. */
interface ContainerdDefaults {
  containerd: string;
  spec: {
    ociVersion: string;
    process: {
      env: string[];
      cwd: string;
      capabilities: { bounding: string[] };
      rlimits: { type: string; hard: number; soft: number }[];
      noNewPrivileges: boolean;
    };
    root: { path: string };
    mounts: { destination: string; type: string; source: string; options: string[] }[];
    linux: {
      resources: { devices: { allow: boolean; access: string }[] };
      namespaces: { type: string }[];
      maskedPaths: string[];
      readonlyPaths: string[];
    };
  };
}

const CONTAINERD: ContainerdDefaults['spec'] = (generated as ContainerdDefaults).spec;

/** containerd's default capabilities (`defaultUnixCaps`, OCI names), which the sandboxes' default set is drawn from. */
export const CONTAINERD_DEFAULT_CAPABILITIES: readonly string[] = CONTAINERD.process.capabilities.bounding;

/** The parts of an OCI image config (`config` of application/vnd.oci.image.config.v1+json) used here. */
export interface ImageConfig {
  User?: string;
  Env?: string[] | null;
  Entrypoint?: string[] | null;
  Cmd?: string[] | null;
  WorkingDir?: string;
}

export interface SandboxLimits {
  /** CPU quota in millicores (1000 = one core), or undefined for none. */
  milliCpu?: number;
  /** Memory limit in bytes (swap included), or undefined for none. */
  memoryBytes?: number;
  /** Most processes/threads at once. */
  pids?: number;
}

export interface ProcessRequest {
  command?: string[];
  args?: string[];
  env?: Record<string, string>;
  workingDir?: string;
}

/**
 * The OOM killer takes a sandbox before anything else on the node (review N3): 1000, as the
 * kubelet gives a BestEffort Pod, since sandboxes sit outside the Pods' accounting. Raising a
 * score needs no privilege; lowering it would (CAP_SYS_RESOURCE), so the maximum always applies.
 */
export const SANDBOX_OOM_SCORE_ADJ = 1000;

/**
 * The default capabilities (OCI names): containerd's `defaultUnixCaps` less NET_RAW, MKNOD,
 * SETFCAP, SYS_CHROOT and AUDIT_WRITE (why: src/domain/sandbox-capabilities.ts), in its order.
 */
export const DEFAULT_CAPABILITIES: readonly string[] = CONTAINERD_DEFAULT_CAPABILITIES.filter((c) =>
  DEFAULT_CAPABILITY_NAMES.some((n) => ociCapability(n) === c),
);

const CPU_PERIOD_US = 100_000;

/**
 * The process a sandbox runs, as Kubernetes resolves a container's: `command` replaces the
 * image's Entrypoint (and drops its Cmd), `args` replace its Cmd.
 */
export function resolveArgs(image: ImageConfig, req: ProcessRequest): string[] {
  const entrypoint = req.command?.length ? req.command : (image.Entrypoint ?? []);
  const cmd = req.args?.length ? req.args : req.command?.length ? [] : (image.Cmd ?? []);
  return [...entrypoint, ...cmd];
}

/** The image's Env, then the request's (a name set twice: the request wins), then `extra`. */
export function resolveEnv(image: ImageConfig, req: ProcessRequest, extra: Record<string, string>): string[] {
  const env = new Map<string, string>();
  for (const kv of image.Env ?? []) {
    const i = kv.indexOf('=');
    if (i > 0) env.set(kv.slice(0, i), kv.slice(i + 1));
  }
  for (const [k, v] of Object.entries({ ...req.env, ...extra })) env.set(k, v);
  // containerd's default environment (PATH) for what neither sets.
  for (const kv of CONTAINERD.process.env) {
    const i = kv.indexOf('=');
    if (!env.has(kv.slice(0, i))) env.set(kv.slice(0, i), kv.slice(i + 1));
  }
  return [...env].map(([k, v]) => `${k}=${v}`);
}

/**
 * The image's `User` as uid/gid. Numeric here (`1000`, `1000:1000`): the image store resolves
 * names through the image's own /etc/passwd first (image-users.ts).
 */
export function resolveUser(image: ImageConfig): { uid: number; gid: number } | { error: string } {
  const user = (image.User ?? '').trim();
  if (user === '') return { uid: 0, gid: 0 };
  const [u, g] = user.split(':');
  const num = (s: string | undefined) => (s !== undefined && /^\d+$/.test(s) ? Number(s) : undefined);
  const uid = num(u);
  const gid = g === undefined ? uid : num(g);
  if (uid === undefined || gid === undefined)
    return {
      error: `the image's user ${JSON.stringify(user)} is not numeric (uid or uid:gid)`,
    };
  return { uid, gid };
}

export interface ContainerSpecInput {
  image: ImageConfig;
  request: ProcessRequest;
  /** The sandbox's own variables (SANDBOX_ID, …), set after the request's. */
  extraEnv: Record<string, string>;
  /**
   * sandbox-init, the container's PID 1, bind-mounted read-only from `source` at `path`: it runs
   * the sandbox's process as its child — the args after `--`, or (`warm`) those the agent writes
   * on its stdin when a sandbox takes the container.
   */
  init?: { source: string; path: string; warm?: boolean };
  hostname: string;
  /** The sandbox's own network namespace, wired by the agent (src/agent/network), or undefined for a new, empty one. */
  netnsPath?: string;
  cgroupsPath: string;
  limits: SandboxLimits;
  /** Read-only bind mounts; `exec` allows running what it holds. */
  binds?: { source: string; destination: string; exec?: boolean }[];
  arch?: NodeJS.Architecture;
  /** `os.release()`: containerd's profile allows ptrace from kernel 4.8 on. */
  kernelRelease?: string;
  /** The process's capabilities (OCI names; the pool's setting), DEFAULT_CAPABILITIES when unset. */
  capabilities?: readonly string[];
  /** OCI annotations: read by the runtime on the host (the runc shim's group), never seen inside. */
  annotations?: Record<string, string>;
}

/** An OCI runtime spec as containerd takes it; `process` typed, as the agent keeps it for exec. */
export type OciSpec = Record<string, unknown> & { process: Record<string, unknown> };

export function containerSpec(input: ContainerSpecInput): OciSpec {
  const user = resolveUser(input.image);
  if ('error' in user) throw new Error(user.error);
  const { init } = input;
  const command = init?.warm ? [] : resolveArgs(input.image, input.request);
  if (!init?.warm && command.length === 0)
    throw new Error('the image has no Entrypoint or Cmd and the sandbox gives no command: nothing to run');
  const args = !init ? command : init.warm ? [init.path] : [init.path, '--', ...command];
  const binds = [
    ...(init ? [{ source: init.source, destination: init.path, exec: true }] : []),
    ...(input.binds ?? []),
  ];
  // Fresh arrays: the spec is serialised, and the seccomp profile follows the same set.
  const caps = [...(input.capabilities ?? DEFAULT_CAPABILITIES)];
  const { limits } = input;
  return {
    ociVersion: CONTAINERD.ociVersion,
    process: {
      terminal: false,
      user,
      args,
      env: resolveEnv(input.image, input.request, input.extraEnv),
      cwd: input.request.workingDir || input.image.WorkingDir || CONTAINERD.process.cwd,
      capabilities: { bounding: caps, effective: [...caps], permitted: [...caps] },
      rlimits: CONTAINERD.process.rlimits.map((r) => ({ ...r })),
      noNewPrivileges: CONTAINERD.process.noNewPrivileges,
      oomScoreAdj: SANDBOX_OOM_SCORE_ADJ,
    },
    root: { path: CONTAINERD.root.path, readonly: false },
    hostname: input.hostname,
    ...(input.annotations ? { annotations: input.annotations } : {}),
    mounts: [
      ...CONTAINERD.mounts.map((m) => ({ ...m, options: [...m.options] })),
      ...binds.map((b) => ({
        destination: b.destination,
        type: 'bind',
        source: b.source,
        options: ['rbind', 'ro', 'nosuid', 'nodev', ...(b.exec ? [] : ['noexec'])],
      })),
    ],
    linux: {
      namespaces: CONTAINERD.linux.namespaces.map((ns) =>
        ns.type === 'network' && input.netnsPath ? { ...ns, path: input.netnsPath } : { ...ns },
      ),
      cgroupsPath: input.cgroupsPath,
      resources: linuxResources(limits),
      seccomp: defaultSeccompProfile(caps, input.arch, input.kernelRelease),
      maskedPaths: [...CONTAINERD.linux.maskedPaths],
      readonlyPaths: [...CONTAINERD.linux.readonlyPaths],
    },
  };
}

/** The cgroup limits (`linux.resources`); devices: containerd's deny-all, but runc's defaults (runc adds those). */
export function linuxResources(limits: SandboxLimits): Record<string, unknown> {
  return {
    devices: CONTAINERD.linux.resources.devices.map((d) => ({ ...d })),
    ...(limits.memoryBytes !== undefined ? { memory: { limit: limits.memoryBytes, swap: limits.memoryBytes } } : {}),
    ...(limits.milliCpu !== undefined
      ? { cpu: { quota: Math.max(1000, Math.round((limits.milliCpu * CPU_PERIOD_US) / 1000)), period: CPU_PERIOD_US } }
      : {}),
    ...(limits.pids !== undefined ? { pids: { limit: limits.pids } } : {}),
  };
}

const BINARY_SUFFIX: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50 };
const DECIMAL_SUFFIX: Record<string, number> = { '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, m: 1e-3 };

/** A Kubernetes quantity (`512Mi`, `1G`, `0.5`, `250m`) as a number, or undefined when it is not one. */
export function parseQuantity(q: string): number | undefined {
  const m = /^([0-9]+(?:\.[0-9]+)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P|m)?$/.exec(q.trim());
  if (!m) return undefined;
  const n = Number(m[1]);
  const suffix = m[2] ?? '';
  return n * (BINARY_SUFFIX[suffix] ?? DECIMAL_SUFFIX[suffix]!);
}

/** The original's `cpu`/`memory` strings (Kubernetes quantities) and a pids count as limits, or what is wrong. */
export function parseLimits(spec: { cpu?: string; memory?: string; pids?: number }): SandboxLimits | { error: string } {
  const out: SandboxLimits = {};
  if (spec.cpu) {
    const cores = parseQuantity(spec.cpu);
    if (cores === undefined || cores <= 0)
      return { error: `cpu ${JSON.stringify(spec.cpu)} is not a CPU quantity (e.g. "500m", "2")` };
    out.milliCpu = Math.round(cores * 1000);
    if (out.milliCpu < 10) return { error: `cpu ${spec.cpu} is below the smallest limit, 10m` };
  }
  if (spec.memory) {
    const bytes = parseQuantity(spec.memory);
    if (bytes === undefined || bytes <= 0 || !Number.isInteger(Math.round(bytes)))
      return { error: `memory ${JSON.stringify(spec.memory)} is not a memory quantity (e.g. "256Mi", "1G")` };
    out.memoryBytes = Math.round(bytes);
    if (out.memoryBytes < 4 * 2 ** 20) return { error: `memory ${spec.memory} is below the smallest limit, 4Mi` };
  }
  if (spec.pids !== undefined) {
    if (!Number.isInteger(spec.pids) || spec.pids < 1) return { error: `pids ${spec.pids} must be a positive integer` };
    out.pids = spec.pids;
  }
  return out;
}
