/**
 * Where does a sandbox go? The fast path's placement table: agents grouped by (namespace, pool),
 * each with its capacity, the sandboxes it holds, its exposed ports and the images it has run.
 *
 * The rule is the original's (fast-sandbox `Registry.Allocate`): only agents of the sandbox's
 * pool *and namespace*, with a free slot and none of the requested ports in use; among those the
 * lowest score `allocated + (image already run ? 0 : 1000)` wins — image affinity first, then the
 * least loaded. Agents sit in buckets by load per pool and per (pool, image), so a placement looks
 * at the first agent of the lowest non-empty bucket: constant time in the number of agents, not a
 * scan of every agent (bench: `allocate`).
 *
 * The agents are the authority on their own capacity and ports (they refuse a create that does
 * not fit), so this table is a well-informed guess that two fast-path replicas may both hold:
 * a report from an agent replaces what the table believed about it, and reservations made here
 * for creates still on their way to the agent are kept on top of the report until the agent
 * reports them (or they are released, or they age out because their creator died).
 *
 * Pure: no I/O, no clock (callers pass `now`).
 */

export interface AgentReport {
  /** The agent's key: `<namespace>/<pod>`. */
  id: string;
  /** The agent Pod's name (what a Sandbox's status.assignedPod says). */
  pod: string;
  namespace: string;
  pool: string;
  node: string;
  /** Where the agent listens, `http://ip:port`; carried for the caller, not used to decide. */
  url: string;
  /** The Pod IP, for sandbox endpoints (`ip:port`). */
  ip: string;
  /** The agent process's boot ID (new at every start), when it reports one. */
  bootId?: string;
  capacity: number;
  images: readonly string[];
  /** Every sandbox the agent holds (any phase: a stopped sandbox keeps its slot until deleted). */
  sandboxes: readonly { sandboxId: string; exposedPorts: readonly number[]; terminating?: boolean }[];
}

export interface PlacementRequest {
  sandboxId: string;
  namespace: string;
  pool: string;
  image: string;
  ports: readonly number[];
  /** Agents that just refused this sandbox (full or port taken behind this table's back). */
  exclude?: ReadonlySet<string>;
}

export interface Placement {
  agentId: string;
  pod: string;
  node: string;
  url: string;
  ip: string;
  /** The agent's boot ID when placed: a sandbox missing after it changed went with a restart. */
  bootId?: string;
}

export type PlacementVerdict =
  | { status: 'placed'; placement: Placement }
  | { status: 'no-agents'; message: string }
  | { status: 'exhausted'; message: string };

interface Reservation {
  ports: readonly number[];
  at: number;
}

interface AgentState {
  report: AgentReport;
  /** Sandbox IDs the last report listed. */
  reported: Set<string>;
  /** Port → sandbox, from the report and from reservations. */
  ports: Map<number, string>;
  images: Set<string>;
  /** Placed here, not (yet) in a report. */
  reservations: Map<string, Reservation>;
  /** Sandboxes counted against capacity: reported + reserved. */
  load: number;
  /** Of the reported, those being deleted: their slot is held until their processes are gone. */
  terminating: number;
  /** The bucket this agent currently sits in (its load), or -1 when full. */
  bucket: number;
}

/** Agents of one (namespace, pool), bucketed by load; one bucket list per image for affinity. */
class PoolIndex {
  readonly agents = new Map<string, AgentState>();
  /** buckets[load] = agents with that load and room left. */
  readonly buckets: Set<AgentState>[] = [];
  readonly byImage = new Map<string, Set<AgentState>[]>();

  private static put(list: Set<AgentState>[], a: AgentState, load: number): void {
    (list[load] ??= new Set()).add(a);
  }

  unindex(a: AgentState): void {
    if (a.bucket < 0) return;
    this.buckets[a.bucket]?.delete(a);
    for (const img of a.images) this.byImage.get(img)?.[a.bucket]?.delete(a);
    a.bucket = -1;
  }

  index(a: AgentState): void {
    this.unindex(a);
    if (a.load >= a.report.capacity) return;
    a.bucket = a.load;
    PoolIndex.put(this.buckets, a, a.load);
    for (const img of a.images) {
      let list = this.byImage.get(img);
      if (!list) this.byImage.set(img, (list = []));
      PoolIndex.put(list, a, a.load);
    }
  }
}

const groupKey = (namespace: string, pool: string) => `${namespace}/${pool}`;

/** Reservations older than this are dropped: their creator died before reporting back. */
export const RESERVATION_TTL_MS = 60_000;

export class PlacementTable {
  private readonly pools = new Map<string, PoolIndex>();
  private readonly agentPool = new Map<string, PoolIndex>();

  /** Replaces what the table knows about an agent with its report (reservations kept on top). */
  report(r: AgentReport, now: number): void {
    let pool = this.agentPool.get(r.id);
    const key = groupKey(r.namespace, r.pool);
    const target = this.pools.get(key) ?? this.newPool(key);
    let prev: AgentState | undefined;
    if (pool) {
      prev = pool.agents.get(r.id);
      if (pool !== target) {
        if (prev) pool.unindex(prev);
        pool.agents.delete(r.id);
        prev = undefined;
      }
    }
    pool = target;
    this.agentPool.set(r.id, pool);
    const reported = new Set(r.sandboxes.map((s) => s.sandboxId));
    const reservations = new Map<string, Reservation>();
    for (const [id, res] of prev?.reservations ?? [])
      if (!reported.has(id) && now - res.at < RESERVATION_TTL_MS) reservations.set(id, res);
    const ports = new Map<number, string>();
    for (const s of r.sandboxes) for (const p of s.exposedPorts) ports.set(p, s.sandboxId);
    for (const [id, res] of reservations) for (const p of res.ports) ports.set(p, id);
    if (prev) pool.unindex(prev);
    const state: AgentState = {
      report: r,
      reported,
      ports,
      images: new Set(r.images),
      reservations,
      load: reported.size + reservations.size,
      terminating: r.sandboxes.filter((s) => s.terminating).length,
      bucket: -1,
    };
    pool.agents.set(r.id, state);
    pool.index(state);
  }

  /** Forgets an agent (its Pod is gone or its heartbeat is stale). */
  remove(agentId: string): void {
    const pool = this.agentPool.get(agentId);
    if (!pool) return;
    const a = pool.agents.get(agentId);
    if (a) pool.unindex(a);
    pool.agents.delete(agentId);
    this.agentPool.delete(agentId);
  }

  /** Picks an agent for the sandbox and reserves its slot and ports there. */
  allocate(req: PlacementRequest, now: number): PlacementVerdict {
    const pool = this.pools.get(groupKey(req.namespace, req.pool));
    if (!pool || pool.agents.size === 0)
      return {
        status: 'no-agents',
        message: `pool ${req.pool} has no ready agents in namespace ${req.namespace}`,
      };
    const fits = (a: AgentState) =>
      !req.exclude?.has(a.report.id) && req.ports.every((p) => !a.ports.has(p)) && a.load < a.report.capacity;
    const first = (list: Set<AgentState>[] | undefined, skip?: (a: AgentState) => boolean) => {
      if (!list) return undefined;
      for (const bucket of list) {
        if (!bucket) continue;
        for (const a of bucket) if (!skip?.(a) && fits(a)) return a;
      }
      return undefined;
    };
    const chosen = first(pool.byImage.get(req.image)) ?? first(pool.buckets, (a) => a.images.has(req.image));
    if (!chosen) return { status: 'exhausted', message: this.whyFull(pool, req) };
    chosen.reservations.set(req.sandboxId, { ports: req.ports, at: now });
    for (const p of req.ports) chosen.ports.set(p, req.sandboxId);
    chosen.load++;
    pool.index(chosen);
    const { id, pod, node, url, ip, bootId } = chosen.report;
    return { status: 'placed', placement: { agentId: id, pod, node, url, ip, ...(bootId && { bootId }) } };
  }

  /**
   * Gives back a reservation (the create failed or the sandbox was deleted). A sandbox the agent
   * still reports keeps counting until a report without it arrives: the agent is the authority.
   */
  release(agentId: string, sandboxId: string): void {
    const pool = this.agentPool.get(agentId);
    const a = pool?.agents.get(agentId);
    if (!pool || !a) return;
    const res = a.reservations.get(sandboxId);
    if (!res) return;
    a.reservations.delete(sandboxId);
    for (const p of res.ports) if (a.ports.get(p) === sandboxId) a.ports.delete(p);
    a.load--;
    pool.index(a);
  }

  /** Renames a reservation made under a placeholder once the sandbox's real ID is known. */
  rekey(agentId: string, from: string, to: string): void {
    const a = this.agentPool.get(agentId)?.agents.get(agentId);
    const res = a?.reservations.get(from);
    if (!a || !res) return;
    a.reservations.delete(from);
    if (a.reported.has(to)) {
      // The agent already reported it: the reservation is no longer needed.
      for (const p of res.ports) if (a.ports.get(p) === from) a.ports.delete(p);
      a.load--;
      this.agentPool.get(agentId)!.index(a);
      return;
    }
    a.reservations.set(to, res);
    for (const p of res.ports) if (a.ports.get(p) === from) a.ports.set(p, to);
  }

  /** Marks an agent full until its next report (it refused a create for lack of room). */
  markFull(agentId: string): void {
    const pool = this.agentPool.get(agentId);
    const a = pool?.agents.get(agentId);
    if (!pool || !a) return;
    a.load = Math.max(a.load, a.report.capacity);
    pool.index(a);
  }

  /** What the table believes about each agent: for status, metrics and tests. */
  view(): { id: string; namespace: string; pool: string; capacity: number; load: number; reserved: number }[] {
    const out = [];
    for (const pool of this.pools.values())
      for (const a of pool.agents.values())
        out.push({
          id: a.report.id,
          namespace: a.report.namespace,
          pool: a.report.pool,
          capacity: a.report.capacity,
          load: a.load,
          reserved: a.reservations.size,
        });
    return out;
  }

  has(agentId: string): boolean {
    return this.agentPool.has(agentId);
  }

  /** Whether the pool has an agent in the table (full or not): without one, allocate says `no-agents`. */
  hasAgents(namespace: string, pool: string): boolean {
    return (this.pools.get(groupKey(namespace, pool))?.agents.size ?? 0) > 0;
  }

  private newPool(key: string): PoolIndex {
    const p = new PoolIndex();
    this.pools.set(key, p);
    return p;
  }

  private whyFull(pool: PoolIndex, req: PlacementRequest): string {
    let used = 0;
    let total = 0;
    let withRoom = 0;
    let terminating = 0;
    for (const a of pool.agents.values()) {
      used += Math.min(a.load, a.report.capacity);
      total += a.report.capacity;
      terminating += a.terminating;
      if (a.load < a.report.capacity && !req.exclude?.has(a.report.id)) withRoom++;
    }
    const where = `pool ${req.pool} in namespace ${req.namespace}`;
    if (withRoom > 0 && req.ports.length > 0)
      return `${where}: every agent with a free slot already exposes one of ports ${req.ports.join(', ')}`;
    // A slot a deleted sandbox still holds (its processes have the kill grace to end) is in use,
    // as in the original; say so, or "full" right after a delete reads like a leak.
    const ending = terminating > 0 ? ` (${terminating} still terminating, free in a few seconds)` : '';
    return `${where} is full: ${used} of ${total} sandbox slots in use on ${pool.agents.size} agents${ending}`;
  }
}
