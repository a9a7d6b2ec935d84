/** Watcher metrics (prom-client), served on /metrics. */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export function createWatcherMetrics(registry = new Registry()) {
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    eventsSeen: new Counter({
      name: 'do_watcher_events_total',
      help: 'Kubernetes events seen, by kind and type (list items count as ADDED/MODIFIED/DELETED).',
      labelNames: ['kind', 'type'] as const,
      registers: [registry],
    }),
    workflowsStarted: new Counter({
      name: 'do_watcher_workflows_started_total',
      help: 'Workflow executions this watcher started.',
      labelNames: ['workflow'] as const,
      registers: [registry],
    }),
    workflowsDeduplicated: new Counter({
      name: 'do_watcher_workflows_deduplicated_total',
      help: 'Starts that found the execution already there (replayed event, another watcher replica).',
      labelNames: ['workflow', 'where'] as const,
      registers: [registry],
    }),
    signalsSent: new Counter({
      name: 'do_watcher_signals_total',
      help: 'Signals sent to running workflows.',
      labelNames: ['signal', 'result'] as const,
      registers: [registry],
    }),
    dispatchLag: new Histogram({
      name: 'do_watcher_dispatch_lag_seconds',
      help: 'From receiving an event to the workflow start/signal being acknowledged by Temporal.',
      labelNames: ['kind'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    dispatchRetries: new Counter({
      name: 'do_watcher_dispatch_retries_total',
      help: 'Temporal calls retried because Temporal was unavailable.',
      registers: [registry],
    }),
    relists: new Counter({
      name: 'do_watcher_relists_total',
      help: 'Full lists, by kind and reason (sync = start/restart, gone = 410).',
      labelNames: ['kind', 'reason'] as const,
      registers: [registry],
    }),
    watchErrors: new Counter({
      name: 'do_watcher_watch_errors_total',
      help: 'List/watch failures that caused a backoff-and-retry.',
      labelNames: ['kind'] as const,
      registers: [registry],
    }),
    queueDepth: new Gauge({
      name: 'do_watcher_queue_depth',
      help: 'Events waiting to be dispatched to Temporal.',
      registers: [registry],
    }),
  };
}

export type WatcherMetrics = ReturnType<typeof createWatcherMetrics>;
