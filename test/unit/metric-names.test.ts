/**
 * One metric prefix (`durable_operators_…`) for every metric the roles register, as operator
 * users expect (external-dns: `external_dns_…`); the one exception is the original fast path's
 * create latency, kept for its dashboards. Node's default metrics (process_*, nodejs_*) are the
 * standard ones.
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createAdmissionMetrics } from '../../src/admission/metrics.js';
import { registerBuildInfo } from '../../src/build-info.js';
import { createFastPathMetrics, type AgentLoad } from '../../src/fastpath/metrics.js';
import { createKubeRequestMetrics } from '../../src/kube/client.js';
import { createDispatchMetrics } from '../../src/temporal/dispatch.js';
import { registerTenancyMetrics } from '../../src/tenancy/metrics.js';
import type { TenantProvider } from '../../src/tenancy/index.js';
import { createWatcherMetrics } from '../../src/watcher/metrics.js';

const KEPT_FROM_THE_ORIGINAL = ['fastpath_create_sandbox_duration_seconds'];

function names(registry: Registry): string[] {
  return registry
    .getMetricsAsArray()
    .map((m) => m.name)
    .filter((n) => !n.startsWith('process_') && !n.startsWith('nodejs_'));
}

describe('metric names', () => {
  it('every role’s metrics carry the durable_operators_ prefix, but the original’s create latency', () => {
    const watcher = createWatcherMetrics();
    registerBuildInfo(watcher.registry, 'watcher');
    const fastpath = createFastPathMetrics();
    createDispatchMetrics(fastpath.registry, 'fastpath');
    registerTenancyMetrics(fastpath.registry, {} as TenantProvider);
    registerBuildInfo(fastpath.registry, 'fastpath');
    createKubeRequestMetrics(fastpath.registry);
    const admission = createAdmissionMetrics();
    const all = [...names(watcher.registry), ...names(fastpath.registry), ...names(admission.registry)];
    expect(all.length).toBeGreaterThan(20);
    expect(all.filter((n) => !n.startsWith('durable_operators_') && !KEPT_FROM_THE_ORIGINAL.includes(n))).toEqual([]);
    expect(all).toEqual(expect.arrayContaining([...KEPT_FROM_THE_ORIGINAL, 'durable_operators_build_info']));
  });

  it('no label of ours is one a ServiceMonitor sets on its targets (it would be renamed exported_<name>)', async () => {
    const fastpath = createFastPathMetrics(undefined, () => [{ namespace: 'team-a', pool: 'p', capacity: 2, load: 1 }]);
    createDispatchMetrics(fastpath.registry, 'fastpath');
    createKubeRequestMetrics(fastpath.registry);
    const watcher = createWatcherMetrics();
    const admission = createAdmissionMetrics();
    const targetLabels = ['namespace', 'pod', 'job', 'instance', 'service', 'endpoint', 'container'];
    const offending: string[] = [];
    for (const registry of [fastpath.registry, watcher.registry, admission.registry])
      for (const metric of await registry.getMetricsAsJSON())
        for (const value of metric.values)
          for (const label of Object.keys(value.labels))
            if (targetLabels.includes(label)) offending.push(`${metric.name}{${label}}`);
    expect(offending).toEqual([]);
    expect(await fastpath.registry.metrics()).toContain(
      'durable_operators_fastpath_sandbox_slots{pool_namespace="team-a",pool="p",kind="capacity"} 2',
    );
  });

  it('the pool gauges follow the placement table at each scrape: a deleted pool’s series are gone', async () => {
    let agents: AgentLoad[] = [
      { namespace: 'team-a', pool: 'full', capacity: 4, load: 4 },
      { namespace: 'team-a', pool: 'full', capacity: 4, load: 5 },
      { namespace: 'team-b', pool: 'full', capacity: 8, load: 1 },
    ];
    const { registry } = createFastPathMetrics(undefined, () => agents);
    const before = await registry.metrics();
    expect(before).toContain('durable_operators_fastpath_agents{pool_namespace="team-a",pool="full"} 2');
    expect(before).toContain(
      'durable_operators_fastpath_sandbox_slots{pool_namespace="team-a",pool="full",kind="used"} 8',
    );
    expect(before).toContain(
      'durable_operators_fastpath_sandbox_slots{pool_namespace="team-b",pool="full",kind="used"} 1',
    );
    agents = agents.filter((a) => a.namespace !== 'team-a');
    const after = await registry.metrics();
    expect(after).not.toContain('pool_namespace="team-a"');
    expect(after).toContain('durable_operators_fastpath_agents{pool_namespace="team-b",pool="full"} 1');
  });

  it('every role exports the process metrics (heap, resident memory)', () => {
    for (const registry of [
      createFastPathMetrics().registry,
      createWatcherMetrics().registry,
      createAdmissionMetrics().registry,
    ])
      expect(registry.getMetricsAsArray().map((m) => m.name)).toEqual(
        expect.arrayContaining(['process_resident_memory_bytes', 'nodejs_heap_size_used_bytes']),
      );
  });

  it('build_info says the version of package.json, the role and Node', async () => {
    const registry = new Registry();
    registerBuildInfo(registry, 'worker');
    expect(await registry.metrics()).toContain(
      `durable_operators_build_info{version="0.2.0",role="worker",node_version="${process.version}"} 1`,
    );
  });
});
