import { describe, expect, it } from 'vitest';
import { agentHintStep, hintForRunState } from '../../src/fastpath/run-hints.js';

describe("the registry's hints to a sandbox's run", () => {
  it('a removal its run started through this process is never hinted, whatever the agent reports', () => {
    for (const phase of ['terminating', 'missing', 'failed'])
      expect(agentHintStep({ phase, removedByRun: true })).toBe('skip');
  });

  it('a sandbox its run placed through this process is not hinted while creating or running (the create answer said so)', () => {
    for (const phase of ['creating', 'running']) expect(agentHintStep({ phase, placedByRun: true })).toBe('skip');
  });

  it("what a removal this process did not see start may leave asks the run; a create's changes are hinted", () => {
    // A process ending on the removal's SIGTERM reports stopped or failed before it is gone.
    for (const phase of ['terminating', 'stopped', 'failed', 'missing']) expect(agentHintStep({ phase })).toBe('ask');
    // A create this process did not make (another replica's, or before a restart) asks too.
    for (const phase of ['creating', 'running']) expect(agentHintStep({ phase })).toBe('ask');
  });

  it("a placement another replica made is news only to a run that does not know it: not while the run acts on its create's answer", () => {
    const o = { phase: 'running', sandboxId: 's1' };
    for (const stage of ['creating', 'recording'] as const) expect(hintForRunState({ stage }, o)).toBe(false);
    expect(hintForRunState({ stage: 'live', sandboxId: 's1', phase: 'Running' }, o)).toBe(false);
    expect(hintForRunState({ stage: 'live', sandboxId: 's1', phase: 'Bound' }, { ...o, phase: 'creating' })).toBe(
      false,
    );
    // Known as Bound, now running; another sandbox; a record whose run knows no sandbox yet: news.
    expect(hintForRunState({ stage: 'live', sandboxId: 's1', phase: 'Bound' }, o)).toBe(true);
    expect(hintForRunState({ stage: 'live', sandboxId: 's0', phase: 'Running' }, o)).toBe(true);
    expect(hintForRunState({ stage: 'scheduling' }, o)).toBe(true);
    expect(hintForRunState(undefined, o)).toBe(false);
    expect(hintForRunState('unknown', o)).toBe(true);
  });

  it('a run removing its sandbox itself, or no run, is not told; a live one (deleted behind its back) is', () => {
    const removal = { phase: 'missing', sandboxId: 's1' };
    for (const stage of ['deleting', 'expiring', 'resetting', 'done'] as const)
      expect(hintForRunState({ stage }, removal)).toBe(false);
    expect(hintForRunState(undefined, removal)).toBe(false);
    for (const stage of ['live', 'scheduling', 'recording', 'creating'] as const)
      expect(hintForRunState({ stage }, removal)).toBe(true);
    // Temporal could not say: hinted (a verified hint is at worst one task more).
    expect(hintForRunState('unknown', removal)).toBe(true);
  });
});
