/**
 * Scale from zero (issue 31) on the real stack: a SandboxPool with poolMin 0 and bufferMin 0 runs
 * no agent until a create asks for one. A create that finds no Ready agent is demand: the pool's
 * workflow starts an agent (the fleet's kubelet half runs a real agent process for its Pod);
 * Strong waits for it and places the sandbox, Fast answers UNAVAILABLE at once with a retry hint
 * and succeeds on a retry, a kubectl-created Sandbox waits Pending with reason NoReadyAgent. Idle
 * for scaleToZeroAfterSeconds, the pool is back at zero. A pool with poolMax 0 refuses with the
 * reason; a Strong create whose agent never comes is refused naming the scale-up timeout. No
 * timing is asserted: every check polls for its condition.
 */
import type { V1Pod } from '@kubernetes/client-node';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxKind, SandboxPoolKind, type Sandbox, type SandboxPool } from '../../src/api/sandbox.js';
import { sandboxWorkflowId } from '../../src/domain/sandbox.js';
import { poolWorkflowId } from '../../src/domain/sandbox-pool.js';
import { retryDelayOf } from '../../src/fastpath/retry-info.js';
import { getFreePort } from '../../src/infra/process.js';
import { eventually, replayAndRecord, uniq } from '../support/env.js';
import { SandboxStack, TENANT_HEADER, grpcError, sandboxImage } from '../support/fastpath.js';

/** Short, so the test sees the pool go back to zero. */
const SCALE_TO_ZERO_AFTER_SECONDS = 5;
/** Long enough for an agent to start on a loaded machine (it took 20-30 s on a busy 2-core one). */
const SCALE_UP_TIMEOUT_SECONDS = 120;
/** The second replica's, for the create whose agent never comes: short enough to wait out. */
const SHORT_SCALE_UP_TIMEOUT_SECONDS = 10;

let stack: SandboxStack;
let port: number;

const agentTemplate = () => ({
  spec: {
    containers: [
      {
        name: 'agent',
        image: 'durable-operators:dev',
        args: ['agent'],
        ports: [{ name: 'agent', containerPort: port }],
      },
    ],
  },
});

beforeAll(async () => {
  port = await getFreePort();
  stack = await new SandboxStack({
    agents: 0,
    capacity: 2,
    kubelet: true,
    scaleUpTimeout: `${SCALE_UP_TIMEOUT_SECONDS}s`,
    poolCapacity: {
      poolMin: 0,
      poolMax: 2,
      bufferMin: 0,
      bufferMax: 0,
      scaleToZeroAfterSeconds: SCALE_TO_ZERO_AFTER_SECONDS,
    },
    agentTemplate: agentTemplate(),
  }).start();
}, 240_000);

afterAll(async () => {
  await stack?.stop();
});

const poolRef = (name = stack.pool) => ({
  apiVersion: SandboxPoolKind.apiVersion,
  kind: SandboxPoolKind.kind,
  namespace: stack.namespace,
  name,
});
const readPool = () => stack.kube.get<SandboxPool>(poolRef());
const condition = (p: SandboxPool | undefined, type: string) => p?.status?.conditions?.find((c) => c.type === type);

async function agentPods(pool = stack.pool): Promise<V1Pod[]> {
  const page = await stack.kube.listPage<V1Pod>('v1', 'Pod', {
    namespace: stack.namespace,
    labelSelector: `app=sandbox-agent,fast-sandbox.io/pool=${pool}`,
  });
  return page.items.filter((p) => !p.metadata?.deletionTimestamp);
}

function poolSettled(what: string, want: (p: SandboxPool) => boolean, timeoutMs = 180_000) {
  return eventually(
    `SandboxPool ${what}`,
    async () => {
      const p = await readPool();
      return p && want(p) ? p : undefined;
    },
    { timeoutMs, intervalMs: 250 },
  );
}

/** The pool at zero: no agent Pod, status says so. */
async function atZero(): Promise<void> {
  await poolSettled('at zero agents', (p) => p.status?.currentPods === 0 && condition(p, 'Ready')?.reason === 'Scaled');
  expect(await agentPods()).toEqual([]);
}

function create(name: string, more: Record<string, unknown> = {}) {
  return stack.grpc.call<{ sandboxId: string; agentPod: string }>('CreateSandbox', {
    namespace: stack.namespace,
    name,
    image: sandboxImage(),
    poolRef: stack.pool,
    command: ['sleep', '3600'],
    ...more,
  });
}

async function running(name: string): Promise<Sandbox> {
  return eventually(
    `Sandbox ${name} Running`,
    async () => {
      const sb = await stack.sandbox(name);
      return sb?.status?.phase === 'Running' ? sb : undefined;
    },
    { timeoutMs: 120_000 },
  );
}

async function remove(name: string): Promise<void> {
  await stack.grpc.call('DeleteSandbox', { namespace: stack.namespace, sandboxName: name });
  await eventually(`Sandbox ${name} gone`, async () => !(await stack.sandbox(name)), { timeoutMs: 120_000 });
}

describe('scale from zero (poolMin 0)', () => {
  it('runs no agent while nothing asks for one', async () => {
    await atZero();
    expect(condition(await readPool(), 'ScalingLimited')).toMatchObject({ status: 'False' });
  });

  it('Fast: UNAVAILABLE at once with a retry hint (gRPC RetryInfo and retry-after, HTTP Retry-After), then placed on a retry once the agent is Ready', async () => {
    const name = uniq('fast');
    // Both at once, before the agent the first one asks for can be up.
    const [err, res] = await Promise.all([
      grpcError(create(name)),
      fetch(`${stack.httpBase}/api/v1/sandboxes`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', [TENANT_HEADER]: String(stack.tenantId) },
        body: JSON.stringify({
          namespace: stack.namespace,
          name: uniq('fast-http'),
          image: sandboxImage(),
          poolRef: stack.pool,
          command: ['sleep', '3600'],
        }),
      }),
    ]);
    expect(err.code).toBe(grpc.status.UNAVAILABLE);
    expect(err.details).toContain(`pool ${stack.pool} has no ready agents in namespace ${stack.namespace}`);
    expect(err.details).toContain('retry in 2s');
    expect(retryDelayOf(err.metadata)).toBe(2);
    expect(err.metadata.get('retry-after')).toEqual(['2']);
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('2');
    expect(((await res.json()) as { error: string }).error).toBe('Unavailable');

    // As a client would: retry after the hinted delay until the agent is there.
    const created = await eventually(
      `a retried Fast create of ${name} placed`,
      () =>
        create(name).catch((e: grpc.ServiceError) => {
          if (e.code === grpc.status.UNAVAILABLE && retryDelayOf(e.metadata) === 2) return undefined;
          throw e;
        }),
      { timeoutMs: 180_000, intervalMs: 2_000 },
    );
    const sb = await running(name);
    expect(sb.status?.assignedPod).toBe(created.agentPod);
    expect((await agentPods()).map((p) => p.metadata?.name)).toEqual([created.agentPod]);
    await remove(name);
  });

  it(`idle, keeps the agent for scaleToZeroAfterSeconds (${SCALE_TO_ZERO_AFTER_SECONDS}s), then scales back to zero`, async () => {
    const kept = await poolSettled('keeping one agent for recent demand', (p) =>
      /one kept for recent demand until/.test(condition(p, 'Ready')?.message ?? ''),
    );
    expect(kept.status?.currentPods).toBe(1);
    await atZero();
  });

  it('Strong: the first create waits for the agent the pool starts for it, and completes', async () => {
    const name = uniq('strong');
    const created = await create(name, { consistencyMode: 'STRONG' });
    expect(created.agentPod).toMatch(/-agent-/);
    const sb = await running(name);
    expect(sb.status?.assignedPod).toBe(created.agentPod);
    expect(sb.status?.sandboxID).toBe(sb.metadata?.uid);
    await remove(name);
    await replayAndRecord(sandboxWorkflowId(stack.namespace, name), 'sandbox-strong-from-zero-deleted');
    await atZero();
  });

  it('kubectl: a Sandbox in the empty pool is Pending with reason NoReadyAgent until the agent the pool starts places it', async () => {
    const name = uniq('kubectl');
    await stack.kube.create({
      apiVersion: SandboxKind.apiVersion,
      kind: SandboxKind.kind,
      metadata: { name, namespace: stack.namespace },
      spec: { image: sandboxImage(), poolRef: stack.pool, command: ['sleep', '3600'] },
    });
    const pending = await eventually(
      `Sandbox ${name} Pending for want of an agent`,
      async () => {
        const sb = await stack.sandbox(name);
        const ready = sb?.status?.conditions?.find((c) => c.type === 'Ready');
        return sb?.status?.phase === 'Pending' && ready?.reason === 'NoReadyAgent' ? ready : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    expect(pending.message).toContain(`pool ${stack.pool} has no ready agents`);
    await running(name);
    await stack.kube.delete(stack.sandboxRef(name));
    await eventually(`Sandbox ${name} gone`, async () => !(await stack.sandbox(name)), { timeoutMs: 120_000 });
    await atZero();
  });

  it('Strong: a create whose agent never becomes Ready is refused UNAVAILABLE naming the scale-up timeout', async () => {
    // A second pool whose agent Pods nothing runs (the fleet's kubelet serves pool-a only).
    const pool = 'pool-never';
    await stack.kube.create({
      ...poolRef(pool),
      metadata: { name: pool, namespace: stack.namespace },
      spec: {
        capacity: { poolMin: 0, poolMax: 1, bufferMin: 0, bufferMax: 0 },
        maxSandboxesPerPod: 2,
        agentTemplate: agentTemplate(),
      },
    } as never);
    // Through a replica with a short timeout: the create carries its replica's to the workflow.
    const replica = await stack.startSecondReplica({ scaleUpTimeoutMs: SHORT_SCALE_UP_TIMEOUT_SECONDS * 1000 });
    const name = uniq('never');
    const err = await eventually('a Strong create refused after the scale-up timeout', async () => {
      const e = await grpcError(
        replica.grpc.call('CreateSandbox', {
          namespace: stack.namespace,
          name,
          image: sandboxImage(),
          poolRef: pool,
          command: ['sleep', '3600'],
          consistencyMode: 'STRONG',
        }),
      );
      if (e.code === grpc.status.NOT_FOUND) return undefined; // until the registry sees the new pool
      return e;
    });
    expect(err.code).toBe(grpc.status.UNAVAILABLE);
    expect(err.details).toContain(
      `no agent of pool ${pool} in namespace ${stack.namespace} became ready within the scale-up timeout of ${SHORT_SCALE_UP_TIMEOUT_SECONDS}s (--fastpath-scale-up-timeout)`,
    );
    expect(retryDelayOf(err.metadata)).toBe(2);
    // The pool did start an agent Pod for it (which never became Ready); nothing was recorded.
    expect((await agentPods(pool)).length).toBe(1);
    expect(await stack.sandbox(name)).toBeUndefined();
    await stack.kube.delete(poolRef(pool));
  });

  it('a pool with poolMax 0 refuses every create with the reason, and starts no agent', async () => {
    await stack.kube.mergePatch(poolRef(), { spec: { capacity: { poolMax: 0 } } });
    for (const mode of ['FAST', 'STRONG'] as const) {
      const err = await eventually(`a ${mode} create refused for poolMax 0`, async () => {
        const e = await grpcError(create(uniq('max0'), { consistencyMode: mode }));
        if (e.code === grpc.status.UNAVAILABLE) return undefined; // until the registry sees the change
        return e;
      });
      expect(err.code).toBe(grpc.status.FAILED_PRECONDITION);
      expect(err.details).toBe(
        `SandboxPool ${stack.pool} in namespace ${stack.namespace} has poolMax 0: it runs no agent, so it takes no sandboxes (raise spec.capacity.poolMax)`,
      );
    }
    // A kubectl-created Sandbox waits Pending with the reason; no agent starts for it either.
    const name = uniq('max0-kubectl');
    await stack.kube.create({
      apiVersion: SandboxKind.apiVersion,
      kind: SandboxKind.kind,
      metadata: { name, namespace: stack.namespace },
      spec: { image: sandboxImage(), poolRef: stack.pool, command: ['sleep', '3600'] },
    });
    const pending = await eventually(`Sandbox ${name} Pending for poolMax 0`, async () => {
      const sb = await stack.sandbox(name);
      const ready = sb?.status?.conditions?.find((c) => c.type === 'Ready');
      return sb?.status?.phase === 'Pending' && ready?.reason === 'PoolMaxZero' ? ready : undefined;
    });
    expect(pending.message).toContain('has poolMax 0');
    expect(await agentPods()).toEqual([]);
    await stack.kube.delete(stack.sandboxRef(name));
    await eventually(`Sandbox ${name} gone`, async () => !(await stack.sandbox(name)), { timeoutMs: 120_000 });
    // The pool's workflow, deleted with its pool, replays (its demand hints and the scale-to-zero timers).
    await stack.kube.delete(poolRef());
    await eventually('the pool gone', async () => !(await readPool()), { timeoutMs: 120_000 });
    await replayAndRecord(poolWorkflowId(stack.namespace, stack.pool), 'sandbox-pool-from-zero-deleted-kit');
  });
});
