/**
 * Worker wiring only: one task queue, the whole workflow bundle, and the activities built with
 * the one Kubernetes client. Scale by running more replicas; it holds no state.
 */
import { Worker } from '@temporalio/worker';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { createActivities } from '../activities/index.js';
import { registerBuildInfo } from '../build-info.js';
import type { OperatorConfig } from '../config.js';
import { startOpsServer, type OpsServer } from '../health/ops-server.js';
import { Probes, workerProbes } from '../health/probes.js';
import { KubeClient, createKubeRequestMetrics } from '../kube/client.js';
import { logger } from '../log.js';
import { connectClient, connectRenewingWorker, dataConverterOf } from '../temporal/connection.js';
import { searchAttributesRegistered } from '../temporal/search-attribute-check.js';
import { tracedWorkerOptions } from '../tracing/temporal.js';
import { CloudflareAccountWorkers } from './cloudflare-accounts.js';
import { createInformerMetrics } from '../watcher/informer.js';
import { workflowSource } from './bundle.js';
import { killAfterActivityInterceptors } from './fault-injection.js';
import { installTemporalRuntime, temporalLogLevel } from './runtime.js';
import { autoPromote, versionedWorkerOptions } from './versioning.js';

export interface OperatorWorker {
  worker: Worker;
  cloudflareAccounts: CloudflareAccountWorkers;
  /** Where /healthz and /readyz are served (cfg.metricsPort), if anywhere. */
  probePort?: number;
  /** Runs until SIGINT/SIGTERM (the Temporal runtime shuts the workers down gracefully). */
  run(): Promise<void>;
}

export async function createWorker(
  cfg: OperatorConfig,
  opts: { workflowBundlePath?: string } = {},
): Promise<OperatorWorker> {
  const log = logger.child({ role: 'worker' });
  installTemporalRuntime(log, temporalLogLevel(process.env.DO_TEMPORAL_LOG_LEVEL, 'INFO'), cfg.workerMetricsAddress);
  const connection = await connectRenewingWorker(cfg.temporal);
  // The process (heap: the workflow cache lives here), build_info and apiserver calls; the
  // worker's task metrics are the SDK's (DO_WORKER_METRICS_ADDRESS).
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  registerBuildInfo(registry, 'worker');
  const kube = KubeClient.fromKubeconfig(cfg.kubeconfig).recordRequests(createKubeRequestMetrics(registry));
  const temporal = await connectClient(cfg.temporal);
  const worker = await Worker.create(
    tracedWorkerOptions({
      connection: connection.current,
      namespace: cfg.temporal.namespace,
      taskQueue: cfg.temporal.taskQueue,
      dataConverter: dataConverterOf(cfg.temporal),
      ...(cfg.identity ? { identity: cfg.identity } : {}),
      ...workflowSource(opts.workflowBundlePath),
      activities: createActivities({
        kube,
        requests: cfg.requests,
        cloudflare: { temporal, taskQueue: cfg.temporal.taskQueue, config: cfg.cloudflare },
      }),
      interceptors: { activity: killAfterActivityInterceptors() },
      // Activities are short apiserver calls; let in-flight ones finish on SIGTERM.
      shutdownGraceTime: '10 seconds',
      ...versionedWorkerOptions(cfg.versioning, cfg.temporal.taskQueue),
    }),
  );
  connection.follow(worker);
  const cloudflareAccounts = new CloudflareAccountWorkers({
    connection,
    cfg,
    kube,
    log,
    informerMetrics: createInformerMetrics(registry, 'worker'),
  });
  const workerChecks = workerProbes('worker', worker, temporal, kube);
  const probes = new Probes({
    ...workerChecks,
    ready: [...workerChecks.ready, searchAttributesRegistered(temporal, log)],
  });
  const opsServer: OpsServer | undefined =
    cfg.metricsPort === undefined ? undefined : await startOpsServer({ port: cfg.metricsPort, registry, probes });
  return {
    worker,
    cloudflareAccounts,
    probePort: opsServer?.port,
    async run() {
      await cloudflareAccounts.start();
      const stopPromoting = autoPromote({
        versioning: cfg.versioning,
        taskQueue: cfg.temporal.taskQueue,
        namespace: cfg.temporal.namespace,
        connection,
        identity: cfg.identity,
        log,
      });
      try {
        await worker.run();
      } finally {
        stopPromoting();
        await opsServer?.close();
        await cloudflareAccounts.stop();
        await temporal.connection.close();
        await connection.close();
      }
    },
  };
}
