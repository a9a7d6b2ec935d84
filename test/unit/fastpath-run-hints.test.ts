import { describe, expect, it } from 'vitest';
import { agentHintStep, hintForRunState } from '../../src/fastpath/run-hints.js';

describe("the registry's hints to a sandbox's run", () => {
  it('a removal its run started through this process is never hinted, whatever the agent reports', () => {
    for (const phase of ['terminating', 'missing', 'failed'])
      expect(agentHintStep({ phase, removedByRun: true })).toBe('skip');
  });

  it("a removal's traces this process did not see start ask the run; any other change is hinted", () => {
    expect(agentHintStep({ phase: 'terminating' })).toBe('ask');
    expect(agentHintStep({ phase: 'missing' })).toBe('ask');
    for (const phase of ['creating', 'running', 'stopped', 'failed']) expect(agentHintStep({ phase })).toBe('hint');
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
