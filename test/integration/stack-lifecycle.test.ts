/**
 * A second, private stack: the watcher survives a kube-apiserver crash mid-watch, and stopping
 * the stack leaves no process behind, nor its cgroups. (The shared stack is checked the same way
 * in teardown.) Each component runs in its own cgroup, a restarted one again in its own.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { Worker } from '@temporalio/worker';
import { afterAll, expect, inject, it } from 'vitest';
import { createActivities } from '../../src/activities/index.js';
import { objectKeeperRef, type ObjectKeeper } from '../../src/api/objectkeeper.js';
import { loadConfig } from '../../src/config.js';
import { followRefTo, objectKeeperWorkflowId } from '../../src/domain/objectkeeper.js';
import { cpuHierarchyOf } from '../../src/infra/cpu-accounting.js';
import { isAlive } from '../../src/infra/process.js';
import { LocalStack } from '../../src/infra/stack.js';
import { KubeClient } from '../../src/kube/client.js';
import { logger } from '../../src/log.js';
import { connectClient, connectWorker, dataConverterOf } from '../../src/temporal/connection.js';
import { startWatcher } from '../../src/watcher/main.js';
import { installTemporalRuntime } from '../../src/workers/runtime.js';
import { REPO_ROOT, eventually, uniq } from '../support/env.js';
import { processesInGroups } from '../support/processes.js';

let stack: LocalStack | undefined;

/** The cgroup directory (below its hierarchy's mount point) `pid` is in for CPU accounting. */
function accountedIn(pid: number, mountPoint: string): string | undefined {
  const line = readFileSync(`/proc/${pid}/cgroup`, 'utf8')
    .split('\n')
    .find((l) => (mountPoint.endsWith('/cpuacct') ? /^\d+:[^:]*\bcpuacct\b/.test(l) : l.startsWith('0::')));
  return line && path.join(mountPoint, line.slice(line.indexOf(':', line.indexOf(':') + 1) + 1));
}

/** Every component of the stack is in its own cgroup (the accounting is on wherever the host lets root have it). */
function expectComponentsAccounted(s: LocalStack): void {
  const hierarchy = cpuHierarchyOf(readFileSync('/proc/self/mountinfo', 'utf8'));
  expect(s.info.cpuAccounting !== undefined).toBe(process.getuid?.() === 0 && 'mountPoint' in hierarchy);
  if (!s.info.cpuAccounting || !('mountPoint' in hierarchy)) return;
  for (const c of s.components)
    expect(accountedIn(c.process.pid, hierarchy.mountPoint), c.name).toBe(path.join(s.info.cpuAccounting.dir, c.name));
  const used = s.cpu!.read();
  for (const name of ['kube-apiserver', 'kube-etcd', 'temporal']) expect(used[name], name).toBeGreaterThan(0);
}

afterAll(async () => {
  await stack?.stop();
});

it('keeps watching across a kube-apiserver crash, then stops without leftovers', async () => {
  stack = await LocalStack.start({ stateDir: path.join(REPO_ROOT, '.state/test-lifecycle'), mode: 'test' });
  const cfg = {
    ...loadConfig(
      { temporalAddress: stack.info.temporal.address, taskQueue: 'lifecycle', kubeconfig: stack.info.kubeconfig },
      {},
    ),
    keeperVerifyIntervalMs: 30 * 60_000,
  };
  const kube = KubeClient.fromKubeconfig(stack.info.kubeconfig);
  const log = logger.child({ test: 'lifecycle' });
  log.level = 'error';
  installTemporalRuntime(log);
  const worker = await Worker.create({
    connection: await connectWorker(cfg.temporal),
    dataConverter: dataConverterOf(cfg.temporal),
    taskQueue: 'lifecycle',
    workflowBundle: { codePath: inject('workflowBundle') },
    activities: createActivities({ kube, requests: cfg.requests }),
  });
  const workerRun = worker.run();
  const watcher = await startWatcher(cfg, { log });
  await watcher.watcher.waitForSync();
  const temporal = await connectClient(cfg.temporal);

  const followed = await kube.create<V1ConfigMap>({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: uniq('f'), namespace: 'default' },
  });
  const keeper = await kube.create<ObjectKeeper>({
    apiVersion: 'deckhouse.io/v1alpha1',
    kind: 'ObjectKeeper',
    metadata: { name: uniq('lifecycle') },
    spec: {
      mode: 'FollowObject',
      followObjectRef: followRefTo(followed),
    },
  });
  await eventually(
    'Tracking',
    async () => (await kube.get<ObjectKeeper>(objectKeeperRef(keeper.metadata!.name!)))?.status?.phase === 'Tracking',
  );

  expectComponentsAccounted(stack);
  // Crash the apiserver under the open watches, then bring it back on the same port and data.
  await stack.apiserver.restart({ kill: true });
  expectComponentsAccounted(stack);

  // Both a change to an existing object and a brand-new object are seen after the crash.
  await kube.delete({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: followed.metadata!.name! });
  const after = await kube.create<ObjectKeeper>({
    apiVersion: 'deckhouse.io/v1alpha1',
    kind: 'ObjectKeeper',
    metadata: { name: uniq('after-crash') },
    spec: { mode: 'TTL', ttl: '2s' },
  });
  await eventually(
    'follow keeper deleted after the crash',
    async () => !(await kube.get(objectKeeperRef(keeper.metadata!.name!))),
    {
      timeoutMs: 120_000,
    },
  );
  await eventually(
    'new keeper processed after the crash',
    async () => !(await kube.get(objectKeeperRef(after.metadata!.name!))),
    {
      timeoutMs: 120_000,
    },
  );
  const id = objectKeeperWorkflowId(after.metadata!.name!, after.metadata!.uid!);
  expect(await temporal.workflow.getHandle(id).result()).toMatch(/ttl 2s expired/);

  await watcher.stop();
  worker.shutdown();
  await workerRun;
  await temporal.connection.close();

  const groups = stack.pids;
  const cgroups = stack.info.cpuAccounting?.dir;
  expect(processesInGroups(groups).length).toBeGreaterThanOrEqual(groups.length);
  await stack.stop();
  stack = undefined;
  expect(groups.filter(isAlive)).toEqual([]);
  expect(processesInGroups(groups)).toEqual([]);
  if (cgroups) expect(existsSync(cgroups)).toBe(false);
});
