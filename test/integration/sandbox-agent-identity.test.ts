/**
 * Who the fast path treats as an agent (review C1, issue 31): only Pods their SandboxPool controls,
 * each pool's with its own token, and only over mutual TLS with a certificate naming that pool. A Pod that merely carries the agent labels — in another namespace, in the pool's namespace without
 * an owner, or naming the pool as owner but not as controller or under an old UID — is never
 * called: no status poll, no create, and never the token. Each such Pod points at a capture
 * server that records every request it gets.
 */
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import { SandboxPoolKind, type SandboxPool } from '../../src/api/sandbox.js';
import { AgentFleet } from '../../src/infra/agent-fleet.js';
import { poolChangedSignal } from '../../src/workflows/sandbox/contract.js';
import { poolWorkflowId } from '../../src/domain/sandbox-pool.js';
import { AgentPki } from '../../src/fastpath/agent-pki.js';
import { eventually, temporal, uniq } from '../support/env.js';
import { SandboxStack, agentPodAt, sandboxImage } from '../support/fastpath.js';
import { agentFetch } from '../support/agent-tls.js';

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

/** No kubelet: a stub agent's Pod goes at once. */
const removePod = (pod: V1Pod) =>
  stack.kube.core.deleteNamespacedPod({
    name: pod.metadata!.name!,
    namespace: stack.namespace,
    gracePeriodSeconds: 0,
    body: { gracePeriodSeconds: 0 },
  });

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
      (
        await agentFetch(stack.agentKey)(`${url}/api/v1/agent/status`, {
          headers: { authorization: `Bearer ${token}` },
        })
      ).status;
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

it('an agent Pod of the pool that serves plain HTTP is never sent a request nor the token', async () => {
  const pool = await stack.kube.get<{ metadata: { uid: string } }>({
    apiVersion: SandboxPoolKind.apiVersion,
    kind: SandboxPoolKind.kind,
    namespace: stack.namespace,
    name: stack.pool,
  });
  // A plain-HTTP listener at an admitted agent's address (what a sandbox squatting the agent
  // port, or a misconfigured agent, would be): every byte it is sent is kept.
  const requests: string[] = [];
  const bytes: Buffer[] = [];
  const plain = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  plain.on('connection', (socket) => socket.on('data', (b: Buffer) => bytes.push(b)));
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
  try {
    const pod = await agentPodAt(stack.kube, (plain.address() as AddressInfo).port, stack.namespace, stack.pool, {
      uid: pool!.metadata.uid,
      controller: true,
    });
    await eventually('the fast path tried it', async () => {
      await stack.fastpath!.registry.pollNow();
      return bytes.length > 0 && !!stack.fastpath!.registry.agent(stack.namespace, pod.metadata!.name!)?.lastError;
    });
    // It was offered TLS (a handshake record), never HTTP: no request, no token on the wire.
    expect(requests).toEqual([]);
    const wire = Buffer.concat(bytes);
    expect(wire[0]).toBe(0x16);
    expect(wire.includes(stack.token)).toBe(false);
    expect(/authorization|bearer/i.test(wire.toString('latin1'))).toBe(false);
    const known = stack.fastpath!.registry.agent(stack.namespace, pod.metadata!.name!)!;
    expect(known.url).toMatch(/^https:/);
    expect(stack.fastpath!.registry.table.has(known.key)).toBe(false);
    await removePod(pod);
  } finally {
    plain.close();
  }
});

it('an agent Pod whose certificate names another pool, or comes from another CA, is never sent a request', async () => {
  const pool = await stack.kube.get<{ metadata: { uid: string } }>({
    apiVersion: SandboxPoolKind.apiVersion,
    kind: SandboxPoolKind.kind,
    namespace: stack.namespace,
    name: stack.pool,
  });
  const received: string[] = [];
  // Certificates a real agent could hold: another pool's (same CA), and this pool's from another key.
  const otherPool = await new AgentPki(stack.agentKey).agentTls({
    namespace: stack.namespace,
    name: 'another-pool',
    uid: 'another-pools-uid',
  });
  const otherCa = await new AgentPki('another-key').agentTls({
    namespace: stack.namespace,
    name: stack.pool,
    uid: pool!.metadata.uid,
  });
  const servers = [otherPool, otherCa].map((m) =>
    https.createServer({ cert: m.cert, key: m.key }, (req, res) => {
      received.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    }),
  );
  for (const s of servers) await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  try {
    const pods: V1Pod[] = [];
    for (const s of servers)
      pods.push(
        await agentPodAt(stack.kube, (s.address() as AddressInfo).port, stack.namespace, stack.pool, {
          uid: pool!.metadata.uid,
          controller: true,
        }),
      );
    const errors = () => pods.map((p) => stack.fastpath!.registry.agent(stack.namespace, p.metadata!.name!)?.lastError);
    await eventually('the fast path refused both', async () => {
      await stack.fastpath!.registry.pollNow();
      return errors().every(Boolean);
    });
    expect(errors()).toEqual([expect.stringMatching(/not an agent of pool/), expect.stringMatching(/certificate/)]);
    expect(received).toEqual([]);
    for (const p of pods) await removePod(p);
  } finally {
    for (const s of servers) s.close();
  }
});
