/**
 * A sandbox whose agent is lost: spec.failurePolicy and spec.recoveryTimeoutSeconds. Real
 * Temporal, real apiserver, agents as real processes whose Pods are written as a kubelet would
 * (there is none): an agent is lost by killing its process and deleting its Pod, and has a short
 * blip by being paused (SIGSTOP) until the fast path finds it stale, then resumed. Two agents, so
 * AutoRecreate has somewhere to go; each test that loses one starts a replacement.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/api/sandbox.js';
import { sandboxWorkflowId } from '../../src/domain/sandbox.js';
import { eventually, replayAndRecord, uniq } from '../support/env.js';
import { SandboxStack, sandboxImage } from '../support/fastpath.js';
import { agentFetch } from '../support/agent-tls.js';

const FOREVER = ['sleep', '3600'];

let stack: SandboxStack;

beforeAll(async () => {
  // The janitor is the backstop for a hint the registry cannot give (an agent lost before it
  // ever reported the sandbox); every 2 s here, 10 s by default.
  stack = await new SandboxStack({ agents: 2, capacity: 4, janitorInterval: '2s' }).start();
}, 240_000);

afterAll(async () => {
  await stack?.stop();
});

const sandboxRef = (name: string) => stack.sandboxRef(name);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ready = (sb: Sandbox | undefined) => sb?.status?.conditions?.find((c) => c.type === 'Ready');

/** A Sandbox written with kubectl (its workflow places it), Running on an agent. */
async function runningSandbox(name: string, spec: Partial<Sandbox['spec']>): Promise<Sandbox> {
  await stack.kube.create({
    ...sandboxRef(name),
    metadata: { name, namespace: stack.namespace },
    spec: { image: sandboxImage(), poolRef: stack.pool, command: FOREVER, ...spec },
  });
  return until(name, 'Running', (sb) => sb.status?.phase === 'Running' && ready(sb)?.status === 'True');
}

async function until(name: string, what: string, ok: (sb: Sandbox) => boolean, timeoutMs = 120_000) {
  return eventually(
    `Sandbox ${name} ${what}`,
    async () => {
      const sb = await stack.sandbox(name);
      return sb && ok(sb) ? sb : undefined;
    },
    { timeoutMs },
  );
}

/** Which agent holds which sandbox of this claim now (fresh status calls to every agent). */
async function holders(claimName: string): Promise<{ pod: string; sandboxId: string; createdAt: number }[]> {
  const out: { pod: string; sandboxId: string; createdAt: number }[] = [];
  for (const a of stack.fleet.agents) {
    const res = await agentFetch(stack.agentKey)(`${a.url}/api/v1/agent/status`, {
      headers: { authorization: `Bearer ${stack.token}` },
      signal: AbortSignal.timeout(3_000),
    }).catch(() => undefined);
    if (!res?.ok) continue;
    const body = (await res.json()) as {
      sandboxStatuses: { sandboxId: string; claimName: string; phase: string; createdAt: number }[];
    };
    for (const s of body.sandboxStatuses)
      if (s.claimName === claimName && s.phase !== 'terminating')
        out.push({ pod: a.podName, sandboxId: s.sandboxId, createdAt: s.createdAt });
  }
  return out;
}

/** The agent is lost for good (its node with it): its process and its sandboxes killed, then its Pod deleted. */
async function loseAgent(pod: string) {
  await stack.fleet.crash(pod);
  await stack.fleet.reapContainers(pod);
  await stack.fleet.remove(pod);
}

async function deleteAndWait(name: string) {
  await stack.kube.delete(sandboxRef(name));
  await eventually(`Sandbox ${name} gone`, async () => !(await stack.sandbox(name)), { timeoutMs: 120_000 });
}

describe('agent lost', () => {
  it('AutoRecreate: after the recovery timeout the sandbox is placed again and Running on the other agent', async () => {
    const name = uniq('auto');
    const before = await runningSandbox(name, { failurePolicy: 'AutoRecreate', recoveryTimeoutSeconds: 3 });
    const lostPod = before.status!.assignedPod!;
    const lostId = before.status!.sandboxID!;
    const otherPod = stack.fleet.agents.find((a) => a.podName !== lostPod)!.podName;

    await loseAgent(lostPod);
    const after = await until(
      name,
      `Running on an agent other than ${lostPod}`,
      (sb) => sb.status?.phase === 'Running' && sb.status.assignedPod !== lostPod,
    );
    expect(after.status?.assignedPod).toBe(otherPod);
    expect(after.status?.sandboxID).toBeTruthy();
    expect(after.status?.sandboxID).not.toBe(lostId);
    expect(ready(after)).toMatchObject({ status: 'True', reason: 'Running' });
    // The agent really runs it, under the ID the record names.
    expect(await holders(name)).toEqual([
      expect.objectContaining({ pod: otherPod, sandboxId: after.status!.sandboxID }),
    ]);
    // Recreated once: it stays where it is.
    await sleep(5_000);
    expect((await stack.sandbox(name))?.status).toMatchObject({
      phase: 'Running',
      assignedPod: otherPod,
      sandboxID: after.status!.sandboxID,
    });

    await deleteAndWait(name);
    expect(await holders(name)).toEqual([]);
    await replayAndRecord(sandboxWorkflowId(stack.namespace, name), 'sandbox-agent-lost-recreated-deleted');
    await stack.fleet.addAgent();
  }, 240_000);

  it('an agent restarted in place without its sandboxes: AutoRecreate places it again, Manual makes it Lost — never Failed', async () => {
    // A long recovery timeout: what decides here is the agent's restart, not the timeout.
    const auto = uniq('restart-auto');
    const manual = uniq('restart-manual');
    const onPod = { failurePolicy: 'AutoRecreate' as const, recoveryTimeoutSeconds: 600 };
    const a = await runningSandbox(auto, onPod);
    const m = await runningSandbox(manual, { ...onPod, failurePolicy: 'Manual' });
    // Their agents' containers restart (an OOM kill, a liveness failure), their sandboxes gone with them.
    const victims = [a, m];
    for (const pod of new Set(victims.map((sb) => sb.status!.assignedPod!))) {
      await stack.fleet.crash(pod);
      await stack.fleet.reapContainers(pod);
      await stack.fleet.restart(pod);
    }
    for (const sb of victims) {
      const name = sb.metadata!.name!;
      const pod = sb.status!.assignedPod!;
      if (name === auto) {
        const after = await until(
          name,
          'placed again under a new sandbox ID',
          (x) => x.status?.phase === 'Running' && x.status.sandboxID !== sb.status!.sandboxID,
        );
        expect(ready(after)).toMatchObject({ status: 'True', reason: 'Running' });
      } else {
        const after = await until(name, 'Lost', (x) => x.status?.phase === 'Lost');
        expect(ready(after)?.message).toContain(
          `agent ${pod} restarted and no longer has sandbox ${sb.status!.sandboxID}`,
        );
      }
    }
    for (const name of [auto, manual]) await deleteAndWait(name);
  }, 240_000);

  it('Manual: Lost after the recovery timeout, and it stays Lost (no rescheduling) until a reset places it again', async () => {
    const name = uniq('manual');
    const before = await runningSandbox(name, { failurePolicy: 'Manual', recoveryTimeoutSeconds: 3 });
    const lostPod = before.status!.assignedPod!;
    const lostId = before.status!.sandboxID!;

    await loseAgent(lostPod);
    const lost = await until(name, 'Lost', (sb) => sb.status?.phase === 'Lost');
    // What the user reads: the last assignment, and why.
    expect(lost.status).toMatchObject({ phase: 'Lost', assignedPod: lostPod, sandboxID: lostId });
    expect(lost.status).not.toHaveProperty('endpoints');
    expect(ready(lost)).toMatchObject({ status: 'False', reason: 'AgentLost' });
    expect(ready(lost)?.message).toContain(lostPod);
    expect(ready(lost)?.message).toContain('failurePolicy Manual');

    // Well after the timeout (the original rescheduled Manual sandboxes every 5 s): still Lost, on no agent.
    await sleep(15_000);
    expect((await stack.sandbox(name))?.status).toMatchObject({
      phase: 'Lost',
      assignedPod: lostPod,
      sandboxID: lostId,
    });
    expect(await holders(name)).toEqual([]);

    // The documented way back: raise spec.resetRevision.
    await stack.kube.mergePatch(sandboxRef(name), { spec: { resetRevision: new Date().toISOString() } });
    const back = await until(name, 'Running again after the reset', (sb) => sb.status?.phase === 'Running');
    expect(back.status?.assignedPod).not.toBe(lostPod);
    expect(await holders(name)).toEqual([expect.objectContaining({ sandboxId: back.status!.sandboxID })]);

    await deleteAndWait(name);
    await replayAndRecord(sandboxWorkflowId(stack.namespace, name), 'sandbox-agent-lost-manual-deleted');
    await stack.fleet.addAgent();
  }, 240_000);

  it('Manual, deleted while Lost: the record goes (nothing to remove on a vanished agent)', async () => {
    const name = uniq('gone');
    const before = await runningSandbox(name, { recoveryTimeoutSeconds: 2 });
    await loseAgent(before.status!.assignedPod!);
    await until(name, 'Lost', (sb) => sb.status?.phase === 'Lost');
    await deleteAndWait(name);
    await stack.fleet.addAgent();
  }, 240_000);

  it('an agent back within recoveryTimeoutSeconds keeps its sandboxes: same agent, same sandbox, no re-create', async () => {
    const names = [uniq('blip'), uniq('blip')];
    const policies = ['Manual', 'AutoRecreate'] as const;
    const before = await Promise.all(
      names.map((n, i) => runningSandbox(n, { failurePolicy: policies[i], recoveryTimeoutSeconds: 45 })),
    );
    const held = await Promise.all(names.map((n) => holders(n)));
    const pods = new Set(before.map((sb) => sb.status!.assignedPod!));
    const paused = stack.fleet.agents.filter((a) => pods.has(a.podName));

    // Their agents stop answering (the sandboxes keep running) until the fast path finds them stale.
    for (const a of paused) process.kill(a.process.pid, 'SIGSTOP');
    let noticedAt = Date.now();
    try {
      for (const n of names) {
        const noticed = await until(n, 'AgentUnreachable', (sb) => ready(sb)?.reason === 'AgentUnreachable');
        noticedAt = Math.max(noticedAt, Date.parse(ready(noticed)!.lastTransitionTime));
      }
      // Nothing moved while they were away.
      for (const [i, n] of names.entries())
        expect((await stack.sandbox(n))?.status?.assignedPod).toBe(before[i]!.status!.assignedPod);
    } finally {
      for (const a of paused) process.kill(a.process.pid, 'SIGCONT');
    }

    for (const [i, n] of names.entries()) {
      const sb = await until(n, 'Running and Ready again', (s) => ready(s)?.status === 'True');
      expect(sb.status).toMatchObject({
        phase: 'Running',
        assignedPod: before[i]!.status!.assignedPod,
        sandboxID: before[i]!.status!.sandboxID,
      });
    }
    // Past the end of the recovery timeout that was running: nothing applies the policy late.
    await sleep(Math.max(0, noticedAt + 45_000 + 5_000 - Date.now()));
    for (const [i, n] of names.entries()) {
      expect((await stack.sandbox(n))?.status).toMatchObject({
        phase: 'Running',
        assignedPod: before[i]!.status!.assignedPod,
        sandboxID: before[i]!.status!.sandboxID,
      });
      // The very sandbox it had: same ID, same creation time, on that agent only.
      expect(await holders(n)).toEqual(held[i]);
    }
    for (const n of names) await deleteAndWait(n);
  }, 300_000);
});
