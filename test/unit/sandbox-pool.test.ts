/** The pure SandboxPool sizing rules: desired size, which Pods go, the status. */
import { describe, expect, it } from 'vitest';
import {
  agentPod,
  agentPodName,
  isPoolAgentPod,
  demandFloor,
  desiredPods,
  lastDemandAfter,
  planPool,
  pendingSandboxes,
  poolDemand,
  poolRefusedStatus,
  poolStatus,
  poolWaitMs,
  poolWorkflowId,
  recordChangesPoolDemand,
  sandboxesToTell,
  type PoolAgentFacts,
  type PoolFacts,
} from '../../src/domain/sandbox-pool.js';

const cap = (poolMin: number, poolMax: number, bufferMin = 0, bufferMax = 0) => ({
  poolMin,
  poolMax,
  bufferMin,
  bufferMax,
});

let serial = 0;
function agent(pod: string, allocated: number, more: Partial<PoolAgentFacts> = {}): PoolAgentFacts {
  return {
    pod,
    uid: `uid-${pod}`,
    createdAt: `2026-01-01T00:00:${String(10 + serial++).padStart(2, '0')}Z`,
    ready: true,
    deleting: false,
    answered: true,
    allocated,
    claims: Array.from({ length: allocated }, (_, i) => `${pod}-sb${i}`),
    draining: false,
    ...more,
  };
}

function facts(more: Partial<PoolFacts>): PoolFacts {
  return {
    capacity: cap(0, 10),
    maxSandboxesPerPod: 5,
    terminating: false,
    agents: [],
    sandboxes: [],
    ...more,
  };
}

describe('desiredPods', () => {
  it('is ceil((demand + bufferMin) / perPod) when growing', () => {
    expect(desiredPods(cap(0, 10), 5, 0, 0).desired).toBe(0);
    expect(desiredPods(cap(0, 10), 5, 1, 0).desired).toBe(1);
    expect(desiredPods(cap(0, 10), 5, 5, 0).desired).toBe(1);
    expect(desiredPods(cap(0, 10), 5, 6, 1).desired).toBe(2);
    expect(desiredPods(cap(0, 10, 3, 3), 5, 3, 1).desired).toBe(2);
  });

  it('clamps to [poolMin, poolMax] and says which limit applied', () => {
    expect(desiredPods(cap(2, 10), 5, 0, 0)).toEqual({ desired: 2, need: 0, limited: 'AtPoolMin' });
    expect(desiredPods(cap(0, 3), 5, 40, 1)).toEqual({ desired: 3, need: 8, limited: 'AtPoolMax' });
    expect(desiredPods(cap(1, 3), 5, 7, 1)).toEqual({ desired: 2, need: 2 });
  });

  it('shrinks only when more than bufferMax slots are free, never below what the demand needs', () => {
    // 3 Pods × 5 = 15 slots, 4 used: 11 free > bufferMax 10 → the most Pods leaving ≤ 10 free: 2.
    expect(desiredPods(cap(0, 10, 2, 10), 5, 4, 3).desired).toBe(2);
    // 9 free ≤ bufferMax 10: no change (hysteresis).
    expect(desiredPods(cap(0, 10, 2, 10), 5, 6, 3).desired).toBe(3);
    // bufferMax 0: down to exactly what the demand needs.
    expect(desiredPods(cap(0, 10, 0, 0), 5, 6, 4).desired).toBe(2);
    // bufferMax below a Pod's worth: still never below need.
    expect(desiredPods(cap(0, 10, 3, 3), 5, 5, 4).desired).toBe(2);
  });
});

describe('scale from and to zero', () => {
  const zero = { ...cap(0, 3), scaleToZeroAfterSeconds: 60 };
  const t0 = Date.parse('2026-01-01T00:00:00Z');

  it('keeps one agent until scaleToZeroAfterSeconds after the last demand, then none', () => {
    expect(demandFloor(zero, undefined, t0)).toEqual({ floor: 0 });
    expect(demandFloor(zero, t0, t0)).toEqual({ floor: 1, until: t0 + 60_000 });
    expect(demandFloor(zero, t0, t0 + 59_999)).toEqual({ floor: 1, until: t0 + 60_000 });
    expect(demandFloor(zero, t0, t0 + 60_000)).toEqual({ floor: 0 });
    // Default: 300 s.
    expect(demandFloor(cap(0, 3), t0, t0 + 299_000).floor).toBe(1);
    expect(demandFloor(cap(0, 3), t0, t0 + 300_000).floor).toBe(0);
  });

  it('the floor counts as need: one agent from zero, within poolMax, and never more than the load needs', () => {
    expect(desiredPods(zero, 5, 0, 0, 1)).toEqual({ desired: 1, need: 1 });
    expect(desiredPods(zero, 5, 0, 0, 0)).toEqual({ desired: 0, need: 0 });
    // Kept while idle rather than shrunk to zero (bufferMax 0 would shrink it otherwise).
    expect(desiredPods(zero, 5, 0, 1, 1)).toEqual({ desired: 1, need: 1 });
    expect(desiredPods(zero, 5, 0, 1, 0)).toEqual({ desired: 0, need: 0 });
    // A load that needs more decides alone.
    expect(desiredPods(zero, 5, 7, 0, 1)).toEqual({ desired: 2, need: 2 });
    // poolMax 0: none, and the status says the limit.
    expect(desiredPods(cap(0, 0), 5, 0, 0, 1)).toEqual({ desired: 0, need: 1, limited: 'AtPoolMax' });
  });

  it('planPool: a demand hint starts one agent in an empty pool; idle, it stays until the delay ends, then is drained', () => {
    const hinted = facts({ capacity: zero, lastDemandAtMs: t0, nowMs: t0 + 1_000 });
    expect(planPool(hinted)).toMatchObject({ desired: 1, create: 1, keepUntilMs: t0 + 60_000 });
    const idle = facts({ capacity: zero, agents: [agent('a', 0)], lastDemandAtMs: t0, nowMs: t0 + 30_000 });
    expect(planPool(idle)).toMatchObject({ desired: 1, create: 0, drain: [], keepUntilMs: t0 + 60_000 });
    const later = { ...idle, nowMs: t0 + 60_000 };
    expect(planPool(later)).toMatchObject({ desired: 0, drain: ['a'] });
    expect(planPool(later).keepUntilMs).toBeUndefined();
    // Without the workflow's clock (runs from before scale from zero): as before, straight to zero.
    expect(planPool(facts({ capacity: zero, agents: [agent('a', 0)] }))).toMatchObject({ desired: 0, drain: ['a'] });
  });

  it('planPool: the floor never applies to a pool being deleted, nor beyond poolMax; it is said only where it decides', () => {
    const base = { lastDemandAtMs: t0, nowMs: t0 + 1_000 };
    expect(planPool(facts({ ...base, capacity: zero, terminating: true }))).toMatchObject({ desired: 0, create: 0 });
    expect(planPool(facts({ ...base, capacity: cap(0, 0) }))).toMatchObject({ desired: 0, create: 0 });
    expect(planPool(facts({ ...base, capacity: cap(0, 0) })).keepUntilMs).toBeUndefined();
    // With poolMin 1 the agent stays anyway: nothing is "kept for demand".
    expect(planPool(facts({ ...base, capacity: cap(1, 3), agents: [agent('a', 0)] })).keepUntilMs).toBeUndefined();
    // A busy pool's load decides; the delay counts from when it is idle.
    const busy = facts({ ...base, capacity: zero, agents: [agent('a', 1)] });
    expect(planPool(busy)).toMatchObject({ desired: 1 });
    expect(planPool(busy).keepUntilMs).toBeUndefined();
  });

  it('the delay counts from the last load, from when it went, and from when the agent kept for demand is Ready', () => {
    const at = (nowMs: number, more: Partial<PoolFacts> = {}) =>
      facts({ capacity: zero, lastDemandAtMs: t0, nowMs, ...more });
    // Load now, or load at the last pass that is gone now: now.
    expect(lastDemandAfter(at(t0 + 70_000, { agents: [agent('a', 1)] }), false)).toBe(t0 + 70_000);
    expect(lastDemandAfter(at(t0 + 70_000, { agents: [agent('a', 0)] }), true)).toBe(t0 + 70_000);
    // Idle with a Ready agent: unchanged, so the delay runs out.
    expect(lastDemandAfter(at(t0 + 30_000, { agents: [agent('a', 0)] }), false)).toBe(t0);
    // The agent started for the demand is not Ready yet (slower than the delay): kept going.
    const starting = agent('a', 0, { ready: false, answered: false });
    expect(lastDemandAfter(at(t0 + 30_000, { agents: [starting] }), false)).toBe(t0 + 30_000);
    expect(lastDemandAfter(at(t0 + 30_000), false)).toBe(t0 + 30_000); // its Pod not even made yet
    // …but not once the demand's delay has passed with nothing starting: no demand is made up.
    expect(lastDemandAfter(at(t0 + 60_000, { agents: [starting] }), false)).toBe(t0);
    expect(lastDemandAfter(facts({ capacity: zero, nowMs: t0 }), false)).toBeUndefined();
  });

  it('poolStatus says an agent is kept for recent demand, and until when', () => {
    const f = facts({ capacity: zero, agents: [agent('a', 0)], lastDemandAtMs: t0, nowMs: t0 + 1_000 });
    const s = poolStatus(f, planPool(f), undefined, new Date(t0 + 1_000));
    expect(s.conditions?.[0]).toMatchObject({
      type: 'Ready',
      status: 'True',
      reason: 'Scaled',
      message:
        '1 agent Pods ready, 1 wanted (0 active and 0 pending sandboxes, bufferMin 0, 5 per Pod; one kept for recent demand until 2026-01-01T00:01:00.000Z, then scaled to zero)',
    });
  });
});

describe('poolDemand', () => {
  it('counts what agents report as active and unheld records as pending', () => {
    const f = facts({
      agents: [agent('a', 2), agent('b', 0, { answered: false, claims: [] })],
      sandboxes: [
        { name: 'a-sb0', phase: 'Running', assignedPod: 'a', deleting: false },
        { name: 'p1', phase: 'Pending', deleting: false },
        { name: 'p2', deleting: false },
        { name: 'lost-agent', phase: 'Running', assignedPod: 'b', deleting: false },
        { name: 'done', phase: 'Expired', deleting: false },
        { name: 'gone', phase: 'Lost', deleting: false },
        { name: 'bye', phase: 'Pending', deleting: true },
      ],
    });
    expect(poolDemand(f)).toEqual({ active: 2, pending: 3, live: 6 });
    expect(pendingSandboxes(f)).toEqual(['p1', 'p2', 'lost-agent']);
  });
});

describe('planPool', () => {
  it('creates Pods up to the desired size', () => {
    const f = facts({
      agents: [agent('a', 5)],
      sandboxes: [{ name: 'p', phase: 'Pending', deleting: false }],
    });
    expect(planPool(f)).toMatchObject({ desired: 2, create: 1, drain: [], remove: [] });
  });

  it('counts starting Pods, so a pass during scale-up creates no more', () => {
    const f = facts({ agents: [agent('a', 5), agent('b', 0, { ready: false, answered: false })] });
    const plan = planPool({ ...f, sandboxes: [{ name: 'p', phase: 'Pending', deleting: false }] });
    expect(plan).toMatchObject({ desired: 2, create: 0, drain: [], remove: [] });
  });

  it('removes idle agents only, not-ready first, then the newest; busy ones are kept', () => {
    const f = facts({
      capacity: cap(1, 10),
      agents: [
        agent('old-idle', 0),
        agent('busy', 1),
        agent('new-idle', 0),
        agent('starting', 0, { ready: false, answered: false }),
      ],
    });
    // demand 1 → need 1; four Pods: three to go.
    const plan = planPool(f);
    expect(plan.desired).toBe(1);
    expect(plan.remove).toEqual(['starting']);
    expect(plan.drain).toEqual(['new-idle', 'old-idle']);
    expect(plan.keptBusy).toBe(0);
    // Only two idle while three should go: the busy one stays.
    const two = planPool(facts({ agents: [agent('x', 1), agent('y', 1), agent('z', 0)] }));
    expect(two).toMatchObject({ desired: 1, drain: ['z'], keptBusy: 1 });
  });

  it('never removes an agent a record is assigned to', () => {
    const f = facts({
      agents: [agent('a', 0), agent('c', 0, { answered: false, ready: false })],
      sandboxes: [{ name: 's', phase: 'Running', assignedPod: 'c', deleting: false }],
    });
    // The record on c counts as pending (its agent does not report it): need 1.
    const plan = planPool(f);
    expect(plan.desired).toBe(1);
    expect(plan.drain).toEqual(['a']);
    expect(plan.remove).toEqual([]);
    expect(plan.keptBusy).toBe(0);
  });

  it('never removes a Ready Pod whose agent is silent (only the agent knows what it holds)', () => {
    const f = facts({
      agents: [agent('a', 0, { answered: false, claims: [] }), agent('b', 0, { answered: false, ready: false })],
    });
    expect(planPool(f)).toMatchObject({ desired: 0, remove: ['b'], drain: [], keptBusy: 1 });
  });

  it('undrains a draining agent that is wanted again', () => {
    const f = facts({
      agents: [agent('a', 0, { draining: true })],
      sandboxes: [{ name: 'p', phase: 'Pending', deleting: false }],
    });
    expect(planPool(f)).toMatchObject({ desired: 1, drain: [], undrain: ['a'] });
  });

  it('on a terminating pool: no creates, idle agents go, busy ones stay, released when nothing is left', () => {
    const f = facts({ capacity: cap(3, 10), terminating: true, agents: [agent('a', 1), agent('b', 0)] });
    expect(planPool(f)).toMatchObject({ desired: 0, create: 0, drain: ['b'], keptBusy: 1, release: false });
    const empty = facts({ capacity: cap(3, 10), terminating: true, agents: [agent('a', 0)] });
    expect(planPool(empty)).toMatchObject({ drain: ['a'], release: false });
    expect(planPool({ ...empty, agents: [] }).release).toBe(true);
    // A record still needing a slot does.
    expect(
      planPool({ ...empty, agents: [], sandboxes: [{ name: 's', phase: 'Pending', deleting: false }] }).release,
    ).toBe(false);
  });
});

describe('poolStatus', () => {
  const now = new Date('2026-01-01T00:01:00Z');

  it('fills every field', () => {
    const f = facts({
      generation: 3,
      capacity: cap(1, 2),
      agents: [agent('a', 5), agent('b', 0), agent('c', 0, { ready: false, answered: false })],
      sandboxes: Array.from({ length: 9 }, (_, i) => ({ name: `p${i}`, phase: 'Pending' as const, deleting: false })),
    });
    const plan = planPool(f);
    const s = poolStatus(f, plan, undefined, now);
    expect(s).toMatchObject({
      observedGeneration: 3,
      currentPods: 3,
      readyPods: 2,
      totalAgents: 2,
      idleAgents: 1,
      busyAgents: 1,
    });
    expect(s.conditions?.find((c) => c.type === 'ScalingLimited')).toMatchObject({
      status: 'True',
      reason: 'AtPoolMax',
      message: 'the demand needs 3 agent Pods; poolMax is 2',
    });
    expect(s.conditions?.find((c) => c.type === 'Ready')?.reason).toBe('ScalingDown');
    expect(plan.remove).toEqual(['c']);
  });

  it('says ScalingUp, Scaled and Terminating with how many sandboxes remain', () => {
    const up = facts({ agents: [agent('a', 5)], sandboxes: [{ name: 'p', phase: 'Pending', deleting: false }] });
    expect(poolStatus(up, planPool(up), undefined, now).conditions?.[0]).toMatchObject({
      type: 'Ready',
      status: 'False',
      reason: 'ScalingUp',
    });
    const steady = facts({ agents: [agent('a', 3)] });
    expect(poolStatus(steady, planPool(steady), undefined, now).conditions?.[0]).toMatchObject({
      status: 'True',
      reason: 'Scaled',
    });
    const term = facts({ terminating: true, agents: [agent('a', 2)] });
    expect(poolStatus(term, planPool(term), undefined, now).conditions?.[0]).toMatchObject({
      status: 'False',
      reason: 'Terminating',
      message: expect.stringContaining('2 sandboxes still use the pool'),
    });
  });

  it('says RuntimeUnsupported when an agent cannot run the pool’s runtimeType, with its reason', () => {
    const why = 'runtimeType gvisor needs runsc on the node (--runsc-binary is not set)';
    const f = facts({ agents: [agent('a', 0), agent('b', 0, { runtimeUnsupported: why })] });
    expect(poolStatus(f, planPool(f), undefined, now).conditions?.[0]).toMatchObject({
      type: 'Ready',
      status: 'False',
      reason: 'RuntimeUnsupported',
      message: why,
    });
  });
  it('says Forbidden when the apiserver refused the pool’s writes for good, with the refusal and the binding it lacks; the counts stay', () => {
    const f = facts({ generation: 2, agents: [agent('a', 1)] });
    const s = poolRefusedStatus(
      poolStatus(f, planPool(f), undefined, now),
      'team-a',
      'create agent Pod team-a/p-1: pods "p-1" is forbidden',
      now,
    );
    expect(s).toMatchObject({ observedGeneration: 2, currentPods: 1, totalAgents: 1, busyAgents: 1 });
    expect(s.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'Forbidden',
      observedGeneration: 2,
      message: expect.stringMatching(
        /^the fast path may not write this pool's agent Pods or their Secret in namespace team-a: create agent Pod team-a\/p-1: pods "p-1" is forbidden\. .*ClusterRole durable-operators-fastpath-agent-pods .*fastpath\.agentPodNamespaces/,
      ),
    });
    expect(s.conditions?.find((c) => c.type === 'ScalingLimited')).toBeDefined();
  });
});

describe('agent Pods carry the pool’s runtime settings', () => {
  const pod = (runtime?: Parameters<typeof agentPod>[0]['runtime'], env: { name: string; value: string }[] = []) =>
    agentPod({
      namespace: 'ns',
      pool: 'p',
      poolUid: 'uid',
      name: 'p-agent-0',
      perPod: 4,
      template: { spec: { containers: [{ name: 'agent', image: 'a', env }] } },
      ...(runtime ? { runtime } : {}),
    }) as { spec: { containers: { env: { name: string; value?: string; valueFrom?: unknown }[] }[] } };
  const envOf = (p: ReturnType<typeof pod>) =>
    Object.fromEntries(p.spec.containers[0]!.env.map((e) => [e.name, e.value ?? e.valueFrom]));

  it('RUNTIME_TYPE as the original (container by default), the defaults and warm images as extensions', () => {
    expect(envOf(pod())).toMatchObject({ RUNTIME_TYPE: 'container', AGENT_CAPACITY: '4' });
    expect(envOf(pod())).not.toHaveProperty('SANDBOX_WARM_IMAGES');
    expect(
      envOf(
        pod({
          runtimeType: 'gvisor',
          sandboxResources: { cpu: '500m', memory: '256Mi', pids: 100, ephemeralStorage: '2Gi' },
          warmImages: [
            { image: 'reg/a:1', count: 2 },
            { image: 'reg/b:1', count: 1 },
          ],
        }),
      ),
    ).toMatchObject({
      RUNTIME_TYPE: 'gvisor',
      SANDBOX_DEFAULT_CPU: '500m',
      SANDBOX_DEFAULT_MEMORY: '256Mi',
      SANDBOX_DEFAULT_PIDS: '100',
      SANDBOX_DEFAULT_EPHEMERAL_STORAGE: '2Gi',
      SANDBOX_WARM_IMAGES: 'reg/a:1=2,reg/b:1=1',
      POD_UID: { fieldRef: { fieldPath: 'metadata.uid' } },
      POD_IP: { fieldRef: { fieldPath: 'status.podIP' } },
    });
  });

  it('mounts the pool’s image pull Secrets read-only and tells the agent where', () => {
    const p = pod({ imagePullSecrets: [{ name: 'regcred' }] }) as ReturnType<typeof pod> & {
      spec: { volumes: unknown[]; containers: { volumeMounts: unknown[] }[] };
    };
    expect(envOf(p)).toMatchObject({ SANDBOX_PULL_SECRETS_DIR: '/etc/sandbox-agent/pull-secrets' });
    expect(p.spec.volumes).toContainEqual({
      name: 'pull-secret-0',
      secret: { secretName: 'regcred', defaultMode: 0o400 },
    });
    expect(p.spec.containers[0]!.volumeMounts).toContainEqual({
      name: 'pull-secret-0',
      mountPath: '/etc/sandbox-agent/pull-secrets/regcred',
      readOnly: true,
    });
  });

  it('the pool decides RUNTIME_TYPE over the template (a template cannot run a gvisor pool under runc)', () => {
    const p = pod({ runtimeType: 'gvisor' }, [{ name: 'RUNTIME_TYPE', value: 'container' }]);
    expect(p.spec.containers[0]!.env.filter((e) => e.name === 'RUNTIME_TYPE')).toEqual([
      { name: 'RUNTIME_TYPE', value: 'gvisor' },
    ]);
  });
});

describe('which Pods are the pool’s agents', () => {
  const owner = { apiVersion: 'sandbox.fast.io/v1alpha1', kind: 'SandboxPool', name: 'p', uid: 'pool-uid' };
  it('the Pods the pool controls, and no other', () => {
    expect(isPoolAgentPod([{ ...owner, controller: true }], 'pool-uid')).toBe(true);
    // The pool's own Pods (agentPod) pass.
    const pod = agentPod({ namespace: 'n', pool: 'p', poolUid: 'pool-uid', name: 'a', perPod: 1, template: {} });
    expect(isPoolAgentPod((pod.metadata as { ownerReferences: never }).ownerReferences, 'pool-uid')).toBe(true);
    // Labels only; an owner that is not the controller; a recreated pool (another UID); another kind.
    expect(isPoolAgentPod(undefined, 'pool-uid')).toBe(false);
    expect(isPoolAgentPod([owner], 'pool-uid')).toBe(false);
    expect(isPoolAgentPod([{ ...owner, controller: true }], 'new-uid')).toBe(false);
    expect(
      isPoolAgentPod([{ ...owner, kind: 'ReplicaSet', apiVersion: 'apps/v1', controller: true }], 'pool-uid'),
    ).toBe(false);
  });
});

describe('names', () => {
  it('derives the workflow ID and the agent Pod names', () => {
    expect(poolWorkflowId('ns', 'p')).toBe('sandbox-pool/ns/p');
    expect(agentPodName('p', 'ab12c', 3)).toBe('p-agent-ab12c-3');
    expect(agentPodName('x'.repeat(60), 't', 0)).toBe(`${'x'.repeat(40)}-agent-t-0`);
  });
});

describe('the pool workflow’s pass', () => {
  it('tells the waiting sandboxes only when more agents answer than at the last pass (none on the first)', () => {
    const waiting = facts({
      agents: [agent('a', 0), agent('b', 0, { answered: false })],
      sandboxes: [
        { name: 'sb', deleting: false },
        { name: 'gone', deleting: true },
      ],
    });
    expect(sandboxesToTell(waiting, undefined)).toEqual({ tell: [], answering: 1 });
    expect(sandboxesToTell(waiting, 1)).toEqual({ tell: [], answering: 1 });
    expect(sandboxesToTell(waiting, 0)).toEqual({ tell: ['sb'], answering: 1 });
  });

  it('waits `every` while settled, 2 s while the size changes, and no later than the kept agent’s end', () => {
    const scaled = { status: 'True', reason: 'Scaled' } as const;
    expect(poolWaitMs(scaled, undefined, 0, 10_000)).toBe(9_000);
    expect(poolWaitMs({ status: 'False', reason: 'ScalingUp' }, undefined, 0, 10_000)).toBe(2_000);
    expect(poolWaitMs({ status: 'True', reason: 'ScalingDown' }, undefined, 0, 10_000)).toBe(2_000);
    expect(poolWaitMs(scaled, 5_000, 1_000, 10_000)).toBe(4_100);
    expect(poolWaitMs(scaled, 5_000, 9_000, 10_000)).toBe(1);
  });

  it('a Sandbox record hints its pool only as demand no agent reports: unplaced, appearing or being deleted', () => {
    expect(recordChangesPoolDemand({ appeared: true, deletionStarted: false, placed: false })).toBe(true);
    expect(recordChangesPoolDemand({ appeared: false, deletionStarted: true, placed: false })).toBe(true);
    // A placed record's agent reports the sandbox appearing and going (the fast path's registry).
    expect(recordChangesPoolDemand({ appeared: true, deletionStarted: false, placed: true })).toBe(false);
    expect(recordChangesPoolDemand({ appeared: false, deletionStarted: true, placed: true })).toBe(false);
    expect(recordChangesPoolDemand({ appeared: false, deletionStarted: false, placed: false })).toBe(false);
  });
});
