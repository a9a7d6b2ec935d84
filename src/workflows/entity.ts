/**
 * The shape of every entity workflow — one long-lived workflow per object (a SandboxPool, an
 * ObjectKeeper, a tenant's quota) — after temporalio/samples-typescript's safe-message-handlers:
 *
 * - the entity's state lives in one class (an `EntityRun`);
 * - its message handlers only record: a hint calls `hint()` (read again), data goes into the state;
 * - `runEntity` loops: `reconcile()` (fresh read → pure decision in domain/ → act) → wait for a
 *   hint or a timer → continue as new when due (src/domain/entity.ts) → `reconcile()` again;
 * - every handler finishes before the run ends or continues (`allHandlersFinished`).
 */
import { allHandlersFinished, condition, continueAsNew, sleep, workflowInfo } from '@temporalio/workflow';
import { continueAsNewDue } from '../domain/entity.js';

/** What a pass asks for next. */
export type Next<R> = { done: R } | { again: true } | { continueAsNew: true } | Wait;

/** The wait after a pass; then the run may continue as new, and passes again. */
export interface Wait {
  /** A fixed pause first, which no message ends: at most one pass per pause however many hints come. */
  sleepMs?: number;
  /** Then up to this long (counted when the pause ends) for `wakeWhen` (default: a hint); none when 0 or less. */
  waitMs?: number | (() => number);
  wakeWhen?: () => boolean;
}

export abstract class EntityRun<R, Input> {
  /** A hint arrived since the pass began reading: read again. */
  needsReconcile = false;
  /** Messages handled so far: a wait none interrupted is a quiet moment to continue as new. */
  private heard = 0;

  /** A hint's handler: verified by the next pass's fresh read. */
  hint(): void {
    this.needsReconcile = true;
    this.heard++;
  }

  /** A handler that records data (not a hint): it still makes the moment busy. */
  protected recorded(): void {
    this.heard++;
  }

  /** One pass: fresh read → decide (pure, domain/) → act. */
  abstract reconcile(): Promise<Next<R>>;

  /** The next run's input: the state carried across continue-as-new. */
  abstract carry(): Input;

  /** A run from before the kit's rule continues as new after a wait when Temporal suggests it. */
  protected continuesAsBefore(): boolean {
    return false;
  }

  /** Continue as new before Temporal suggests it once the history is this long. */
  protected historyBound?: number;

  /**
   * Whether this run continues as new by the kit's rule: `patched()` of the workflow's own patch
   * ID (asked only once it matters, so that is where the marker lands); runs from before keep
   * their own rule (`continuesAsBefore`, or their pass's).
   */
  protected abstract onKitRule(): boolean;

  /** Waits as the pass asked; true when the wait was quiet (no message, no hint waiting). */
  async wait(w: Wait): Promise<boolean> {
    const before = this.heard;
    if (w.sleepMs !== undefined) await sleep(w.sleepMs);
    const ms = typeof w.waitMs === 'function' ? w.waitMs() : w.waitMs;
    if (ms !== undefined && ms > 0) await condition(w.wakeWhen ?? (() => this.needsReconcile), ms);
    return this.heard === before && !this.needsReconcile;
  }

  /** After a wait: continue as new now? */
  continueNow(quiet: boolean): boolean {
    const info = workflowInfo();
    const bound = this.historyBound;
    const due = continueAsNewDue({
      suggested: info.continueAsNewSuggested,
      historyLength: info.historyLength,
      quiet,
      bound,
    });
    if (due === 'no') return false;
    if (!this.onKitRule()) return info.continueAsNewSuggested && this.continuesAsBefore();
    return due === 'now';
  }
}

/** The entity's workflow body: reconcile, wait, continue as new when due; handlers drained at every end. */
export async function runEntity<R, Input>(entity: EntityRun<R, Input>): Promise<R> {
  for (;;) {
    const next = await entity.reconcile();
    if ('done' in next) {
      await condition(allHandlersFinished);
      return next.done;
    }
    if ('again' in next) continue;
    if (!('continueAsNew' in next) && !entity.continueNow(await entity.wait(next))) continue;
    await condition(allHandlersFinished);
    return continueAsNew<(input: Input) => Promise<R>>(entity.carry());
  }
}
