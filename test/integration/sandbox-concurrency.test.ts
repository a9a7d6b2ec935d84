/**
 * No double allocation: 200 creates at once against a total capacity of 100 — exactly 100
 * succeed, the rest get RESOURCE_EXHAUSTED, no agent holds more than its capacity, and the
 * registry's counts equal the agents' own reports. Then the same with two fast-path replicas,
 * each with its own placement table, where only the agents' admission keeps them honest.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxKind, type Sandbox } from '../../src/api/sandbox.js';
import type { SandboxRegistry } from '../../src/fastpath/registry.js';
import { eventually, uniq } from '../support/env.js';
import { SandboxStack, sandboxImage, type FastPathGrpc } from '../support/fastpath.js';

const AGENTS = 10;
const CAPACITY = 10;
const CREATES = 200;

let stack: SandboxStack;

beforeAll(async () => {
  stack = await new SandboxStack({ agents: AGENTS, capacity: CAPACITY }).start();
}, 240_000);

afterAll(async () => {
  await stack?.stop();
});

async function burst(clients: FastPathGrpc[], prefix: string) {
  const results = await Promise.allSettled(
    Array.from({ length: CREATES }, (_, i) =>
      clients[i % clients.length]!.call<{ sandboxId: string; agentPod: string }>('CreateSandbox', {
        namespace: stack.namespace,
        name: `${prefix}-${i}`,
        image: sandboxImage(),
        poolRef: stack.pool,
        command: ['sleep', '3600'],
      }),
    ),
  );
  const ok = results.filter((r) => r.status === 'fulfilled');
  const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  return { ok, refused };
}

async function expectAgentsMatch(registries: SandboxRegistry[], expectedTotal: number) {
  const reports = await stack.agentReports();
  for (const r of reports) expect(r.allocated, `agent ${r.pod}`).toBeLessThanOrEqual(CAPACITY);
  expect(reports.reduce((n, r) => n + r.allocated, 0)).toBe(expectedTotal);
  // Each registry, after a fresh poll, counts what each agent reports.
  for (const registry of registries) {
    await registry.pollNow();
    const byPod = new Map(registry.table.view().map((v) => [v.id.split('/')[1], v.load]));
    for (const r of reports) expect(byPod.get(r.pod), `registry's count for ${r.pod}`).toBe(r.allocated);
  }
}

async function deleteAll() {
  for await (const sb of stack.kube.listAll<Sandbox>(SandboxKind.apiVersion, SandboxKind.kind, {
    namespace: stack.namespace,
  }))
    await stack.kube.delete({
      apiVersion: SandboxKind.apiVersion,
      kind: SandboxKind.kind,
      namespace: stack.namespace,
      name: sb.metadata!.name!,
    });
  await eventually('every agent empty', async () => (await stack.agentReports()).every((r) => r.allocated === 0), {
    timeoutMs: 180_000,
    intervalMs: 500,
  });
}

describe('200 creates at once against a capacity of 100', () => {
  it('one fast path: exactly 100 placed, 100 RESOURCE_EXHAUSTED, no agent over capacity', async () => {
    const { ok, refused } = await burst([stack.grpc], uniq('one'));
    expect(ok).toHaveLength(AGENTS * CAPACITY);
    expect(refused.map((r) => (r.reason as grpc.ServiceError).code)).toEqual(
      Array(CREATES - AGENTS * CAPACITY).fill(grpc.status.RESOURCE_EXHAUSTED),
    );
    expect((refused[0]!.reason as grpc.ServiceError).details).toMatch(/full: 100 of 100 sandbox slots/);
    await expectAgentsMatch([stack.fastpath!.registry], AGENTS * CAPACITY);
    await deleteAll();
  }, 600_000);

  it('two fast-path replicas: still exactly 100, the agents refusing what a stale table offers', async () => {
    const second = await stack.startSecondReplica();
    try {
      const { ok, refused } = await burst([stack.grpc, second.grpc], uniq('two'));
      expect(ok).toHaveLength(AGENTS * CAPACITY);
      expect(new Set(refused.map((r) => (r.reason as grpc.ServiceError).code))).toEqual(
        new Set([grpc.status.RESOURCE_EXHAUSTED]),
      );
      await expectAgentsMatch([stack.fastpath!.registry, second.fastpath.registry], AGENTS * CAPACITY);
      // Every placed sandbox is recorded once, on the agent that holds it.
      await eventually(
        'every placed sandbox recorded and Running',
        async () => {
          let running = 0;
          for await (const sb of stack.kube.listAll<Sandbox>(SandboxKind.apiVersion, SandboxKind.kind, {
            namespace: stack.namespace,
          }))
            if (sb.status?.phase === 'Running') running++;
          return running === AGENTS * CAPACITY;
        },
        { timeoutMs: 180_000, intervalMs: 1000 },
      );
      await deleteAll();
    } finally {
      second.grpc.close();
    }
  }, 600_000);
});
