/**
 * The fast path's Prometheus metrics (prom-client), served on /metrics next to the HTTP face.
 * `fastpath_create_sandbox_duration_seconds{mode,success}` has no project prefix so that
 * dashboards and alerts written for the original read it unchanged; the others carry
 * `durable_operators_fastpath_…`.
 *
 * A pool's Kubernetes namespace is `pool_namespace`: a label `namespace` would be renamed
 * `exported_namespace` by a ServiceMonitor scrape, whose own `namespace` is the Pod's.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** What the placement table believes about one agent (PlacementTable.view()). */
export interface AgentLoad {
  namespace: string;
  pool: string;
  capacity: number;
  load: number;
}

export interface PoolGauge {
  namespace: string;
  pool: string;
  agents: number;
  capacity: number;
  used: number;
}

/** Agents, capacity and slots in use per pool, from the agents the placement table holds now. */
export function poolGauges(agents: Iterable<AgentLoad>): PoolGauge[] {
  const out = new Map<string, PoolGauge>();
  for (const a of agents) {
    const key = `${a.namespace}/${a.pool}`;
    const g = out.get(key) ?? { namespace: a.namespace, pool: a.pool, agents: 0, capacity: 0, used: 0 };
    g.agents++;
    g.capacity += a.capacity;
    g.used += Math.min(a.load, a.capacity);
    out.set(key, g);
  }
  return [...out.values()];
}

/**
 * @param agents the agents placed on, read at each scrape: a pool that has none any more (deleted,
 *   scaled to zero) has no series, rather than its last values for ever.
 */
export function createFastPathMetrics(registry = new Registry(), agents: () => Iterable<AgentLoad> = () => []) {
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    createDuration: new Histogram({
      name: 'fastpath_create_sandbox_duration_seconds',
      help: 'CreateSandbox, from receiving the call to answering it.',
      labelNames: ['mode', 'success'] as const,
      buckets: [0.005, 0.01, 0.02, 0.03, 0.05, 0.08, 0.1, 0.2, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
    createRejections: new Counter({
      name: 'durable_operators_fastpath_create_rejections_total',
      help: 'Creates answered with an error, by mode and reason (ResourceExhausted, InvalidArgument, …).',
      labelNames: ['mode', 'code'] as const,
      registers: [registry],
    }),
    allocations: new Counter({
      name: 'durable_operators_fastpath_allocations_total',
      help: 'Placements: placed on an agent, or exhausted (no agent had room).',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    agentRefusals: new Counter({
      name: 'durable_operators_fastpath_agent_refusals_total',
      help: 'Creates an agent refused (its own capacity and port check), by reason.',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    janitorRemoved: new Counter({
      name: 'durable_operators_fastpath_janitor_orphans_removed_total',
      help: 'Sandboxes the janitor deleted on agents because no Sandbox records them.',
      registers: [registry],
    }),
    janitorLost: new Counter({
      name: 'durable_operators_fastpath_janitor_lost_total',
      help: 'Sandbox records the janitor found Bound/Running on an agent that no longer has them.',
      registers: [registry],
    }),
    agents: new Gauge({
      name: 'durable_operators_fastpath_agents',
      help: 'Agents the registry places on, by pool (its namespace: pool_namespace).',
      labelNames: ['pool_namespace', 'pool'] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const g of poolGauges(agents())) this.set({ pool_namespace: g.namespace, pool: g.pool }, g.agents);
      },
    }),
    slots: new Gauge({
      name: 'durable_operators_fastpath_sandbox_slots',
      help: 'Sandbox slots per pool: capacity, and in use as the registry counts them.',
      labelNames: ['pool_namespace', 'pool', 'kind'] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const g of poolGauges(agents())) {
          this.set({ pool_namespace: g.namespace, pool: g.pool, kind: 'capacity' }, g.capacity);
          this.set({ pool_namespace: g.namespace, pool: g.pool, kind: 'used' }, g.used);
        }
      },
    }),
  };
}

export type FastPathMetrics = ReturnType<typeof createFastPathMetrics>;
