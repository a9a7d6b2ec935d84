/**
 * The create's combined local activities (src/activities/sandbox/create.ts): the order of their
 * parts, what a refusal gives back, and how a Strong retry after a crash finds the record it
 * wrote and the agent that already runs the sandbox. The parts themselves (placement table,
 * agent calls, Sandbox writes) run against real agents and a real apiserver in the integration
 * tests (sandbox-fastpath, sandbox-crash); here they are recorded in-memory stand-ins.
 */
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { createSandboxCreateActivities } from '../../src/activities/sandbox/create.js';
import type { Placement } from '../../src/domain/allocation.js';
import { GONE, failedWith, ok } from '../../src/domain/results.js';
import { refusal } from '../../src/domain/sandbox.js';

const agentA: Placement = { agentId: 'ns/pool/a', pod: 'a', node: 'n1', url: 'http://a', ip: '10.0.0.1' };
const agentB: Placement = { agentId: 'ns/pool/b', pod: 'b', node: 'n2', url: 'http://b', ip: '10.0.0.2' };

function harness(o: {
  placement?: Placement;
  agentRefuses?: string;
  /** The agent call throws (unreachable, timeout, 5xx; or `unauthorized`: our token refused). */
  agentThrows?: 'unreachable' | 'unauthorized';
  /** The record as createSandboxRecord finds or writes it: the agent it names. */
  recordedOn?: Placement;
  recordRefused?: boolean;
  holder?: Placement;
  /** The record is gone when its annotation is moved. */
  recordGone?: boolean;
}) {
  const calls: string[] = [];
  const steps = createSandboxCreateActivities(
    {
      allocateSandbox: async (req) => {
        calls.push(`allocate ${req.sandboxId}`);
        return ok({ placement: o.placement ?? agentB });
      },
      createOnAgent: async (req) => {
        calls.push(`agent create ${req.spec.sandboxId} on ${req.placement.pod}`);
        if (o.agentThrows === 'unauthorized')
          throw ApplicationFailure.nonRetryable('agent refused the token (401)', 'AgentUnauthorized');
        if (o.agentThrows)
          throw ApplicationFailure.retryable('agent http://b unreachable: ECONNREFUSED', 'AgentUnavailable');
        if (o.agentRefuses)
          return failedWith({ ...refusal('ResourceExhausted', o.agentRefuses), retryElsewhere: true });
        return ok({ createdAt: 1 });
      },
      releaseSandbox: async (req) => void calls.push(`release ${req.sandboxId} on ${req.agentId}`),
    },
    {
      createSandboxRecord: async (input) => {
        calls.push(`record on ${input.allocation.assignedPod}`);
        if (o.recordRefused) return failedWith(refusal('InvalidArgument', 'admission says no'));
        const on = o.recordedOn ?? o.placement ?? agentB;
        return ok({ uid: 'uid-1', allocation: { ...input.allocation, assignedPod: on.pod, assignedNode: on.node } });
      },
      setAllocationAnnotation: async (req) => {
        calls.push(`annotation → ${req.allocation.assignedPod}`);
        return o.recordGone ? GONE : ok();
      },
    },
    (id) => (id === 'uid-1' ? o.holder : undefined),
  );
  return { calls, steps };
}

const place = { namespace: 'ns', pool: 'pool', image: 'img', ports: [], exclude: [], runStartMs: 0 };
const spec = { sandboxId: '', claimUid: '', claimName: 'sb', image: 'img', exposedPorts: [] } as never;
const strong = {
  ...place,
  sandboxId: 'pending:wf/run',
  spec,
  record: {
    namespace: 'ns',
    name: 'sb',
    spec: { image: 'img', poolRef: 'pool', exposedPorts: [], command: [], args: [], envs: {}, workingDir: '' },
    mode: 'strong' as const,
    allocatedAt: '2026-11-24T00:00:00.000Z',
    createTimestampNanos: '1',
  },
};

describe('placeOnAgent (Fast)', () => {
  it('allocates, then creates on that agent', async () => {
    const { calls, steps } = harness({});
    const r = await steps.placeOnAgent({
      ...place,
      sandboxId: 'sb1',
      spec: { ...(spec as object), sandboxId: 'sb1' } as never,
    });
    expect(r).toEqual(ok({ placement: agentB, createdAt: 1 }));
    expect(calls).toEqual(['allocate sb1', 'agent create sb1 on b']);
  });

  it('says which agent refused, so the workflow tries another', async () => {
    const { steps } = harness({ agentRefuses: 'full' });
    const r = await steps.placeOnAgent({ ...place, sandboxId: 'sb1', spec });
    expect(r.status).toBe('failed');
    expect(r.status === 'failed' && r.outcome).toMatchObject({ agentId: agentB.agentId, retryElsewhere: true });
  });
});

describe('placeOnAgent (Fast): an agent that does not answer', () => {
  it('is a refusal naming it, so another agent is tried; its slot is given back', async () => {
    const { calls, steps } = harness({ agentThrows: 'unreachable' });
    const r = await steps.placeOnAgent({ ...place, sandboxId: 'sb1', spec });
    expect(r.status === 'failed' && r.outcome).toMatchObject({ agentId: agentB.agentId, retryElsewhere: true });
    expect(calls.at(-1)).toBe(`release sb1 on ${agentB.agentId}`);
  });
});

describe('placeWithRecord (Strong)', () => {
  it('writes the record naming the agent before asking the agent, under the record UID', async () => {
    const { calls, steps } = harness({});
    const r = await steps.placeWithRecord(strong);
    expect(r).toEqual(ok({ placement: agentB, uid: 'uid-1' }));
    expect(calls).toEqual(['allocate pending:wf/run', 'record on b', 'agent create uid-1 on b']);
  });

  it('gives the slot back when the apiserver refuses the record, and never asks an agent', async () => {
    const { calls, steps } = harness({ recordRefused: true });
    const r = await steps.placeWithRecord(strong);
    expect(r.status === 'failed' && r.outcome.code).toBe('InvalidArgument');
    expect(calls).toEqual(['allocate pending:wf/run', 'record on b', `release pending:wf/run on ${agentB.agentId}`]);
  });

  it('returns the UID with an agent refusal, so the workflow can move or delete the record', async () => {
    const { steps } = harness({ agentRefuses: 'full' });
    const r = await steps.placeWithRecord(strong);
    expect(r.status === 'failed' && r.outcome).toMatchObject({ uid: 'uid-1', agentId: agentB.agentId });
  });

  it('an agent call that throws after the record is written comes back as a refusal with the UID (review M2)', async () => {
    // Before: the throw left the record with nobody following it, and a retry by name got ALREADY_EXISTS.
    const { calls, steps } = harness({ agentThrows: 'unreachable' });
    const r = await steps.placeWithRecord(strong);
    expect(r.status === 'failed' && r.outcome).toMatchObject({
      code: 'Unavailable',
      message: expect.stringContaining('agent b did not create it: agent http://b unreachable'),
      uid: 'uid-1',
      agentId: agentB.agentId,
      retryElsewhere: true,
    });
    expect(calls.at(-1)).toBe(`release pending:wf/run on ${agentB.agentId}`);
    // Our token refused: the pool's other agents share it, so not tried elsewhere (the record is rolled back).
    const denied = await harness({ agentThrows: 'unauthorized' }).steps.placeWithRecord(strong);
    expect(denied.status === 'failed' && denied.outcome).toMatchObject({ uid: 'uid-1', retryElsewhere: false });
  });

  it('after a refusal, moves the existing record to the new agent instead of writing one', async () => {
    const { calls, steps } = harness({});
    await steps.placeWithRecord({ ...strong, recordedUid: 'uid-1' });
    expect(calls).toEqual(['allocate pending:wf/run', 'annotation → b', 'agent create uid-1 on b']);
  });

  it('retried after a crash: the agent already running the sandbox keeps it (no second copy)', async () => {
    // The first attempt placed it on A, wrote the record and created it there; the retry's
    // fresh table placed it on B.
    const { calls, steps } = harness({ placement: agentB, recordedOn: agentA, holder: agentA });
    const r = await steps.placeWithRecord(strong);
    expect(r).toEqual(ok({ placement: agentA, uid: 'uid-1' }));
    expect(calls).toEqual([
      'allocate pending:wf/run',
      'record on b',
      `release pending:wf/run on ${agentB.agentId}`,
      'agent create uid-1 on a',
    ]);
  });

  it('gives back the slot it allocated, once, when the record vanishes under it', async () => {
    const { calls, steps } = harness({ placement: agentB, recordedOn: agentA, holder: agentA, recordGone: true });
    const r = await steps.placeWithRecord({ ...strong, recordedUid: 'uid-1' });
    expect(r.status === 'failed' && r.outcome.code).toBe('Unavailable');
    expect(calls.filter((c) => c.startsWith('release'))).toEqual([`release pending:wf/run on ${agentB.agentId}`]);
    expect(calls.some((c) => c.startsWith('agent create'))).toBe(false);
  });

  it('retried after a crash before the agent create: the record follows the new placement', async () => {
    const { calls, steps } = harness({ placement: agentB, recordedOn: agentA });
    const r = await steps.placeWithRecord(strong);
    expect(r).toEqual(ok({ placement: agentB, uid: 'uid-1' }));
    expect(calls).toEqual(['allocate pending:wf/run', 'record on b', 'annotation → b', 'agent create uid-1 on b']);
  });
});
