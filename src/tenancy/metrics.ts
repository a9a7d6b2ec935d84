/**
 * Provider metrics (prom-client). Values are read from the provider at scrape time, so they are
 * right however late the metrics are registered.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { CONFIG_KINDS } from './model.js';
import { RELOAD_REASONS, WATCH_STATES, type TenantProvider } from './provider.js';

export function registerTenancyMetrics(registry: Registry, provider: TenantProvider) {
  return {
    snapshotRevision: new Gauge({
      name: 'durable_operators_tenancy_snapshot_revision',
      help: 'etcd revision of the tenant configuration snapshot in force.',
      registers: [registry],
      collect() {
        this.set(provider.revision);
      },
    }),
    lastUpdate: new Gauge({
      name: 'durable_operators_tenancy_last_update_timestamp_seconds',
      help: 'When the snapshot in force was assembled (0 before the first load).',
      registers: [registry],
      collect() {
        this.set(provider.lastUpdateTime / 1000);
      },
    }),
    watchState: new Gauge({
      name: 'durable_operators_tenancy_watch_state',
      help: '1 for the current state of the etcd watch: live, reconnecting, cache (serving the file cache), starting, stopped.',
      labelNames: ['state'] as const,
      registers: [registry],
      collect() {
        for (const state of WATCH_STATES) this.set({ state }, provider.watchState === state ? 1 : 0);
      },
    }),
    reloads: new Counter({
      name: 'durable_operators_tenancy_reloads_total',
      help: 'Full reads of the tenant namespace, by reason (start, recover = leaving the cache, watch-canceled = e.g. compaction).',
      labelNames: ['reason'] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const reason of RELOAD_REASONS) this.inc({ reason }, provider.reloadCount(reason));
      },
    }),
    rejectedValues: new Counter({
      name: 'durable_operators_tenancy_rejected_values_total',
      help: 'Malformed values skipped (the last valid value stays), by kind of key.',
      labelNames: ['kind'] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const kind of CONFIG_KINDS) this.inc({ kind }, provider.rejectedCount(kind));
      },
    }),
    skippedItems: new Counter({
      name: 'durable_operators_tenancy_skipped_items_total',
      help: 'Invalid parts of values skipped (an alias that is not a hostname, an unknown httpType) while the rest applied, by kind of key.',
      labelNames: ['kind'] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const kind of CONFIG_KINDS) this.inc({ kind }, provider.skippedItemCount(kind));
      },
    }),
    tenants: new Gauge({
      name: 'durable_operators_tenancy_tenants',
      help: 'Tenants (with a meta key) in the snapshot in force.',
      registers: [registry],
      collect() {
        this.set(provider.snapshot.tenantCount);
      },
    }),
  };
}

export type TenancyMetrics = ReturnType<typeof registerTenancyMetrics>;
