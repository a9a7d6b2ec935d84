/**
 * An agent that answers its status but fails creates (HTTP 502, as a crashing agent or a proxy
 * in front of it would): a Strong create leaves no record behind (review M2), a Fast one no
 * sandbox, and a retry by name converges to one outcome once the agent works again — never
 * ALREADY_EXISTS for a create that failed.
 */
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { SandboxPoolKind } from '../../src/api/sandbox.js';
import { AgentPki } from '../../src/fastpath/agent-pki.js';
import { runningPodStatus } from '../../src/infra/agent-fleet.js';
import { eventually } from '../support/env.js';
import { SandboxStack, agentPodAt, grpcError, sandboxImage } from '../support/fastpath.js';

let stack: SandboxStack;
let stub: https.Server;
let failing = true;
/** The stub agent's Pod. */
let pod = '';
const created: { sandboxId: string; claimUid?: string; claimName?: string; exposedPorts?: number[] }[] = [];

/**
 * The agent API's status and create, as little as the fast path needs: creates fail while
 * `failing`. Served as a real agent is: HTTPS with its pool's certificate.
 */
function stubAgent(podName: () => string, tls: { cert: string; key: string }) {
  return https.createServer(tls, (req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const json = (code: number, o: unknown) =>
        res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(o));
      if (req.url?.endsWith('/status'))
        return json(200, {
          agentId: podName(),
          nodeName: 'local-node',
          capacity: 5,
          allocated: created.length,
          images: [],
          sandboxStatuses: created.map((s) => ({
            sandboxId: s.sandboxId,
            claimUid: s.claimUid ?? '',
            claimName: s.claimName ?? '',
            exposedPorts: s.exposedPorts ?? [],
            phase: 'running',
            message: '',
            createdAt: Math.floor(Date.now() / 1000),
          })),
        });
      if (req.url?.endsWith('/create')) {
        if (failing) return json(502, { message: 'bad gateway' });
        const { sandbox } = JSON.parse(body) as { sandbox: (typeof created)[number] };
        if (!created.some((s) => s.sandboxId === sandbox.sandboxId)) created.push(sandbox);
        return json(200, { success: true, sandboxId: sandbox.sandboxId, createdAt: Math.floor(Date.now() / 1000) });
      }
      if (req.url?.endsWith('/delete')) {
        const { sandboxId } = JSON.parse(body) as { sandboxId: string };
        created.splice(0, created.length, ...created.filter((s) => s.sandboxId !== sandboxId));
        return json(200, { success: true });
      }
      json(404, {});
    });
  });
}

beforeAll(async () => {
  stack = await new SandboxStack({ agents: 0 }).start();
  const pool = await stack.kube.get<{ metadata: { uid: string } }>({
    apiVersion: SandboxPoolKind.apiVersion,
    kind: SandboxPoolKind.kind,
    namespace: stack.namespace,
    name: stack.pool,
  });
  const tls = await new AgentPki(stack.agentKey).agentTls({
    namespace: stack.namespace,
    name: stack.pool,
    uid: pool!.metadata.uid,
  });
  stub = stubAgent(() => pod, tls);
  await new Promise<void>((resolve) => stub.listen(0, '127.0.0.1', resolve));
  const p = await agentPodAt(stack.kube, (stub.address() as AddressInfo).port, stack.namespace, stack.pool, {
    uid: pool!.metadata.uid,
    controller: true,
  });
  pod = p.metadata!.name!;
  await eventually('the fast path places on the stub', async () =>
    stack.fastpath!.registry.hasUsableAgent(stack.namespace, stack.pool),
  );
}, 240_000);

afterAll(async () => {
  await stack?.stop();
  stub?.close();
});

const create = (name: string, mode: 'FAST' | 'STRONG') =>
  stack.grpc.call<{ sandboxId: string }>('CreateSandbox', {
    namespace: stack.namespace,
    name,
    image: sandboxImage(),
    poolRef: stack.pool,
    command: ['sleep', '3600'],
    consistencyMode: mode,
  });

it.each(['STRONG', 'FAST'] as const)(
  '%s: the failed create leaves nothing, and a retry by name succeeds once the agent works',
  async (mode) => {
    failing = true;
    const name = `${mode.toLowerCase()}-retried`;
    const err = await grpcError(create(name, mode));
    expect(err.code).toBe(grpc.status.UNAVAILABLE);
    expect(err.details).toMatch(/did not create it: .*HTTP 502/);
    // The answer comes after the rollback: no record at all (before: a Pending record, forever).
    expect(await stack.sandbox(name)).toBeUndefined();
    expect(created.filter((s) => s.claimName === name)).toEqual([]);
    // Retried while still failing: the same answer, not ALREADY_EXISTS.
    expect((await grpcError(create(name, mode))).code).toBe(grpc.status.UNAVAILABLE);
    failing = false;
    const ok = await create(name, mode);
    expect(created.map((s) => s.sandboxId)).toContain(ok.sandboxId);
    await stack.grpc.call('DeleteSandbox', { sandboxName: name, namespace: stack.namespace });
    await eventually(`${name} deleted on the agent`, async () => !created.some((s) => s.claimName === name));
  },
);

it('an agent Pod that stops being Ready leaves the table when its watch event arrives, and is back once Ready — no poll awaited', async () => {
  // A replica that asks its agents again only in ten minutes: what it learns meanwhile comes from its watches.
  const replica = (await stack.startSecondReplica({ pollIntervalMs: 10 * 60_000 })).fastpath.registry;
  const key = `${stack.namespace}/${pod}`;
  expect(replica.table.has(key)).toBe(true);
  const setReady = (ready: boolean) => {
    const status = runningPodStatus('127.0.0.1', new Date().toISOString()) as { conditions: { type: string }[] };
    for (const c of status.conditions) if (c.type === 'Ready') Object.assign(c, { status: ready ? 'True' : 'False' });
    return stack.kube.core.patchNamespacedPodStatus(
      { name: pod, namespace: stack.namespace, body: { status } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  };
  await setReady(false);
  await eventually('the replica no longer places on it', async () => !replica.table.has(key), { timeoutMs: 20_000 });
  await setReady(true);
  await eventually('the replica places on it again', async () => replica.table.has(key), { timeoutMs: 20_000 });
});
