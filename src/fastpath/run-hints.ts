/**
 * Which of the registry's observations are news to a sandbox's run. Its hints are verified by a
 * fresh read, so one more is never wrong — but one that lands while the run's last workflow task
 * is in flight makes Temporal refuse that task's completion (UnhandledCommand) and run it again.
 * A run removing its sandbox itself (deletion, expiry, reset) waits until the agent no longer
 * reports it: the agent's `terminating`, the process's end and `missing` are its own doing, not
 * news. A removal the run did not start (an agent deleting behind the fast path's back, an agent
 * lost) still is. Likewise a sandbox the run placed, while it is `creating` or `running`: the
 * agent's create answer told the run so; a sandbox that came up after its create failed is news.
 */
import type { SandboxStage, SandboxState } from '../workflows/sandbox/messages.js';
import type { SandboxChangeObservation } from './registry.js';

/**
 * What an agent may report while a sandbox is being removed (its process ending on SIGTERM or
 * SIGKILL: `stopped`, `failed`), and once it is; only `creating` and `running` never do.
 */
const REMOVAL_PHASES: ReadonlySet<string> = new Set(['terminating', 'stopped', 'failed', 'missing']);

/** The run's stages in which it removes its sandbox itself and waits for the agent to forget it. */
const REMOVING_STAGES: ReadonlySet<SandboxStage> = new Set(['deleting', 'expiring', 'resetting', 'done']);

/**
 * `hint`: signal the run; `skip`: nothing new for it; `ask`: a removal this process did not see
 * start (another replica's run step, or none) — the run's state decides (`hintForRunState`).
 */
export function agentHintStep(
  o: Pick<SandboxChangeObservation, 'phase' | 'removedByRun' | 'placedByRun'>,
): 'hint' | 'skip' | 'ask' {
  if (o.removedByRun || o.placedByRun) return 'skip';
  return REMOVAL_PHASES.has(o.phase) ? 'ask' : 'hint';
}

/**
 * After `ask`: whether to hint, given the name's running workflow's state (undefined: none runs;
 * `unknown`: Temporal could not say — hinted, as before).
 */
export function hintForRunState(run: Pick<SandboxState, 'stage'> | undefined | 'unknown'): boolean {
  if (run === 'unknown') return true;
  return run !== undefined && !REMOVING_STAGES.has(run.stage);
}
