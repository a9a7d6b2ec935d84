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
    for (const phase of ['creating', 'running']) expect(agentHintStep({ phase })).toBe('hint');
  });

  it('a run removing its sandbox itself, or no run, is not told; a live one (deleted behind its back) is', () => {
    for (const stage of ['deleting', 'expiring', 'resetting', 'done'] as const)
      expect(hintForRunState({ stage })).toBe(false);
    expect(hintForRunState(undefined)).toBe(false);
    for (const stage of ['live', 'scheduling', 'recording', 'creating'] as const)
      expect(hintForRunState({ stage })).toBe(true);
    // Temporal could not say: hinted (a verified hint is at worst one task more).
    expect(hintForRunState('unknown')).toBe(true);
  });
});
