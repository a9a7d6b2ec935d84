/**
 * SandboxPool sizing (issue 11) on the real stack: the pool's workflow creates its agent Pods,
 * the fleet's kubelet half runs a real agent process for each, and sandboxes are created through
 * the fast path. Scale-up follows ceil((active + pending + bufferMin) / maxSandboxesPerPod) within
 * [poolMin, poolMax]; scale-down removes idle agents only (drain, re-check, delete), so no
 * sandbox is lost; a pool being deleted keeps its busy agents and refuses new sandboxes until
 * the last one is gone. No timing is asserted: every check polls for its condition.
 */
import { X509Certificate } from 'node:crypto';
import tls from 'node:tls';
import { PatchStrategy, setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxPoolKind, type Sandbox, type SandboxPool } from '../../src/api/sandbox.js';
import { agentIdentity, uriNames } from '../../src/domain/agent-identity.js';
import { POOL_FINALIZER, agentTokenSecretName } from '../../src/domain/sandbox-pool.js';
import { AgentPki, RENEW_EVERY_MS, windowStart } from '../../src/fastpath/agent-pki.js';
import { getFreePort } from '../../src/infra/process.js';
import { eventually, uniq } from '../support/env.js';
import { SandboxStack, grpcError, sandboxImage } from '../support/fastpath.js';
import { agentFetch } from '../support/agent-tls.js';

const PER_POD = 2;

let stack: SandboxStack;

beforeAll(async () => {
  const port = await getFreePort();
  stack = await new SandboxStack({
    agents: 0,
    capacity: PER_POD,
    kubelet: true,
    poolCapacity: { poolMin: 1, poolMax: 3, bufferMin: 1, bufferMax: 1 },
    agentTemplate: {
      metadata: { labels: { team: 'sandbox-tests' } },
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
    },
  }).start();
}, 240_000);

afterAll(async () => {
  await stack?.stop();
});

const poolRef = () => ({
  apiVersion: SandboxPoolKind.apiVersion,
  kind: SandboxPoolKind.kind,
  namespace: stack.namespace,
  name: stack.pool,
});
const readPool = () => stack.kube.get<SandboxPool>(poolRef());
const condition = (p: SandboxPool | undefined, type: string) => p?.status?.conditions?.find((c) => c.type === type);

async function agentPods(): Promise<V1Pod[]> {
  const page = await stack.kube.listPage<V1Pod>('v1', 'Pod', {
    namespace: stack.namespace,
    labelSelector: `app=sandbox-agent,fast-sandbox.io/pool=${stack.pool}`,
  });
  return page.items.filter((p) => !p.metadata?.deletionTimestamp);
}

/** The pool's status once it matches `want` (and its Pods are all Ready and answering). */
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

function create(name: string) {
  return stack.grpc.call<{ sandboxId: string; agentPod: string }>('CreateSandbox', {
    namespace: stack.namespace,
    name,
    image: sandboxImage(),
    poolRef: stack.pool,
    command: ['sleep', '3600'],
  });
}

/** Retried while the pool has no room yet (it is growing): a refusal is RESOURCE_EXHAUSTED. */
function createWhenRoom(name: string) {
  return eventually(
    `a create of ${name} accepted`,
    () =>
      create(name).catch((err: grpc.ServiceError) => {
        if (err.code === grpc.status.RESOURCE_EXHAUSTED) return undefined;
        throw err;
      }),
    { timeoutMs: 180_000, intervalMs: 250 },
  );
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

/** What every agent the kubelet runs reports, by Pod name (fresh status calls). */
async function reports(): Promise<Map<string, { sandboxId: string; phase: string; claimName: string }[]>> {
  const out = new Map<string, { sandboxId: string; phase: string; claimName: string }[]>();
  for (const a of stack.fleet.kubeletAgents) {
    const res = await agentFetch(stack.agentKey)(`${a.url}/api/v1/agent/status`, {
      headers: { authorization: `Bearer ${stack.token}` },
    }).catch(() => undefined);
    if (!res?.ok) continue;
    const body = (await res.json()) as { sandboxStatuses: { sandboxId: string; phase: string; claimName: string }[] };
    out.set(a.podName, body.sandboxStatuses);
  }
  return out;
}

describe('SandboxPool sizing', () => {
  it('starts at its size for no load: ceil((0 + bufferMin) / perPod) = 1 = poolMin, status filled', async () => {
    const p = await poolSettled('at one ready agent', (p) => p.status?.readyPods === 1 && p.status.totalAgents === 1);
    expect(p.metadata?.finalizers).toContain(POOL_FINALIZER);
    expect(p.status).toMatchObject({ currentPods: 1, readyPods: 1, totalAgents: 1, idleAgents: 1, busyAgents: 0 });
    expect(condition(p, 'Ready')).toMatchObject({ status: 'True', reason: 'Scaled' });
    expect(condition(p, 'ScalingLimited')).toMatchObject({ status: 'False' });
    const [pod] = await agentPods();
    // From the template, with the pool's labels, owned by the pool, capacity = maxSandboxesPerPod.
    expect(pod!.metadata?.labels).toMatchObject({ team: 'sandbox-tests', app: 'sandbox-agent' });
    expect(pod!.metadata?.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'SandboxPool', name: stack.pool, uid: p.metadata!.uid, controller: true }),
    ]);
    expect(pod!.spec?.containers[0]!.env).toEqual(
      expect.arrayContaining([{ name: 'AGENT_CAPACITY', value: String(PER_POD) }]),
    );
  });

  it("its agents serve the pool's certificate from the pool's Secret, and a renewed one without a restart", async () => {
    const p = (await readPool())!;
    const pool = { namespace: stack.namespace, name: stack.pool, uid: p.metadata!.uid! };
    const secretName = agentTokenSecretName(stack.pool, pool.uid);
    const secret = await stack.kube.core.readNamespacedSecret({ name: secretName, namespace: stack.namespace });
    const data = (k: string) => Buffer.from(secret.data![k]!, 'base64').toString('utf8');
    const pki = new AgentPki(stack.agentKey);
    expect(data('token')).toBe(stack.token);
    expect(data('ca.crt')).toBe(await pki.caPem());
    expect(uriNames(new X509Certificate(data('tls.crt')).subjectAltName)).toEqual([agentIdentity(pool)]);
    const [agent] = stack.fleet.kubeletAgents.filter((a) => a.process.running);
    const served = () =>
      new Promise<string>((resolve, reject) => {
        const u = new URL(agent!.url);
        const s = tls.connect({ host: u.hostname, port: Number(u.port), rejectUnauthorized: false }, () => {
          resolve(s.getPeerCertificate().serialNumber);
          s.end();
        });
        s.on('error', reject);
      });
    expect(await served()).toBe(new X509Certificate(data('tls.crt')).serialNumber);
    // What a renewal writes: another window's certificate (the previous one: valid now too).
    const renewed = await pki.agentTls(pool, windowStart(Date.now()) - RENEW_EVERY_MS);
    await stack.kube.core.patchNamespacedSecret(
      {
        name: secretName,
        namespace: stack.namespace,
        body: { stringData: { 'tls.crt': renewed.cert, 'tls.key': renewed.key } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const want = new X509Certificate(renewed.cert).serialNumber;
    await eventually('the agent serves the renewed certificate', async () => (await served()) === want);
    // The same process, still used by the fast path.
    expect(agent!.process.running).toBe(true);
    await stack.fastpath!.registry.pollNow();
    const known = stack.fastpath!.registry.agent(stack.namespace, agent!.podName)!;
    expect(known.lastError).toBeUndefined();
    expect(stack.fastpath!.registry.table.has(known.key)).toBe(true);
  });

  const names = Array.from({ length: 6 }, (_, i) => uniq(`load${i}`));
  const placed = new Map<string, string>(); // sandbox → agent Pod

  it('scales up under load, per the formula, up to poolMax (ScalingLimited AtPoolMax)', async () => {
    // Each sandbox raises the need: ceil((n + 1) / 2) Pods for n sandboxes.
    for (const [i, name] of names.entries()) {
      const created = await createWhenRoom(name);
      placed.set(name, created.agentPod);
      const need = Math.min(3, Math.ceil((i + 1 + 1) / PER_POD));
      await poolSettled(`at ${need} Pods for ${i + 1} sandboxes`, (p) => (p.status?.currentPods ?? 0) >= need);
    }
    for (const name of names) await running(name);
    const p = await poolSettled(
      'at poolMax with 6 busy slots',
      (p) =>
        p.status?.readyPods === 3 && p.status.busyAgents === 3 && condition(p, 'ScalingLimited')?.status === 'True',
    );
    expect(p.status).toMatchObject({ currentPods: 3, readyPods: 3, totalAgents: 3, idleAgents: 0, busyAgents: 3 });
    expect(condition(p, 'ScalingLimited')).toMatchObject({
      reason: 'AtPoolMax',
      message: 'the demand needs 4 agent Pods; poolMax is 3',
    });
    expect((await agentPods()).length).toBe(3);
    // Full at poolMax: the next create is refused, and no fourth Pod appears.
    const err = await grpcError(create(uniq('over')));
    expect(err.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect((await agentPods()).length).toBe(3);
  });

  it('scales down to idle agents only: busy agents stay above the size, no sandbox is lost', async () => {
    // Keep one sandbox per agent, delete the other three: 3 sandboxes need ceil(4/2) = 2 Pods,
    // but every agent is busy, so all three stay (ScaleDownWaiting).
    const byAgent = new Map<string, string[]>();
    for (const [name, pod] of placed) byAgent.set(pod, [...(byAgent.get(pod) ?? []), name]);
    expect(byAgent.size).toBe(3);
    const keep = [...byAgent.values()].map((list) => list[0]!);
    const drop = names.filter((n) => !keep.includes(n));
    await Promise.all(drop.map(remove));
    const waiting = await poolSettled(
      'kept its busy agents',
      (p) => condition(p, 'Ready')?.reason === 'ScaleDownWaiting' && p.status?.busyAgents === 3,
    );
    expect(waiting.status).toMatchObject({ currentPods: 3, busyAgents: 3, idleAgents: 0 });
    expect((await agentPods()).length).toBe(3);

    // One more goes: its agent is idle now, 2 sandboxes need ceil(3/2) = 2 Pods → that agent is removed.
    const last = keep.pop()!;
    const freedAgent = placed.get(last)!;
    await remove(last);
    const down = await poolSettled(
      'down to two agents',
      (p) => p.status?.currentPods === 2 && p.status.readyPods === 2 && condition(p, 'Ready')?.reason === 'Scaled',
    );
    expect(down.status).toMatchObject({ totalAgents: 2, busyAgents: 2, idleAgents: 0 });
    const pods = (await agentPods()).map((p) => p.metadata!.name!);
    expect(pods).not.toContain(freedAgent);
    // The survivors: still Running, on the agent they were placed on, which still runs them.
    const now = await reports();
    for (const name of keep) {
      const sb = await running(name);
      expect(sb.status?.assignedPod).toBe(placed.get(name));
      expect(pods).toContain(placed.get(name));
      expect(now.get(placed.get(name)!)?.find((s) => s.claimName === name)?.phase).toBe('running');
    }
    for (const name of keep) await remove(name);
  });

  it('honours poolMin (ScalingLimited AtPoolMin) and shrinks back to the formula', async () => {
    // No load: ceil((0 + 1) / 2) = 1 Pod.
    await poolSettled('at one agent', (p) => p.status?.currentPods === 1 && p.status.readyPods === 1);
    await stack.kube.mergePatch(poolRef(), {
      spec: { capacity: { poolMin: 2, poolMax: 3, bufferMin: 1, bufferMax: 1 } },
    });
    const p = await poolSettled(
      'at poolMin 2',
      (p) => p.status?.readyPods === 2 && condition(p, 'ScalingLimited')?.reason === 'AtPoolMin',
    );
    expect(p.status).toMatchObject({ currentPods: 2, idleAgents: 2, observedGeneration: p.metadata?.generation });
    await stack.kube.mergePatch(poolRef(), {
      spec: { capacity: { poolMin: 1, poolMax: 3, bufferMin: 1, bufferMax: 1 } },
    });
    await poolSettled('back at one agent', (p) => p.status?.currentPods === 1 && (p.status.readyPods ?? 0) === 1);
  });

  it('an agent left draining (as by a crash between drain and delete) is undrained when the pool still needs it', async () => {
    await poolSettled('at one agent', (p) => p.status?.currentPods === 1 && p.status.readyPods === 1);
    const [agent] = stack.fleet.kubeletAgents.filter((a) => a.process.running);
    const drain = (on: boolean) =>
      agentFetch(stack.agentKey)(`${agent!.url}/api/v1/agent/drain`, {
        method: 'POST',
        headers: { authorization: `Bearer ${stack.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ drain: on }),
      });
    expect((await drain(true).then((r) => r.json())) as { draining: boolean }).toMatchObject({ draining: true });
    // Without a token the route is refused like the others.
    expect(
      (await agentFetch(stack.agentKey)(`${agent!.url}/api/v1/agent/drain`, { method: 'POST', body: '{}' })).status,
    ).toBe(401);
    await eventually(
      'the pool undrained its only agent',
      async () => {
        const res = await agentFetch(stack.agentKey)(`${agent!.url}/api/v1/agent/status`, {
          headers: { authorization: `Bearer ${stack.token}` },
        });
        return ((await res.json()) as { draining?: boolean }).draining === false;
      },
      { timeoutMs: 60_000 },
    );
    expect((await agentPods()).map((p) => p.metadata!.name)).toEqual([agent!.podName]);
  });

  it('deleting a pool with live sandboxes: Terminating, no new sandboxes, busy agents kept until the last one goes', async () => {
    const a = uniq('live');
    const b = uniq('live');
    await createWhenRoom(a);
    await createWhenRoom(b);
    await running(a);
    await running(b);
    // Two sandboxes + bufferMin 1 → 2 Pods.
    await poolSettled('at two agents', (p) => p.status?.readyPods === 2);
    await stack.kube.delete(poolRef());
    const terminating = await poolSettled(
      'Terminating',
      (p) =>
        !!p.metadata?.deletionTimestamp &&
        condition(p, 'Ready')?.reason === 'Terminating' &&
        /2 sandboxes still use the pool/.test(condition(p, 'Ready')!.message),
    );
    expect(condition(terminating, 'Ready')?.status).toBe('False');
    // The fast path refuses new sandboxes in it.
    await eventually('a create refused as FAILED_PRECONDITION', async () => {
      const err = await grpcError(create(uniq('late')));
      if (err.code === grpc.status.FAILED_PRECONDITION) return err;
      expect(err.code).toBe(grpc.status.RESOURCE_EXHAUSTED); // until the registry sees the deletion
      return undefined;
    });
    const err = await grpcError(create(uniq('late')));
    expect(err.details).toContain('is being deleted');
    // Both still run; the pool is still there.
    await running(a);
    await running(b);
    expect(await readPool()).toBeDefined();
    await remove(a);
    await poolSettled('one sandbox left', (p) => /1 sandbox still uses the pool/.test(condition(p, 'Ready')!.message));
    await running(b);
    expect(await readPool()).toBeDefined();
    await remove(b);
    await eventually(
      'the pool gone with its agent Pods',
      async () => !(await readPool()) && (await agentPods()).length === 0,
      {
        timeoutMs: 120_000,
      },
    );
  });
});
