/**
 * Helpers for integration tests: clients for the stack the global setup started, in-process or
 * child-process workers and watchers on a per-file task queue, and polling.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { AuthorizationV1Api } from '@kubernetes/client-node';
import type { Client } from '@temporalio/client';
import { Worker, type ActivityInterceptorsFactory } from '@temporalio/worker';
import { inject } from 'vitest';
import { createActivities } from '../../src/activities/index.js';
import { loadConfig, type OperatorConfig } from '../../src/config.js';
import { findBinary } from '../../src/infra/binaries.js';
import { renderKubeconfig } from '../../src/infra/components.js';
import { ManagedProcess } from '../../src/infra/process.js';
import { localTemporalEnv } from '../../src/infra/stack.js';
import { KubeClient, apiMessage, statusCode } from '../../src/kube/client.js';
import { logger } from '../../src/log.js';
import { connectClient, connectRenewingWorker, dataConverterOf } from '../../src/temporal/connection.js';
import type { PayloadKeyRing } from '../../src/temporal/payload-encryption.js';
import { CloudflareAccountWorkers } from '../../src/workers/cloudflare-accounts.js';
import { autoPromote, versionedWorkerOptions } from '../../src/workers/versioning.js';
import { installTemporalRuntime } from '../../src/workers/runtime.js';
import type { InformerOptions } from '../../src/watcher/informer.js';
import { startWatcher, type RunningWatcher } from '../../src/watcher/main.js';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export function stackInfo() {
  return inject('stack');
}

export function uniq(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

let payloadKeys: PayloadKeyRing | undefined;

/** From now on, this file's clients and workers (testConfig) encrypt payloads with `keys`, as roles given DO_PAYLOAD_KEYS_DIR. */
export function encryptPayloads(keys: PayloadKeyRing): void {
  payloadKeys = keys;
}

export function testConfig(taskQueue: string, extra: Partial<OperatorConfig> = {}): OperatorConfig {
  const info = stackInfo();
  const base = loadConfig(
    {
      temporalAddress: info.temporal.address,
      namespace: info.temporal.namespace,
      taskQueue,
      kubeconfig: info.kubeconfig,
    },
    {},
  );
  if (payloadKeys) base.temporal.payloadKeys = payloadKeys;
  return { ...base, ...extra };
}

export function kube(): KubeClient {
  return KubeClient.fromKubeconfig(stackInfo().kubeconfig);
}

let client: Client | undefined;
export async function temporal(): Promise<Client> {
  client ??= await connectClient(testConfig('unused').temporal);
  return client;
}

const quietLog = logger.child({ test: true });
quietLog.level = process.env.DO_TEST_LOG_LEVEL ?? 'warn';

/**
 * An in-process worker on `taskQueue`, using the pre-built bundle. With `cloudflare`, also the
 * Cloudflare sources' activities and the per-account Cloudflare workers (accounts listed every
 * second), as the worker process runs them. With `extra.versioning`, a versioned worker as the
 * worker process makes it (auto-promote included); `activityInterceptors` come before its activities.
 */
export async function startTestWorker(
  taskQueue: string,
  extra: Partial<OperatorConfig> = {},
  opts: { cloudflare?: boolean; activityInterceptors?: ActivityInterceptorsFactory[] } = {},
): Promise<{ stop(): Promise<void> }> {
  const cfg = testConfig(taskQueue, extra);
  installTemporalRuntime(quietLog);
  const connection = await connectRenewingWorker(cfg.temporal);
  const kubeClient = KubeClient.fromKubeconfig(cfg.kubeconfig);
  const worker = await Worker.create({
    connection: connection.current,
    namespace: cfg.temporal.namespace,
    taskQueue,
    dataConverter: dataConverterOf(cfg.temporal),
    workflowBundle: { codePath: inject('workflowBundle') },
    activities: createActivities({
      kube: kubeClient,
      requests: cfg.requests,
      ...(opts.cloudflare ? { cloudflare: { temporal: await temporal(), taskQueue, config: cfg.cloudflare } } : {}),
    }),
    ...(opts.activityInterceptors ? { interceptors: { activity: opts.activityInterceptors } } : {}),
    ...versionedWorkerOptions(cfg.versioning, taskQueue),
  });
  const accounts = opts.cloudflare
    ? new CloudflareAccountWorkers({ connection, cfg, kube: kubeClient, log: quietLog, pollMs: 1000 })
    : undefined;
  await accounts?.start();
  const running = worker.run();
  const stopPromoting = autoPromote({
    versioning: cfg.versioning,
    taskQueue,
    namespace: cfg.temporal.namespace,
    connection,
    log: quietLog,
  });
  return {
    async stop() {
      stopPromoting();
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      await accounts?.stop();
    },
  };
}

/** An in-process watcher on `taskQueue`. */
export async function startTestWatcher(
  taskQueue: string,
  extra: Partial<OperatorConfig> = {},
  informer?: InformerOptions,
): Promise<RunningWatcher> {
  return startWatcher(testConfig(taskQueue, extra), { log: quietLog, informer });
}

/** Runs a CLI role (`worker`, `watcher`, `fastpath`) as a child process, as a Deployment would. */
export function spawnRole(
  role: 'worker' | 'watcher' | 'fastpath',
  taskQueue: string,
  logName: string,
  env: NodeJS.ProcessEnv = {},
): ManagedProcess {
  const info = stackInfo();
  return ManagedProcess.start({
    name: role,
    command: process.execPath,
    args: ['--import', 'tsx', path.join(REPO_ROOT, 'src/cli/main.ts'), role],
    cwd: REPO_ROOT,
    logFile: path.join(info.logsDir, `${logName}.log`),
    env: {
      ...localTemporalEnv(info),
      KUBECONFIG: info.kubeconfig,
      DO_TASK_QUEUE: taskQueue,
      DO_WORKFLOW_BUNDLE: inject('workflowBundle'),
      DO_FASTPATH_WORKFLOW_BUNDLE: inject('sandboxWorkflowBundle'),
      DO_METRICS_PORT: '0',
      ...env,
    },
  });
}

/** Polls until `fn` returns a truthy value (hang protection only, not a speed assertion). */
export async function eventually<T>(
  what: string,
  fn: () => Promise<T | undefined | false | null>,
  opts: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 90_000);
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    await sleep(opts.intervalMs ?? 200);
  }
  throw new Error(`timed out waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}`);
}

/** Lists workflow executions matching a visibility query. */
export async function listWorkflows(query: string): Promise<{ workflowId: string; runId: string; status: string }[]> {
  const c = await temporal();
  const out: { workflowId: string; runId: string; status: string }[] = [];
  for await (const wf of c.workflow.list({ query }))
    out.push({ workflowId: wf.workflowId, runId: wf.runId, status: wf.status.name });
  return out;
}

/**
 * What every run of a workflow recorded, as the Web UI shows it: each history's strings and
 * payloads (decoded as UTF-8, as the JSON converter wrote them), joined. For scanning history
 * for values that must never be there — a plain JSON.stringify of a history would hide them in
 * base64.
 */
export async function historyText(workflowId: string): Promise<string> {
  return (await historiesText(`WorkflowId = ${JSON.stringify(workflowId)}`)).join('\n');
}

/** `historyText` of every run a visibility query matches (e.g. a test file's task queue), one text per run. */
export async function historiesText(query: string): Promise<string[]> {
  const c = await temporal();
  const texts: string[] = [];
  for await (const run of c.workflow.list({ query })) {
    const parts: string[] = [];
    const walk = (v: unknown): void => {
      if (typeof v === 'string') parts.push(v);
      else if (v instanceof Uint8Array) parts.push(Buffer.from(v).toString('utf8'));
      else if (Array.isArray(v)) v.forEach(walk);
      else if (v && typeof v === 'object') Object.values(v).forEach(walk);
    };
    walk(await c.workflow.getHandle(run.workflowId, run.runId).fetchHistory());
    texts.push(`${run.workflowId}\n${parts.join('\n')}`);
  }
  return texts;
}

/** Waits until a worker polls `taskQueue` for workflow tasks (a spawned worker is ready). */
export async function waitForWorker(taskQueue: string, proc?: ManagedProcess): Promise<void> {
  const c = await temporal();
  await eventually(`a worker polling ${taskQueue}`, async () => {
    if (proc && !proc.running) throw new Error(`worker exited: ${proc.logTail(5)}`);
    const res = await c.workflowService.describeTaskQueue({
      namespace: stackInfo().temporal.namespace,
      taskQueue: { name: taskQueue },
      taskQueueType: 1, // TASK_QUEUE_TYPE_WORKFLOW
    });
    return (res.pollers?.length ?? 0) > 0;
  });
}

/**
 * Replays a finished workflow's history (or `runId`'s, a run that has ended) against the current
 * bundle (a determinism check on a real run); with DO_RECORD_HISTORIES=1 also saves it to
 * test/fixtures/histories/<name>.json, which test/unit/replay.test.ts replays without a server.
 */
export async function replayAndRecord(workflowId: string, name: string, runId?: string): Promise<void> {
  const c = await temporal();
  const handle = c.workflow.getHandle(workflowId, runId);
  // A given run has ended already (e.g. continued as new); without one, the workflow must end.
  if (!runId) await handle.result();
  const history = await handle.fetchHistory();
  await Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundle') }, replayName: name }, history);
  if (process.env.DO_RECORD_HISTORIES !== '1') return;
  // The CLI's proto-JSON export is the format `historyFromJSON` reads back.
  const show = spawnSync(
    findBinary('temporal')!.path,
    [
      'workflow',
      'show',
      '--address',
      stackInfo().temporal.address,
      '-w',
      workflowId,
      ...(runId ? ['-r', runId] : []),
      '-o',
      'json',
    ],
    { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
  if (show.status !== 0) throw new Error(`temporal workflow show ${workflowId}: ${show.stderr}`);
  await mkdir(path.join(REPO_ROOT, 'test/fixtures/histories'), { recursive: true });
  await writeFile(path.join(REPO_ROOT, 'test/fixtures/histories', `${name}.json`), show.stdout);
}

/**
 * A kubeconfig that authenticates as a ServiceAccount (a short-lived token from the TokenRequest
 * API), so a worker or a user runs with exactly the RBAC that account has.
 */
export async function serviceAccountKubeconfig(
  namespace: string,
  serviceAccount: string,
  tag: string,
): Promise<string> {
  const info = stackInfo();
  const k = kube();
  const tr = await k.core.createNamespacedServiceAccountToken({
    name: serviceAccount,
    namespace,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const token = tr.status?.token;
  if (!token) throw new Error(`no token issued for ${namespace}/${serviceAccount}`);
  const file = path.join(info.stateDir, `${serviceAccount}-${tag}.kubeconfig`);
  const ca = (await readFile(info.kube.caFile)).toString('base64');
  await writeFile(file, renderKubeconfig(info.kube.server, ca, `${namespace}-${serviceAccount}`, token), {
    mode: 0o600,
  });
  return file;
}

/**
 * Waits until the apiserver's RBAC lets a ServiceAccount do `verb` on `resource` (new bindings
 * reach the authorizer through informers, a moment after they are created).
 */
export async function waitUntilAllowed(
  serviceAccount: { namespace: string; name: string },
  attributes: { group: string; resource: string; verb: string; namespace?: string },
): Promise<void> {
  const { namespace, name } = serviceAccount;
  const authz = kube().kc.makeApiClient(AuthorizationV1Api);
  await eventually(`${namespace}/${name} may ${attributes.verb} ${attributes.resource}`, async () => {
    const r = await authz.createSubjectAccessReview({
      body: {
        spec: {
          user: `system:serviceaccount:${namespace}:${name}`,
          groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
          resourceAttributes: attributes,
        },
      },
    });
    return r.status?.allowed;
  });
}

/**
 * A user for admission and RBAC tests: a ServiceAccount of `namespace` bound to a Role with
 * `rules` there, and a client authenticated as it (a real token, so the apiserver authenticates
 * it and RBAC decides). Returns once the first rule is in force.
 */
export async function serviceAccountWith(namespace: string, name: string, rules: object[]): Promise<KubeClient> {
  const admin = kube();
  const rbac = { apiVersion: 'rbac.authorization.k8s.io/v1', metadata: { name, namespace } };
  await admin.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } });
  await admin.create({ ...rbac, kind: 'Role', rules } as never);
  await admin.create({
    ...rbac,
    kind: 'RoleBinding',
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [{ kind: 'ServiceAccount', name, namespace }],
  } as never);
  const file = await serviceAccountKubeconfig(namespace, name, namespace);
  const first = rules[0] as { apiGroups: string[]; resources: string[]; verbs: string[] };
  await waitUntilAllowed(
    { namespace, name },
    { namespace, group: first.apiGroups[0]!, resource: first.resources[0]!, verb: first.verbs[0]! },
  );
  return KubeClient.fromKubeconfig(file);
}

/** Runs a write the apiserver must refuse; returns the status code and its message (throws if accepted). */
export async function refusal(
  write: () => Promise<unknown>,
  what = 'the write',
): Promise<{ code?: number; message: string }> {
  try {
    await write();
  } catch (err) {
    return { code: statusCode(err), message: apiMessage(err) };
  }
  throw new Error(`the apiserver accepted ${what}`);
}
