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

/** The run's stages in which it acts on its own create's answer (and looks at the agent itself next). */
const PLACING_STAGES: ReadonlySet<SandboxStage> = new Set(['creating', 'recording']);

/**
 * `hint`: signal the run; `skip`: nothing new for it; `ask`: a change this process cannot judge —
 * a removal or a placement it did not see start (another replica's run step, a fast path that
 * restarted, or none) — the run's state decides (`hintForRunState`).
 */
export function agentHintStep(
  change: Pick<SandboxChangeObservation, 'phase' | 'removedByRun' | 'placedByRun'>,
): 'hint' | 'skip' | 'ask' {
  if (change.removedByRun || change.placedByRun) return 'skip';
  return REMOVAL_PHASES.has(change.phase) || PLACED_PHASES.has(change.phase) ? 'ask' : 'hint';
}

/** What an agent reports of a sandbox that is being created or runs. */
const PLACED_PHASES: ReadonlySet<string> = new Set(['creating', 'running']);

/**
 * After `ask`: whether to hint, given the name's running workflow's state (undefined: none runs;
 * `unknown`: Temporal could not say — hinted, as before). A removal is news unless the run is
 * removing the sandbox itself; a sandbox creating or running is news unless the run is acting on
 * its own create's answer, or already knows this sandbox in that phase.
 */
export function hintForRunState(
  run: Pick<SandboxState, 'stage' | 'sandboxId' | 'phase'> | undefined | 'unknown',
  change: Pick<SandboxChangeObservation, 'phase' | 'sandboxId'>,
): boolean {
  if (run === 'unknown') return true;
  if (run === undefined) return false;
  if (!PLACED_PHASES.has(change.phase)) return !REMOVING_STAGES.has(run.stage);
  if (PLACING_STAGES.has(run.stage)) return false;
  return !(run.sandboxId === change.sandboxId && run.phase === (change.phase === 'running' ? 'Running' : 'Bound'));
}
