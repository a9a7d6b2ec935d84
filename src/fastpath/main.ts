/**
 * The fast-path process: the sandbox API (gRPC + HTTP/JSON), the agent registry, the tenant
 * provider, and a Temporal worker for the sandbox task queue — in one process, so the sandbox
 * workflows' local activities place sandboxes with the in-process placement table and a create
 * costs no extra task round trip. Several replicas may run: each keeps its own table from the
 * agents' reports, and the agents' own admission keeps them from overfilling any agent.
 *
 * It also keeps the janitor workflow running (`sandbox-janitor/<task queue>`; ./janitor.ts).
 */
import { startOpsServer, type OpsServer } from '../health/ops-server.js';
import { Probes, workerProbes } from '../health/probes.js';
import { Worker } from '@temporalio/worker';
import { createSandboxAgentActivities } from '../activities/sandbox/agents.js';
import { createSandboxEnvResolver } from '../activities/sandbox/env.js';
import { createSandboxCreateActivities } from '../activities/sandbox/create.js';
import { createSandboxQuotaActivities } from '../activities/sandbox/quota.js';
import { quotaWorkflowId } from '../domain/sandbox-quota.js';
import { createSandboxJanitorActivities } from '../activities/sandbox/janitor.js';
import { createSandboxPoolActivities } from '../activities/sandbox/pools.js';
import { createSandboxRecordActivities } from '../activities/sandbox/records.js';
import { createSandboxLifeStepActivities } from '../activities/sandbox/life-steps.js';
import { loadAgentToken } from '../agent/auth.js';
import { SandboxKind } from '../api/sandbox.js';
import { sandboxTaskQueue, type FastPathConfig, type OperatorConfig } from '../config.js';
import { sandboxWorkflowId } from '../domain/sandbox.js';
import { poolWorkflowId } from '../domain/sandbox-pool.js';
import { KubeClient, createKubeRequestMetrics } from '../kube/client.js';
import { EventRecorder } from '../kube/events.js';
import { logger } from '../log.js';
import { TenantProvider, registerTenancyMetrics, type HoldsTenantSnapshot } from '../tenancy/index.js';
import { connectClient, connectRenewingWorker, dataConverterOf } from '../temporal/connection.js';
import { tracedWorkerOptions } from '../tracing/temporal.js';
import { Dispatcher, createDispatchMetrics, dispatchUnblocked } from '../temporal/dispatch.js';
import { searchAttributesRegistered } from '../temporal/search-attribute-check.js';
import { K8sKind, K8sName, K8sNamespace } from '../temporal/search-attributes.js';
import { workflowSource } from '../workers/bundle.js';
import { delayActivityInterceptors, killAfterActivityInterceptors } from '../workers/fault-injection.js';
import { installTemporalRuntime, temporalLogLevel } from '../workers/runtime.js';
import { autoPromote, versionedWorkerOptions } from '../workers/versioning.js';
import {
  agentReportedSignal,
  poolChangedSignal,
  poolDemandSignal,
  releaseSlotSignal,
  sandboxWorkflow,
} from '../workflows/sandbox/contract.js';
import { AgentClient } from './agent-client.js';
import { ensureSandboxJanitor } from './janitor.js';
import { AgentCredentials } from './agent-credentials.js';
import { AgentPki } from './agent-pki.js';
import { EnvSealer } from './sealed-env.js';
import { startGrpcServer } from './grpc.js';
import { SandboxIo } from './sandbox-io.js';
import { startHttpServer } from './http.js';
import { ServingTls } from './tls.js';
import { runningSandbox } from './sandbox-runs.js';
import { registerBuildInfo } from '../build-info.js';
import { createFastPathMetrics } from './metrics.js';
import { PoolHints } from './pool-hints.js';
import { SandboxRegistry, type SandboxChangeObservation } from './registry.js';
import { createInformerMetrics } from '../watcher/informer.js';
import { agentHintStep, hintForRunState } from './run-hints.js';
import { FastPathService } from './service.js';

export interface RunningFastPath {
  grpcPort: number;
  httpPort: number;
  metricsPort?: number;
  registry: SandboxRegistry;
  /** Stops serving, drains the worker, stops the registry and the tenant provider. */
  close(): Promise<void>;
}

export async function startFastPath(
  cfg: OperatorConfig,
  fp: FastPathConfig,
  opts: {
    /** A tenant source owned by the caller (tests); default: a TenantProvider on fp.tenantEtcd. */
    tenants?: HoldsTenantSnapshot;
    workflowBundlePath?: string;
  } = {},
): Promise<RunningFastPath> {
  const log = logger.child({ role: 'fastpath' });
  installTemporalRuntime(log, temporalLogLevel(process.env.DO_TEMPORAL_LOG_LEVEL, 'WARN'), cfg.workerMetricsAddress);
  const taskQueue = sandboxTaskQueue(cfg.temporal.taskQueue);
  // Read first: a missing or mismatched certificate fails the start with its reason.
  const tls = fp.tls && new ServingTls(fp.tls, log);
  // The pool gauges read the placement table at each scrape (registry is set before any scrape).
  const metrics = createFastPathMetrics(undefined, () => registry.table.view());
  registerBuildInfo(metrics.registry, 'fastpath');
  const kube = KubeClient.fromKubeconfig(cfg.kubeconfig).recordRequests(createKubeRequestMetrics(metrics.registry));
  // DO_AGENT_TOKEN_FILE holds the key each pool's agent token is derived from.
  const agentKey = loadAgentToken({ tokenFile: fp.agentTokenFile, token: process.env.DO_AGENT_TOKEN });
  const credentials = new AgentCredentials(agentKey);
  // The agents' CA, their certificates and the fast path's client certificate are derived from it too.
  const pki = new AgentPki(agentKey);
  // Sandboxes' env values are sealed with a key derived from it before they reach Temporal.
  const sealer = new EnvSealer(agentKey);
  const agents = new AgentClient((url) => credentials.targetFor(url), { tls: (now) => pki.fastPathTls(now) });
  const client = await connectClient(cfg.temporal);
  const dispatcher = new Dispatcher(client, taskQueue, createDispatchMetrics(metrics.registry, 'fastpath'), log);

  // Only news to the run (src/fastpath/run-hints.ts): its own removal's traces would land on the task that ends it.
  const hintRun = async (change: SandboxChangeObservation) => {
    const step = agentHintStep(change);
    if (step === 'skip') return;
    if (step === 'ask') {
      const run = await runningSandbox(client, change.namespace, change.claimName).then(
        (r) => r?.state,
        () => 'unknown' as const,
      );
      if (!hintForRunState(run, change)) return;
    }
    await dispatcher.signal(sandboxWorkflowId(change.namespace, change.claimName), agentReportedSignal, {
      agent: change.agent,
      sandboxId: change.sandboxId,
      phase: change.phase,
      message: change.message,
    });
  };
  // One hint per pool per poll of the agents, whatever changed in it (src/fastpath/pool-hints.ts).
  const poolHints = new PoolHints((workflowId, event) =>
    dispatcher
      .hint(workflowId, poolChangedSignal, { event })
      .catch((err: unknown) => log.warn({ err }, 'pool hint not delivered')),
  );
  const registry = new SandboxRegistry({
    kube,
    agents,
    credentials,
    log,
    namespace: fp.namespace,
    pollIntervalMs: fp.pollIntervalMs,
    informerMetrics: createInformerMetrics(metrics.registry, 'fastpath'),
    // The agent's view changed: a hint to the sandbox's workflow, verified there. A sandbox
    // appearing on or leaving an agent changes its pool's load: a hint to the pool's workflow.
    // An agent became usable or went away: the pool's status and size follow at once.
    onPoolAgentsChange: (namespace, pool) => poolHints.add(namespace, pool, 'agents changed'),
    onSandboxChange: (change) => {
      void hintRun(change).catch((err: unknown) => log.warn({ err }, 'agent hint not delivered'));
      if (change.firstSeen || change.phase === 'missing')
        poolHints.add(
          change.namespace,
          change.pool,
          `sandbox ${change.sandboxId} ${change.phase} on agent ${change.agent}`,
        );
    },
  });
  const tenants =
    opts.tenants ??
    (await TenantProvider.start({
      endpoints: fp.tenantEtcd,
      security: fp.tenantEtcdSecurity,
      prefix: fp.tenantPrefix,
      cacheFile: fp.tenantCacheFile,
      logger: log,
    }));
  // The tenant configuration's state (DurableOperatorsTenancyNotLive reads watch_state).
  if (tenants instanceof TenantProvider) registerTenancyMetrics(metrics.registry, tenants);
  await registry.start();

  const connection = await connectRenewingWorker(cfg.temporal);
  const agentSteps = createSandboxAgentActivities(registry, agents, createSandboxEnvResolver(kube, sealer), metrics);
  const events = new EventRecorder(kube, 'fastpath');
  const recordSteps = createSandboxRecordActivities(kube, sealer, events);
  const worker = await Worker.create(
    tracedWorkerOptions({
      connection: connection.current,
      namespace: cfg.temporal.namespace,
      taskQueue,
      dataConverter: dataConverterOf(cfg.temporal),
      ...(cfg.identity ? { identity: cfg.identity } : {}),
      ...workflowSource(opts.workflowBundlePath, 'sandbox'),
      activities: {
        ...agentSteps,
        ...recordSteps,
        ...createSandboxCreateActivities(agentSteps, recordSteps, (id) => registry.holderOf(id)),
        ...createSandboxLifeStepActivities(agentSteps, recordSteps),
        ...createSandboxQuotaActivities(({ tenant, ...release }) =>
          dispatcher.signal(quotaWorkflowId(tenant), releaseSlotSignal, release),
        ),
        ...createSandboxPoolActivities(kube, agents, credentials, pki, events),
        ...createSandboxJanitorActivities(
          registry,
          agents,
          kube,
          metrics,
          async (lost) => {
            const sent = await dispatcher.signalWithStart({
              workflow: sandboxWorkflow,
              workflowId: sandboxWorkflowId(lost.namespace, lost.name),
              args: [{ namespace: lost.namespace, name: lost.name }],
              signal: agentReportedSignal,
              signalArgs: [
                { agent: lost.agent, sandboxId: lost.sandboxId, phase: 'missing', message: 'janitor: agent lost it' },
              ],
              searchAttributes: [
                { key: K8sKind, value: SandboxKind.kind },
                { key: K8sNamespace, value: lost.namespace },
                { key: K8sName, value: lost.name },
              ],
              summary: `Sandbox ${lost.namespace}/${lost.name}`,
              kind: SandboxKind.kind,
              receivedAt: performance.now(),
            });
            // The pass counts it as reported only when it was.
            if (sent === 'dropped')
              throw new Error(`Temporal refused the hint to sandbox ${lost.namespace}/${lost.name}`);
          },
          fp.namespace,
          async (namespace, name) => (await runningSandbox(client, namespace, name))?.state,
        ),
      },
      interceptors: { activity: [...killAfterActivityInterceptors(), ...delayActivityInterceptors()] },
      shutdownGraceTime: '10 seconds',
      ...versionedWorkerOptions(cfg.versioning, taskQueue),
    }),
  );
  connection.follow(worker);
  const workerRun = worker.run();
  const stopPromoting = autoPromote({
    versioning: cfg.versioning,
    taskQueue,
    namespace: cfg.temporal.namespace,
    connection,
    identity: cfg.identity,
    log,
  });
  workerRun.catch((err: unknown) => log.error({ err }, 'sandbox worker stopped'));
  const janitor = await ensureSandboxJanitor(client, taskQueue, fp);

  const service = new FastPathService({
    client,
    sealer,
    kube,
    registry,
    taskQueue,
    defaultMode: fp.consistencyMode,
    metrics,
    log,
    tenants,
    scaleUpWaitMs: fp.scaleUpTimeoutMs,
    hintPoolDemand: (namespace, pool, demand) =>
      void dispatcher
        .hint(poolWorkflowId(namespace, pool), poolDemandSignal, demand)
        .catch((err: unknown) => log.warn({ err }, 'pool demand hint not delivered')),
  });
  const io = new SandboxIo({ service, registry, agents });
  const serving = { service, tenants, host: fp.host, log, io, tls };
  const grpcServer = await startGrpcServer({ ...serving, port: fp.grpcPort });
  const httpServer = await startHttpServer({ ...serving, port: fp.httpPort });

  const workerChecks = workerProbes('sandbox-worker', worker, client, kube);
  const probes = new Probes({
    ...workerChecks,
    ready: [...workerChecks.ready, dispatchUnblocked(dispatcher), searchAttributesRegistered(client, log)],
  });
  const opsServer: OpsServer | undefined =
    cfg.metricsPort === undefined
      ? undefined
      : await startOpsServer({ port: cfg.metricsPort, registry: metrics.registry, probes });
  log.info(
    {
      grpcPort: grpcServer.port,
      httpPort: httpServer.port,
      taskQueue,
      janitor,
      mode: fp.consistencyMode,
      agents: registry.agents().length,
    },
    'fast path serving',
  );

  return {
    grpcPort: grpcServer.port,
    httpPort: httpServer.port,
    metricsPort: opsServer?.port,
    registry,
    async close() {
      await Promise.all([grpcServer.close(), httpServer.close()]);
      tls?.close();
      await opsServer?.close();
      stopPromoting();
      // The SDK's runtime may have begun the worker's shutdown on SIGTERM already.
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await workerRun.catch(() => undefined);
      await registry.stop();
      dispatcher.stop();
      await client.connection.close();
      await connection.close();
      if (!opts.tenants) await (tenants as TenantProvider).stop();
    },
  };
}
