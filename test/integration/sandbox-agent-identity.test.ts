/**
 * Who the fast path treats as an agent (review C1): only Pods their SandboxPool controls, each
 * pool's with its own token. A Pod that merely carries the agent labels — in another namespace, in the pool's namespace without
 * an owner, or naming the pool as owner but not as controller or under an old UID — is never
 * called: no status poll, no create, and never the token. Each such Pod points at a capture
 * server that records every request it gets.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SandboxPoolKind, type SandboxPool } from '../../src/api/sandbox.js';
import { AgentFleet } from '../../src/infra/agent-fleet.js';
import { poolChangedSignal } from '../../src/workflows/sandbox/contract.js';
import { poolWorkflowId } from '../../src/domain/sandbox-pool.js';
import { eventually, temporal, uniq } from '../support/env.js';
import { SandboxStack, agentPodAt, sandboxImage } from '../support/fastpath.js';

let stack: SandboxStack;
let capture: http.Server;
const capturePort = () => (capture.address() as AddressInfo).port;
const received: { url: string; authorization?: string }[] = [];
const otherNamespace = uniq('sbx-other');

beforeAll(async () => {
  capture = http.createServer((req, res) => {
    received.push({ url: req.url ?? '', authorization: req.headers.authorization });
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  await new Promise<void>((resolve) => capture.listen(0, '127.0.0.1', resolve));
  stack = await new SandboxStack({ agents: 1 }).start();
  await stack.kube.core.createNamespace({ body: { metadata: { name: otherNamespace } } });
}, 240_000);

afterAll(async () => {
  await stack?.stop();
  await stack?.kube.core.deleteNamespace({ name: otherNamespace }).catch(() => undefined);
  capture?.close();
});

it('Pods that only look like agents are never called, never sent the token, never given a sandbox', async () => {
  const pool = await stack.kube.get<{ metadata: { uid: string } }>({
    apiVersion: SandboxPoolKind.apiVersion,
    kind: SandboxPoolKind.kind,
    namespace: stack.namespace,
    name: stack.pool,
  });
  // Another namespace, no pool there; the pool's namespace without an owner; the pool as a
  // non-controlling owner; the pool's name as controller under another (an old pool's) UID.
  await agentPodAt(stack.kube, capturePort(), otherNamespace, stack.pool);
  await agentPodAt(stack.kube, capturePort(), stack.namespace, stack.pool);
  await agentPodAt(stack.kube, capturePort(), stack.namespace, stack.pool, {
    uid: pool!.metadata.uid,
    controller: false,
  });
  await agentPodAt(stack.kube, capturePort(), stack.namespace, stack.pool, {
    uid: 'a-deleted-pools-uid',
    controller: true,
  });

  // A fast path serving every namespace, as deploy/fastpath.yaml runs it.
  const everywhere = await stack.startSecondReplica({ namespace: undefined });
  try {
    for (let i = 0; i < 3; i++) {
      await everywhere.fastpath.registry.pollNow();
      await stack.fastpath!.registry.pollNow();
    }
    const ours = (a: { namespace: string }) => a.namespace === stack.namespace || a.namespace === otherNamespace;
    for (const registry of [everywhere.fastpath.registry, stack.fastpath!.registry])
      expect(
        registry
          .agents()
          .filter(ours)
          .map((a) => a.pod),
      ).toEqual([stack.fleet.agents[0]!.podName]);

    // Creates land on the one real agent (capacity 3) and the fourth is refused, not sent elsewhere.
    for (let i = 0; i < 3; i++)
      await everywhere.grpc.call('CreateSandbox', {
        namespace: stack.namespace,
        name: `real-${i}`,
        image: sandboxImage(),
        poolRef: stack.pool,
        command: ['sleep', '3600'],
      });
    await expect(
      everywhere.grpc.call('CreateSandbox', {
        namespace: stack.namespace,
        name: 'one-too-many',
        image: sandboxImage(),
        poolRef: stack.pool,
        command: ['sleep', '3600'],
      }),
    ).rejects.toMatchObject({ details: expect.stringMatching(/full: 3 of 3/) });

    // The pool's own pass reads its agents too: it counts and calls only the Pod it controls.
    const client = await temporal();
    try {
      await client.workflow
        .getHandle(poolWorkflowId(stack.namespace, stack.pool))
        .signal(poolChangedSignal, { event: 'test' });
      await eventually('the pool counts its one agent busy', async () => {
        const p = await stack.kube.get<SandboxPool>({
          apiVersion: SandboxPoolKind.apiVersion,
          kind: SandboxPoolKind.kind,
          namespace: stack.namespace,
          name: stack.pool,
        });
        return p?.status?.busyAgents === 1 && p.status.currentPods === 1;
      });
    } finally {
      await client.connection.close();
    }
    expect(received).toEqual([]);
  } finally {
    everywhere.grpc.close();
  }
});

it("each pool's agents have their own token: an agent refuses another pool's, the fast path uses each pool's", async () => {
  const poolB = 'pool-b';
  await stack.kube.create({
    apiVersion: SandboxPoolKind.apiVersion,
    kind: SandboxPoolKind.kind,
    metadata: { name: poolB, namespace: stack.namespace },
    spec: {
      capacity: { poolMin: 0, poolMax: 4, bufferMin: 0, bufferMax: 10_000 },
      maxSandboxesPerPod: 2,
      agentTemplate: {},
    },
  });
  const fleetB = await AgentFleet.start({
    kube: stack.kube,
    namespace: stack.namespace,
    pool: poolB,
    count: 1,
    capacity: 2,
    agentKey: stack.agentKey,
    stateDir: stack.stateDir,
    killGraceMs: 500,
  });
  try {
    const status = async (url: string, token: string) =>
      (await fetch(`${url}/api/v1/agent/status`, { headers: { authorization: `Bearer ${token}` } })).status;
    const a = stack.fleet.agents[0]!.url;
    const b = fleetB.agents[0]!.url;
    expect(fleetB.token).not.toBe(stack.token);
    expect([await status(a, stack.token), await status(b, fleetB.token)]).toEqual([200, 200]);
    // Neither the other pool's token nor the fast path's key opens an agent.
    expect([await status(a, fleetB.token), await status(b, stack.token), await status(b, stack.agentKey)]).toEqual([
      401, 401, 401,
    ]);
    // The fast path reaches both pools' agents, each with its pool's token.
    await stack.fastpath!.registry.pollNow();
    const placed = await stack.grpc.call<{ agentPod: string }>('CreateSandbox', {
      namespace: stack.namespace,
      name: 'in-pool-b',
      image: sandboxImage(),
      poolRef: poolB,
      command: ['sleep', '3600'],
    });
    expect(placed.agentPod).toBe(fleetB.agents[0]!.podName);
  } finally {
    await fleetB.stop();
  }
});
