import { describe, expect, it } from 'vitest';
import { createFastPathMetrics, poolGauges, type AgentLoad } from '../../src/fastpath/metrics.js';

const agent = (namespace: string, pool: string, capacity: number, load: number): AgentLoad => ({
  namespace,
  pool,
  capacity,
  load,
});

describe("the fast path's pool gauges", () => {
  it('sum agents, capacity and slots in use per pool, a pool per namespace', () => {
    const gauges = poolGauges([
      agent('a', 'p', 4, 1),
      agent('a', 'p', 4, 3),
      agent('b', 'p', 2, 0),
      agent('a', 'q', 8, 2),
    ]);
    expect(gauges).toEqual([
      { namespace: 'a', pool: 'p', agents: 2, capacity: 8, used: 4 },
      { namespace: 'b', pool: 'p', agents: 1, capacity: 2, used: 0 },
      { namespace: 'a', pool: 'q', agents: 1, capacity: 8, used: 2 },
    ]);
  });

  it("count an overfull agent's slots as its capacity (the table may count a create before the agent refused it)", () => {
    expect(poolGauges([agent('a', 'p', 2, 5)])).toEqual([
      { namespace: 'a', pool: 'p', agents: 1, capacity: 2, used: 2 },
    ]);
  });

  it('read the agents at each scrape: a pool with no agent left has no series', async () => {
    let agents = [agent('a', 'p', 4, 1)];
    const metrics = createFastPathMetrics(undefined, () => agents);
    const scrape = () => metrics.registry.getSingleMetricAsString('durable_operators_fastpath_sandbox_slots');
    expect(await scrape()).toContain(
      'durable_operators_fastpath_sandbox_slots{pool_namespace="a",pool="p",kind="used"} 1',
    );
    agents = [];
    expect(await scrape()).not.toContain('pool="p"');
  });
});
