/**
 * The life's combined local activities (src/activities/sandbox/life-steps.ts): the order of their
 * parts, and that a retry after a crash between parts repeats no write — the record it finds says
 * what the earlier attempt did. The parts themselves (Sandbox writes, agent calls) run against a
 * real apiserver and real agents in the integration tests (sandbox-fastpath, sandbox-crash); here
 * they are recorded in-memory stand-ins.
 */
import { describe, expect, it } from 'vitest';
import { ALLOCATION_ANNOTATION, type Sandbox } from '../../src/api/sandbox.js';
import { createSandboxLifeStepActivities } from '../../src/activities/sandbox/life-steps.js';
import { GONE, ok } from '../../src/domain/results.js';
import type { RecordInput } from '../../src/domain/sandbox.js';

const allocation = { assignedPod: 'agent-a', assignedNode: 'n1', allocatedAt: '2026-11-29T00:00:00.000Z' };
const record = { apiVersion: 'fast.io/v1', kind: 'Sandbox', spec: { image: 'img', poolRef: 'pool' } };
const annotated = {
  ...record,
  metadata: { name: 'sb', namespace: 'ns', uid: 'uid-1', annotations: { [ALLOCATION_ANNOTATION]: '{}' } },
} as Sandbox;
const handedOff = {
  ...record,
  metadata: { name: 'sb', namespace: 'ns', uid: 'uid-1', annotations: {} },
  status: { phase: 'Bound', assignedPod: 'agent-a' },
} as Sandbox;

function harness(o: { found?: Sandbox; statusGone?: boolean; agentSlow?: boolean } = {}) {
  const calls: string[] = [];
  const steps = createSandboxLifeStepActivities(
    {
      removeFromAgent: async (req) => {
        calls.push(`remove ${req.sandboxId} from ${req.pod}`);
        return o.agentSlow ? 'pending' : 'removed';
      },
    },
    {
      createSandboxRecord: async () => {
        calls.push('create record');
        return ok({ uid: 'uid-1', allocation, record: o.found ?? annotated });
      },
      patchSandboxStatus: async (req) => {
        calls.push(`status ${req.status.phase}`);
        return o.statusGone ? GONE : ok();
      },
      removeAllocationAnnotation: async () => {
        calls.push('remove annotation');
        return ok({ record: handedOff });
      },
      setSandboxFinalizer: async (req) => {
        calls.push(`finalizer ${req.present ? 'added' : 'removed'}`);
        return ok();
      },
    },
  );
  return { steps, calls };
}

const input: RecordInput = {
  namespace: 'ns',
  name: 'sb',
  spec: { image: 'img', poolRef: 'pool', exposedPorts: [], command: [], args: [], envs: {}, workingDir: '' },
  mode: 'fast',
  allocation,
  createTimestampNanos: '1764374400000000000',
  tenant: '1001',
};
const bound = { phase: 'Bound' as const, assignedPod: 'agent-a', nodeName: 'n1' };

describe('recordAndHandOff', () => {
  it('writes the record, then status from its allocation, then removes the annotation; answers with that record', async () => {
    const { steps, calls } = harness();
    const r = await steps.recordAndHandOff({ ...input, status: bound });
    expect(calls).toEqual(['create record', 'status Bound', 'remove annotation']);
    expect(r).toEqual(ok({ uid: 'uid-1', handedOff: true, record: handedOff }));
  });

  it('a retry after the status write (a crash before the annotation went) only removes the annotation', async () => {
    const { steps, calls } = harness({
      found: { ...annotated, status: { phase: 'Bound', assignedPod: 'agent-a' } } as Sandbox,
    });
    await steps.recordAndHandOff({ ...input, status: bound });
    expect(calls).toEqual(['create record', 'remove annotation']);
  });

  it('a retry after the whole hand-off writes nothing more', async () => {
    const { steps, calls } = harness({ found: handedOff });
    const r = await steps.recordAndHandOff({ ...input, status: bound });
    expect(calls).toEqual(['create record']);
    expect(r).toEqual(ok({ uid: 'uid-1', handedOff: true, record: handedOff }));
  });

  it('a record gone before its hand-off: recorded, not handed off, no record to trust (the workflow reads again)', async () => {
    const { steps, calls } = harness({ statusGone: true });
    const r = await steps.recordAndHandOff({ ...input, status: bound });
    expect(calls).toEqual(['create record', 'status Bound']);
    expect(r).toEqual(ok({ uid: 'uid-1', handedOff: false }));
  });
});

describe('removeSandbox', () => {
  const agent = { namespace: 'ns', pod: 'agent-a', sandboxId: 's1', agentId: 'ns/agent-a', withinMs: 3000 };
  const ref = { namespace: 'ns', name: 'sb', uid: 'uid-1' };

  it('Terminating, off the agent, then the finalizer', async () => {
    const { steps, calls } = harness();
    expect(await steps.removeSandbox({ ...ref, agent, terminating: true })).toBe('removed');
    expect(calls).toEqual(['status Terminating', 'remove s1 from agent-a', 'finalizer removed']);
  });

  it('keeps the finalizer while the agent still holds the sandbox (the workflow waits for it)', async () => {
    const { steps, calls } = harness({ agentSlow: true });
    expect(await steps.removeSandbox({ ...ref, agent, terminating: false })).toBe('pending');
    expect(calls).toEqual(['remove s1 from agent-a']);
  });
});
