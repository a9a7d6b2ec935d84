import { describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/api/sandbox.js';
import { deletesBeforeRecord } from '../../src/domain/sandbox.js';
import {
  afterPlacementRefusal,
  agentLostStatus,
  agentUnreachableCondition,
  boundStatus,
  handOffStatus,
  isTerminal,
  lifecycleStatus,
  observedStatus,
  phaseNeedsIndexing,
  statusCurrent,
  unschedulableStatus,
  waitForHintsMs,
  type Incarnation,
} from '../../src/domain/sandbox-run.js';

const now = new Date('2026-01-01T00:00:00Z');
const sandbox = (spec: Partial<Sandbox['spec']> = {}, status?: Sandbox['status']): Sandbox => ({
  apiVersion: 'sandbox.fast.io/v1alpha1',
  kind: 'Sandbox',
  metadata: { name: 'sb', namespace: 'ns', uid: 'u1' },
  spec: { image: 'busybox', poolRef: 'pool', ...spec },
  ...(status ? { status } : {}),
});
const placed: Incarnation = {
  sandboxId: 's1',
  placement: { agentId: 'ns/agent-a', pod: 'agent-a', node: 'node-1', url: 'http://a', ip: '10.0.0.1', bootId: 'b1' },
  spec: {
    image: 'busybox',
    poolRef: 'pool',
    exposedPorts: [80, 8080],
    command: [],
    args: [],
    envs: {},
    workingDir: '',
  },
};

describe('afterPlacementRefusal (which agent a create tries next)', () => {
  it("tries another agent after a refusal that is that agent's alone, and answers anything else", () => {
    const full = { code: 'ResourceExhausted' as const, message: 'full', retryElsewhere: true, agentId: 'a' };
    expect(afterPlacementRefusal(full, undefined)).toEqual({
      next: 'elsewhere',
      exclude: 'a',
      refusal: { code: 'ResourceExhausted', message: 'full' },
    });
    const bad = { code: 'InvalidArgument' as const, message: 'bad image', retryElsewhere: false, agentId: 'a' };
    expect(afterPlacementRefusal(bad, undefined)).toEqual({
      next: 'answer',
      refusal: { code: 'InvalidArgument', message: 'bad image' },
    });
    // The allocation itself (no agent named): the answer.
    expect(afterPlacementRefusal({ code: 'ResourceExhausted', message: 'pool full' }, undefined)).toEqual({
      next: 'answer',
      refusal: { code: 'ResourceExhausted', message: 'pool full' },
    });
  });

  it('remembers an agent that did not answer, and gives it as the reason once no agent is left', () => {
    const silent = {
      code: 'Unavailable' as const,
      message: 'agent a did not answer',
      retryElsewhere: true,
      agentId: 'a',
    };
    const first = afterPlacementRefusal(silent, undefined);
    expect(first).toMatchObject({ next: 'elsewhere', unanswered: { code: 'Unavailable' } });
    const unanswered = first.next === 'elsewhere' ? first.unanswered : undefined;
    // Another agent full: still remembered.
    const full = { code: 'ResourceExhausted' as const, message: 'full', retryElsewhere: true, agentId: 'b' };
    expect(afterPlacementRefusal(full, unanswered)).toMatchObject({ next: 'elsewhere', unanswered });
    // None left: the pool's "full", or (patched runs) the agent that did not answer.
    expect(afterPlacementRefusal({ code: 'ResourceExhausted', message: 'pool full' }, unanswered)).toEqual({
      next: 'answer',
      refusal: { code: 'ResourceExhausted', message: 'pool full' },
      unansweredInstead: unanswered,
    });
  });
});

describe('observedStatus (the record follows the agent)', () => {
  const where = { pod: 'agent-a', sandboxId: 's1', placedBootId: 'b1' };

  it('maps what the agent holds: Running (Ready), Failed with the exit or OOMKilled, the runtime', () => {
    expect(
      observedStatus(sandbox(), { state: 'held', phase: 'running', message: '', runtime: 'runc' }, where, now),
    ).toEqual({
      phase: 'Running',
      condition: {
        type: 'Ready',
        status: 'True',
        reason: 'Running',
        message: 'running on agent agent-a',
        lastTransitionTime: now.toISOString(),
      },
      runtime: 'runc',
    });
    expect(
      observedStatus(sandbox(), { state: 'held', phase: 'failed', message: 'exited with code 3' }, where, now),
    ).toMatchObject({
      phase: 'Failed',
      condition: { status: 'False', reason: 'ProcessFailed', message: 'exited with code 3' },
    });
    expect(
      observedStatus(sandbox(), { state: 'held', phase: 'failed', message: 'oom', reason: 'OOMKilled' }, where, now),
    ).toMatchObject({ phase: 'Failed', condition: { reason: 'OOMKilled' } });
    expect(
      observedStatus(sandbox(), { state: 'held', phase: 'creating', message: '' }, where, now).condition,
    ).toMatchObject({ reason: 'Bound', message: 'creating on agent agent-a' });
  });

  it('an agent that answers without it: AgentLostSandbox — or, restarted since the placement, its failure policy', () => {
    const lost = observedStatus(sandbox(), { state: 'missing', bootId: 'b1' }, where, now);
    expect(lost).toMatchObject({ phase: 'Failed', condition: { reason: 'AgentLostSandbox' } });
    expect(lost.agentRestarted).toBeUndefined();
    expect(observedStatus(sandbox(), { state: 'missing', bootId: 'b2' }, where, now).agentRestarted).toEqual({
      lostFor: 'agent agent-a restarted and no longer has sandbox s1',
      step: 'lost',
    });
    const recreate = sandbox({ failurePolicy: 'AutoRecreate' });
    expect(observedStatus(recreate, { state: 'missing', bootId: 'b2' }, where, now).agentRestarted?.step).toBe(
      'recreate',
    );
    // No boot ID on either side (an older agent, an adopted placement): not a restart.
    expect(observedStatus(sandbox(), { state: 'missing' }, where, now).agentRestarted).toBeUndefined();
    expect(
      observedStatus(sandbox(), { state: 'missing', bootId: 'b2' }, { ...where, placedBootId: undefined }, now)
        .agentRestarted,
    ).toBeUndefined();
  });

  it('writes nothing when the record already says it (phase, reason, runtime)', () => {
    const seen = observedStatus(
      sandbox(),
      { state: 'held', phase: 'running', message: '', runtime: 'runc' },
      where,
      now,
    );
    const running = {
      phase: 'Running' as const,
      runtime: 'runc',
      conditions: [{ ...seen.condition, lastTransitionTime: 'earlier' }],
    };
    expect(statusCurrent(sandbox({}, running), seen)).toBe(true);
    expect(statusCurrent(sandbox({}, { ...running, runtime: 'runsc' }), seen)).toBe(false);
    expect(statusCurrent(sandbox({}, { ...running, phase: 'Bound' }), seen)).toBe(false);
    expect(statusCurrent(sandbox({}, { ...running, conditions: [] }), seen)).toBe(false);
  });
});

describe('status writes', () => {
  it('placed: Bound with the agent, node, sandbox ID and an endpoint per exposed port', () => {
    expect(boundStatus(placed)).toEqual({
      phase: 'Bound',
      assignedPod: 'agent-a',
      nodeName: 'node-1',
      sandboxID: 's1',
      endpoints: ['10.0.0.1:80', '10.0.0.1:8080'],
    });
    const alloc = { assignedPod: 'agent-a', assignedNode: 'node-1', allocatedAt: now.toISOString() };
    expect(handOffStatus(alloc, placed)).toEqual(boundStatus(placed));
    // The agent could not be asked: the annotation's assignment alone.
    expect(handOffStatus(alloc, undefined)).toEqual({ phase: 'Bound', assignedPod: 'agent-a', nodeName: 'node-1' });
  });

  it('no room: Pending, unassigned, Unschedulable with the reason', () => {
    expect(unschedulableStatus('pool full', now)).toEqual({
      phase: 'Pending',
      assignedPod: null,
      nodeName: null,
      conditions: [
        {
          type: 'Ready',
          status: 'False',
          reason: 'Unschedulable',
          message: 'pool full',
          lastTransitionTime: now.toISOString(),
        },
      ],
    });
  });

  it('agent gone: the condition is timed from when the loss was noticed', () => {
    const c = agentUnreachableCondition(
      sandbox(),
      { pod: 'agent-a', sandboxId: 's1', timeoutSeconds: 60, sinceIso: '2025-12-31T23:59:00.000Z' },
      now,
    );
    expect(c).toMatchObject({ reason: 'AgentUnreachable', lastTransitionTime: '2025-12-31T23:59:00.000Z' });
    expect(c.message).toContain('kept for 60s in case it returns, then failurePolicy Manual applies');
  });

  it('agent lost: AutoRecreate → Pending and unassigned; Manual → Lost, the assignment kept to read', () => {
    const recreate = agentLostStatus('recreate', 'agent a gone', 's1', now);
    expect(recreate).toMatchObject({ phase: 'Pending', assignedPod: null, sandboxID: null, endpoints: null });
    expect(recreate.conditions?.[0]).toMatchObject({ reason: 'AgentLost' });
    const lost = agentLostStatus('lost', 'agent a gone', 's1', now);
    expect(lost).toMatchObject({ phase: 'Lost', endpoints: null });
    expect(lost).not.toHaveProperty('assignedPod');
    expect(lost.conditions?.[0]?.message).toContain('failurePolicy Manual');
  });

  it('expired: Expired and unassigned; reset: Pending, unassigned, the revision accepted in the same write', () => {
    const removed = '; sandbox s1 removed from agent agent-a';
    const expired = lifecycleStatus({ step: 'expire', at: '2026-01-01T00:00:00Z' }, removed, now);
    expect(expired).toMatchObject({ phase: 'Expired', assignedPod: null, sandboxID: null });
    expect(expired.conditions?.[0]?.message).toBe(`expired at 2026-01-01T00:00:00Z${removed}`);
    const reset = lifecycleStatus({ step: 'reset', revision: '2026-01-01T00:00:01Z' }, '', now);
    expect(reset).toMatchObject({ phase: 'Pending', acceptedResetRevision: '2026-01-01T00:00:01Z', sandboxID: null });
  });

  it('Failed, Expired and Lost are terminal on the agent', () => {
    expect(
      ['Failed', 'Expired', 'Lost'].map((phase) => isTerminal(sandbox({}, { phase } as Sandbox['status']))),
    ).toEqual([true, true, true]);
    expect(isTerminal(sandbox({}, { phase: 'Running' }))).toBe(false);
    expect(isTerminal(sandbox())).toBe(false);
  });
});

describe("the run's phase and waits", () => {
  it('indexes the phase only on a change; the first stage of a fast-path run is already indexed at its start', () => {
    const fresh = { reported: false, continued: false, startPhase: 'creating' };
    expect(phaseNeedsIndexing('creating', fresh)).toBe(false);
    expect(phaseNeedsIndexing('scheduling', { ...fresh, startPhase: undefined })).toBe(true);
    // A continued run carries its predecessor's phase: it indexes its first stage.
    expect(phaseNeedsIndexing('live', { ...fresh, continued: true, startPhase: 'live' })).toBe(true);
    expect(phaseNeedsIndexing('live', { reported: true, indexed: 'live', continued: false })).toBe(false);
    expect(phaseNeedsIndexing('deleting', { reported: true, indexed: 'live', continued: false })).toBe(true);
  });

  it('waits for hints until the expiry, or a recovery timeout this pass started, at the latest', () => {
    const t = Date.parse('2026-01-01T00:00:00Z');
    expect(waitForHintsMs(sandbox(), t, 300_000, undefined)).toBe(300_000);
    expect(waitForHintsMs(sandbox({ expireTime: '2026-01-01T00:01:00Z' }), t, 300_000, undefined)).toBe(60_000);
    expect(waitForHintsMs(sandbox(), t, 300_000, t + 30_000)).toBe(30_000);
    expect(waitForHintsMs(sandbox(), t, 300_000, t - 5)).toBe(1); // never a busy loop
  });

  it('a delete between the Fast answer and the record: nothing recorded, the sandbox removed', () => {
    const run = { deletionRequested: true, fastCreate: true, placed: true, recorded: false };
    expect(deletesBeforeRecord(run)).toBe(true);
    expect(deletesBeforeRecord({ ...run, recorded: true })).toBe(false);
    expect(deletesBeforeRecord({ ...run, fastCreate: false })).toBe(false);
    expect(deletesBeforeRecord({ ...run, placed: false })).toBe(false);
    expect(deletesBeforeRecord({ ...run, deletionRequested: false })).toBe(false);
  });
});
