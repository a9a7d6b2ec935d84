/**
 * Which agent reports the fast path passes on to a sandbox's workflow: every change, except the
 * disappearance of a sandbox the agent was terminating — its workflow (or the janitor) deleted it
 * and waits for the agent itself, and a hint then only lands on the run's finishing task
 * (Temporal refuses the completion: an UnhandledCommand workflow-task failure, bench/fastpath.ts).
 */
import { describe, expect, it } from 'vitest';
import { hintsSandboxWorkflow, type SandboxChangeObservation } from '../../src/fastpath/registry.js';

const seen = (phase: string, lastPhase?: string): SandboxChangeObservation => ({
  namespace: 'team-a',
  pool: 'agents',
  claimName: 'sb',
  agent: 'agents-0',
  sandboxId: 'id-1',
  phase,
  ...(lastPhase ? { lastPhase } : {}),
  message: '',
});

describe('agent reports as hints to the sandbox workflow', () => {
  it('passes on phase changes and a sandbox lost while running (the agent lost it)', () => {
    expect(hintsSandboxWorkflow(seen('running'))).toBe(true);
    expect(hintsSandboxWorkflow(seen('failed'))).toBe(true);
    expect(hintsSandboxWorkflow(seen('missing', 'running'))).toBe(true);
    expect(hintsSandboxWorkflow(seen('missing', 'creating'))).toBe(true);
  });

  it('does not pass on the end of a deletion the workflow itself waits for', () => {
    expect(hintsSandboxWorkflow(seen('missing', 'terminating'))).toBe(false);
  });
});
