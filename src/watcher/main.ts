/** Watcher process wiring: Kubernetes + Temporal clients, routes, metrics endpoint. */
import { startOpsServer, type OpsServer } from '../health/ops-server.js';
import { Probes, apiserverReachable, temporalReachable } from '../health/probes.js';
import { sandboxTaskQueue, type OperatorConfig } from '../config.js';
import { KubeClient, createKubeRequestMetrics } from '../kube/client.js';
import { logger as rootLogger, type Logger } from '../log.js';
import { connectClient } from '../temporal/connection.js';
import type { InformerOptions } from './informer.js';
import { registerBuildInfo } from '../build-info.js';
import { createWatcherMetrics, type WatcherMetrics } from './metrics.js';
import { CloudflareSourceRoute } from './routes/cloudflare.js';
import { ObjectKeeperRoute } from './routes/objectkeeper.js';
import { RequestRoute } from './routes/requests.js';
import { SandboxPoolRoute } from './routes/sandbox-pools.js';
import { SandboxRoute } from './routes/sandboxes.js';
import { Watcher, type Route } from './watcher.js';
import { dispatchUnblocked } from '../temporal/dispatch.js';
import { searchAttributesRegistered } from '../temporal/search-attribute-check.js';

export interface RunningWatcher {
  watcher: Watcher;
  metrics: WatcherMetrics;
  /** Port of /metrics, /healthz and /readyz, when enabled. */
  metricsPort?: number;
  stop(): Promise<void>;
}

export function defaultRoutes(cfg: OperatorConfig): Route[] {
  return [
    new ObjectKeeperRoute({ verifyIntervalMs: cfg.keeperVerifyIntervalMs }),
    new RequestRoute(),
    new SandboxRoute(sandboxTaskQueue(cfg.temporal.taskQueue)),
    new SandboxPoolRoute(sandboxTaskQueue(cfg.temporal.taskQueue)),
    new CloudflareSourceRoute({ reregisterMs: cfg.cloudflare.observeIntervalMs }),
  ];
}

export async function startWatcher(
  cfg: OperatorConfig,
  opts: { log?: Logger; routes?: Route[]; concurrency?: number; resyncMs?: number; informer?: InformerOptions } = {},
): Promise<RunningWatcher> {
  const log = opts.log ?? rootLogger.child({ role: 'watcher' });
  const metrics = createWatcherMetrics();
  registerBuildInfo(metrics.registry, 'watcher');
  const kube = KubeClient.fromKubeconfig(cfg.kubeconfig).recordRequests(createKubeRequestMetrics(metrics.registry));
  const temporal = await connectClient(cfg.temporal);
  const watcher = new Watcher({
    kube,
    temporal,
    taskQueue: cfg.temporal.taskQueue,
    log,
    metrics,
    routes: opts.routes ?? defaultRoutes(cfg),
    concurrency: opts.concurrency,
    resyncMs: opts.resyncMs ?? cfg.resyncMs,
    informer: opts.informer,
  });
  watcher.start();

  const probes = new Probes({
    ready: [
      temporalReachable(temporal),
      apiserverReachable(kube),
      dispatchUnblocked(watcher.dispatcher),
      searchAttributesRegistered(temporal, log),
      // Ready once every informer has completed its first list.
      {
        name: 'informers',
        run: async () => {
          if (!watcher.synced) throw new Error('not synced yet');
        },
      },
    ],
  });
  let ops: OpsServer | undefined;
  if (cfg.metricsPort !== undefined) {
    ops = await startOpsServer({ port: cfg.metricsPort, registry: metrics.registry, probes });
    log.info({ metricsPort: ops.port }, 'metrics on /metrics');
  }
  return {
    watcher,
    metrics,
    metricsPort: ops?.port,
    async stop() {
      await watcher.stop();
      await ops?.close();
      await temporal.connection.close();
    },
  };
}
