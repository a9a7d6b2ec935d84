/**
 * Crashes during a create. The fast path runs as a separate process (as its Deployment would)
 * and is SIGKILLed between two steps of a create — right after the step's side effect happened
 * and before Temporal learned of it (DO_FAULT_KILL_AFTER_ACTIVITY) — or right after it answered
 * the caller. Restarted, it finishes the creation: the record appears and is handed off, exactly
 * one sandbox exists on the agents — one container in containerd, with its snapshot — and no slot
 * or container leaks. The agents run the containerd runtime.
 */
import proto from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ContainerdClient } from '../../src/agent/containerd/client.js';
import { LABEL } from '../../src/agent/containerd/runtime.js';
import { ALLOCATION_ANNOTATION } from '../../src/api/sandbox.js';
import { sandboxWorkflowId } from '../../src/domain/sandbox.js';
import { runJanitorPassUpdate, sandboxJanitorWorkflow } from '../../src/workflows/sandbox/contract.js';
import { eventually, replayAndRecord, stackInfo, temporal, uniq } from '../support/env.js';
import { SandboxStack, grpcClient } from '../support/fastpath.js';

let stack: SandboxStack;

// Ignores SIGTERM (sandbox-init forwards it): a delete holds the sandbox terminating for the grace.
const spec = {
  image: stackInfo().registry!.images.busybox,
  poolRef: 'pool-a',
  command: ['/bin/sh', '-c', "trap '' TERM; sleep 3600"],
};
const containerd = new ContainerdClient(stackInfo().containerd!.socket, stackInfo().containerd!.namespace);

beforeAll(async () => {
  // room for every case's sandbox
  stack = await new SandboxStack({ agents: 2, capacity: 8, spawned: true }).start();
}, 240_000);

afterAll(async () => {
  await stack?.stop();
  containerd.close();
});

/** Restarts the fast path after its death (as the Deployment's ReplicaSet would). */
async function restart(env: NodeJS.ProcessEnv = {}) {
  await stack.child!.exited.catch(() => undefined);
  stack.grpc.close();
  await stack.startFastPath(env);
  stack.grpc = grpcClient(stack.grpcAddress, String(stack.tenantId));
}

async function completes(name: string) {
  const sb = await eventually(
    `Sandbox ${name} recorded, handed off and Running`,
    async () => {
      const s = await stack.sandbox(name);
      return s?.status?.phase === 'Running' && !s.metadata?.annotations?.[ALLOCATION_ANNOTATION] ? s : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 500 },
  );
  const copies = (await stack.agentReports()).flatMap((r) =>
    r.sandboxes.filter((s) => s.claimName === name).map((s) => ({ pod: r.pod, id: s.sandboxId })),
  );
  // Exactly one sandbox for the name, on the agent the record names, with the recorded ID.
  expect(copies).toEqual([{ pod: sb.status!.assignedPod!, id: sb.status!.sandboxID! }]);
  // And exactly one container for it in containerd, with its snapshot.
  const containers = await containerd.listContainers([`labels."${LABEL.sandboxName}"==${JSON.stringify(name)}`]);
  expect(containers.map((c) => c.labels[LABEL.id])).toEqual([sb.status!.sandboxID!]);
  expect((await containerd.snapshotMounts('overlayfs', containers[0]!.snapshotKey)).length).toBeGreaterThan(0);
  return sb;
}

/** Neither the record nor the sandbox on any agent. */
async function goneEverywhere(name: string, sandboxId: string) {
  await eventually(
    `no Sandbox ${name} and no sandbox ${sandboxId} on the agents`,
    async () => {
      const held = (await stack.agentReports()).some((r) => r.sandboxes.some((s) => s.sandboxId === sandboxId));
      return !held && !(await stack.sandbox(name));
    },
    { timeoutMs: 120_000, intervalMs: 500 },
  );
}

async function noLeaks() {
  // Every slot the agents count belongs to a recorded sandbox.
  const reports = await stack.agentReports();
  const held = reports.flatMap((r) => r.sandboxes.map((s) => s.claimName));
  for (const name of held) expect(await stack.sandbox(name), `record of ${name}`).toBeDefined();
  // Every container of these agents is one the agents hold: none left behind by a crash.
  const ids = new Set(reports.flatMap((r) => r.sandboxes.map((s) => s.sandboxId)));
  for (const r of reports) {
    const mine = await containerd.listContainers([`labels."${LABEL.agentName}"==${JSON.stringify(r.pod)}`]);
    for (const c of mine) expect(ids, `container ${c.id} of ${r.pod}`).toContain(c.labels[LABEL.id]);
  }
}

describe('SIGKILL of the fast path during a create', () => {
  const after = (activity: string) => ({ DO_FAULT_KILL_AFTER_ACTIVITY: activity });
  const points: [string, 'FAST' | 'STRONG', string, NodeJS.ProcessEnv][] = [
    [
      'after the allocation, before the agent create',
      'FAST',
      'at sandbox-allocated',
      { DO_FAULT_KILL_AT: 'sandbox-allocated' },
    ],
    ['after the agent create, before the answer', 'FAST', 'after placeOnAgent', after('placeOnAgent')],
    [
      'after the record is written, before its hand-off (Fast, after the answer)',
      'FAST',
      'at sandbox-fast-recorded',
      { DO_FAULT_KILL_AT: 'sandbox-fast-recorded' },
    ],
    ['after the record and its hand-off (Fast)', 'FAST', 'after recordAndHandOff', after('recordAndHandOff')],
    [
      'after the allocation, before the record (Strong)',
      'STRONG',
      'at sandbox-allocated',
      { DO_FAULT_KILL_AT: 'sandbox-allocated' },
    ],
    [
      'after the record is written, before the agent create (Strong)',
      'STRONG',
      'at sandbox-recorded',
      { DO_FAULT_KILL_AT: 'sandbox-recorded' },
    ],
    ['after the agent create, before the answer (Strong)', 'STRONG', 'after placeWithRecord', after('placeWithRecord')],
    [
      'after the hand-off status write, before the annotation is removed',
      'FAST',
      'at sandbox-handed-off',
      { DO_FAULT_KILL_AT: 'sandbox-handed-off' },
    ],
    ['after the hand-off (Strong)', 'STRONG', 'after handOffRecord', after('handOffRecord')],
  ];
  for (const [when, mode, kill, env] of points)
    it(`${when} (${mode}, kill ${kill}): the creation completes, once`, async () => {
      await stack.child!.stop();
      await restart(env);
      const name = uniq('crash');
      // The caller may get the answer or a broken connection, depending on the point.
      await stack.grpc
        .call('CreateSandbox', { namespace: stack.namespace, name, consistencyMode: mode, ...spec })
        .catch(() => undefined);
      await restart();
      await completes(name);
      await noLeaks();
    }, 180_000);

  it('right after answering (an external SIGKILL): the record still appears', async () => {
    const name = uniq('answered');
    const res = await stack.grpc.call<{ sandboxId: string }>('CreateSandbox', {
      namespace: stack.namespace,
      name,
      ...spec,
    });
    await stack.child!.kill();
    await restart();
    const sb = await completes(name);
    expect(sb.status?.sandboxID).toBe(res.sandboxId);
    await noLeaks();
  }, 180_000);
});

describe('SIGKILL of the fast path during a delete', () => {
  it('after the agent removed the sandbox, before the finalizer went: the record goes, nothing leaks', async () => {
    const name = uniq('del-crash');
    // One that ends on SIGTERM: its agent forgets it within the one-step removal's wait.
    const res = await stack.grpc.call<{ sandboxId: string }>('CreateSandbox', {
      namespace: stack.namespace,
      name,
      ...spec,
      command: ['/bin/sleep', '3600'],
    });
    await completes(name);
    await stack.child!.stop();
    await restart({ DO_FAULT_KILL_AT: 'sandbox-removed-from-agent' });
    // The watcher's hint brings the run to the deletion; the fast path dies between its parts.
    await stack.kube.delete(stack.sandboxRef(name));
    await restart();
    await goneEverywhere(name, res.sandboxId);
    await noLeaks();
  }, 180_000);
});

describe('a Fast record written late (a busy fast path), not refused', () => {
  it('the janitor spares the sandbox while its creation is still writing the record; the record then appears', async () => {
    await stack.child!.stop();
    // The record write's first attempt is held 12 s (past its 10 s timeout: a retry writes it).
    await restart({ DO_FAULT_DELAY_ACTIVITY: 'recordAndHandOff=12s' });
    const name = uniq('late');
    const res = await stack.grpc.call<{ sandboxId: string }>('CreateSandbox', {
      namespace: stack.namespace,
      name,
      ...spec,
    });
    // Older than the orphan timeout with no record: what the janitor removes — unless it asks.
    await new Promise((r) => setTimeout(r, 4_000));
    expect(await stack.sandbox(name)).toBeUndefined();
    const client = await temporal();
    // A janitor of this test's own, with a shorter orphan timeout, asked for one pass.
    const janitor = await client.workflow.start(sandboxJanitorWorkflow, {
      taskQueue: stack.sandboxTaskQueue,
      workflowId: uniq('janitor'),
      args: [{ orphanTimeoutSeconds: 2, intervalMs: 3_600_000 }],
    });
    const summary = await janitor.executeUpdate(runJanitorPassUpdate);
    await janitor.terminate('test done');
    expect(summary).toContain(`spared sandbox ${res.sandboxId} on agent ${stack.namespace}/`);
    expect(summary).toContain('its workflow still holds it');
    expect((await stack.agentReports()).flatMap((r) => r.sandboxes.map((s) => s.sandboxId))).toContain(res.sandboxId);
    const sb = await completes(name);
    expect(sb.status?.sandboxID).toBe(res.sandboxId);
    await stack.child!.stop();
    await restart();
  }, 180_000);
});

describe('a delete that reaches a Fast creation while its record is being written', () => {
  it('the record, once written, is deleted: DeleteSandbox answered OK leaves no record and no sandbox', async () => {
    await stack.child!.stop();
    // The record write's first attempt is held 12 s: past the 8 s after which the worker extends its
    // workflow task, so the delete's question to the run is answered (stage `recording`) and its
    // hint arrives while the write is still under way — the run learns of it after the record exists.
    await restart({ DO_FAULT_DELAY_ACTIVITY: 'recordAndHandOff=12s' });
    const name = uniq('late-deleted');
    const res = await stack.grpc.call<{ sandboxId: string }>('CreateSandbox', {
      namespace: stack.namespace,
      name,
      ...spec,
    });
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await stack.sandbox(name)).toBeUndefined();
    expect(await stack.grpc.call('DeleteSandbox', { sandboxName: name, namespace: stack.namespace })).toMatchObject({
      success: true,
    });
    await goneEverywhere(name, res.sandboxId);
    await noLeaks();
    // The run deleted the record itself; the watcher's hint of that deletion came before its end,
    // never into the task that ends it (Temporal refuses such a task: WorkflowTaskFailed).
    const run = (await temporal()).workflow.getHandle(sandboxWorkflowId(stack.namespace, name));
    await replayAndRecord(run.workflowId, 'sandbox-deleted-while-recording-heard-lean-3');
    const events = (await run.fetchHistory()).events ?? [];
    const failed = events
      .filter((e) => e.workflowTaskFailedEventAttributes)
      .map((e) => proto.temporal.api.enums.v1.WorkflowTaskFailedCause[e.workflowTaskFailedEventAttributes!.cause ?? 0]);
    expect(failed).toEqual([]);
    await stack.child!.stop();
    await restart();
  }, 180_000);
});
