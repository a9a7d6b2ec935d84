/**
 * When an entity workflow continues as new (src/workflows/entity.ts), as a pure rule. Temporal
 * refuses a run's last task when a message reached the run while that task ran (UnhandledCommand:
 * the run must see it first), so a run that Temporal asks to continue does so after a wait no
 * message interrupted; a run that never gets one continues anyway once its history is past
 * HARD_HISTORY_BOUND (below the 10,240 events at which Temporal starts warning).
 */
export const HARD_HISTORY_BOUND = 10_000;

export interface ContinueAsNewFacts {
  /** workflowInfo().continueAsNewSuggested. */
  suggested: boolean;
  /** workflowInfo().historyLength. */
  historyLength: number;
  /** No message arrived during the wait just ended, and no hint is waiting. */
  quiet: boolean;
  /** The entity's own bound: continue once the history is this long, suggested or not. */
  bound?: number;
}

/** `no`: keep going; `later`: due, but at a quieter moment; `now`: continue as new now. */
export type ContinueAsNewDecision = 'no' | 'later' | 'now';

export function continueAsNewDue(f: ContinueAsNewFacts): ContinueAsNewDecision {
  const wanted = f.suggested || (f.bound !== undefined && f.historyLength >= f.bound);
  if (!wanted) return 'no';
  return f.quiet || f.historyLength >= HARD_HISTORY_BOUND ? 'now' : 'later';
}
