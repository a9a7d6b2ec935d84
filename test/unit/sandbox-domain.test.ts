import { describe, expect, it } from 'vitest';
import {
  createFingerprint,
  invalidCreate,
  lostRecords,
  orphansOn,
  type RecordedSandbox,
} from '../../src/domain/sandbox.js';

const report = (sandboxes: { sandboxId: string; claimName: string; claimUid?: string; createdAt: number }[]) => ({
  agentId: 'agent-a',
  sandboxStatuses: sandboxes.map((s) => ({
    claimUid: '',
    exposedPorts: [],
    phase: 'running' as const,
    message: '',
    ...s,
  })),
});
const rec = (r: Partial<RecordedSandbox>): RecordedSandbox => ({ namespace: 'ns', name: 'x', uid: 'u', ...r });

describe('orphansOn (Fast mode janitor)', () => {
  it('spares a sandbox until it is provably older than the timeout (createdAt is whole seconds, rounded down)', () => {
    const r = report([{ sandboxId: 's1', claimName: 'gone', createdAt: 100 }]);
    expect(orphansOn('ns', r, [], 110, 10)).toEqual([]);
    const [o] = orphansOn('ns', r, [], 111, 10);
    expect(o).toMatchObject({ sandboxId: 's1', agent: 'agent-a', ageSeconds: 11 });
    expect(o!.why).toBe('no Sandbox ns/gone records it; 11s old (orphan timeout 10s)');
  });

  it('counts a sandbox as covered by its record: by ID and agent, by a pending allocation on that agent, or by claim UID', () => {
    const r = report([
      { sandboxId: 'by-id', claimName: 'a', createdAt: 0 },
      { sandboxId: 'pending', claimName: 'b', createdAt: 0 },
      { sandboxId: 'strong', claimName: 'c', claimUid: 'uid-c', createdAt: 0 },
      { sandboxId: 'other-agent', claimName: 'd', createdAt: 0 },
      { sandboxId: 'replaced', claimName: 'e', createdAt: 0 },
    ]);
    const records = [
      rec({ name: 'a', assignedPod: 'agent-a', sandboxId: 'by-id' }),
      rec({ name: 'b', pendingAgent: 'agent-a' }),
      rec({ name: 'c', uid: 'uid-c', assignedPod: 'agent-a' }),
      rec({ name: 'd', assignedPod: 'agent-b', sandboxId: 'other-agent' }),
      rec({ name: 'e', assignedPod: 'agent-a', sandboxId: 'newer' }),
    ];
    expect(orphansOn('ns', r, records, 1000, 10).map((o) => o.sandboxId)).toEqual(['other-agent', 'replaced']);
  });
});

describe('lostRecords (Strong mode janitor)', () => {
  it('flags Bound/Running records whose reporting agent no longer holds the sandbox', () => {
    const records = [
      rec({ name: 'held', phase: 'Running', assignedPod: 'a', sandboxId: 's1' }),
      rec({ name: 'lost', phase: 'Bound', assignedPod: 'a', sandboxId: 's2' }),
      rec({ name: 'silent-agent', phase: 'Running', assignedPod: 'b', sandboxId: 's3' }),
      rec({ name: 'failed', phase: 'Failed', assignedPod: 'a', sandboxId: 's4' }),
    ];
    expect(lostRecords(records, new Map([['ns/a', new Set(['s1'])]]))).toEqual([
      { namespace: 'ns', name: 'lost', agent: 'a', sandboxId: 's2' },
    ]);
  });
});

describe('creates', () => {
  const spec = {
    image: 'i',
    poolRef: 'p',
    exposedPorts: [80],
    command: ['c'],
    args: [],
    envs: { B: '2', A: '1' },
    workingDir: '',
  };
  it('name the first thing wrong', () => {
    expect(invalidCreate({ ...spec, exposedPorts: [0] }, 'ns', 'n')).toBe(
      'exposed_ports: 0 is not a port (an integer 1–65535)',
    );
    expect(invalidCreate({ ...spec, envs: { 'A=B': 'x' } }, 'ns', 'n')).toBe('envs: "A=B" is not a variable name');
    expect(invalidCreate(spec, 'Bad_NS', 'n')).toMatch(/namespace "Bad_NS"/);
    expect(invalidCreate(spec, 'ns', 'n')).toBeUndefined();
  });
  it('are the same create regardless of env order; another spec is another create', () => {
    expect(createFingerprint(spec)).toBe(createFingerprint({ ...spec, envs: { A: '1', B: '2' } }));
    expect(createFingerprint(spec)).not.toBe(createFingerprint({ ...spec, args: ['x'] }));
  });
});
