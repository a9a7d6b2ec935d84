/**
 * A sandbox's lifecycle after its create: expiry (spec.expireTime, set with UpdateSandbox's
 * expire_time_seconds) and reset (spec.resetRevision). Real Temporal, real apiserver, an agent as
 * a real process, the fast path as a child process (so it can be SIGKILLed in the middle of an
 * expiry or a reset). The pool has one agent with one slot, so "the slot is free again" is
 * visible as a create that succeeds where it was refused before.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_FINALIZER, type Sandbox } from '../../src/api/sandbox.js';
import { sandboxWorkflowId } from '../../src/domain/sandbox.js';
import { eventually, replayAndRecord, uniq } from '../support/env.js';
import { SandboxStack, grpcClient, grpcError, sandboxImage } from '../support/fastpath.js';

const FOREVER = ['sleep', '3600'];
const spec = (name: string, command = FOREVER) => ({
  name,
  image: sandboxImage(),
  poolRef: 'pool-a',
  command,
});

let stack: SandboxStack;

beforeAll(async () => {
  stack = await new SandboxStack({ agents: 1, capacity: 1, spawned: true }).start();
}, 240_000);

afterAll(async () => {
  await stack?.stop();
});

const sandboxRef = (name: string) => stack.sandboxRef(name);

function create(name: string, command?: string[]) {
  return stack.grpc.call<{ sandboxId: string }>('CreateSandbox', {
    namespace: stack.namespace,
    ...spec(name, command),
  });
}

/**
 * A create retried while the pool is full: a slot freed on the agent shows in the fast path's
 * placement table at its next poll of the agents (the agents are the authority on their slots).
 */
function createWhenRoom(name: string, command?: string[]) {
  return eventually(`a create of ${name} accepted`, () =>
    create(name, command).catch((err: grpc.ServiceError) => {
      if (err.code === grpc.status.RESOURCE_EXHAUSTED) return undefined;
      throw err;
    }),
  );
}

async function phase(name: string, wanted: string, timeoutMs = 90_000): Promise<Sandbox> {
  return eventually(
    `Sandbox ${name} ${wanted}`,
    async () => {
      const sb = await stack.sandbox(name);
      return sb?.status?.phase === wanted ? sb : undefined;
    },
    { timeoutMs },
  );
}

/** A sandbox the agent runs, created through the fast path. */
async function runningSandbox(name: string, command?: string[]): Promise<Sandbox> {
  await createWhenRoom(name, command);
  return phase(name, 'Running');
}

async function update(name: string, change: Record<string, unknown>) {
  const res = await stack.grpc.call<{ success: boolean; message: string }>('UpdateSandbox', {
    sandboxName: name,
    namespace: stack.namespace,
    ...change,
  });
  expect(res, JSON.stringify(res)).toMatchObject({ success: true });
}

/** The IDs of every sandbox the agents hold now (fresh status calls). */
async function heldIds(): Promise<string[]> {
  return (await stack.agentReports()).flatMap((r) => r.sandboxes.map((s) => s.sandboxId));
}

async function deleteAndWait(name: string) {
  await stack.kube.delete(sandboxRef(name));
  await eventually(`Sandbox ${name} gone`, async () => !(await stack.sandbox(name)));
}

const wholeSecondsFromNow = (s: number) => Math.ceil(Date.now() / 1000) + s;
const until = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms - Date.now())));
const expiredAt = (sb: Sandbox) => Date.parse(sb.status!.conditions![0]!.lastTransitionTime);

describe('expiry', () => {
  it('at expireTime: removed from its agent, the slot freed, Expired with no assignment; the record stays until deleted', async () => {
    const name = uniq('expires');
    const before = await runningSandbox(name);
    const id = before.status!.sandboxID!;
    // The one slot is taken.
    const full = await grpcError(create(uniq('full')));
    expect(full.code).toBe(grpc.status.RESOURCE_EXHAUSTED);

    const expireSeconds = wholeSecondsFromNow(4);
    await update(name, { expireTimeSeconds: expireSeconds });
    expect((await stack.sandbox(name))?.spec.expireTime).toBe(
      new Date(expireSeconds * 1000).toISOString().replace('.000Z', 'Z'),
    );

    const sb = await phase(name, 'Expired');
    expect(Date.now()).toBeGreaterThanOrEqual(expireSeconds * 1000);
    expect(expiredAt(sb)).toBeGreaterThanOrEqual(expireSeconds * 1000);
    expect(sb.status).not.toHaveProperty('assignedPod');
    expect(sb.status).not.toHaveProperty('nodeName');
    expect(sb.status).not.toHaveProperty('sandboxID');
    expect(sb.status).not.toHaveProperty('endpoints');
    expect(sb.status?.conditions?.[0]).toMatchObject({ type: 'Ready', status: 'False', reason: 'Expired' });
    expect(sb.status?.conditions?.[0]?.message).toContain(id);
    expect(sb.metadata?.finalizers).toContain(SANDBOX_FINALIZER);
    expect(await heldIds()).not.toContain(id);

    // The freed slot takes a new sandbox.
    const next = uniq('next');
    await createWhenRoom(next);
    const nextId = (await phase(next, 'Running')).status!.sandboxID!;

    // Deleting the Expired record removes the finalizer; the agent's new sandbox is untouched.
    await deleteAndWait(name);
    expect(await heldIds()).toEqual([nextId]);
    await replayAndRecord(sandboxWorkflowId(stack.namespace, name), 'sandbox-expired-deleted');
    await deleteAndWait(next);
  });

  it('moved later: the timer is re-armed and fires at the new time, not the old one', async () => {
    const name = uniq('later');
    const id = (await runningSandbox(name)).status!.sandboxID!;
    const first = wholeSecondsFromNow(4);
    await update(name, { expireTimeSeconds: first });
    const later = first + 8;
    await update(name, { expireTimeSeconds: later });
    await until(first * 1000 + 3_000);
    expect((await stack.sandbox(name))?.status?.phase).toBe('Running');
    expect(await heldIds()).toContain(id);
    const sb = await phase(name, 'Expired');
    expect(expiredAt(sb)).toBeGreaterThanOrEqual(later * 1000);
    expect(await heldIds()).not.toContain(id);
    await deleteAndWait(name);
  });

  it('moved earlier: the timer is re-armed and fires at the new time', async () => {
    const name = uniq('earlier');
    const id = (await runningSandbox(name)).status!.sandboxID!;
    await update(name, { expireTimeSeconds: wholeSecondsFromNow(3600) });
    const earlier = wholeSecondsFromNow(3);
    await update(name, { expireTimeSeconds: earlier });
    // Long before the hour (and before the workflow's 5-minute resync would look again).
    const sb = await phase(name, 'Expired', 120_000);
    expect(expiredAt(sb)).toBeGreaterThanOrEqual(earlier * 1000);
    expect(await heldIds()).not.toContain(id);
    await deleteAndWait(name);
  });

  it('removed (expire_time_seconds 0): the sandbox never expires', async () => {
    const name = uniq('kept');
    const id = (await runningSandbox(name)).status!.sandboxID!;
    const first = wholeSecondsFromNow(3);
    await update(name, { expireTimeSeconds: first });
    await update(name, { expireTimeSeconds: 0 });
    expect((await stack.sandbox(name))?.spec).not.toHaveProperty('expireTime');
    await until(first * 1000 + 4_000);
    const sb = await stack.sandbox(name);
    expect(sb?.status).toMatchObject({ phase: 'Running', sandboxID: id });
    expect(await heldIds()).toContain(id);
    await deleteAndWait(name);
    expect(await heldIds()).not.toContain(id);
  });

  it('a Sandbox created with an expireTime already past is Expired without ever being placed', async () => {
    const name = uniq('stale');
    await stack.kube.create({
      ...sandboxRef(name),
      metadata: { name, namespace: stack.namespace },
      spec: {
        image: sandboxImage(),
        poolRef: 'pool-a',
        command: FOREVER,
        expireTime: new Date(Date.now() - 60_000).toISOString(),
      },
    });
    const sb = await phase(name, 'Expired');
    expect(sb.status).not.toHaveProperty('assignedPod');
    expect((await stack.agentReports()).flatMap((r) => r.sandboxes).filter((s) => s.claimName === name)).toEqual([]);
    await deleteAndWait(name);
  });
});

describe('reset', () => {
  it('removes the sandbox and creates it again under a new ID; a revision is acted upon once', async () => {
    const name = uniq('reset');
    const first = (await runningSandbox(name)).status!.sandboxID!;
    const revision = new Date().toISOString();
    await update(name, { resetRevision: revision });

    const reset = await eventually(`Sandbox ${name} running again after the reset`, async () => {
      const sb = await stack.sandbox(name);
      return sb?.status?.acceptedResetRevision === revision &&
        sb.status.phase === 'Running' &&
        sb.status.sandboxID !== first
        ? sb
        : undefined;
    });
    const second = reset.status!.sandboxID!;
    expect(await heldIds()).toEqual([second]);
    expect(reset.status?.assignedPod).toBe(stack.fleet.agents[0]!.podName);

    // The same instant spelled differently is not a new revision. It comes with a short expiry
    // in the same write, so the workflow surely reads it; the sandbox the expiry then removes is
    // still the second one — no reset ran in between.
    const sameInstant = revision.replace(/\.(\d{3})Z$/, '.$1000000+00:00');
    expect(sameInstant).not.toBe(revision);
    const expireSeconds = wholeSecondsFromNow(4);
    await stack.kube.mergePatch(sandboxRef(name), {
      spec: { resetRevision: sameInstant, expireTime: new Date(expireSeconds * 1000).toISOString() },
    });
    const expired = await phase(name, 'Expired');
    expect(expired.status?.conditions?.[0]?.message).toContain(second);
    expect(expired.status?.acceptedResetRevision).toBe(revision);
    expect(await heldIds()).toEqual([]);

    // An Expired sandbox is not brought back by a reset alone (it would expire again at once).
    const pending = new Date().toISOString();
    await update(name, { resetRevision: pending });
    // ...but with its expiry removed, the pending reset starts it afresh.
    await update(name, { expireTimeSeconds: 0 });
    const revived = await eventually(`Sandbox ${name} running after expiry removed`, async () => {
      const sb = await stack.sandbox(name);
      return sb?.status?.phase === 'Running' && sb.status.acceptedResetRevision === pending ? sb : undefined;
    });
    expect([first, second]).not.toContain(revived.status!.sandboxID);
    await deleteAndWait(name);
    expect(await heldIds()).toEqual([]);
    await replayAndRecord(sandboxWorkflowId(stack.namespace, name), 'sandbox-reset-deleted');
  });

  it('restarts a sandbox whose process failed, with its spec as it is now', async () => {
    const name = uniq('restart');
    await createWhenRoom(name, ['sh', '-c', 'sleep 1; exit 3']);
    const failed = await phase(name, 'Failed');
    // The user fixes the command and resets in one write: the new incarnation runs the new spec.
    const revision = new Date().toISOString();
    await stack.kube.mergePatch(sandboxRef(name), { spec: { command: FOREVER, resetRevision: revision } });
    const running = await eventually(`Sandbox ${name} running after the reset`, async () => {
      const sb = await stack.sandbox(name);
      return sb?.status?.phase === 'Running' && sb.status.acceptedResetRevision === revision ? sb : undefined;
    });
    expect(running.status?.sandboxID).not.toBe(failed.status?.sandboxID);
    expect(await heldIds()).toEqual([running.status!.sandboxID]);
    await deleteAndWait(name);
  });
});

describe('a SIGKILL of the fast path right after the agent delete', () => {
  /** The local activity that deletes on the agent (and waits for it, and frees the slot) in a lean run. */
  const AGENT_DELETE = 'removeFromAgent';
  /** Restarts the fast path, as its Deployment would, with the given crash drill (or none). */
  async function restart(env: NodeJS.ProcessEnv = {}) {
    await stack.child!.stop();
    stack.grpc.close();
    await stack.startFastPath(env);
    stack.grpc = grpcClient(stack.grpcAddress, String(stack.tenantId));
  }
  /** Waits for the drill's SIGKILL, then starts the fast path again without it. */
  async function afterTheKill() {
    await stack.child!.exited;
    stack.grpc.close();
    await stack.startFastPath();
    stack.grpc = grpcClient(stack.grpcAddress, String(stack.tenantId));
  }

  it('during an expiry: it completes once — Expired, nothing left on the agent, the slot free', async () => {
    const name = uniq('crash-expiry');
    const id = (await runningSandbox(name)).status!.sandboxID!;
    await restart({ DO_FAULT_KILL_AFTER_ACTIVITY: AGENT_DELETE });
    await update(name, { expireTimeSeconds: wholeSecondsFromNow(2) });
    await afterTheKill();
    const sb = await phase(name, 'Expired', 120_000);
    expect(sb.status?.conditions?.[0]?.message).toContain(id);
    expect(await heldIds()).toEqual([]);
    const next = uniq('after-crash');
    await createWhenRoom(next);
    await phase(next, 'Running');
    await deleteAndWait(name);
    await deleteAndWait(next);
    expect(await heldIds()).toEqual([]);
  }, 240_000);

  it('during a reset: it completes once — one new sandbox on the agent, the revision accepted', async () => {
    const name = uniq('crash-reset');
    const first = (await runningSandbox(name)).status!.sandboxID!;
    await restart({ DO_FAULT_KILL_AFTER_ACTIVITY: AGENT_DELETE });
    const revision = new Date().toISOString();
    await update(name, { resetRevision: revision });
    await afterTheKill();
    const sb = await eventually(
      `Sandbox ${name} running again after the reset`,
      async () => {
        const s = await stack.sandbox(name);
        return s?.status?.phase === 'Running' && s.status.acceptedResetRevision === revision ? s : undefined;
      },
      { timeoutMs: 120_000 },
    );
    expect(sb.status?.sandboxID).not.toBe(first);
    const copies = (await stack.agentReports()).flatMap((r) => r.sandboxes.filter((s) => s.claimName === name));
    expect(copies.map((c) => c.sandboxId)).toEqual([sb.status!.sandboxID]);
    await deleteAndWait(name);
    expect(await heldIds()).toEqual([]);
  }, 240_000);
});
