/** Watcher process wiring: Kubernetes + Temporal clients, routes, metrics endpoint. */
import { Probes, apiserverReachable, temporalReachable } from '../health/probes.js';
import http from 'node:http';
import { sandboxTaskQueue, type OperatorConfig } from '../config.js';
import { KubeClient } from '../kube/client.js';
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
  const kube = KubeClient.fromKubeconfig(cfg.kubeconfig);
  const temporal = await connectClient(cfg.temporal);
  const metrics = createWatcherMetrics();
  registerBuildInfo(metrics.registry, 'watcher');
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
  let server: http.Server | undefined;
  let metricsPort: number | undefined;
  if (cfg.metricsPort !== undefined) {
    server = http.createServer((req, res) => {
      if (req.url === '/metrics') {
        metrics.registry
          .metrics()
          .then((body) => res.writeHead(200, { 'Content-Type': metrics.registry.contentType }).end(body))
          .catch((err: Error) => res.writeHead(500).end(err.message));
      } else if (probes.handle(req, res)) {
        return;
      } else {
        res.writeHead(404).end();
      }
    });
    await new Promise<void>((resolve) => server!.listen(cfg.metricsPort, resolve));
    metricsPort = (server.address() as { port: number }).port;
    log.info({ metricsPort }, 'metrics on /metrics');
  }
  return {
    watcher,
    metrics,
    metricsPort,
    async stop() {
      await watcher.stop();
      server?.close();
      await temporal.connection.close();
    },
  };
}
