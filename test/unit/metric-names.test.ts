/**
 * One metric prefix (`durable_operators_…`) for every metric the roles register, as operator
 * users expect (external-dns: `external_dns_…`); the one exception is the original fast path's
 * create latency, kept for its dashboards. Node's default metrics (process_*, nodejs_*) are the
 * standard ones.
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { registerBuildInfo } from '../../src/build-info.js';
import { createFastPathMetrics } from '../../src/fastpath/metrics.js';
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
    const all = [...names(watcher.registry), ...names(fastpath.registry)];
    expect(all.length).toBeGreaterThan(20);
    expect(all.filter((n) => !n.startsWith('durable_operators_') && !KEPT_FROM_THE_ORIGINAL.includes(n))).toEqual([]);
    expect(all).toEqual(expect.arrayContaining([...KEPT_FROM_THE_ORIGINAL, 'durable_operators_build_info']));
  });

  it('build_info says the version of package.json, the role and Node', async () => {
    const registry = new Registry();
    registerBuildInfo(registry, 'worker');
    expect(await registry.metrics()).toContain(
      `durable_operators_build_info{version="0.2.0",role="worker",node_version="${process.version}"} 1`,
    );
  });
});
