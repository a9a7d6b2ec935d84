/**
 * The containerd runtime: each sandbox is a containerd container (namespace `k8s.io`, as the
 * original's agent), created from its image with the spec `oci-spec.ts` decides, run by the runc
 * v2 shim — with runc, or with gVisor's runsc as the shim's binary. A cold sandbox's container ID
 * is its sandbox ID (its writable snapshot is keyed by it); its labels (`fast-sandbox.io/*`) say
 * whose it is, so a restarted agent finds and re-adopts its sandboxes (containerd and the shims
 * keep them running while the agent is down).
 *
 * PID 1 of every container is `sandbox-init` (src/agent/init, bind-mounted read-only): it runs the
 * sandbox's process as its child, reaps orphans, forwards signals to it and exits with its status.
 * It first answers on stdout whether the command can run (the answer is stripped from the log), so
 * a command the image lacks is refused at create, cold or warm.
 *
 * Warm containers: for the images the pool names, the agent keeps containers created and started
 * ahead of time (`warm-…`), whose sandbox-init waits on its stdin. A create of such an image takes
 * one: its labels and spec are rewritten to the sandbox's, its limits updated if they differ from
 * the pool's, and the sandbox's args/env/cwd written to sandbox-init, which starts them. The caller
 * pays none of container create and task start; the pool's next warm container is made after.
 *
 * Output: the shim writes the sandbox's stdout/stderr into FIFOs under the agent's I/O directory
 * (which must be the same path on the node and in the agent Pod); the agent reads them into a
 * bounded log buffer. A stop signals the container's init, then SIGKILLs every process of the
 * container; its PID namespace goes with its init, so nothing it started (daemonized or not)
 * survives. Then task, container, snapshot and FIFOs are removed.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { constants as fsc, open as fsOpen, readFileSync } from 'node:fs';
import { mkdir, open, rm, type FileHandle } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { AgentSandboxSpec, ReapResponse } from '../api.js';
import { DEFAULT_LOG_LIMIT_BYTES, LogBuffer } from '../log-buffer.js';
import {
  SandboxNotRunningError,
  SandboxSpecError,
  type AdoptedSandbox,
  type ExecExit,
  type ExecSink,
  type RuntimeStatus,
  type SandboxExit,
  type SandboxRuntime,
  type StartedAs,
} from '../runtime.js';
import {
  OCI_TYPE_URL,
  decodeEvent,
  isAlreadyExists,
  isNotFound,
  jsonAny,
  runcOptions,
  type ContainerdClient,
} from './client.js';
import { reapDeadAgents } from './reaper.js';
import { ImageStore, type RegistryAuth, type ResolvedImage } from './images.js';
import type { WiredSandbox } from '../../domain/sandbox-network.js';
import type { SandboxNetwork, Wiring } from '../network/sandbox-network.js';
import {
  containerSpec,
  linuxResources,
  parseLimits,
  resolveArgs,
  resolveEnv,
  type OciSpec,
  type SandboxLimits,
} from './oci-spec.js';

const execFileP = promisify(execFile);
const openFd = promisify(fsOpen);

/** The original's container labels, plus what a restarted agent needs to serve the sandbox again. */
export const LABEL = {
  managed: 'fast-sandbox.io/managed',
  agentName: 'fast-sandbox.io/agent-name',
  agentUid: 'fast-sandbox.io/agent-uid',
  namespace: 'fast-sandbox.io/namespace',
  id: 'fast-sandbox.io/id',
  claimUid: 'fast-sandbox.io/claim-uid',
  sandboxName: 'fast-sandbox.io/sandbox-name',
  image: 'fast-sandbox.io/image',
  createdAt: 'fast-sandbox.io/created-at',
  exposedPorts: 'fast-sandbox.io/exposed-ports',
  fingerprint: 'fast-sandbox.io/spec-fingerprint',
  /** A warm container no sandbox has taken yet. */
  warm: 'fast-sandbox.io/warm',
  /** Its network: namespace name, host-side interface, address (src/agent/network). */
  netns: 'fast-sandbox.io/netns',
  hostIf: 'fast-sandbox.io/host-if',
  ip: 'fast-sandbox.io/ip',
} as const;

export const RUNC_SHIM = 'io.containerd.runc.v2';
/**
 * The runc v2 shim's grouping annotation: containers whose spec carries the same value share one
 * shim process (the first one's `start` serves, later ones join it; it exits once its last
 * container is deleted). One shim per agent instead of one per sandbox: a life no longer starts
 * and stops a shim daemon (bench/RESULTS.md, issue 35). The shim is the host side; each container
 * keeps its own namespaces, cgroup and runc state.
 */
export const SHIM_GROUP_ANNOTATION = 'io.containerd.runc.v2.group';
export const DEFAULT_SNAPSHOTTER = 'overlayfs';
/** A fork bomb stays inside its sandbox: the default when neither the request nor the pool sets one. */
export const DEFAULT_PIDS_LIMIT = 1024;
/** How often each running sandbox's writable layer is measured against its ephemeral-storage limit. */
export const DISK_CHECK_MS = 10_000;

export interface ContainerdRuntimeOptions {
  client: ContainerdClient;
  /** The agent Pod's name and UID and namespace (labels; the agent re-adopts containers labelled with its name). */
  agentName: string;
  agentUid?: string;
  agentNamespace?: string;
  /** Where the stdio FIFOs live; the same path on the node and in the agent. */
  ioDir: string;
  /** Wires each container's own network namespace; without it a container gets an empty one (no network). */
  network?: SandboxNetwork;
  /** The OCI runtime binary the shim runs: `runc` (default) or a runsc (gVisor). */
  runtimeBinary?: string;
  /** The OCI runtime's state directory (runc `--root`), when not its default. */
  runtimeRoot?: string;
  snapshotter?: string;
  /** Parent of each sandbox's cgroup (cgroupfs path). */
  cgroupParent?: string;
  /** Limits for sandboxes that set none (the pool's `sandboxResources`). */
  defaults?: { cpu?: string; memory?: string; pids?: number };
  /**
   * The most a sandbox's writable layer (its snapshot's upper directory, as containerd measures
   * it) may take, in bytes; past it the agent kills the sandbox (EphemeralStorageExceeded).
   */
  ephemeralStorageBytes?: number;
  /** SANDBOX_HOST: where the sandbox's ports are reached (the Pod IP). */
  host?: string;
  /** Why this node cannot run what the pool asks (every create is refused with it). */
  unsupported?: string;
  /** `sandbox-init` (static), bind-mounted into every container as its PID 1. */
  initBinary: string;
  /** The images to keep warm containers of, and how many of each. */
  warm?: WarmImage[];
  logLimitBytes?: number;
  pullAuth?: (ref: string) => RegistryAuth | undefined;
  /** The sandboxes' capabilities (OCI names; the pool's sandboxSecurityContext), else the default set. */
  capabilities?: readonly string[];
}

export interface WarmImage {
  image: string;
  count: number;
}

/** How long a refill waits after a warm create while the image has warm containers left. */
const REFILL_AFTER_MS = 250;

/** Where sandbox-init is mounted in a container. */
export const INIT_PATH = '/.fast-sandbox/init';

interface Reader {
  ended: Promise<void>;
  /** When it last read something (ms since the epoch). */
  lastData: number;
  close(): void;
}

/** A warm container, started and waiting in sandbox-init for the sandbox it will become. */
interface WarmSlot {
  containerId: string;
  image: ResolvedImage;
  spec: Record<string, unknown>;
  limits: SandboxLimits;
  cgroupsPath: string;
  pid: number;
  logs: LogBuffer;
  readers: Reader[];
  stdin: FileHandle;
  /** sandbox-init's answer line. */
  answer: Promise<string>;
  wiring?: Wiring;
}

interface Entry {
  containerId: string;
  logs: LogBuffer;
  /** The container's process (exec runs with its env, cwd, user, capabilities). */
  process: Record<string, unknown>;
  cgroupsPath: string;
  exit?: SandboxExit;
  exited: Promise<void>;
  stopping: boolean;
  oom: boolean;
  /** Killed by the agent for a writable layer past its ephemeral-storage limit. */
  overDisk?: boolean;
  pid: number;
  waiting: AbortController;
  removing?: Promise<void>;
}

/** A container's network as labels (none when it has no network of its own). */
function wiringLabels(w: Wiring | undefined): Record<string, string> {
  return w ? { [LABEL.netns]: w.netns, [LABEL.hostIf]: w.hostIf, [LABEL.ip]: w.ip } : {};
}

const SIGNAL_NAMES = new Map(Object.entries(os.constants.signals).map(([k, v]) => [v, k as NodeJS.Signals]));

/** containerd's exit status (128+n for a signal) as code/signal. */
function exitOf(status: number): { code: number | null; signal: NodeJS.Signals | null } {
  const signal = status > 128 ? SIGNAL_NAMES.get(status - 128) : undefined;
  return signal ? { code: null, signal } : { code: status, signal: null };
}

/** Did the kernel OOM-kill something in this cgroup? (v1 memory.oom_control, v2 memory.events) */
function cgroupSawOom(cgroupsPath: string): boolean {
  for (const [file, key] of [
    [`/sys/fs/cgroup/memory${cgroupsPath}/memory.oom_control`, 'oom_kill'],
    [`/sys/fs/cgroup${cgroupsPath}/memory.events`, 'oom_kill'],
  ] as const) {
    try {
      const m = new RegExp(`^${key} (\\d+)$`, 'm').exec(readFileSync(file, 'utf8'));
      if (m) return Number(m[1]) > 0;
    } catch {
      // not this cgroup version, or gone
    }
  }
  return false;
}

/**
 * Reads a FIFO the shim writes. Opened non-blocking (it succeeds before the writer comes) and
 * read through a libuv pipe: no thread is held, and the end comes when the shim closes its side.
 * Read as an async iteration: while `onData` is busy the FIFO is not read, so a slow consumer
 * (an exec's client) fills the pipe and pauses the writer, instead of a buffer growing here.
 */
async function readFifo(file: string, onData: (c: Buffer) => void | Promise<void>): Promise<Reader> {
  // A plain fd, not a FileHandle: the socket owns and closes it (a FileHandle would close it
  // again when collected — EBADF, fatal).
  const fd = await openFd(file, fsc.O_RDONLY | fsc.O_NONBLOCK);
  const sock = new net.Socket({ fd, readable: true, writable: false });
  const reader: Reader = { lastData: Date.now(), ended: Promise.resolve(), close: () => sock.destroy() };
  reader.ended = (async () => {
    try {
      for await (const c of sock as AsyncIterable<Buffer>) {
        reader.lastData = Date.now();
        await onData(c);
      }
    } catch {
      // destroyed (closed by us) or the pipe failed: the end either way
    }
  })();
  return reader;
}

/** Signals a container's task (every process with `all`); one already gone or stopped is done. */
async function signalContainer(
  client: ContainerdClient,
  containerId: string,
  sig: NodeJS.Signals,
  all: boolean,
): Promise<void> {
  await client.kill(containerId, os.constants.signals[sig], { all }).catch(async (err: unknown) => {
    if (isNotFound(err) || /process already finished|not running/i.test((err as Error).message)) return;
    // runsc answers a kill of a sandbox that is going away with "connection refused" from its
    // control server: nothing left to signal if the task has stopped.
    const task = await client.getTask(containerId).catch((e: unknown) => (isNotFound(e) ? undefined : null));
    if (task === undefined || task?.status === 'STOPPED') return;
    throw err;
  });
}

/** A container's task (killed first if it runs), the container and its snapshot, whichever exist. */
export async function removeContainer(
  client: ContainerdClient,
  snapshotter: string,
  containerId: string,
): Promise<void> {
  const tolerate = (err: unknown) => {
    if (!isNotFound(err)) throw err;
  };
  await client.deleteTask(containerId).catch(async (err: unknown) => {
    if (isNotFound(err)) return;
    // Still running (a create that failed half-way, a warm container): kill it first.
    await signalContainer(client, containerId, 'SIGKILL', true);
    await client.wait(containerId, '', AbortSignal.timeout(10_000)).catch(() => undefined);
    await client.deleteTask(containerId).catch(tolerate);
  });
  await client.deleteContainer(containerId).catch(tolerate);
  await client.removeSnapshot(snapshotter, containerId).catch(tolerate);
}

/** How long an exec's stdin FIFO may wait for the shim to open its read end (it does so as the exec starts). */
const STDIN_OPEN_TIMEOUT_MS = 10_000;

/**
 * Writes `data` into a FIFO the shim reads (an exec's stdin) and closes it; resolves when all of
 * it is in the FIFO, or when `stop` (the command ended) or the shim closing its end (EPIPE: the
 * command exited without reading it all) leaves nobody to read the rest. Opened write-only and
 * non-blocking: that fails with ENXIO until the shim's read end is open, so it is retried — a
 * blocking open would hold one of libuv's few threads for as long as the shim never came. Like
 * the readers, a plain fd owned by the socket. The shim keeps a write end of its own: the command
 * sees EOF only after `closeStdin` too.
 */
async function writeFifo(file: string, data: Buffer, stop: AbortSignal): Promise<void> {
  const deadline = Date.now() + STDIN_OPEN_TIMEOUT_MS;
  let fd: number | undefined;
  while (fd === undefined) {
    if (stop.aborted) return;
    try {
      fd = await openFd(file, fsc.O_WRONLY | fsc.O_NONBLOCK);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENXIO') throw err;
      if (Date.now() > deadline)
        throw new Error(`the shim did not open the command's stdin in ${STDIN_OPEN_TIMEOUT_MS} ms`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }
  const sock = new net.Socket({ fd, readable: false, writable: true });
  const onStop = () => sock.destroy();
  stop.addEventListener('abort', onStop, { once: true });
  try {
    await new Promise<void>((resolve, reject) => {
      sock.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EPIPE' ? resolve() : reject(err)));
      sock.once('close', () => resolve());
      sock.end(data);
    });
  } finally {
    stop.removeEventListener('abort', onStop);
    sock.destroy();
  }
}

/**
 * Waits until the readers reach the end of their FIFOs — output still flowing is waited for, at
 * the consumer's pace — or until nothing came for `quietMs` (a process that left a daemon holding
 * the pipe open would otherwise keep it open forever).
 */
async function drained(readers: Reader[], quietMs = 2000): Promise<void> {
  let done = false;
  const all = Promise.all(readers.map((r) => r.ended)).then(() => (done = true));
  while (!done) {
    const idle = Date.now() - Math.max(...readers.map((r) => r.lastData));
    if (idle >= quietMs) return;
    await Promise.race([all, new Promise((r) => setTimeout(r, quietMs - idle))]);
  }
}

/**
 * The readers of a container's stdout and stderr: stdout's first line is sandbox-init's answer;
 * the rest of both is the sandbox's log. Only stdout carries the answer: the process may write to
 * stderr at once (a shell's "can't fork"), and the two FIFOs are read in no set order, so what
 * stderr brings before the answer is held until it has come.
 */
export function answerThenLog(logs: LogBuffer): {
  onStdout(c: Buffer): void;
  onStderr(c: Buffer): void;
  answer: Promise<string>;
} {
  let head: Buffer = Buffer.alloc(0);
  let answered = false;
  const early: Buffer[] = [];
  let resolve!: (line: string) => void;
  const answer = new Promise<string>((r) => (resolve = r));
  return {
    answer,
    onStdout(c) {
      if (answered) return logs.append(c);
      head = Buffer.concat([head, c]);
      const nl = head.indexOf(0x0a);
      if (nl < 0) return;
      answered = true;
      resolve(head.subarray(0, nl).toString('utf8'));
      for (const e of early.splice(0)) logs.append(e);
      logs.append(head.subarray(nl + 1));
    },
    onStderr(c) {
      if (answered) return logs.append(c);
      early.push(c);
    },
  };
}

/** Waits for sandbox-init's answer: the sandbox's process starts, or the create is refused with why it cannot. */
async function startedBy(answerLine: Promise<string>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const line = await Promise.race([
    answerLine,
    new Promise<string>((_, reject) => {
      // As long as a containerd call may take (CALL_TIMEOUT_MS): on a node a sandbox's fork bomb
      // keeps busy, 10 s refused other sandboxes' creates (seen in CI).
      timer = setTimeout(() => reject(new Error('sandbox-init did not answer in 30 s')), 30_000);
    }),
  ]).finally(() => clearTimeout(timer));
  let answer: { ok?: boolean; error?: string };
  try {
    answer = JSON.parse(line) as typeof answer;
  } catch {
    throw new Error(`sandbox-init answered ${JSON.stringify(line.slice(0, 200))}`);
  }
  if (!answer.ok) throw new SandboxSpecError(`cannot start the sandbox: ${answer.error ?? 'unknown error'}`);
}

export class ContainerdRuntime implements SandboxRuntime {
  readonly name = 'containerd';
  /** The sandboxes, by sandbox ID. */
  private readonly entries = new Map<string, Entry>();
  readonly images: ImageStore;
  private readonly warm = new Map<string, WarmSlot[]>();
  /** Why an image's warm containers cannot be made (the last failure), for the agent's log and status. */
  readonly warmErrors = new Map<string, string>();
  private filling?: Promise<void>;
  private refill = false;
  private events?: { cancel(): void };
  private closed = false;
  private readonly diskChecks?: NodeJS.Timeout;
  private checkingDisks = false;

  constructor(private readonly opts: ContainerdRuntimeOptions) {
    this.images = new ImageStore(opts.client, opts.pullAuth);
    this.watchOom();
    if (opts.ephemeralStorageBytes !== undefined)
      this.diskChecks = setInterval(() => void this.checkDisks(), DISK_CHECK_MS).unref();
  }

  /**
   * Measures each running sandbox's writable layer and kills those past the ephemeral-storage
   * limit, as the kubelet evicts a Pod past its own: a sandbox runs outside the kubelet's
   * accounting, and a full node disk would take every Pod of the node with it.
   */
  async checkDisks(): Promise<void> {
    const limit = this.opts.ephemeralStorageBytes;
    if (limit === undefined || this.checkingDisks || this.closed) return;
    this.checkingDisks = true;
    try {
      for (const [sandboxId, e] of this.entries) {
        if (e.exit || e.stopping || e.overDisk) continue;
        const used = await this.opts.client
          .snapshotUsage(this.snapshotter, e.containerId)
          .then((u) => u.size)
          .catch(() => undefined); // gone meanwhile, or a snapshotter that cannot tell
        if (used === undefined || used <= limit || e.exit || e.stopping) continue;
        // Set before the kill: its exit may be seen before the kill's answer.
        e.overDisk = true;
        try {
          await signalContainer(this.opts.client, e.containerId, 'SIGKILL', true);
        } catch {
          e.overDisk = false; // not killed: the next check tries again
          continue;
        }
        e.logs.append(
          Buffer.from(
            `[sandbox-agent] sandbox ${sandboxId} killed: its writable layer takes ${used} bytes, over its ephemeral-storage limit of ${limit}\n`,
          ),
        );
      }
    } finally {
      this.checkingDisks = false;
    }
  }

  get unsupported(): string | undefined {
    return this.opts.unsupported;
  }

  private get snapshotter(): string {
    return this.opts.snapshotter ?? DEFAULT_SNAPSHOTTER;
  }

  /** This agent's shim group: its identity (another agent, or this one's successor Pod, gets its own shim). */
  private get shimGroup(): string {
    const { agentNamespace, agentName, agentUid } = this.opts;
    return `fast-sandbox/${agentNamespace ?? ''}/${agentName}/${agentUid ?? ''}`;
  }

  /** The limits a sandbox runs with: its own, else the pool's defaults; pids always bounded. */
  limitsOf(spec: { cpu?: string; memory?: string }): SandboxLimits | { error: string } {
    const d = this.opts.defaults ?? {};
    const own = parseLimits({ cpu: spec.cpu || d.cpu, memory: spec.memory || d.memory, pids: d.pids });
    if ('error' in own) return own;
    return { ...own, pids: own.pids ?? DEFAULT_PIDS_LIMIT };
  }

  validate(spec: AgentSandboxSpec): string | undefined {
    const limits = this.limitsOf(spec);
    if ('error' in limits) return `sandbox.${limits.error}`;
    if (!/^[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+)*$/.test(spec.sandboxId) || spec.sandboxId.length > 76)
      return `sandbox.sandboxId ${JSON.stringify(spec.sandboxId)} cannot name a container (letters, digits, . _ -)`;
    return undefined;
  }

  private sandboxEnv(spec: AgentSandboxSpec): Record<string, string> {
    return {
      SANDBOX_ID: spec.sandboxId,
      SANDBOX_PORTS: (spec.exposedPorts ?? []).join(','),
      // Its own namespace: it listens on any address; clients reach it at SANDBOX_ENDPOINT_HOST:port.
      SANDBOX_HOST: this.opts.network ? '0.0.0.0' : (this.opts.host ?? '0.0.0.0'),
      ...(this.opts.network && this.opts.host ? { SANDBOX_ENDPOINT_HOST: this.opts.host } : {}),
    };
  }

  private specFor(
    image: ResolvedImage,
    /** The sandbox's, or `{}` for a warm container (its process comes at hand-off). */
    request: AgentSandboxSpec | Record<string, never>,
    containerId: string,
    limits: SandboxLimits,
    warm: boolean,
  ): OciSpec {
    try {
      return containerSpec({
        image: image.config,
        request,
        extraEnv: request.sandboxId ? this.sandboxEnv(request as AgentSandboxSpec) : {},
        init: { source: this.opts.initBinary, path: INIT_PATH, warm },
        hostname: containerId.slice(0, 63),
        netnsPath: this.opts.network?.netnsPath(containerId),
        cgroupsPath: `${this.opts.cgroupParent ?? '/fast-sandbox'}/${containerId}`,
        limits,
        binds: this.opts.network ? [{ source: this.opts.network.resolvConfPath, destination: '/etc/resolv.conf' }] : [],
        kernelRelease: os.release(),
        capabilities: this.opts.capabilities,
        annotations: { [SHIM_GROUP_ANNOTATION]: this.shimGroup },
      });
    } catch (err) {
      throw new SandboxSpecError(`image ${JSON.stringify(image.ref)}: ${(err as Error).message}`);
    }
  }

  async start(spec: AgentSandboxSpec, onExit: (exit: SandboxExit) => void, held: StartedAs): Promise<void> {
    const limits = this.limitsOf(spec);
    if ('error' in limits) throw new SandboxSpecError(limits.error);
    const slot = this.warm.get(spec.image)?.shift();
    // The next warm container is made once this answer is out, never on its path — and, while
    // another warm container of the image waits, only once the answer has had time to reach its
    // caller: a container start is ~100 ms of CPU (containerd, shim, runc) on the cores the fast
    // path and Temporal complete the create on (bench/RESULTS.md).
    if (slot)
      return this.startWarm(slot, spec, limits, held, onExit).finally(() => {
        const delay = this.warm.get(spec.image)?.length ? REFILL_AFTER_MS : 0;
        setTimeout(() => void this.fill(), delay).unref();
      });
    const id = spec.sandboxId;
    const image = await this.images.ensure(spec.image);
    const ociSpec = this.specFor(image, spec, id, limits, false);
    // Its network first: a container is never made that could run without its policy.
    const wiring = await this.opts.network?.wire(id, spec.exposedPorts ?? []);
    try {
      await this.createContainer(id, image.id, this.labelsOf(spec, held, wiring), ociSpec);
    } catch (err) {
      await this.removeContainer(id).catch(() => undefined);
      throw err;
    }
    try {
      const logs = new LogBuffer(this.opts.logLimitBytes ?? DEFAULT_LOG_LIMIT_BYTES);
      const stdout = answerThenLog(logs);
      const { pid, readers } = await this.startTask(id, image, stdout);
      try {
        await startedBy(stdout.answer);
      } catch (err) {
        for (const r of readers) r.close();
        throw err;
      }
      const cgroupsPath = (ociSpec.linux as { cgroupsPath: string }).cgroupsPath;
      this.follow(
        spec.sandboxId,
        { containerId: id, logs, process: ociSpec.process, cgroupsPath, pid },
        readers,
        onExit,
      );
    } catch (err) {
      await this.removeContainer(id).catch(() => undefined);
      throw err instanceof SandboxSpecError ||
        !/exec|no such file|not found in \$PATH|permission denied/i.test((err as Error).message)
        ? err
        : new SandboxSpecError(`cannot start the sandbox: ${(err as Error).message}`);
    }
  }

  /** Snapshot, FIFOs, task create and start; on failure the caller removes the container. */
  private async startTask(
    containerId: string,
    image: ResolvedImage,
    output: { onStdout(c: Buffer): void; onStderr(c: Buffer): void },
    withStdin = false,
  ): Promise<{ pid: number; readers: Reader[]; stdin?: FileHandle }> {
    const { client } = this.opts;
    const mounts = await client
      .prepareSnapshot(this.snapshotter, containerId, image.chainId)
      .catch((err: unknown) =>
        isAlreadyExists(err) ? client.snapshotMounts(this.snapshotter, containerId) : Promise.reject(err),
      );
    const io = await this.makeFifos(containerId, withStdin);
    const readers = await Promise.all([
      readFifo(io.stdout, (c) => output.onStdout(c)),
      readFifo(io.stderr, (c) => output.onStderr(c)),
    ]);
    try {
      await client.createTask({ containerId, rootfs: mounts, stdout: io.stdout, stderr: io.stderr, stdin: io.stdin });
      // Read-write: opening a FIFO's write end alone fails while nobody reads it; the shim reads it now.
      const stdin = io.stdin ? await open(io.stdin, fsc.O_RDWR) : undefined;
      const pid = await client.startTask(containerId);
      return { pid, readers, stdin };
    } catch (err) {
      for (const r of readers) r.close();
      throw err;
    }
  }

  /** Hands a warm container to a sandbox: its record and its process, at once. */
  private async startWarm(
    slot: WarmSlot,
    spec: AgentSandboxSpec,
    limits: SandboxLimits,
    held: StartedAs,
    onExit: (exit: SandboxExit) => void,
  ): Promise<void> {
    const { client } = this.opts;
    const { containerId, image } = slot;
    try {
      const args = resolveArgs(image.config, spec);
      if (args.length === 0)
        throw new SandboxSpecError(
          `image ${JSON.stringify(spec.image)}: the image has no Entrypoint or Cmd and the sandbox gives no command: nothing to run`,
        );
      const env = resolveEnv(image.config, spec, this.sandboxEnv(spec));
      const cwd = spec.workingDir || image.config.WorkingDir || '/';
      const process = { ...(slot.spec.process as Record<string, unknown>), args, env, cwd };
      const resources = linuxResources(limits);
      const ociSpec = { ...slot.spec, process, linux: { ...(slot.spec.linux as object), resources } };
      // The record (labels + spec) and the hand-off at once: a crash between them leaves either a
      // container without the sandbox's label (removed at restart by `adopt`) or a labelled one
      // whose init never got its process (it exits: reported as the sandbox's exit) — and either
      // way a create that was never answered. The limits are set before the process runs.
      const recorded = client.updateContainer(
        {
          id: containerId,
          labels: this.labelsOf(spec, held, slot.wiring),
          spec: jsonAny(OCI_TYPE_URL.spec, ociSpec),
        },
        ['labels', 'spec'],
      );
      // Its ports forwarded beside the hand-off (the namespace was wired when the container was made).
      const exposed = this.opts.network?.expose(containerId, spec.exposedPorts ?? []);
      const handedOff = (async () => {
        if (JSON.stringify(limits) !== JSON.stringify(slot.limits)) await client.updateTask(containerId, resources);
        await slot.stdin.write(`${JSON.stringify({ args, env, cwd })}\n`);
        await slot.stdin.close();
        await startedBy(slot.answer);
      })();
      await Promise.all([recorded, handedOff, exposed]);
      const cgroupsPath = slot.cgroupsPath;
      this.follow(
        spec.sandboxId,
        { containerId, logs: slot.logs, process, cgroupsPath, pid: slot.pid },
        slot.readers,
        onExit,
      );
    } catch (err) {
      for (const r of slot.readers) r.close();
      await slot.stdin.close().catch(() => undefined);
      await this.removeContainer(containerId).catch(() => undefined);
      throw err;
    }
  }

  /** Makes warm containers until every warm image has its count; one at a time, never on a create's path. */
  fill(): Promise<void> {
    if (this.opts.unsupported || !this.opts.warm?.length) return Promise.resolve();
    this.refill = true;
    this.filling ??= (async () => {
      while (this.refill && !this.closed) {
        this.refill = false;
        for (const { image, count } of this.opts.warm ?? []) {
          const slots = this.warm.get(image) ?? [];
          this.warm.set(image, slots);
          while (slots.length < count && !this.closed) {
            try {
              slots.push(await this.makeWarm(image));
              this.warmErrors.delete(image);
            } catch (err) {
              this.warmErrors.set(image, (err as Error).message);
              break;
            }
          }
        }
      }
    })().finally(() => (this.filling = undefined));
    return this.filling;
  }

  /** How many warm containers wait, by image (the agent's status). */
  warmCounts(): Record<string, number> {
    return Object.fromEntries([...this.warm].map(([image, slots]) => [image, slots.length]));
  }

  private async makeWarm(ref: string): Promise<WarmSlot> {
    const image = await this.images.ensure(ref);
    const limits = this.limitsOf({});
    if ('error' in limits) throw new Error(limits.error);
    const containerId = `warm-${randomBytes(8).toString('hex')}`;
    const spec = this.specFor(image, {}, containerId, limits, true);
    let wiring: Wiring | undefined;
    try {
      wiring = await this.opts.network?.wire(containerId);
      await this.createContainer(
        containerId,
        image.id,
        { ...this.ownerLabels(), ...wiringLabels(wiring), [LABEL.warm]: 'true', [LABEL.image]: ref },
        spec,
      );
    } catch (err) {
      await this.removeContainer(containerId).catch(() => undefined);
      throw err;
    }
    try {
      const logs = new LogBuffer(this.opts.logLimitBytes ?? DEFAULT_LOG_LIMIT_BYTES);
      const stdout = answerThenLog(logs);
      const { pid, readers, stdin } = await this.startTask(containerId, image, stdout, true);
      const cgroupsPath = (spec.linux as { cgroupsPath: string }).cgroupsPath;
      return {
        containerId,
        image,
        spec,
        limits,
        cgroupsPath,
        pid,
        logs,
        readers,
        stdin: stdin!,
        answer: stdout.answer,
        wiring,
      };
    } catch (err) {
      await this.removeContainer(containerId).catch(() => undefined);
      throw err;
    }
  }

  private ownerLabels(): Record<string, string> {
    return {
      [LABEL.managed]: 'true',
      [LABEL.agentName]: this.opts.agentName,
      [LABEL.agentUid]: this.opts.agentUid ?? '',
      [LABEL.namespace]: this.opts.agentNamespace ?? '',
    };
  }

  private labelsOf(spec: AgentSandboxSpec, held: StartedAs, wiring?: Wiring): Record<string, string> {
    return {
      ...this.ownerLabels(),
      ...wiringLabels(wiring),
      [LABEL.id]: spec.sandboxId,
      [LABEL.claimUid]: spec.claimUid ?? '',
      [LABEL.sandboxName]: spec.claimName ?? '',
      [LABEL.image]: spec.image,
      [LABEL.createdAt]: String(held.createdAt),
      [LABEL.exposedPorts]: (spec.exposedPorts ?? []).join(','),
      [LABEL.fingerprint]: held.fingerprint,
    };
  }

  /** Creates the container record; one left by a crash between two steps of an earlier create is replaced. */
  private async createContainer(
    id: string,
    image: string,
    labels: Record<string, string>,
    spec: Record<string, unknown>,
  ): Promise<void> {
    const { runtimeBinary, runtimeRoot } = this.opts;
    const container = {
      id,
      image,
      labels,
      runtime: {
        name: RUNC_SHIM,
        options: runtimeBinary || runtimeRoot ? runcOptions({ binaryName: runtimeBinary, root: runtimeRoot }) : null,
      },
      spec: jsonAny(OCI_TYPE_URL.spec, spec),
      snapshotter: this.snapshotter,
      snapshotKey: id,
    };
    try {
      await this.opts.client.createContainer(container);
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      // What a crash left under this ID; its network was already replaced by this create's.
      await removeContainer(this.opts.client, this.snapshotter, id);
      await this.opts.client.createContainer(container);
    }
  }

  private fifoDir(containerId: string): string {
    return path.join(this.opts.ioDir, containerId);
  }

  /** The stdio FIFOs of a container (or of one exec, `<container>/<execId>`), made anew. */
  private async makeFifos(
    dirName: string,
    withStdin = false,
  ): Promise<{ stdout: string; stderr: string; stdin?: string }> {
    const dir = this.fifoDir(dirName);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const files = {
      stdout: path.join(dir, 'stdout'),
      stderr: path.join(dir, 'stderr'),
      ...(withStdin ? { stdin: path.join(dir, 'stdin') } : {}),
    };
    await Promise.all(Object.values(files).map((f) => rm(f, { force: true })));
    // Node has no mkfifo(3); coreutils' mkfifo makes them all in one process.
    await execFileP('mkfifo', ['-m', '600', ...Object.values(files)]);
    return files;
  }

  /** Watches a started sandbox until it exits: exit code, OOM, the end of its output. */
  private follow(
    sandboxId: string,
    base: Pick<Entry, 'containerId' | 'logs' | 'process' | 'cgroupsPath' | 'pid'>,
    readers: Reader[],
    onExit: (exit: SandboxExit) => void,
  ): void {
    let resolveExited!: () => void;
    const entry: Entry = {
      ...base,
      stopping: false,
      oom: false,
      waiting: new AbortController(),
      exited: new Promise((r) => (resolveExited = r)),
    };
    this.entries.set(sandboxId, entry);
    void this.opts.client.wait(base.containerId, '', entry.waiting.signal).then(
      async (status) => {
        const oom = entry.oom || cgroupSawOom(entry.cgroupsPath);
        // The shim closes the FIFOs once the container's output is copied: the log is complete.
        await drained(readers);
        for (const r of readers) r.close();
        entry.exit = {
          ...exitOf(status),
          stopped: entry.stopping,
          ...(oom && !entry.stopping
            ? { reason: 'OOMKilled' as const }
            : entry.overDisk
              ? { reason: 'EphemeralStorageExceeded' as const }
              : {}),
        };
        entry.logs.end();
        resolveExited();
        onExit(entry.exit);
      },
      () => {
        // The agent stopped waiting (it is shutting down): the container keeps running.
        for (const r of readers) r.close();
      },
    );
  }

  /** OOM events of this namespace, so an OOM kill is named even when the cgroup file cannot be read. */
  private watchOom(): void {
    if (this.closed) return;
    const stream = this.opts.client.subscribe([`topic=="/tasks/oom"`]);
    this.events = stream;
    stream.on('data', (env) => {
      const ev = env.event ? decodeEvent(env.event) : undefined;
      for (const e of this.entries.values()) if (e.containerId === ev?.containerId) e.oom = true;
    });
    stream.on('error', () => undefined);
    stream.on('close', () => {
      if (!this.closed) setTimeout(() => this.watchOom(), 1000).unref();
    });
  }

  async stop(sandboxId: string, graceMs: number): Promise<void> {
    const e = this.entries.get(sandboxId);
    if (!e) return;
    e.removing ??= (async () => {
      if (!e.exit) {
        e.stopping = true;
        // A refused SIGTERM (the runtime's own trouble) still leaves the SIGKILL below.
        await this.signal(e.containerId, 'SIGTERM', false).catch(() => undefined);
        let timer: NodeJS.Timeout | undefined;
        const killed = new Promise<void>((resolve) => {
          timer = setTimeout(resolve, graceMs);
        });
        await Promise.race([e.exited, killed]);
        clearTimeout(timer);
        // Every process of the container; its init's death ends the PID namespace anyway.
        if (!e.exit) await this.signal(e.containerId, 'SIGKILL', true);
        await e.exited;
      }
      await this.removeContainer(e.containerId);
    })().catch((err: unknown) => {
      e.removing = undefined; // the next delete tries again
      throw err;
    });
    return e.removing;
  }

  private signal(containerId: string, sig: NodeJS.Signals, all: boolean): Promise<void> {
    return signalContainer(this.opts.client, containerId, sig, all);
  }

  /** Task, container, snapshot, network and FIFOs, whichever exist. */
  private async removeContainer(containerId: string): Promise<void> {
    await removeContainer(this.opts.client, this.snapshotter, containerId);
    await this.opts.network?.unwire(containerId);
    await rm(this.fifoDir(containerId), { recursive: true, force: true });
  }

  status(sandboxId: string): RuntimeStatus | undefined {
    const e = this.entries.get(sandboxId);
    return e && { running: !e.exit, pid: e.pid, exit: e.exit };
  }

  logs(sandboxId: string): LogBuffer | undefined {
    return this.entries.get(sandboxId)?.logs;
  }

  async exec(
    sandboxId: string,
    command: string[],
    sink: ExecSink,
    abort: AbortSignal,
    stdin?: Buffer,
  ): Promise<ExecExit> {
    const e = this.entries.get(sandboxId);
    if (!e || e.exit) throw new SandboxNotRunningError(`sandbox ${sandboxId} is not running`);
    if (!command[0]) throw new Error('command is empty');
    const { client } = this.opts;
    const { containerId } = e;
    const execId = `exec-${randomBytes(6).toString('hex')}`;
    // No stdin FIFO without input: the shim then gives the command /dev/null (EOF at once).
    const io = await this.makeFifos(`${containerId}/${execId}`, stdin !== undefined);
    const readers = await Promise.all([
      readFifo(io.stdout, (c) => sink.stdout(c)),
      readFifo(io.stderr, (c) => sink.stderr(c)),
    ]);
    const kill = () => void client.kill(containerId, 9, { execId }).catch(() => undefined);
    const ended = new AbortController();
    try {
      await client.exec({
        containerId,
        execId,
        spec: jsonAny(OCI_TYPE_URL.process, { ...e.process, args: command, terminal: false }),
        stdin: io.stdin,
        stdout: io.stdout,
        stderr: io.stderr,
      });
      const waiting = new AbortController();
      const status = client.wait(containerId, execId, waiting.signal);
      try {
        await client.startTask(containerId, execId);
      } catch (err) {
        waiting.abort();
        throw new Error(`cannot run ${command[0]}: ${(err as Error).message}`);
      }
      abort.addEventListener('abort', kill, { once: true });
      // The input, then EOF (our end closed, then the shim's). Its end is not waited for: input
      // the command leaves unread must not hold the exec open. If it cannot be given, the command
      // must not wait for it forever: killed, and the exec fails saying why.
      let stdinFailed: Error | undefined;
      if (io.stdin && stdin)
        void writeFifo(io.stdin, stdin, ended.signal)
          .then(() => (ended.signal.aborted ? undefined : client.closeStdin(containerId, execId)))
          .catch((err: unknown) => {
            if (ended.signal.aborted) return;
            stdinFailed = err as Error;
            kill();
          });
      const code = await status;
      if (stdinFailed) throw new Error(`cannot give ${command[0]} its stdin: ${stdinFailed.message}`);
      await drained(readers);
      return exitOf(code);
    } finally {
      ended.abort();
      abort.removeEventListener('abort', kill);
      for (const r of readers) r.close();
      await client.deleteProcess(containerId, execId).catch(() => undefined);
      await rm(path.dirname(io.stdout), { recursive: true, force: true });
    }
  }

  remove(sandboxId: string): void {
    const e = this.entries.get(sandboxId);
    if (e?.exit || e?.removing) this.entries.delete(sandboxId);
  }

  /** Stops every sandbox and removes the warm containers (the agent is shutting down: its Pod goes). */
  async stopAll(graceMs: number): Promise<void> {
    this.closed = true;
    await this.filling;
    const warm = [...this.warm.values()].flat();
    this.warm.clear();
    await Promise.all([
      ...[...this.entries.keys()].map((id) => this.stop(id, graceMs)),
      ...warm.map((w) => {
        for (const r of w.readers) r.close();
        return w.stdin
          .close()
          .catch(() => undefined)
          .then(() => this.removeContainer(w.containerId));
      }),
    ]);
    await this.opts.network?.close();
  }

  /**
   * Removes this node's containers of the namespace's agents whose Pod is gone (reaper.ts): the
   * agent Pods that exist are `liveAgentUids`, listed before `createdBefore` (ms, this clock).
   */
  reapDeadAgents(liveAgentUids: ReadonlySet<string>, createdBefore: number): Promise<ReapResponse> {
    const scope = {
      namespace: this.opts.agentNamespace,
      ownUid: this.opts.agentUid,
      live: liveAgentUids,
      createdBefore,
    };
    return reapDeadAgents(this.opts.client, scope, path.dirname(this.opts.ioDir), (id) => this.removeContainer(id));
  }

  /** The agent is dying: its sandboxes are not (containerd keeps them; the restarted agent re-adopts them). */
  killAllNow(): void {}

  /**
   * Re-adopts the containers labelled with this agent's name: a running sandbox is followed again
   * (output, exit); one that exited while the agent was down is reported with its exit. Removed:
   * what a crash left half-made (no task, or a task never started: its create never answered)
   * and warm containers nobody took (new ones are made).
   */
  async adopt(onExit: (sandboxId: string, exit: SandboxExit) => void): Promise<AdoptedSandbox[]> {
    const { client } = this.opts;
    // Name, UID and namespace: a Pod named like another pool's agent is not it. (containerd drops
    // empty labels, so an unset UID or namespace is compared here, not in the filter.)
    const containers = (
      await client.listContainers([`labels."${LABEL.agentName}"==${JSON.stringify(this.opts.agentName)}`])
    ).filter(
      (c) =>
        (c.labels[LABEL.agentUid] ?? '') === (this.opts.agentUid ?? '') &&
        (c.labels[LABEL.namespace] ?? '') === (this.opts.agentNamespace ?? ''),
    );
    const out: AdoptedSandbox[] = [];
    const wired = new Map<string, WiredSandbox>();
    for (const c of containers) {
      const l = c.labels;
      const task = await client
        .getTask(c.id)
        .catch((err: unknown) => (isNotFound(err) ? undefined : Promise.reject(err)));
      const sandboxId = l[LABEL.id];
      if (!task || task.status === 'CREATED' || task.status === 'UNKNOWN' || !sandboxId) {
        await this.removeContainer(c.id);
        continue;
      }
      const hostIf = l[LABEL.hostIf];
      const ip = l[LABEL.ip];
      if (hostIf && ip)
        wired.set(c.id, {
          hostIf,
          ip,
          ports: (l[LABEL.exposedPorts] ?? '').split(',').filter(Boolean).map(Number),
        });
      const spec: AgentSandboxSpec = {
        sandboxId,
        claimUid: l[LABEL.claimUid] ?? '',
        claimName: l[LABEL.sandboxName] ?? '',
        image: l[LABEL.image] ?? '',
        exposedPorts: (l[LABEL.exposedPorts] ?? '').split(',').filter(Boolean).map(Number),
      };
      const oci = JSON.parse(c.spec?.value.toString('utf8') ?? '{}') as {
        process?: Record<string, unknown>;
        linux?: { cgroupsPath?: string };
      };
      const logs = new LogBuffer(this.opts.logLimitBytes ?? DEFAULT_LOG_LIMIT_BYTES);
      const base = {
        containerId: c.id,
        logs,
        process: oci.process ?? {},
        cgroupsPath: oci.linux?.cgroupsPath ?? '',
        pid: task.pid,
      };
      let exit: SandboxExit | undefined;
      if (task.status === 'STOPPED') {
        const oom = cgroupSawOom(base.cgroupsPath);
        exit = { ...exitOf(task.exitStatus), stopped: false, ...(oom ? { reason: 'OOMKilled' as const } : {}) };
        logs.end();
        this.entries.set(sandboxId, {
          ...base,
          exit,
          exited: Promise.resolve(),
          stopping: false,
          oom: false,
          waiting: new AbortController(),
        });
      } else {
        const readers = await Promise.all(
          [task.stdout, task.stderr].filter(Boolean).map((f) => readFifo(f, (b) => logs.append(b))),
        );
        this.follow(sandboxId, base, readers, (x) => onExit(sandboxId, x));
      }
      out.push({
        spec,
        fingerprint: l[LABEL.fingerprint] ?? '',
        createdAt: Number(l[LABEL.createdAt] ?? 0),
        ...(exit ? { exit } : {}),
      });
    }
    // The policy and forwards of what still runs, before anything new is wired.
    await this.opts.network?.start(wired);
    void this.fill();
    return out;
  }

  close(): void {
    this.closed = true;
    clearInterval(this.diskChecks);
    this.events?.cancel();
    for (const e of this.entries.values()) e.waiting.abort();
    this.opts.client.close();
  }
}
