import { describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/api/sandbox.js';
import {
  AGENT_UNREACHABLE,
  agentGoneSinceMs,
  agentLossStep,
  createConflict,
  createFingerprint,
  deleteReachesCreation,
  deletesOwnRecord,
  failureReason,
  invalidCreate,
  lifecycleStep,
  lostRecords,
  nextLookInMs,
  runStillHolds,
  orphansOn,
  reapersOf,
  recoveryDeadlineMs,
  resetRequested,
  rfc3339Nanos,
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

describe('lostRecords (janitor: records whose agent lost them)', () => {
  it('flags Bound/Running records whose reporting agent no longer holds the sandbox, or whose agent does not report', () => {
    const records = [
      rec({ name: 'held', phase: 'Running', assignedPod: 'a', sandboxId: 's1' }),
      rec({ name: 'lost', phase: 'Bound', assignedPod: 'a', sandboxId: 's2' }),
      rec({ name: 'silent-agent', phase: 'Running', assignedPod: 'b', sandboxId: 's3' }),
      rec({ name: 'failed', phase: 'Failed', assignedPod: 'a', sandboxId: 's4' }),
      rec({ name: 'already-lost', phase: 'Lost', assignedPod: 'b', sandboxId: 's5' }),
    ];
    expect(lostRecords(records, new Map([['ns/a', new Set(['s1'])]]))).toEqual([
      { namespace: 'ns', name: 'lost', agent: 'a', sandboxId: 's2', why: 'missing' },
      { namespace: 'ns', name: 'silent-agent', agent: 'b', sandboxId: 's3', why: 'agent-gone' },
    ]);
  });
});

describe('agent loss: recovery timeout and failure policy', () => {
  const T = Date.parse('2026-11-24T03:00:00Z');
  const unreachableSince = (at: string, phase: 'Running' | 'Bound' | 'Lost' = 'Running'): Sandbox['status'] => ({
    phase,
    conditions: [{ type: 'Ready', status: 'False', reason: AGENT_UNREACHABLE, message: '', lastTransitionTime: at }],
  });
  const sandbox = (spec: Partial<Sandbox['spec']>, status?: Sandbox['status']) => ({
    spec: { image: 'i', poolRef: 'p', ...spec },
    status,
  });

  it('starts the recovery timeout when the loss is first noticed (default 60 s)', () => {
    expect(agentLossStep(sandbox({}, { phase: 'Running' }), T)).toEqual({
      step: 'wait',
      sinceMs: T,
      untilMs: T + 60_000,
    });
    expect(agentLossStep(sandbox({ recoveryTimeoutSeconds: 5 }, { phase: 'Bound' }), T)).toMatchObject({
      untilMs: T + 5_000,
    });
  });

  it('counts from the time recorded in the AgentUnreachable condition, not from each new look', () => {
    const sb = sandbox({ recoveryTimeoutSeconds: 30 }, unreachableSince('2026-11-24T02:59:45.000Z'));
    expect(agentLossStep(sb, T)).toEqual({ step: 'wait', sinceMs: T - 15_000, untilMs: T + 15_000 });
    expect(recoveryDeadlineMs(sb)).toBe(T + 15_000);
  });

  it('after the timeout: Manual (the default) → lost, AutoRecreate → recreate', () => {
    const since = '2026-11-24T02:59:00.000Z';
    expect(agentLossStep(sandbox({}, unreachableSince(since)), T)).toEqual({ step: 'lost', sinceMs: T - 60_000 });
    expect(agentLossStep(sandbox({ failurePolicy: 'Manual' }, unreachableSince(since)), T).step).toBe('lost');
    expect(agentLossStep(sandbox({ failurePolicy: 'AutoRecreate' }, unreachableSince(since)), T).step).toBe('recreate');
    // Exactly at the end of the timeout the policy applies; a millisecond before, it does not.
    expect(agentLossStep(sandbox({}, unreachableSince(since)), T - 1).step).toBe('wait');
  });

  it('a longer timeout set during the wait moves the deadline (the hint re-arms the timer)', () => {
    const since = '2026-11-24T02:59:00.000Z';
    const sb = sandbox({ recoveryTimeoutSeconds: 120 }, unreachableSince(since));
    expect(agentLossStep(sb, T)).toMatchObject({ step: 'wait', untilMs: T + 60_000 });
  });

  it('only a placed record is in a recovery timeout (a Lost or Pending one is not)', () => {
    expect(agentGoneSinceMs(sandbox({}, unreachableSince('2026-11-24T02:59:00Z', 'Lost')))).toBeUndefined();
    expect(agentGoneSinceMs(sandbox({}, { phase: 'Running' }))).toBeUndefined();
    expect(agentGoneSinceMs(sandbox({}, unreachableSince('2026-11-24T02:59:00Z', 'Bound')))).toBe(T - 60_000);
  });

  it('the wait ends at the recovery deadline or the expiry, whichever is first', () => {
    const resync = 300_000;
    const sb = (spec: Partial<Sandbox['spec']>) => sandbox(spec, unreachableSince('2026-11-24T03:00:00Z'));
    expect(nextLookInMs(sb({ recoveryTimeoutSeconds: 20 }), T, resync)).toBe(20_000);
    expect(nextLookInMs(sb({ recoveryTimeoutSeconds: 20, expireTime: '2026-11-24T03:00:05Z' }), T, resync)).toBe(5_000);
    expect(nextLookInMs(sb({ recoveryTimeoutSeconds: 20 }), T + 30_000, resync)).toBe(1);
  });

  it('a Lost record does not cover its sandbox: should the agent return with it, the janitor removes it', () => {
    const r = report([{ sandboxId: 's1', claimName: 'a', createdAt: 0 }]);
    const lost = rec({ name: 'a', phase: 'Lost', assignedPod: 'agent-a', sandboxId: 's1' });
    expect(orphansOn('ns', r, [lost], 1000, 10).map((o) => o.sandboxId)).toEqual(['s1']);
    expect(orphansOn('ns', r, [{ ...lost, phase: 'Running' }], 1000, 10)).toEqual([]);
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

describe('expiry and reset', () => {
  const T = Date.parse('2026-11-24T03:00:00Z');
  const sandbox = (spec: Partial<Sandbox['spec']>, status?: Sandbox['status']) => ({
    spec: { image: 'i', poolRef: 'p', ...spec },
    status,
  });

  it('expires at expireTime, not a millisecond before, and never without one', () => {
    const sb = sandbox({ expireTime: '2026-11-24T03:00:00Z' }, { phase: 'Running' });
    expect(lifecycleStep(sb, T - 1)).toBeUndefined();
    expect(lifecycleStep(sb, T)).toEqual({ step: 'expire', at: '2026-11-24T03:00:00Z' });
    expect(lifecycleStep(sb, T + 3_600_000)).toEqual({ step: 'expire', at: '2026-11-24T03:00:00Z' });
    expect(lifecycleStep(sandbox({}, { phase: 'Running' }), T + 10 ** 12)).toBeUndefined();
    // Expired once: nothing more to do, whatever happens to expireTime.
    expect(lifecycleStep({ ...sb, status: { phase: 'Expired' } }, T)).toBeUndefined();
  });

  it('asks for a reset only for a revision later than the accepted one', () => {
    const at = (resetRevision?: string, acceptedResetRevision?: string) =>
      resetRequested(sandbox({ resetRevision }, { acceptedResetRevision }));
    expect(at(undefined, undefined)).toBe(false);
    expect(at('2026-11-24T01:00:00Z', undefined)).toBe(true);
    expect(at('2026-11-24T01:00:01Z', '2026-11-24T01:00:00Z')).toBe(true);
    expect(at('2026-11-24T01:00:00Z', '2026-11-24T01:00:00Z')).toBe(false);
    expect(at('2026-11-24T00:59:59Z', '2026-11-24T01:00:00Z')).toBe(false);
    // The same instant in another spelling is the same revision.
    expect(at('2026-11-24T02:00:00.000+01:00', '2026-11-24T01:00:00Z')).toBe(false);
    // Below the millisecond still counts.
    expect(at('2026-11-24T01:00:00.000000002Z', '2026-11-24T01:00:00.000000001Z')).toBe(true);
    expect(at('2026-11-24T01:00:00.000000001Z', '2026-11-24T01:00:00.000000001Z')).toBe(false);
    expect(at('not a time', undefined)).toBe(false);
  });

  it('parses RFC 3339 to nanoseconds', () => {
    expect(rfc3339Nanos('1970-01-01T00:00:01.5Z')).toBe(1_500_000_000n);
    expect(rfc3339Nanos('1970-01-01T00:00:00.123456789Z')).toBe(123_456_789n);
    expect(rfc3339Nanos('1970-01-01T01:00:00+01:00')).toBe(0n);
    expect(rfc3339Nanos('')).toBeUndefined();
    expect(rfc3339Nanos('yesterday')).toBeUndefined();
  });

  it('lets expiry win over a reset: an expired sandbox is not restarted', () => {
    const past = '2026-11-24T02:00:00Z';
    const rev = '2026-11-24T02:30:00Z';
    expect(lifecycleStep(sandbox({ expireTime: past, resetRevision: rev }, { phase: 'Running' }), T)).toEqual({
      step: 'expire',
      at: past,
    });
    expect(lifecycleStep(sandbox({ expireTime: past, resetRevision: rev }, { phase: 'Expired' }), T)).toBeUndefined();
    // Moved later and reset: a fresh start.
    expect(
      lifecycleStep(sandbox({ expireTime: '2026-11-24T04:00:00Z', resetRevision: rev }, { phase: 'Expired' }), T),
    ).toEqual({ step: 'reset', revision: rev });
  });

  it('waits for hints until the expiry at the latest', () => {
    const resync = 300_000;
    expect(nextLookInMs(sandbox({}), T, resync)).toBe(resync);
    expect(nextLookInMs(sandbox({ expireTime: '2026-11-24T03:00:10Z' }), T, resync)).toBe(10_000);
    expect(nextLookInMs(sandbox({ expireTime: '2026-11-25T03:00:00Z' }), T, resync)).toBe(resync);
    expect(nextLookInMs(sandbox({ expireTime: '2026-11-24T02:00:00Z' }), T, resync)).toBe(1);
    expect(nextLookInMs(sandbox({ expireTime: '2026-11-24T02:00:00Z' }, { phase: 'Expired' }), T, resync)).toBe(resync);
  });
});

describe('why a sandbox ended, on its Ready condition', () => {
  it.each([
    [{ phase: 'stopped' }, 'Stopped'],
    [{ phase: 'failed' }, 'ProcessFailed'],
    [{ phase: 'failed', reason: 'OOMKilled' }, 'OOMKilled'],
    [{ phase: 'failed', reason: 'EphemeralStorageExceeded' }, 'EphemeralStorageExceeded'],
    [{ phase: 'failed', reason: 'SomethingNew' }, 'ProcessFailed'],
  ])('%j → %s', (seen, reason) => {
    expect(failureReason(seen)).toBe(reason);
  });
});

describe('runStillHolds (the janitor spares a sandbox whose record is late)', () => {
  it('for the sandbox the running workflow holds, unless it gave it up', () => {
    expect(runStillHolds({ stage: 'recording', sandboxId: 'a' }, 'a')).toBe(true);
    expect(runStillHolds({ stage: 'creating', sandboxId: 'a' }, 'a')).toBe(true);
    // Recorded between the janitor's re-read and its question: no orphan.
    expect(runStillHolds({ stage: 'live', sandboxId: 'a' }, 'a')).toBe(true);
    expect(runStillHolds({ stage: 'recording', sandboxId: 'b' }, 'a')).toBe(false); // an older incarnation's
    expect(runStillHolds({ stage: 'unrecorded', sandboxId: 'a' }, 'a')).toBe(false); // refused: the janitor's
    expect(runStillHolds({ stage: 'done', sandboxId: 'a' }, 'a')).toBe(false);
    expect(runStillHolds(undefined, 'a')).toBe(false);
  });
});

describe('a delete that finds no record (DeleteSandbox reaching a Fast creation)', () => {
  it('is the running Fast create’s while its record is not written yet', () => {
    expect(deleteReachesCreation({ stage: 'creating', mode: 'fast' })).toBe(true);
    expect(deleteReachesCreation({ stage: 'recording', mode: 'fast' })).toBe(true);
    // Recorded: the delete finds the record. Strong records before answering. No run: NOT_FOUND.
    expect(deleteReachesCreation({ stage: 'live', mode: 'fast' })).toBe(false);
    expect(deleteReachesCreation({ stage: 'unrecorded', mode: 'fast' })).toBe(false);
    expect(deleteReachesCreation({ stage: 'creating', mode: 'strong' })).toBe(false);
    expect(deleteReachesCreation({ stage: 'scheduling' })).toBe(false);
    expect(deleteReachesCreation(undefined)).toBe(false);
  });

  it('makes the run delete the record it wrote meanwhile, once', () => {
    const run = { creationDeleted: true, recordedHere: true, recordDeleting: false };
    expect(deletesOwnRecord(run)).toBe(true);
    expect(deletesOwnRecord({ ...run, recordDeleting: true })).toBe(false); // already being deleted
    expect(deletesOwnRecord({ ...run, recordedHere: false })).toBe(false); // not this run's record
    expect(deletesOwnRecord({ ...run, creationDeleted: false })).toBe(false); // a watcher's hint: the record says
  });
});

describe('createConflict (a create by name reaching the name’s workflow)', () => {
  const base = { namespace: 'ns', name: 'sb', closing: false, failedEnding: false, recorded: false };
  const call = { fingerprint: 'f1', tenant: 'acme' };

  it('the first create of an incarnation goes ahead', () => {
    expect(createConflict({ ...base, call })).toBeUndefined();
  });

  it('a retry of the answered create goes ahead (and gets the same answer), in this run or a continued one', () => {
    expect(
      createConflict({ ...base, recorded: true, answered: { fingerprint: 'f1', tenant: 'acme' }, call }),
    ).toBeUndefined();
  });

  it('another spec is ALREADY_EXISTS saying so; another tenant is ALREADY_EXISTS revealing nothing', () => {
    expect(createConflict({ ...base, answered: { fingerprint: 'f0', tenant: 'acme' }, call })).toEqual({
      reason: 'AlreadyExists',
      message: 'a Sandbox named sb already exists in namespace ns with another spec',
    });
    for (const fingerprint of ['f1', 'f0'])
      expect(createConflict({ ...base, answered: { fingerprint, tenant: 'other' }, call })).toEqual({
        reason: 'AlreadyExists',
        message: 'a Sandbox named sb already exists in namespace ns',
      });
  });

  it('a recorded incarnation that answered no create here (kubectl, or before continue-as-new carried it) is taken', () => {
    expect(createConflict({ ...base, recorded: true, call })?.reason).toBe('AlreadyExists');
  });

  it('a closing or failed run asks the caller to wait for the next run', () => {
    expect(createConflict({ ...base, closing: true, answered: call, call })?.reason).toBe('Terminating');
    expect(createConflict({ ...base, failedEnding: true, call })).toEqual({
      reason: 'Terminating',
      message: 'the previous create of ns/sb failed and its run is ending; create it again',
    });
  });
});

describe('reapersOf (review N4)', () => {
  it('asks one containerd agent per namespace and node, the first by name; never a process agent or one on no node', () => {
    const out = reapersOf([
      { namespace: 'a', node: 'n1', pod: 'p2', runtime: 'containerd/runc' },
      { namespace: 'a', node: 'n1', pod: 'p1', runtime: 'containerd/gvisor' },
      { namespace: 'a', node: 'n2', pod: 'p3', runtime: 'process' },
      { namespace: 'a', node: 'n2', pod: 'p4', runtime: 'containerd/runc' },
      { namespace: 'b', node: 'n1', pod: 'p5', runtime: 'containerd/runc' },
      { namespace: 'b', node: '', pod: 'p6', runtime: 'containerd/runc' },
      { namespace: 'b', node: 'n3', pod: 'p7' },
    ]);
    expect(out.map((r) => `${r.namespace}/${r.node}/${r.pod}`)).toEqual(['a/n1/p1', 'a/n2/p4', 'b/n1/p5']);
  });
});
