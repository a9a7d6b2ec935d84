/**
 * Tenant sandbox quotas end to end: the tenant's `sandbox` settings published to the tenant etcd,
 * real Temporal (the per-tenant quota workflow), real apiserver, agents as real processes.
 * Concurrent creates against the limit — on one fast path and split across two replicas — give
 * exactly the limit; a delete frees a slot; another tenant is unaffected; a namespace or pool the
 * tenant may not use is PERMISSION_DENIED.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quotaWorkflowId } from '../../src/domain/sandbox-quota.js';
import { sandboxWorkflowId } from '../../src/domain/sandbox.js';
import { acquireSlotUpdate, quotaSlotsQuery, sandboxQuotaWorkflow } from '../../src/workflows/sandbox/contract.js';
import { eventually, replayAndRecord, temporal, uniq } from '../support/env.js';
import { SandboxStack, sandboxImage, type FastPathGrpc } from '../support/fastpath.js';

const LIMIT = 3;
const spec = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  image: sandboxImage(),
  poolRef: 'pool-a',
  command: ['sleep', '3600'],
  ...extra,
});

let stack: SandboxStack;

beforeAll(async () => {
  stack = await new SandboxStack({
    agents: 2,
    capacity: 6,
    tenantSandbox: { maxSandboxes: LIMIT, namespaces: ['{namespace}'], pools: ['pool-a'] },
  }).start();
}, 180_000);

afterAll(async () => {
  // The quota workflow lives on; nothing polls this stack's task queue after the test.
  await (
    await temporal()
  ).workflow
    .getHandle(quotaWorkflowId(String(stack.tenantId)))
    .terminate('test done')
    .catch(() => undefined);
  await stack?.stop();
});

type Settled = PromiseSettledResult<unknown>;

function create(client: FastPathGrpc, name: string, extra: Record<string, unknown> = {}, tenant?: string) {
  return client.call('CreateSandbox', { namespace: stack.namespace, ...spec(name, extra) }, tenant);
}

function errorOf(r: Settled): grpc.ServiceError {
  if (r.status !== 'rejected') throw new Error('expected the create to be refused');
  return r.reason as grpc.ServiceError;
}

async function slots(): Promise<string[]> {
  return (await temporal()).workflow.getHandle(quotaWorkflowId(String(stack.tenantId))).query(quotaSlotsQuery);
}

/** A Fast create writes its record just after answering: deletes go through the record. */
async function deleteOnceRecorded(name: string, tenant?: string) {
  await eventually(`Sandbox ${name} recorded`, () => stack.sandbox(name));
  await stack.grpc.call('DeleteSandbox', { sandboxName: name, namespace: stack.namespace }, tenant);
}

/** Deletes the tenant's sandboxes and waits until their records are gone and the quota holds none. */
async function deleteAll(names: string[]) {
  for (const name of names) await deleteOnceRecorded(name);
  for (const name of names) await eventually(`Sandbox ${name} gone`, async () => !(await stack.sandbox(name)));
  await eventually('every slot released', async () => (await slots()).length === 0);
}

/**
 * A create retried on UNAVAILABLE, as a gRPC client does: on a loaded machine (CI runs four
 * stacks on two cores) an agent may not answer in its 5 s, and the create that held a slot gives
 * it back. The quota is what is asserted here: every create ends placed or RESOURCE_EXHAUSTED.
 */
async function createRetried(client: FastPathGrpc, name: string): Promise<unknown> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await create(client, name);
    } catch (err) {
      const e = err as grpc.ServiceError;
      if (e.code !== grpc.status.UNAVAILABLE || attempt === 5) throw err;
      console.warn(`create ${name} attempt ${attempt}: UNAVAILABLE (${e.details}); retrying`);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

/** `n` concurrent creates of new names, each through the client `via(i)` picks. */
async function burst(n: number, via: (i: number) => FastPathGrpc) {
  const names = Array.from({ length: n }, () => uniq('q'));
  const results = await Promise.allSettled(names.map((name, i) => createRetried(via(i), name)));
  const granted = names.filter((_, i) => results[i]!.status === 'fulfilled');
  const refused = results.filter((r) => r.status === 'rejected');
  return { names, granted, refused };
}

/** The refusals' codes and details, for an assertion's message. */
function refusals(refused: Settled[]): string {
  return refused.map((r) => `${errorOf(r).code}: ${errorOf(r).details}`).join('; ');
}

function expectExhausted(refused: Settled[]) {
  for (const r of refused) {
    const err = errorOf(r);
    expect(err.code, err.details).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(err.details).toBe(`tenant ${stack.tenantId} has ${LIMIT} of ${LIMIT} sandboxes`);
  }
}

describe('maxSandboxes', () => {
  it('8 concurrent creates against a limit of 3: exactly 3 succeed, the rest RESOURCE_EXHAUSTED with the quota', async () => {
    const { granted, refused } = await burst(8, () => stack.grpc);
    expect(granted, refusals(refused)).toHaveLength(LIMIT);
    expect(refused).toHaveLength(8 - LIMIT);
    expectExhausted(refused);
    expect((await slots()).sort()).toEqual(granted.map((n) => `${stack.namespace}/${n}`).sort());

    // A retried create of a granted name is the same create: no second slot, same answer.
    const again = await create(stack.grpc, granted[0]!);
    expect(again).toMatchObject({ sandboxName: granted[0] });
    expect(await slots()).toHaveLength(LIMIT);

    // HTTP says 429 with the same message.
    const res = await stack.http('POST', '/api/v1/sandboxes', { namespace: stack.namespace, ...spec(uniq('h')) });
    expect(res.status).toBe(429);
    expect(await res.text()).toContain(`tenant ${stack.tenantId} has ${LIMIT} of ${LIMIT} sandboxes`);

    // Another tenant (no sandbox settings) is not limited by this one's quota.
    const other = String(stack.otherTenantId);
    const otherNames = [uniq('o'), uniq('o')];
    for (const name of otherNames) await create(stack.grpc, name, {}, other);

    // A delete frees a slot: a create succeeds again once the sandbox is gone.
    await deleteOnceRecorded(granted[0]!);
    const next = uniq('next');
    await eventually(
      'a create after the delete',
      async () =>
        create(stack.grpc, next).then(
          () => true,
          (err: grpc.ServiceError) => {
            if (err.code !== grpc.status.RESOURCE_EXHAUSTED) throw err;
            return false;
          },
        ),
      { intervalMs: 250 },
    );
    expectExhausted([await Promise.allSettled([create(stack.grpc, uniq('over'))]).then((r) => r[0]!)]);

    for (const name of otherNames) await deleteOnceRecorded(name, other);
    for (const name of otherNames) await eventually(`Sandbox ${name} gone`, async () => !(await stack.sandbox(name)));
    await deleteAll([granted[1]!, granted[2]!, next]);
    // A history with the release (its patch marker and the signal), for the replay guard.
    await replayAndRecord(sandboxWorkflowId(stack.namespace, next), 'sandbox-quota-released-lean-3');
  });

  it('holds across two fast-path replicas: concurrent creates split over both give exactly the limit', async () => {
    const second = await stack.startSecondReplica();
    try {
      const { granted, refused } = await burst(8, (i) => (i % 2 ? second.grpc : stack.grpc));
      expect(granted, refusals(refused)).toHaveLength(LIMIT);
      expectExhausted(refused);
      await deleteAll(granted);
    } finally {
      second.grpc.close();
    }
  });
});

describe('the quota workflow’s reconcile', () => {
  it('counts the records a tenant has when it starts, and drops a grant whose create never came', async () => {
    // The other tenant has no limit, so no quota workflow: started here with short timings.
    const other = String(stack.otherTenantId);
    const existing = uniq('old');
    await create(stack.grpc, existing, {}, other);
    await eventually(`Sandbox ${existing} recorded`, () => stack.sandbox(existing));
    const client = await temporal();
    const handle = await client.workflow.start(sandboxQuotaWorkflow, {
      workflowId: quotaWorkflowId(other),
      taskQueue: stack.sandboxTaskQueue,
      args: [{ tenant: other, reconcileEveryMs: 500, graceMs: 1000 }],
    });
    try {
      // A fast path that died after its grant: no record ever comes.
      const ghost = `${stack.namespace}/${uniq('ghost')}`;
      const answer = await handle.executeUpdate(acquireSlotUpdate, { args: [{ slot: ghost, limit: 5 }] });
      expect(answer).toEqual({ granted: true, count: 2, limit: 5 });
      expect(await handle.query(quotaSlotsQuery)).toEqual([`${stack.namespace}/${existing}`, ghost].sort());
      await eventually('the leaked grant dropped', async () => !(await handle.query(quotaSlotsQuery)).includes(ghost));
      expect(await handle.query(quotaSlotsQuery)).toEqual([`${stack.namespace}/${existing}`]);

      // The sandbox's end gives its slot back.
      await deleteOnceRecorded(existing, other);
      await eventually('the slot released', async () => (await handle.query(quotaSlotsQuery)).length === 0);
    } finally {
      await handle.terminate('test done').catch(() => undefined);
    }
  });
});

describe('namespaces and pools', () => {
  it('a namespace or pool the tenant may not use is PERMISSION_DENIED, naming it', async () => {
    const [ns] = await Promise.allSettled([
      stack.grpc.call('CreateSandbox', { ...spec(uniq('ns')), namespace: 'default' }),
    ]);
    expect(errorOf(ns!).code).toBe(grpc.status.PERMISSION_DENIED);
    expect(errorOf(ns!).details).toContain('namespace default');

    const [pool] = await Promise.allSettled([create(stack.grpc, uniq('pool'), { poolRef: 'gpu-pool' })]);
    expect(errorOf(pool!).code).toBe(grpc.status.PERMISSION_DENIED);
    expect(errorOf(pool!).details).toContain('SandboxPool gpu-pool');

    // Neither took a slot.
    expect(await slots()).toEqual([]);
  });
});
