/**
 * A sandbox fast path for integration tests, on the shared local stack: a namespace with a
 * SandboxPool, agents as real processes whose Pods are written like the kubelet would
 * (AgentFleet), tenants published to the stack's tenant etcd under a private prefix, an
 * in-process watcher and fast path (or a spawned one, for crash tests), and clients for both
 * faces: a standard @grpc/grpc-js client from the repo's .proto, and fetch for HTTP.
 */
import type * as grpc from '@grpc/grpc-js';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Etcd3 } from 'etcd3';
import { inject } from 'vitest';
import { PatchStrategy, setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import {
  AGENT_APP_LABEL,
  AGENT_APP_VALUE,
  AGENT_POOL_LABEL,
  SandboxKind,
  SandboxPoolKind,
  type Sandbox,
} from '../../src/api/sandbox.js';
import { loadFastPathConfig, sandboxTaskQueue, type FastPathConfig } from '../../src/config.js';
import { startFastPath, type RunningFastPath } from '../../src/fastpath/main.js';
import { TENANT_HEADER, fastPathClient, type FastPathGrpc } from '../../src/fastpath/grpc-client.js';
import { AgentFleet, runningPodStatus } from '../../src/infra/agent-fleet.js';
import { ManagedProcess, getFreePort } from '../../src/infra/process.js';
import { localTemporalEnv } from '../../src/infra/stack.js';
import { FIELD_MANAGER, type KubeClient } from '../../src/kube/client.js';
import type { SandboxSettings } from '../../src/tenancy/document.js';
import { createEtcdClient } from '../../src/tenancy/etcd.js';
import { TenantProvider } from '../../src/tenancy/provider.js';
import { TenantPublisher } from '../../src/tenancy/publisher.js';
import type { RunningWatcher } from '../../src/watcher/main.js';
import { REPO_ROOT, kube as kubeClient, stackInfo, startTestWatcher, testConfig, uniq } from './env.js';
import { quietLogger } from './tenancy.js';
import { agentFetch } from './agent-tls.js';

export { TENANT_HEADER, type FastPathGrpc } from '../../src/fastpath/grpc-client.js';

export interface SandboxStackOptions {
  agents?: number;
  capacity?: number;
  mode?: 'fast' | 'strong';
  orphanTimeout?: string;
  janitorInterval?: string;
  /** Spawn the fast path as a child process (crash tests) instead of running it in-process. */
  spawned?: boolean;
  /** Environment of a spawned fast path (e.g. DO_FAULT_KILL_AFTER_ACTIVITY). */
  spawnEnv?: NodeJS.ProcessEnv;
  /** The SandboxPool's capacity (default: keeps the fleet's agents, never shrinks; at most max(4, agents) Pods). */
  poolCapacity?: {
    poolMin: number;
    poolMax: number;
    bufferMin: number;
    bufferMax: number;
    scaleToZeroAfterSeconds?: number;
  };
  /** The SandboxPool's agentTemplate (default `{}`). */
  agentTemplate?: Record<string, unknown>;
  /**
   * Run the fleet's kubelet half (AgentFleet.runKubelet): the agent Pods the pool's workflow
   * creates get real agent processes. Without it, those Pods never become Ready.
   */
  kubelet?: boolean;
  /** The test tenant's sandbox settings (`tenants/{id}/sandbox`); `{namespace}` in a namespaces entry is the stack's. */
  tenantSandbox?: SandboxSettings;
  /**
   * The agents' runtime: containers of the stack's containerd (default), or the process runtime
   * (tests whose sandboxes must see the host, e.g. node scripts).
   */
  runtime?: 'containerd' | 'process';
  /** Whether the agents' node has runsc (gVisor) for a pool's `runtimeType: gvisor` (default true). */
  runsc?: boolean;
  /** How long the agents give a deleted sandbox's processes after SIGTERM (default 500 ms). */
  killGraceMs?: number;
  /** More SandboxPool spec fields (runtimeType, sandboxResources, warmImages…). */
  poolSpec?: Record<string, unknown>;
  /** How long a Strong create waits for a pool scaling up from zero (DO_FASTPATH_SCALE_UP_TIMEOUT; default 60s). */
  scaleUpTimeout?: string;
}

/** The status a gRPC call failed with (throws if it succeeded). */
export async function grpcError(p: Promise<unknown>): Promise<grpc.ServiceError> {
  try {
    await p;
  } catch (err) {
    return err as grpc.ServiceError;
  }
  throw new Error('expected the call to fail');
}

/** The stack's busybox image, in its local registry: what sandboxes on containerd run. */
export const sandboxImage = (): string => stackInfo().registry!.images.busybox;

/** The fast path's gRPC client (src/fastpath/grpc-client.ts). */
export const grpcClient = fastPathClient;

export class SandboxStack {
  readonly namespace = uniq('sbx');
  readonly pool = 'pool-a';
  readonly taskQueue = uniq('fastpath');
  readonly tenantId = 4000 + Math.floor(Math.random() * 50_000);
  readonly otherTenantId = this.tenantId + 1;
  readonly disabledTenantId = this.tenantId + 2;
  /** The fast path's key (DO_AGENT_TOKEN_FILE), from which each pool's agent token is derived. */
  readonly agentKey = `agent-key-${uniq('t')}`;
  /** The bearer token the pool's agents accept (derived from the key and the pool; set by start()). */
  token!: string;
  readonly kube: KubeClient = kubeClient();
  fleet!: AgentFleet;
  fastpath?: RunningFastPath;
  child?: ManagedProcess;
  watcher?: RunningWatcher;
  grpc!: FastPathGrpc;
  httpBase!: string;
  grpcAddress!: string;
  private etcd!: Etcd3;
  private tenants?: TenantProvider;
  private readonly prefix = `${uniq('sbx')}/`;
  private fp!: FastPathConfig;
  readonly stateDir = path.join(stackInfo().stateDir, 'fastpath', this.taskQueue);

  constructor(readonly opts: SandboxStackOptions = {}) {}

  async start(): Promise<this> {
    await mkdir(this.stateDir, { recursive: true });
    await this.kube.core.createNamespace({ body: { metadata: { name: this.namespace } } });
    await this.kube.create({
      apiVersion: SandboxPoolKind.apiVersion,
      kind: SandboxPoolKind.kind,
      metadata: { name: this.pool, namespace: this.namespace },
      spec: {
        // By default the pool keeps whatever agents it has (the fleet's, which it controls): it
        // never removes one (bufferMax beyond any test's free slots) nor adds one below poolMax.
        capacity: this.opts.poolCapacity ?? {
          poolMin: 0,
          poolMax: Math.max(4, this.opts.agents ?? 2),
          bufferMin: 0,
          bufferMax: 10_000,
        },
        maxSandboxesPerPod: this.opts.capacity ?? 3,
        agentTemplate: this.opts.agentTemplate ?? {},
        ...this.opts.poolSpec,
      },
    });
    this.etcd = createEtcdClient(stackInfo().tenantEtcd.endpoint);
    const publisher = new TenantPublisher(this.etcd, this.prefix);
    const sandbox = this.opts.tenantSandbox && {
      ...this.opts.tenantSandbox,
      ...(this.opts.tenantSandbox.namespaces && {
        namespaces: this.opts.tenantSandbox.namespaces.map((n) => (n === '{namespace}' ? this.namespace : n)),
      }),
    };
    await publisher.putTenant({
      id: this.tenantId,
      code: `t${this.tenantId}`,
      name: 'Test',
      status: 'active',
      ...(sandbox && { sandbox }),
    });
    await publisher.putTenant({
      id: this.otherTenantId,
      code: `t${this.otherTenantId}`,
      name: 'Other',
      status: 'active',
    });
    await publisher.putTenant({
      id: this.disabledTenantId,
      code: `t${this.disabledTenantId}`,
      name: 'Off',
      status: 'suspended',
    });
    this.fleet = await AgentFleet.start({
      kube: this.kube,
      namespace: this.namespace,
      pool: this.pool,
      count: this.opts.agents ?? 2,
      capacity: this.opts.capacity ?? 3,
      agentKey: this.agentKey,
      stateDir: this.stateDir,
      killGraceMs: this.opts.killGraceMs ?? 500,
      ...(this.opts.runtime !== 'process' ? { containerd: this.containerd() } : {}),
    });
    this.token = this.fleet.token;
    if (this.opts.kubelet) this.fleet.runKubelet();
    const tokenFile = path.join(this.stateDir, 'fastpath-token');
    await writeFile(tokenFile, this.agentKey, { mode: 0o600 });
    // In-process, the servers bind ports the OS picks (0), read back once they listen: no window in
    // which another socket takes a port picked ahead (EADDRINUSE). A spawned fast path keeps its
    // ports across restarts, so they are picked ahead.
    const [grpcPort, httpPort] = this.opts.spawned ? [await getFreePort(), await getFreePort()] : [0, 0];
    const env = {
      DO_FASTPATH_GRPC_PORT: String(grpcPort),
      DO_FASTPATH_HTTP_PORT: String(httpPort),
      DO_FASTPATH_HOST: '127.0.0.1',
      DO_FASTPATH_CONSISTENCY_MODE: this.opts.mode ?? 'fast',
      DO_FASTPATH_ORPHAN_TIMEOUT: this.opts.orphanTimeout ?? '10s',
      DO_FASTPATH_JANITOR_INTERVAL: this.opts.janitorInterval ?? '1h',
      ...(this.opts.scaleUpTimeout ? { DO_FASTPATH_SCALE_UP_TIMEOUT: this.opts.scaleUpTimeout } : {}),
      DO_FASTPATH_POLL_INTERVAL: '500ms',
      DO_FASTPATH_NAMESPACE: this.namespace,
      DO_TENANT_ETCD: stackInfo().tenantEtcd.endpoint,
      DO_AGENT_TOKEN_FILE: tokenFile,
      DO_TENANT_PREFIX: this.prefix,
    };
    this.fp = loadFastPathConfig(env);
    this.watcher = await startTestWatcher(this.taskQueue);
    await this.startFastPath();
    this.grpcAddress = `127.0.0.1:${this.fastpath?.grpcPort ?? grpcPort}`;
    this.httpBase = `http://127.0.0.1:${this.fastpath?.httpPort ?? httpPort}`;
    this.grpc = grpcClient(this.grpcAddress, String(this.tenantId));
    return this;
  }

  private containerd() {
    const { runscBinary, ...node } = stackInfo().containerd!;
    return this.opts.runsc === false ? node : { ...node, runscBinary };
  }

  /** Starts (or restarts, after a crash) the fast path. */
  async startFastPath(extraEnv: NodeJS.ProcessEnv = {}): Promise<void> {
    if (this.opts.spawned) {
      const info = stackInfo();
      this.child = ManagedProcess.start({
        name: 'fastpath',
        command: process.execPath,
        args: ['--import', 'tsx', path.join(REPO_ROOT, 'src/cli/main.ts'), 'fastpath'],
        cwd: REPO_ROOT,
        logFile: path.join(this.stateDir, 'fastpath.log'),
        env: {
          ...localTemporalEnv(info),
          KUBECONFIG: info.kubeconfig,
          DO_TASK_QUEUE: this.taskQueue,
          DO_FASTPATH_WORKFLOW_BUNDLE: inject('sandboxWorkflowBundle'),
          DO_METRICS_PORT: '0',
          ...fastPathEnv(this.fp),
          ...this.opts.spawnEnv,
          ...extraEnv,
        },
      });
      await waitForHttp(`http://127.0.0.1:${this.fp.httpPort}/healthz`);
      return;
    }
    this.tenants ??= await TenantProvider.start({
      endpoints: this.fp.tenantEtcd,
      prefix: this.fp.tenantPrefix,
      logger: quietLogger,
    });
    this.fastpath = await startFastPath(testConfig(this.taskQueue, { metricsPort: 0 }), this.fp, {
      tenants: this.tenants,
      workflowBundlePath: inject('sandboxWorkflowBundle'),
    });
  }

  /** A second fast-path replica in this process: its own placement table, the same task queue and agents. */
  async startSecondReplica(
    overrides: Partial<FastPathConfig> = {},
    /** Another task queue makes it a separate installation rather than a replica. */
    taskQueue = this.taskQueue,
  ): Promise<{ fastpath: RunningFastPath; grpc: FastPathGrpc }> {
    const fp = { ...this.fp, grpcPort: 0, httpPort: 0, ...overrides };
    const fastpath = await startFastPath(testConfig(taskQueue, { metricsPort: 0 }), fp, {
      tenants: this.tenants,
      workflowBundlePath: inject('sandboxWorkflowBundle'),
    });
    this.extraReplicas.push(fastpath);
    return { fastpath, grpc: grpcClient(`127.0.0.1:${fastpath.grpcPort}`, String(this.tenantId)) };
  }

  private readonly extraReplicas: RunningFastPath[] = [];

  get sandboxTaskQueue(): string {
    return sandboxTaskQueue(this.taskQueue);
  }

  /** Every sandbox each agent reports (fresh status calls). */
  async agentReports() {
    return Promise.all(
      this.fleet.agents.map(async (a) => {
        const res = await agentFetch(this.agentKey)(`${a.url}/api/v1/agent/status`, {
          headers: { authorization: `Bearer ${this.token}` },
        }).catch(() => undefined);
        if (!res?.ok)
          return {
            pod: a.podName,
            capacity: 0,
            allocated: 0,
            sandboxes: [] as { sandboxId: string; phase: string; claimName: string }[],
          };
        const body = (await res.json()) as {
          capacity: number;
          allocated: number;
          sandboxStatuses: { sandboxId: string; phase: string; claimName: string }[];
        };
        return { pod: a.podName, capacity: body.capacity, allocated: body.allocated, sandboxes: body.sandboxStatuses };
      }),
    );
  }

  /** The reference of a Sandbox of this stack's namespace. */
  sandboxRef(name: string) {
    return { apiVersion: SandboxKind.apiVersion, kind: SandboxKind.kind, namespace: this.namespace, name };
  }

  async sandbox(name: string): Promise<Sandbox | undefined> {
    return this.kube.get<Sandbox>(this.sandboxRef(name));
  }

  /** The other tenant's sandbox settings (e.g. its API keys); undefined removes them. */
  async setOtherTenantSandbox(sandbox: SandboxSettings | undefined): Promise<void> {
    await new TenantPublisher(this.etcd, this.prefix).putTenant({
      id: this.otherTenantId,
      code: `t${this.otherTenantId}`,
      name: 'Other',
      status: 'active',
      ...(sandbox && { sandbox }),
    });
  }

  http(
    method: string,
    route: string,
    body?: unknown,
    tenant: string = String(this.tenantId),
    headers: Record<string, string> = {},
  ) {
    return fetch(`${this.httpBase}${route}`, {
      method,
      headers: {
        ...headers,
        ...(tenant ? { [TENANT_HEADER]: tenant } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  }

  async stop(): Promise<void> {
    this.grpc?.close();
    for (const r of this.extraReplicas) await r.close().catch(() => undefined);
    await this.fastpath?.close().catch(() => undefined);
    await this.child?.stop().catch(() => undefined);
    await this.watcher?.stop().catch(() => undefined);
    await this.fleet?.stop().catch(() => undefined);
    await this.tenants?.stop().catch(() => undefined);
    this.etcd?.close();
    // Sandboxes keep a finalizer; without the fast path nothing would remove it.
    for await (const sb of this.kube.listAll<Sandbox>(SandboxKind.apiVersion, SandboxKind.kind, {
      namespace: this.namespace,
    }))
      await this.kube
        .mergePatch(
          {
            apiVersion: SandboxKind.apiVersion,
            kind: SandboxKind.kind,
            namespace: this.namespace,
            name: sb.metadata!.name!,
          },
          { metadata: { finalizers: null } },
        )
        .catch(() => undefined);
    // The pool keeps its protection finalizer while its workflow is not there to remove it.
    for await (const p of this.kube.listAll(SandboxPoolKind.apiVersion, SandboxPoolKind.kind, {
      namespace: this.namespace,
    }))
      await this.kube
        .mergePatch(
          {
            apiVersion: SandboxPoolKind.apiVersion,
            kind: SandboxPoolKind.kind,
            namespace: this.namespace,
            name: p.metadata!.name!,
          },
          { metadata: { finalizers: null } },
        )
        .catch(() => undefined);
    await this.kube.core.deleteNamespace({ name: this.namespace }).catch(() => undefined);
  }
}

function fastPathEnv(fp: FastPathConfig): NodeJS.ProcessEnv {
  return {
    DO_FASTPATH_GRPC_PORT: String(fp.grpcPort),
    DO_FASTPATH_HTTP_PORT: String(fp.httpPort),
    DO_FASTPATH_HOST: fp.host,
    DO_FASTPATH_CONSISTENCY_MODE: fp.consistencyMode,
    DO_FASTPATH_ORPHAN_TIMEOUT: `${fp.orphanTimeoutMs}ms`,
    DO_FASTPATH_JANITOR_INTERVAL: `${fp.janitorIntervalMs}ms`,
    DO_FASTPATH_SCALE_UP_TIMEOUT: `${fp.scaleUpTimeoutMs}ms`,
    DO_FASTPATH_POLL_INTERVAL: `${fp.pollIntervalMs}ms`,
    ...(fp.namespace ? { DO_FASTPATH_NAMESPACE: fp.namespace } : {}),
    DO_TENANT_ETCD: fp.tenantEtcd,
    ...(fp.tenantPrefix ? { DO_TENANT_PREFIX: fp.tenantPrefix } : {}),
    ...(fp.agentTokenFile ? { DO_AGENT_TOKEN_FILE: fp.agentTokenFile } : {}),
  };
}

async function waitForHttp(url: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  for (;;) {
    try {
      // Each attempt bounded: one connection that hangs must not take the whole wait.
      const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
      if (res.ok) return;
      last = `HTTP ${res.status}`;
    } catch (err) {
      const cause = (err as Error & { cause?: { code?: string; message?: string } }).cause;
      last = cause?.code ?? cause?.message ?? (err as Error).message; // not up yet
    }
    if (Date.now() > deadline) throw new Error(`${url} did not come up in ${timeoutMs} ms (last: ${last})`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * A Pod labelled as an agent of `pool` whose agent is whatever listens on 127.0.0.1:`port` (a
 * stub or a capture server), Running and Ready as a kubelet would write it; `owner` makes a
 * SandboxPool its owner (controller or not).
 */
export async function agentPodAt(
  kube: KubeClient,
  port: number,
  namespace: string,
  pool: string,
  owner?: { uid: string; controller: boolean },
): Promise<V1Pod> {
  const name = uniq('stub-agent');
  const pod = await kube.create<V1Pod>({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace,
      labels: { [AGENT_APP_LABEL]: AGENT_APP_VALUE, [AGENT_POOL_LABEL]: pool },
      ...(owner && {
        ownerReferences: [{ apiVersion: SandboxPoolKind.apiVersion, kind: SandboxPoolKind.kind, name: pool, ...owner }],
      }),
    },
    spec: {
      nodeName: 'local-node',
      containers: [{ name: 'agent', image: 'x', ports: [{ name: 'agent', containerPort: port }] }],
    },
  });
  await kube.core.patchNamespacedPodStatus(
    {
      name,
      namespace,
      body: { status: runningPodStatus('127.0.0.1', new Date().toISOString()) },
      fieldManager: FIELD_MANAGER,
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  return pod;
}
