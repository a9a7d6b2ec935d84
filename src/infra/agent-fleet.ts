/**
 * A kubelet stand-in for the local stack. The stack has a real kube-apiserver and
 * controller-manager but no scheduler and no kubelet, so nothing would ever run a sandbox agent
 * Pod. AgentFleet runs each agent as a real local process (the CLI role `agent`) and writes its
 * Pod the way a kubelet would, so the sandbox fast path discovers agents exactly as in a cluster:
 * Pods labelled `app=sandbox-agent`, `fast-sandbox.io/pool=<pool>`, controlled by the pool's
 * SandboxPool (when it exists at start; as the Pods the pool makes), reached at
 * `https://<status.podIP>:<containerPort "agent">`, over mutual TLS with the pool's certificate
 * (issued here from the agent key for the fleet's own agents, read from the pool's Secret for the
 * Pods the pool makes, as a kubelet mounts it — and re-read, so a renewed one reaches the agent).
 *
 * Each agent listens on its own loopback address (all of 127.0.0.0/8 is loopback on Linux; a
 * random one in 127.1.0.1–127.254.255.254, so concurrent fleets do not collide) and a free port.
 * Order, as with a real Pod: the process answers /healthz → the Pod is created (spec.nodeName set,
 * there is no scheduler) → its status is written (Running, podIP, Ready). A Pod without a podIP is
 * never usable, so nobody can reach an agent that is not up.
 *
 * What it writes: the Pod, and its status (phase, IPs, startTime, the four conditions, one
 * containerStatus). What it does not: no restarts (a crashed agent stays down), no probes after
 * start, no node object, no events, no graceful deletion (a delete without a kubelet never
 * completes, so Pods are deleted with gracePeriodSeconds 0). The token reaches the agent only
 * through a 0600 file, never the command line or the log.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PatchStrategy, setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import { ContainerdClient } from '../agent/containerd/client.js';
import { AgentCredentials } from '../fastpath/agent-credentials.js';
import { AgentPki } from '../fastpath/agent-pki.js';
import { DEFAULT_SNAPSHOTTER, LABEL, removeContainer } from '../agent/containerd/runtime.js';
import { AGENT_APP_LABEL, AGENT_APP_VALUE, AGENT_POOL_LABEL, SandboxPoolKind } from '../api/sandbox.js';
import { FIELD_MANAGER, isNotFound, type KubeClient } from '../kube/client.js';
import { ManagedProcess, descendantGroups, killTree, signalGroup, waitUntilReady } from './process.js';

export const AGENT_IMAGE = 'durable-operators:dev';
const HOST_IP = '127.0.0.1';

export interface AgentFleetOptions {
  kube: KubeClient;
  namespace: string;
  pool: string;
  /** Agents started by start(). */
  count: number;
  /** Sandboxes each agent holds at most. */
  capacity: number;
  /**
   * The fast path's agent key (its DO_AGENT_TOKEN_FILE). The agents accept the token their
   * pool's Pods get, derived from it (src/fastpath/agent-credentials.ts), or the key itself when
   * no SandboxPool of that name exists; `token` says which. Written to a 0600 file under stateDir.
   */
  agentKey: string;
  /** Holds the token file and logs/agent-<pod>.log. */
  stateDir: string;
  /** spec.nodeName and the agents' reported node (default `local-node`). */
  nodeName?: string;
  /** The agents' SIGTERM→SIGKILL grace for their sandboxes (default 1000 ms). */
  killGraceMs?: number;
  /** Extra environment for the agent processes. */
  env?: NodeJS.ProcessEnv;
  /** How long an agent may take to answer /healthz (default 60 s). */
  readyTimeoutMs?: number;
  /**
   * Run sandboxes as containers of this containerd (the stack's), joining the agent's network
   * namespace (the host's, here); without it, the agents use the process runtime.
   */
  containerd?: {
    socket: string;
    namespace: string;
    runtimeType?: 'container' | 'gvisor';
    runscBinary?: string;
    runcRoot?: string;
    /** sandbox-init, PID 1 of every sandbox container. */
    initBinary: string;
    /** sandbox-netd, the agents' network helper (else each agent finds it built from this checkout). */
    netdBinary?: string;
  };
  /** Images the agents keep warm containers of. */
  warmImages?: { image: string; count: number }[];
}

export interface FleetAgent {
  readonly podName: string;
  readonly podUid: string;
  readonly ip: string;
  readonly port: number;
  /** `https://ip:port`, what the fast path derives from the Pod. */
  readonly url: string;
  readonly process: ManagedProcess;
  /** When the agent became Ready (startTime and the containers' startedAt). */
  readonly startedAt: string;
}

const HERE = path.dirname(fileURLToPath(import.meta.url));
/** Run from sources (tsx) or from the compiled package (dist/): start the CLI the same way. */
const FROM_SOURCES = import.meta.url.endsWith('.ts');

/** RFC 3339 with whole seconds, as the apiserver writes metav1.Time. */
const now = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

/** The status a kubelet writes once a Pod's container is up: Running, Ready, its IP (`at`: the start time). */
export function runningPodStatus(ip: string, at: string): Record<string, unknown> {
  return {
    phase: 'Running',
    hostIP: HOST_IP,
    hostIPs: [{ ip: HOST_IP }],
    podIP: ip,
    podIPs: [{ ip }],
    startTime: at,
    conditions: ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'].map((type) => ({
      type,
      status: 'True',
      lastTransitionTime: at,
    })),
    containerStatuses: [{ ...containerStatus(true), state: { running: { startedAt: at } } }],
  };
}

export class AgentFleet {
  private readonly list: FleetAgent[] = [];
  /** Every agent process ever started, also those still starting: stop() and the exit hook reap them. */
  private readonly spawned = new Set<ManagedProcess>();
  private readonly usedIps = new Set<string>();
  private readonly tokenFile: string;
  /** The fleet's own agents' TLS files (tls.crt, tls.key, ca.crt). */
  private readonly tlsDir: string;
  private readonly killOnExit = () => {
    for (const p of this.spawned) if (p.running) killTree(p.pid);
  };
  private serial = 0;
  /** The SandboxPool the agents' Pods name as controller (when it exists at start). */
  private poolUid?: string;
  /** The bearer token the fleet's agents accept. */
  token = '';

  /** The pool the fleet's own agents' certificates name (the UID empty when no SandboxPool existed at start). */
  get poolIdentity(): { namespace: string; name: string; uid: string } {
    return { namespace: this.opts.namespace, name: this.opts.pool, uid: this.poolUid ?? '' };
  }
  private stopping: Promise<void> | undefined;

  private constructor(readonly opts: AgentFleetOptions) {
    this.tokenFile = path.join(opts.stateDir, `agent-token-${opts.pool}-${randomBytes(4).toString('hex')}`);
    this.tlsDir = `${this.tokenFile}-tls`;
  }

  /** Starts `count` agents, each with a Running, Ready Pod. On failure nothing is left behind. */
  static async start(opts: AgentFleetOptions): Promise<AgentFleet> {
    const fleet = new AgentFleet(opts);
    const pool = await opts.kube.get<{ metadata?: { uid?: string } }>({
      apiVersion: SandboxPoolKind.apiVersion,
      kind: SandboxPoolKind.kind,
      namespace: opts.namespace,
      name: opts.pool,
    });
    fleet.poolUid = pool?.metadata?.uid;
    fleet.token = fleet.poolUid
      ? new AgentCredentials(opts.agentKey).tokenOf({ namespace: opts.namespace, name: opts.pool, uid: fleet.poolUid })
      : opts.agentKey;
    await mkdir(path.join(opts.stateDir, 'logs'), { recursive: true });
    await writeFile(fleet.tokenFile, fleet.token, { mode: 0o600 });
    // The certificate the pool's Secret would hold (the pool's identity; none when there is no pool).
    const tls = await new AgentPki(opts.agentKey).agentTls({
      namespace: opts.namespace,
      name: opts.pool,
      uid: fleet.poolUid ?? '',
    });
    await writeTlsFiles(fleet.tlsDir, { 'tls.crt': tls.cert, 'tls.key': tls.key, 'ca.crt': tls.ca });
    // Last resort if the caller dies without stop(): no agent outlives it (SIGKILL is synchronous).
    process.on('exit', fleet.killOnExit);
    const started = await Promise.allSettled(Array.from({ length: opts.count }, () => fleet.addAgent()));
    const failed = started.find((r) => r.status === 'rejected');
    if (failed) {
      await fleet.stop();
      throw failed.reason;
    }
    return fleet;
  }

  /** The agents in the order they became Ready; a crashed one stays listed (its Pod too) until remove() or stop(). */
  get agents(): readonly FleetAgent[] {
    return [...this.list];
  }

  /** Starts one more agent: process up → Pod created → Pod status Running/Ready with its podIP. */
  async addAgent(): Promise<FleetAgent> {
    if (this.stopping) throw new Error('the agent fleet is stopped');
    const { kube, namespace, pool } = this.opts;
    const ip = this.pickIp();
    const port = await freePort(ip);
    const podName = `${pool}-agent-${this.serial++}-${randomBytes(3).toString('hex')}`;
    const nodeName = this.opts.nodeName ?? 'local-node';
    const proc = this.spawn(podName, ip, port, this.opts.capacity);
    const url = `https://${ip}:${port}`;
    let podUid: string | undefined;
    let startedAt = '';
    try {
      await waitUntilReady(`sandbox agent ${podName}`, () => healthy(url), {
        timeoutMs: this.opts.readyTimeoutMs ?? 60_000,
        intervalMs: 100,
        process: proc,
      });
      const pod = await kube.create<V1Pod>({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: podName,
          namespace,
          labels: { [AGENT_APP_LABEL]: AGENT_APP_VALUE, [AGENT_POOL_LABEL]: pool },
          ...(this.poolUid && {
            ownerReferences: [
              {
                apiVersion: SandboxPoolKind.apiVersion,
                kind: SandboxPoolKind.kind,
                name: pool,
                uid: this.poolUid,
                controller: true,
              },
            ],
          }),
        },
        spec: {
          nodeName, // no scheduler: bound at creation, as a DaemonSet controller does
          automountServiceAccountToken: false,
          containers: [
            {
              name: 'agent',
              image: AGENT_IMAGE,
              args: ['agent'],
              ports: [{ name: 'agent', containerPort: port, protocol: 'TCP' }],
            },
          ],
        },
      });
      podUid = pod.metadata!.uid!;
      startedAt = await this.writeRunning(podName, podUid, ip);
      if (this.stopping) throw new Error('the agent fleet was stopped while the agent started');
    } catch (err) {
      if (podUid) await this.deletePod(podName).catch(() => undefined);
      await this.stopProcess(proc);
      throw err;
    }
    const agent: FleetAgent = { podName, podUid, ip, port, url, process: proc, startedAt };
    this.list.push(agent);
    return agent;
  }

  /**
   * Starts an agent process as the CLI role `agent` on `ip:port`. `podEnv`: the environment a
   * kubelet would give the Pod's agent container (the pool's RUNTIME_TYPE and sandbox settings
   * decide over the fleet's defaults, as in a cluster).
   */
  private spawn(
    podName: string,
    ip: string,
    port: number,
    capacity: number,
    podEnv: Record<string, string> = {},
    tokenFile = this.tokenFile,
    tlsDir = this.tlsDir,
  ): ManagedProcess {
    const nodeName = this.opts.nodeName ?? 'local-node';
    const cli = path.resolve(HERE, '..', 'cli', FROM_SOURCES ? 'main.ts' : 'main.js');
    const proc = ManagedProcess.start({
      name: `agent-${podName}`,
      component: 'agents', // one CPU figure for the fleet, the sandboxes of the process runtime with it
      command: process.execPath,
      args: [
        ...(FROM_SOURCES ? ['--import', 'tsx'] : []),
        cli,
        'agent',
        ...['--host', ip, '--port', String(port), '--agent-id', podName, '--node-name', nodeName],
        ...['--capacity', String(capacity), '--kill-grace', String(this.opts.killGraceMs ?? 1000)],
        ...['--token-file', tokenFile],
        ...['--tls-cert-file', path.join(tlsDir, 'tls.crt'), '--tls-key-file', path.join(tlsDir, 'tls.key')],
        ...['--tls-ca-file', path.join(tlsDir, 'ca.crt')],
        ...this.runtimeArgs(podEnv),
      ],
      cwd: path.resolve(HERE, '..', '..'), // tsx is resolved from the package root
      logFile: path.join(this.opts.stateDir, 'logs', `agent-${podName}.log`),
      // The files above, not the paths inside the Pod's container (DO_AGENT_TLS_*_FILE).
      env: { ...process.env, ...this.opts.env, ...podEnv, DO_AGENT_TLS_RELOAD_MS: '500' },
    });
    this.spawned.add(proc);
    return proc;
  }

  private runtimeArgs(podEnv: Record<string, string>): string[] {
    const c = this.opts.containerd;
    // A Pod whose template picks the process runtime gets it, as on a node: no flag over its env.
    if (podEnv.DO_AGENT_RUNTIME === 'process') return [];
    // No containerd here (dev without root): the stack said sandboxes are NOT ISOLATED.
    if (!c) return ['--runtime', 'process', '--allow-unisolated'];
    return [
      ...['--runtime', 'containerd', '--containerd-socket', c.socket, '--containerd-namespace', c.namespace],
      // A flag would decide over the Pod's RUNTIME_TYPE (the pool's): only without one.
      ...(podEnv.RUNTIME_TYPE ? [] : ['--runtime-type', c.runtimeType ?? 'container']),
      ...['--io-dir', path.join(this.opts.stateDir, 'agent-io')],
      ...(c.runscBinary ? ['--runsc-binary', c.runscBinary] : []),
      ...(c.runcRoot ? ['--runtime-root', c.runcRoot] : []),
      ...['--init-binary', c.initBinary],
      ...(c.netdBinary ? ['--netd-binary', c.netdBinary] : []),
      ...(this.opts.warmImages?.length
        ? ['--warm-images', this.opts.warmImages.map((w) => `${w.image}=${w.count}`).join(',')]
        : []),
    ];
  }

  /** What the kubelet writes once the container is up: Running, Ready, the Pod IP. Returns the start time. */
  private async writeRunning(podName: string, podUid: string, ip: string): Promise<string> {
    const t = now();
    await this.patchStatus(podName, podUid, runningPodStatus(ip, t));
    return t;
  }

  /**
   * The kubelet half for Pods somebody else creates (the SandboxPool's workflow): every agent Pod
   * of the pool in the namespace that this fleet did not create gets a real agent process on its
   * own loopback address, at the Pod's container port named `agent` (default 5758) and with the
   * capacity its AGENT_CAPACITY env says, and then the Pod's status is written as the kubelet
   * would (Running, podIP, Ready). Nothing else: no scheduling (the Pod stays unbound, so the
   * apiserver deletes it at once when asked), no restarts. A Pod that is deleted has its agent
   * stopped (SIGTERM: its sandboxes go with it); one of the fleet's own (bound, so its delete
   * waits for the kubelet) is then removed. Polls every `intervalMs` until stop().
   */
  runKubelet(intervalMs = 250): void {
    if (this.kubelet) return;
    const { kube, namespace, pool } = this.opts;
    const selector = `${AGENT_APP_LABEL}=${AGENT_APP_VALUE},${AGENT_POOL_LABEL}=${pool}`;
    const mine = () => new Set(this.list.map((a) => a.podName));
    let remountedAt = Date.now();
    const tick = async () => {
      // As a kubelet syncs Secret volumes: a renewed certificate reaches the running agents.
      if (Date.now() - remountedAt > 2_000) {
        remountedAt = Date.now();
        for (const run of this.kubeletRuns.values()) await run.remount().catch(() => undefined);
      }
      const pods: V1Pod[] = [];
      for await (const p of kube.listAll<V1Pod>('v1', 'Pod', { namespace, labelSelector: selector })) pods.push(p);
      const own = mine();
      const present = new Map(pods.map((p) => [p.metadata!.uid!, p]));
      for (const [uid, run] of this.kubeletRuns)
        if (!present.has(uid) || present.get(uid)!.metadata?.deletionTimestamp) {
          this.kubeletRuns.delete(uid);
          void this.stopProcess(run.process);
        }
      for (const pod of pods) {
        const name = pod.metadata!.name!;
        const uid = pod.metadata!.uid!;
        const mineDeleted = pod.metadata?.deletionTimestamp && own.has(name) ? this.find(name) : undefined;
        if (mineDeleted) {
          // A graceful delete of one of this fleet's Pods (bound to the node): the kubelet stops
          // the container, then removes the Pod.
          this.list.splice(this.list.indexOf(mineDeleted), 1);
          void this.stopProcess(mineDeleted.process).then(() => this.deletePod(name, uid).catch(() => undefined));
          continue;
        }
        if (own.has(name) || this.kubeletRuns.has(uid) || pod.metadata?.deletionTimestamp) continue;
        const container = pod.spec?.containers.find((c) => c.name === 'agent') ?? pod.spec?.containers[0];
        const port = container?.ports?.find((p) => p.name === 'agent')?.containerPort ?? 5758;
        const capacity = Number(container?.env?.find((e) => e.name === 'AGENT_CAPACITY')?.value ?? 5);
        // As a kubelet: no container before its Secret volume can be mounted.
        const mounted = await this.mountedSecret(pod).catch(() => undefined);
        if (!mounted) continue;
        const ip = this.pickIp();
        const podEnv = podEnvOf(pod, ip);
        for (const k of Object.keys(podEnv)) if (k.startsWith('DO_AGENT_TLS_')) delete podEnv[k];
        const proc = this.spawn(name, ip, port, capacity, podEnv, mounted.tokenFile, mounted.tlsDir);
        const run = { process: proc, podName: name, ip, url: `https://${ip}:${port}`, remount: mounted.remount };
        this.kubeletRuns.set(uid, run);
        void (async () => {
          try {
            await waitUntilReady(`sandbox agent ${name}`, () => healthy(run.url), {
              timeoutMs: this.opts.readyTimeoutMs ?? 60_000,
              intervalMs: 100,
              process: proc,
            });
            if (this.kubeletRuns.get(uid) === run) await this.writeRunning(name, uid, ip);
          } catch {
            // Deleted while starting, or the agent did not come up: the Pod stays not Ready.
          }
        })();
      }
    };
    const loop = () => {
      if (this.stopping) return;
      tick()
        .catch(() => undefined)
        .finally(() => {
          if (!this.stopping) this.kubelet = setTimeout(loop, intervalMs);
        });
    };
    this.kubelet = setTimeout(loop, 0);
  }

  /**
   * What a kubelet mounts at the agent container's DO_AGENT_TOKEN_FILE: the Secret volume mounted
   * there (the pool's agent token, TLS certificate, key and CA), written to 0600 files, and how to
   * write them again (the kubelet's sync of a changed Secret). A Pod that names no Secret volume
   * gets the fleet's token and certificate; a Secret not there yet throws (the Pod waits).
   */
  private async mountedSecret(
    pod: V1Pod,
  ): Promise<{ tokenFile: string; tlsDir: string; remount: () => Promise<void> }> {
    const container = pod.spec?.containers.find((c) => c.name === 'agent') ?? pod.spec?.containers[0];
    const file = container?.env?.find((e) => e.name === 'DO_AGENT_TOKEN_FILE')?.value;
    const mount = file ? container?.volumeMounts?.find((m) => file.startsWith(`${m.mountPath}/`)) : undefined;
    const secretName = pod.spec?.volumes?.find((v) => v.name === mount?.name)?.secret?.secretName;
    if (!file || !mount || !secretName)
      return { tokenFile: this.tokenFile, tlsDir: this.tlsDir, remount: () => Promise.resolve() };
    const dir = path.join(this.opts.stateDir, `agent-secret-${pod.metadata!.name!}`);
    const remount = async () => {
      const secret = await this.opts.kube.core.readNamespacedSecret({
        name: secretName,
        namespace: this.opts.namespace,
      });
      const data = Object.fromEntries(
        Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
      );
      if (!data[file.slice(mount.mountPath.length + 1)]) throw new Error(`Secret ${secretName} has no key for ${file}`);
      await writeTlsFiles(dir, data);
    };
    await remount();
    return { tokenFile: path.join(dir, file.slice(mount.mountPath.length + 1)), tlsDir: dir, remount };
  }

  /** The agents the kubelet half runs, by Pod name. */
  get kubeletAgents(): readonly { podName: string; ip: string; url: string; process: ManagedProcess }[] {
    return [...this.kubeletRuns.values()];
  }

  private kubelet?: NodeJS.Timeout;
  private readonly kubeletRuns = new Map<
    string,
    { process: ManagedProcess; podName: string; ip: string; url: string; remount: () => Promise<void> }
  >();

  /**
   * A container death: SIGKILL the agent and everything it started (the process runtime's
   * sandboxes die with it; containerd's keep running, as on a node, for the restarted agent to
   * re-adopt — reapContainers() removes them), then write what the kubelet reports until it restarts the
   * container: phase stays Running, Ready and ContainersReady False, the container terminated
   * (exit 137). This stand-in never restarts it.
   */
  async crash(podName: string): Promise<void> {
    const agent = this.find(podName);
    if (agent.process.running) killTree(agent.process.pid);
    await agent.process.exited;
    this.spawned.delete(agent.process);
    const t = now();
    const up = { status: 'True', lastTransitionTime: agent.startedAt };
    const notReady = {
      status: 'False',
      reason: 'ContainersNotReady',
      message: 'containers with unready status: [agent]',
      lastTransitionTime: t,
    };
    await this.patchStatus(podName, agent.podUid, {
      conditions: [
        { type: 'PodScheduled', ...up },
        { type: 'Initialized', ...up },
        { type: 'ContainersReady', ...notReady },
        { type: 'Ready', ...notReady },
      ],
      containerStatuses: [
        {
          ...containerStatus(false),
          state: { terminated: { exitCode: 137, reason: 'Error', startedAt: agent.startedAt, finishedAt: t } },
        },
      ],
    });
  }

  /**
   * The kubelet restarting the agent's container after a crash(): a new agent process on the
   * same Pod, address and port, and the Pod Running and Ready again. What the old process held
   * is gone with it unless containerd kept it (then the new agent re-adopts it).
   */
  async restart(podName: string): Promise<void> {
    const agent = this.find(podName);
    if (agent.process.running) await this.crash(podName);
    const proc = this.spawn(podName, agent.ip, agent.port, this.opts.capacity);
    await waitUntilReady(`sandbox agent ${podName} (restarted)`, () => healthy(agent.url), {
      timeoutMs: this.opts.readyTimeoutMs ?? 60_000,
      intervalMs: 100,
      process: proc,
    });
    const startedAt = await this.writeRunning(podName, agent.podUid, agent.ip);
    this.list.splice(this.list.indexOf(agent), 1, { ...agent, process: proc, startedAt });
  }

  /**
   * What a lost node takes with it: every container of this agent in the stack's containerd
   * (killed, task, container and snapshot removed). Nothing without containerd.
   */
  async reapContainers(podName: string): Promise<void> {
    const c = this.opts.containerd;
    if (!c) return;
    const client = new ContainerdClient(c.socket, c.namespace);
    try {
      for (const { id } of await client.listContainers([`labels."${LABEL.agentName}"==${JSON.stringify(podName)}`]))
        await removeContainer(client, DEFAULT_SNAPSHOTTER, id);
    } finally {
      client.close();
    }
  }

  /** The Pod is deleted (gracePeriodSeconds 0), then the agent stopped gracefully. */
  async remove(podName: string): Promise<void> {
    const agent = this.find(podName);
    this.list.splice(this.list.indexOf(agent), 1);
    await this.deletePod(podName, agent.podUid);
    await this.stopProcess(agent.process);
  }

  /**
   * Stops every agent gracefully (SIGTERM: each stops its sandboxes; SIGKILL of the whole tree if
   * that takes too long), then deletes the Pods (gracePeriodSeconds 0) and the token file. No
   * agent or sandbox process survives. Idempotent.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      clearTimeout(this.kubelet);
      try {
        await Promise.all([...this.spawned].map((p) => this.stopProcess(p)));
        const agents = this.list.splice(0);
        await Promise.all(agents.map((a) => this.deletePod(a.podName, a.podUid)));
      } finally {
        process.off('exit', this.killOnExit);
        await rm(this.tokenFile, { force: true });
        await rm(this.tlsDir, { recursive: true, force: true });
      }
    })();
    return this.stopping;
  }

  private find(podName: string): FleetAgent {
    const agent = this.list.find((a) => a.podName === podName);
    if (!agent) throw new Error(`no agent ${podName} in pool ${this.opts.pool}`);
    return agent;
  }

  private pickIp(): string {
    for (;;) {
      const ip = `127.${randomInt(1, 255)}.${randomInt(0, 256)}.${randomInt(1, 255)}`;
      if (!this.usedIps.has(ip)) {
        this.usedIps.add(ip);
        return ip;
      }
    }
  }

  /** SIGTERM, then (after the agent's own sandbox grace and a margin) SIGKILL of its whole tree. */
  private async stopProcess(proc: ManagedProcess): Promise<void> {
    // Collected before the agent exits and its children are reparented; never for a dead pid (reusable).
    const sandboxes = proc.running ? descendantGroups(proc.pid) : [];
    await proc.stop((this.opts.killGraceMs ?? 1000) + 10_000);
    for (const g of sandboxes) signalGroup(g, 'SIGKILL');
    this.spawned.delete(proc);
  }

  private async patchStatus(podName: string, uid: string, status: Record<string, unknown>): Promise<void> {
    await this.opts.kube.core.patchNamespacedPodStatus(
      // metadata.uid: the apiserver refuses (409) if the name now belongs to another Pod.
      {
        name: podName,
        namespace: this.opts.namespace,
        body: { metadata: { uid }, status },
        fieldManager: FIELD_MANAGER,
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }

  private async deletePod(podName: string, uid?: string): Promise<void> {
    try {
      await this.opts.kube.core.deleteNamespacedPod({
        name: podName,
        namespace: this.opts.namespace,
        gracePeriodSeconds: 0,
        body: uid ? { gracePeriodSeconds: 0, preconditions: { uid } } : { gracePeriodSeconds: 0 },
      });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}

/**
 * The environment a kubelet gives the Pod's agent container: its literal values, and the
 * downward-API fields the pool's Pods use (name, UID, namespace, IP).
 */
function podEnvOf(pod: V1Pod, ip: string): Record<string, string> {
  const container = pod.spec?.containers.find((c) => c.name === 'agent') ?? pod.spec?.containers[0];
  const fields: Record<string, string | undefined> = {
    'metadata.name': pod.metadata?.name,
    'metadata.uid': pod.metadata?.uid,
    'metadata.namespace': pod.metadata?.namespace,
    'status.podIP': ip,
  };
  const env: Record<string, string> = {};
  for (const e of container?.env ?? []) {
    const v = e.value ?? (e.valueFrom?.fieldRef ? fields[e.valueFrom.fieldRef.fieldPath] : undefined);
    if (v !== undefined) env[e.name] = v;
  }
  return env;
}

function containerStatus(ready: boolean) {
  return { name: 'agent', ready, started: ready, restartCount: 0, image: AGENT_IMAGE, imageID: '' };
}

/** The kubelet's probe: HTTPS without a client certificate, the serving certificate not verified (as a kubelet does). */
function healthy(url: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    https
      .get(`${url}/healthz`, { rejectUnauthorized: false, timeout: 2000, agent: false }, (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      })
      .on('timeout', function (this: { destroy(e: Error): void }) {
        this.destroy(new Error('timeout'));
      })
      .on('error', reject);
  });
}

/** Writes each key of a Secret as a 0600 file in `dir`, only when it changed (a rewrite the agent sees). */
async function writeTlsFiles(dir: string, data: Record<string, string>): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  for (const [key, value] of Object.entries(data)) {
    const file = path.join(dir, key);
    if ((await readFile(file, 'utf8').catch(() => undefined)) !== value) await writeFile(file, value, { mode: 0o600 });
  }
}

/** A port free on `ip` right now (bind port 0, read it, close). */
function freePort(ip: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, ip, () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}
