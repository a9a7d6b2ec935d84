/** Watcher metrics (prom-client), served on /metrics. */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { createDispatchMetrics } from '../temporal/dispatch.js';

export function createWatcherMetrics(registry = new Registry()) {
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    eventsSeen: new Counter({
      name: 'durable_operators_watcher_events_total',
      help: 'Kubernetes events seen, by kind and type (list items count as ADDED/MODIFIED/DELETED).',
      labelNames: ['kind', 'type'] as const,
      registers: [registry],
    }),
    ...createDispatchMetrics(registry, 'watcher'),
    relists: new Counter({
      name: 'durable_operators_watcher_relists_total',
      help: 'Full lists, by kind and reason (sync = start/restart, gone = 410).',
      labelNames: ['kind', 'reason'] as const,
      registers: [registry],
    }),
    watchErrors: new Counter({
      name: 'durable_operators_watcher_watch_errors_total',
      help: 'List/watch failures that caused a backoff-and-retry.',
      labelNames: ['kind'] as const,
      registers: [registry],
    }),
    queueDepth: new Gauge({
      name: 'durable_operators_watcher_queue_depth',
      help: 'Events waiting to be dispatched to Temporal.',
      registers: [registry],
    }),
  };
}

export type WatcherMetrics = ReturnType<typeof createWatcherMetrics>;
