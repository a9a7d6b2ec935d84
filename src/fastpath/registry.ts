/**
 * The fast path's view of its agents: which agent Pods exist (`app=sandbox-agent`,
 * `fast-sandbox.io/pool=<pool>`, and controlled by that SandboxPool: labels alone prove nothing,
 * and an agent is sent the token and tenants' sandboxes), what each reports (`GET /api/v1/agent/status`), and the
 * placement table built from those reports (src/domain/allocation.ts). Rebuilt from the agents'
 * reports on start, so a restarted or second fast-path replica knows every sandbox the agents
 * hold, including Fast-mode ones whose record is not written yet.
 *
 * The agent Pods (label-selected) and the SandboxPools come from informers (list once, then watch;
 * src/watcher/informer.ts): a change that matters here — an agent Pod appearing, becoming Ready,
 * going; a pool created, deleted or resized to zero — is acted on when its event arrives, not at
 * the next poll, and no replica lists them again while its watches hold. Every poll interval (1 s;
 * the original: 2 s) and after such a change it asks each Running agent for its status. An agent
 * that has not answered for `staleAfterMs` (15 s, as the original) or whose Pod is gone, deleting
 * or not Ready leaves the table. A change in a
 * sandbox's phase on its agent (or its disappearance) is passed to `onSandboxChange`, which
 * signals the sandbox's workflow: a hint, verified there by a fresh read. A change of a sandbox
 * whose removal its own run started through this process (`removalStarted`) says so
 * (`removedByRun`): the run waits for that removal itself, and a hint landing on the task that
 * ends the run makes Temporal refuse that task (UnhandledCommand). So does a sandbox its run is
 * placing or placed through this process (`placementStarted`) while it is `creating` or `running`
 * (`placedByRun`): the run has the agent's answer, and the echo would cost it a workflow task.
 *
 * An agent that reports `draining` (its pool's workflow is about to remove it) and every agent of
 * a pool being deleted stay in the table with no room: their sandboxes are still followed, nothing
 * new is placed there. The agent refuses such creates itself too (`Draining`), so a replica whose
 * table is a poll behind cannot place there either.
 */
import type { KubernetesObject, V1Pod } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import type { AgentStatusReport } from '../agent/api.js';
import { DEFAULT_AGENT_PORT } from '../agent/server.js';
import {
  AGENT_APP_LABEL,
  AGENT_APP_VALUE,
  AGENT_POOL_LABEL,
  SandboxPoolKind,
  type SandboxPool,
} from '../api/sandbox.js';
import { mapLimited } from '../concurrency.js';
import { PlacementTable, type Placement } from '../domain/allocation.js';
import { agentIdentity } from '../domain/agent-identity.js';
import { isPoolAgentPod } from '../domain/sandbox-pool.js';
import type { KubeClient } from '../kube/client.js';
import type { Logger } from '../log.js';
import {
  ResourceInformer,
  cacheKeyOfObject,
  createInformerMetrics,
  type InformerEvent,
  type InformerMetrics,
} from '../watcher/informer.js';
import type { AgentClient } from './agent-client.js';
import type { AgentCredentials } from './agent-credentials.js';

export interface SandboxChangeObservation {
  namespace: string;
  /** The agent's pool. */
  pool: string;
  /** The first report of this sandbox this process saw (a new sandbox, or the fast path's start). */
  firstSeen?: boolean;
  claimName: string;
  agent: string;
  sandboxId: string;
  /** The agent's phase, or `missing` when the agent no longer reports the sandbox. */
  phase: string;
  message: string;
  /** Its own run started its removal through this process (`removalStarted`). */
  removedByRun?: boolean;
  /** Its own run placed it through this process (`placementStarted`), and it is creating or running. */
  placedByRun?: boolean;
}

export interface RegistryOptions {
  kube: KubeClient;
  agents: AgentClient;
  /** Where the agents' addresses are admitted (they get their pool's token). */
  credentials: AgentCredentials;
  log: Logger;
  /** Only this namespace's agents (default: every namespace). */
  namespace?: string;
  pollIntervalMs?: number;
  staleAfterMs?: number;
  onSandboxChange?: (observation: SandboxChangeObservation) => void;
  /** An agent of this pool became usable (Ready and answering) or stopped being so. */
  onPoolAgentsChange?: (namespace: string, pool: string) => void;
  /** Where the Pod and SandboxPool informers count their lists, events and errors. */
  informerMetrics?: InformerMetrics;
}

export interface KnownAgent {
  key: string;
  namespace: string;
  pod: string;
  pool: string;
  node: string;
  ip: string;
  url: string;
  /** Last successful status (Date.now()). */
  lastSeen: number;
  report?: AgentStatusReport;
  /** Why the last status call failed, if it did (e.g. the agent refused the token). */
  lastError?: string;
}

const agentKey = (namespace: string, pod: string) => `${namespace}/${pod}`;

/** How long a removal started by a run is remembered when its agent never reports it gone. */
export const RUN_REMOVAL_MEMORY_MS = 10 * 60_000;
/** The agent phases of a sandbox its run placed that are its own doing (the agent's create answer said so). */
const PLACED_PHASES: ReadonlySet<string> = new Set(['creating', 'running']);

/** At most this often a full pool's agents are asked again before a refusal (refreshPool). */
export const POOL_REFRESH_GAP_MS = 250;

/**
 * How late a watch event may arrive after its change was made: `podsListedAt` is the Pod
 * informer's last word from the server less this, so a Pod created before it is in the cache.
 */
export const WATCH_DELIVERY_ALLOWANCE_MS = 5_000;
/** Each watch request's server-side timeout. */
const WATCH_SECONDS = 20;

/** The agent's port: its container port named `agent`, else the default 5758. */
export function agentPortOf(pod: V1Pod): number {
  for (const c of pod.spec?.containers ?? [])
    for (const p of c.ports ?? []) if (p.name === 'agent') return p.containerPort;
  return DEFAULT_AGENT_PORT;
}

/** `https://podIP:port` of the Pod's agent, when it has an IP (agents serve HTTPS only). */
export function agentUrl(pod: V1Pod): string | undefined {
  const ip = pod.status?.podIP;
  if (!ip) return undefined;
  return `https://${ip.includes(':') ? `[${ip}]` : ip}:${agentPortOf(pod)}`;
}

/** What the registry reads of an agent Pod: an event that changes none of it changes nothing here. */
function podFacts(pod: V1Pod): string {
  const m = pod.metadata;
  return JSON.stringify([
    m?.uid,
    m?.labels?.[AGENT_POOL_LABEL],
    m?.ownerReferences?.map((o) => [o.uid, o.controller, o.kind, o.apiVersion]),
    !!m?.deletionTimestamp,
    pod.status?.phase,
    pod.status?.podIP,
    isReady(pod),
    pod.spec?.nodeName,
    agentPortOf(pod),
  ]);
}

/** What the registry reads of a SandboxPool. */
function poolFacts(pool: SandboxPool): string {
  return JSON.stringify([pool.metadata?.uid, !!pool.metadata?.deletionTimestamp, pool.spec?.capacity?.poolMax]);
}

function isReady(pod: V1Pod): boolean {
  return (
    pod.status?.phase === 'Running' &&
    !!pod.status.podIP &&
    !pod.metadata?.deletionTimestamp &&
    (pod.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True')
  );
}

export class SandboxRegistry {
  readonly table = new PlacementTable();
  private readonly known = new Map<string, KnownAgent>();
  private readonly holders = new Map<string, string>();
  private readonly pools = new Set<string>();
  /** Sandboxes whose removal their own run started through this process, and when (Date.now()). */
  private readonly runRemovals = new Map<string, number>();
  /** Sandboxes their own run placed (or is placing) through this process, and when (Date.now()). */
  private readonly runPlacements = new Map<string, number>();
  /** UIDs of Pods labelled as agents that no SandboxPool controls (logged once each). */
  private foreignPods = new Set<string>();
  /** Pools whose deletion has started: nothing new is placed in them. */
  private readonly terminatingPools = new Set<string>();
  /** Each pool's spec.capacity.poolMax (0: it never runs an agent). */
  private readonly poolMaxes = new Map<string, number>();
  private readonly poolRefreshes = new Map<string, { at: number; done: Promise<void> }>();
  private timer?: NodeJS.Timeout;
  /** Polls run one after another; `queuedPoll` is the one not started yet, which callers share. */
  private polls: Promise<void> = Promise.resolve();
  private queuedPoll?: Promise<void>;
  private started = false;
  private stopped = false;
  private readonly podInformer: ResourceInformer<V1Pod>;
  private readonly poolInformer: ResourceInformer<SandboxPool>;
  /** The facts last seen of each Pod and pool (podFacts, poolFacts), by informer and cache key. */
  private readonly facts = new Map<string, string>();
  readonly pollIntervalMs: number;
  readonly staleAfterMs: number;
  lastPollAt = 0;
  /** UIDs of every Pod labelled as an agent as of the last poll, by namespace (any state, any owner). */
  private agentPodUids = new Map<string, Set<string>>();
  /**
   * As of when (Date.now()) the last poll's Pods are complete: a Pod created before it is among
   * them, unless deleted since (the Pod informer's last word from the server, less
   * WATCH_DELIVERY_ALLOWANCE_MS).
   */
  podsListedAt = 0;

  constructor(private readonly opts: RegistryOptions) {
    this.pollIntervalMs = opts.pollIntervalMs ?? 1_000;
    this.staleAfterMs = opts.staleAfterMs ?? 15_000;
    const metrics = opts.informerMetrics ?? createInformerMetrics(new Registry(), 'fastpath');
    // No resync: nothing here is re-asserted. Watches the server ends before the client's 30 s
    // idle abort keep `podsListedAt` current in a quiet cluster (the end is the server's word).
    const scope = { namespace: opts.namespace, resyncMs: 0, watchTimeoutSeconds: WATCH_SECONDS };
    this.podInformer = new ResourceInformer<V1Pod>(
      opts.kube,
      'v1',
      'Pod',
      (ev) => this.observe('pod', ev, podFacts),
      opts.log.child({ informer: 'agent Pods' }),
      metrics,
      { ...scope, labelSelector: `${AGENT_APP_LABEL}=${AGENT_APP_VALUE}` },
    );
    this.poolInformer = new ResourceInformer<SandboxPool>(
      opts.kube,
      SandboxPoolKind.apiVersion,
      SandboxPoolKind.kind,
      (ev) => this.observe('pool', ev, poolFacts),
      opts.log.child({ informer: 'SandboxPools' }),
      metrics,
      scope,
    );
  }

  /**
   * Lists the agent Pods and pools, then watches them; asks the agents once (the table is
   * complete before the first create), then every interval.
   */
  async start(): Promise<void> {
    this.podInformer.start();
    this.poolInformer.start();
    await this.synced();
    this.started = true;
    await this.pollNow();
    const tick = () => {
      if (this.stopped) return;
      this.pollNow()
        .catch((err: unknown) => this.opts.log.warn({ err }, 'agent registry poll failed'))
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(tick, this.pollIntervalMs);
        });
    };
    this.timer = setTimeout(tick, this.pollIntervalMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await Promise.all([this.podInformer.stop(), this.poolInformer.stop()]);
  }

  private synced(): Promise<unknown> {
    return Promise.all([this.podInformer.waitForSync(), this.poolInformer.waitForSync()]);
  }

  /**
   * A poll that starts after this call; concurrent callers share it. It asks the agents afresh;
   * the Pods and pools are the informers' (every event received before it starts).
   */
  pollNow(): Promise<void> {
    this.queuedPoll ??= this.polls.then(() => {
      this.queuedPoll = undefined;
      return this.poll();
    });
    const poll = this.queuedPoll;
    this.polls = poll.catch(() => undefined);
    return poll;
  }

  /** An informer event: when it changes what the registry reads, the table follows now, not at the next poll. */
  private observe<T extends KubernetesObject>(
    informer: string,
    ev: InformerEvent<T>,
    factsOf: (object: T) => string,
  ): void {
    const key = `${informer}:${cacheKeyOfObject(ev.object)}`;
    if (ev.type === 'DELETED') this.facts.delete(key);
    else {
      const facts = factsOf(ev.object);
      if (this.facts.get(key) === facts) return;
      this.facts.set(key, facts);
    }
    if (!this.started || this.stopped) return;
    this.pollNow().catch((err: unknown) => this.opts.log.warn({ err }, 'agent registry poll failed'));
  }

  agent(namespace: string, pod: string): KnownAgent | undefined {
    return this.known.get(agentKey(namespace, pod));
  }

  agents(): KnownAgent[] {
    return [...this.known.values()];
  }

  /** UIDs of the namespace's agent Pods as of the last poll (complete at `podsListedAt`), whatever their state. */
  agentPodUidsIn(namespace: string): string[] {
    return [...(this.agentPodUids.get(namespace) ?? [])];
  }

  /** Whether the pool's SandboxPool exists. */
  knowsPool(namespace: string, pool: string): boolean {
    return this.pools.has(`${namespace}/${pool}`);
  }

  /** Whether the pool is being deleted (its SandboxPool has a deletionTimestamp). */
  poolTerminating(namespace: string, pool: string): boolean {
    return this.terminatingPools.has(`${namespace}/${pool}`);
  }

  /** The pool's spec.capacity.poolMax, as of the last poll (undefined for a pool not known). */
  poolMax(namespace: string, pool: string): number | undefined {
    return this.poolMaxes.get(`${namespace}/${pool}`);
  }

  /** Whether an agent of the pool is in the placement table (Ready and answering). */
  hasUsableAgent(namespace: string, pool: string): boolean {
    return this.table.hasAgents(namespace, pool);
  }

  /** Why a pool's agent Pods are not usable (their last status errors), for a precise refusal. */
  unusableAgents(namespace: string, pool: string): string[] {
    return [...this.known.values()]
      .filter((a) => a.namespace === namespace && a.pool === pool && a.lastError && !this.table.has(a.key))
      .map((a) => `${a.pod}: ${a.lastError}`);
  }

  /** The agent that last reported holding this sandbox. */
  holderOf(sandboxId: string): Placement | undefined {
    const key = this.holders.get(sandboxId);
    const a = key ? this.known.get(key) : undefined;
    const bootId = a?.report?.bootId;
    return a
      ? { agentId: a.key, pod: a.pod, node: a.node, url: a.url, ip: a.ip, ...(bootId && { bootId }) }
      : undefined;
  }

  /**
   * The sandbox's own run is removing it (its delete step, about to ask the agent): its changes
   * from now on — terminating, then missing — are marked `removedByRun`.
   */
  removalStarted(sandboxId: string): void {
    this.runRemovals.set(sandboxId, Date.now());
  }

  /**
   * The sandbox's own run is asking an agent for it (its create step): its `creating` and
   * `running` from now on are marked `placedByRun`. `placementFailed` takes that back when the
   * agent refused or did not answer, so the run hears of a sandbox that came up anyway.
   */
  placementStarted(sandboxId: string): void {
    this.runPlacements.set(sandboxId, Date.now());
  }

  placementFailed(sandboxId: string): void {
    this.runPlacements.delete(sandboxId);
  }

  /** `namespace/pool/pod` of every agent placements may use now. */
  private usable(): Set<string> {
    const out = new Set<string>();
    for (const a of this.known.values()) if (this.table.has(a.key)) out.add(`${a.namespace}/${a.pool}/${a.pod}`);
    return out;
  }

  private async poll(): Promise<void> {
    await this.synced();
    const usableBefore = this.usable();
    const { log } = this.opts;
    const listedAt = this.podInformer.currentAt - WATCH_DELIVERY_ALLOWANCE_MS;
    const pods = this.podInformer.list();
    const poolObjects = this.poolInformer.list();
    const now = Date.now();
    this.pools.clear();
    this.terminatingPools.clear();
    this.poolMaxes.clear();
    const poolUids = new Map<string, string>();
    for (const p of poolObjects) {
      const key = `${p.metadata?.namespace}/${p.metadata?.name}`;
      this.pools.add(key);
      const poolMax = p.spec?.capacity?.poolMax;
      if (typeof poolMax === 'number') this.poolMaxes.set(key, poolMax);
      poolUids.set(key, p.metadata?.uid ?? '');
      if (p.metadata?.deletionTimestamp) this.terminatingPools.add(key);
    }
    const podUids = new Map<string, Set<string>>();
    for (const pod of pods) {
      const ns = pod.metadata?.namespace ?? '';
      if (!podUids.has(ns)) podUids.set(ns, new Set());
      if (pod.metadata?.uid) podUids.get(ns)!.add(pod.metadata.uid);
    }
    this.agentPodUids = podUids;
    this.podsListedAt = listedAt;
    const seen = new Set<string>();
    const ready: KnownAgent[] = [];
    const foreign = new Set<string>();
    const admitted = new Set<string>();
    for (const pod of pods) {
      const namespace = pod.metadata?.namespace ?? '';
      const name = pod.metadata?.name ?? '';
      const pool = pod.metadata?.labels?.[AGENT_POOL_LABEL];
      if (!pool) continue;
      const poolUid = poolUids.get(`${namespace}/${pool}`);
      if (!poolUid || !isPoolAgentPod(pod.metadata?.ownerReferences, poolUid)) {
        // Labels anyone may set: never called, never sent the token. Said once per Pod.
        const uid = pod.metadata?.uid ?? `${namespace}/${name}`;
        foreign.add(uid);
        if (!this.foreignPods.has(uid))
          log.warn(
            { pod: `${namespace}/${name}`, pool },
            poolUid
              ? `Pod labelled as an agent of pool ${pool} is not controlled by that SandboxPool: ignored`
              : `Pod labelled as an agent of pool ${pool}, which does not exist: ignored`,
          );
        continue;
      }
      const url = agentUrl(pod);
      // Its pool's token goes to it (also before Ready: the pool's workflow asks starting agents).
      if (url && pod.status?.phase === 'Running' && !pod.metadata?.deletionTimestamp) {
        this.opts.credentials.admit(url, { namespace, name: pool, uid: poolUid });
        admitted.add(url);
      }
      if (!isReady(pod)) continue;
      const key = agentKey(namespace, name);
      seen.add(key);
      const ip = pod.status!.podIP!;
      const prev = this.known.get(key);
      const agent: KnownAgent = {
        key,
        namespace,
        pod: name,
        pool,
        node: pod.spec?.nodeName ?? '',
        ip,
        url: url!,
        lastSeen: prev?.lastSeen ?? now,
        report: prev?.report,
        lastError: prev?.lastError,
      };
      this.known.set(key, agent);
      ready.push(agent);
    }
    this.foreignPods = foreign;
    this.opts.credentials.retain(admitted);
    this.opts.agents.retainPools(new Set(this.opts.credentials.pools().map(agentIdentity)));
    for (const key of [...this.known.keys()])
      if (!seen.has(key)) {
        this.known.delete(key);
        this.table.remove(key);
      }
    await mapLimited(ready, 32, (a) => this.refreshAgent(a));
    this.rebuildHolders();
    this.lastPollAt = now;
    const notify = this.opts.onPoolAgentsChange;
    if (notify) {
      const usableAfter = this.usable();
      const pools = new Set<string>();
      for (const k of usableAfter) if (!usableBefore.has(k)) pools.add(k.slice(0, k.lastIndexOf('/')));
      for (const k of usableBefore) if (!usableAfter.has(k)) pools.add(k.slice(0, k.lastIndexOf('/')));
      for (const p of pools) {
        const [namespace, pool] = [p.slice(0, p.indexOf('/')), p.slice(p.indexOf('/') + 1)];
        notify(namespace, pool);
      }
    }
  }

  /** Asks one agent for its status and gives the report to the table (stale after staleAfterMs of failures). */
  private async refreshAgent(a: KnownAgent): Promise<void> {
    const log = this.opts.log;
    try {
      const report = await this.opts.agents.status(a.url);
      a.report = report;
      a.lastSeen = Date.now();
      a.lastError = undefined;
      this.table.report(
        {
          id: a.key,
          pod: a.pod,
          namespace: a.namespace,
          pool: a.pool,
          node: report.nodeName || a.node,
          url: a.url,
          ip: a.ip,
          ...(report.bootId && { bootId: report.bootId }),
          // A draining agent (its pool is removing it) and a pool being deleted take nothing new.
          capacity: report.draining || this.poolTerminating(a.namespace, a.pool) ? 0 : report.capacity,
          images: report.images,
          sandboxes: report.sandboxStatuses.map((s) => ({
            sandboxId: s.sandboxId,
            exposedPorts: s.exposedPorts ?? [],
            terminating: s.phase === 'terminating',
          })),
        },
        a.lastSeen,
      );
    } catch (err) {
      a.lastError = (err as Error).message;
      if (Date.now() - a.lastSeen >= this.staleAfterMs) {
        if (this.table.has(a.key)) log.warn({ agent: a.key, err }, 'agent stale: not placing on it');
        this.table.remove(a.key);
      }
    }
  }

  /**
   * Fresh reports from one pool's agents, before a create is refused as full: a slot freed since
   * the last poll (a sandbox deleted and gone) is seen now, not up to a poll interval later.
   * Refusals arriving together share one refresh, and a pool is refreshed at most every
   * POOL_REFRESH_GAP_MS, so a pool that stays full costs a few status calls per agent per second.
   */
  refreshPool(namespace: string, pool: string): Promise<void> {
    const key = `${namespace}/${pool}`;
    const last = this.poolRefreshes.get(key);
    if (last && Date.now() - last.at < POOL_REFRESH_GAP_MS) return last.done;
    const agents = [...this.known.values()].filter((a) => a.namespace === namespace && a.pool === pool);
    const done = mapLimited(agents, 32, (a) => this.refreshAgent(a)).then(() => undefined);
    this.poolRefreshes.set(key, { at: Date.now(), done });
    return done;
  }

  /** Sandbox → agent from the latest reports, and the phase changes since the last poll. */
  private rebuildHolders(): void {
    const current = new Map<string, SandboxChangeObservation>();
    for (const a of this.known.values()) {
      if (!a.report || !this.table.has(a.key)) continue;
      for (const s of a.report.sandboxStatuses)
        current.set(s.sandboxId, {
          namespace: a.namespace,
          pool: a.pool,
          claimName: s.claimName ?? '',
          agent: a.pod,
          sandboxId: s.sandboxId,
          phase: s.phase,
          message: s.message,
        });
    }
    this.holders.clear();
    for (const [id, o] of current) this.holders.set(id, agentKey(o.namespace, o.agent));
    const notify = this.opts.onSandboxChange;
    const byRun = (id: string, phase: string) =>
      this.runRemovals.has(id)
        ? { removedByRun: true }
        : this.runPlacements.has(id) && PLACED_PHASES.has(phase)
          ? { placedByRun: true }
          : {};
    if (notify) {
      for (const [id, o] of current) {
        const before = this.lastSeen.get(id);
        if (o.claimName && (before?.phase !== o.phase || before.message !== o.message))
          notify({ ...o, ...(before ? {} : { firstSeen: true }), ...byRun(id, o.phase) });
      }
      for (const [id, before] of this.lastSeen)
        if (!current.has(id) && before.claimName)
          notify({
            ...before,
            phase: 'missing',
            message: `no longer reported by agent ${before.agent} (was ${before.phase})`,
            ...byRun(id, 'missing'),
          });
    }
    // A removal is remembered until its sandbox is gone (or, never seen here, for a while).
    const now = Date.now();
    for (const [id, at] of this.runRemovals)
      if (!current.has(id) && (this.lastSeen.has(id) || now - at > RUN_REMOVAL_MEMORY_MS)) this.runRemovals.delete(id);
    // A placement is remembered while the sandbox is creating or running (its later phases are news).
    for (const [id, at] of this.runPlacements) {
      const seen = current.get(id);
      if (seen ? !PLACED_PHASES.has(seen.phase) : this.lastSeen.has(id) || now - at > RUN_REMOVAL_MEMORY_MS)
        this.runPlacements.delete(id);
    }
    this.lastSeen = current;
  }

  private lastSeen = new Map<string, SandboxChangeObservation>();
}
