/**
 * An entity run for the kit's own tests (src/workflows/entity.ts): a total whose `add` update
 * awaits an activity before it records, so a test can hold a handler in flight while the run is
 * due to continue as new.
 */
import { defineQuery, defineUpdate, proxyActivities, setHandler } from '@temporalio/workflow';
import { EntityRun, runEntity, type Next } from '../../../src/workflows/entity.js';

export interface EntityProbeInput {
  total: number;
  /** Runs before this one (continue-as-new counts them). */
  runs: number;
  /** Continue as new past this many history events (at a quiet moment). */
  continueAfterEvents: number;
  /** The wait between passes. */
  waitMs: number;
}

export interface EntityProbeActivities {
  /** What `add(n)` really adds: the activity the update awaits. */
  confirmAdd(n: number): Promise<number>;
  /** Each pass's fresh read. */
  observe(total: number): Promise<void>;
}

const steps = proxyActivities<EntityProbeActivities>({ startToCloseTimeout: '1 minute' });

export const probeAddUpdate = defineUpdate<number, [number]>('add');
export const probeStateQuery = defineQuery<{ total: number; runs: number }>('probeState');

class ProbeRun extends EntityRun<number, EntityProbeInput> {
  total: number;

  constructor(private readonly input: EntityProbeInput) {
    super();
    this.total = input.total;
    this.historyBound = input.continueAfterEvents;
  }

  async add(n: number): Promise<number> {
    this.recorded();
    this.total += await steps.confirmAdd(n);
    return this.total;
  }

  async reconcile(): Promise<Next<number>> {
    await steps.observe(this.total);
    return { waitMs: this.input.waitMs };
  }

  protected onKitRule(): boolean {
    return true;
  }

  carry(): EntityProbeInput {
    return { ...this.input, total: this.total, runs: this.input.runs + 1 };
  }
}

export async function entityProbeWorkflow(input: EntityProbeInput): Promise<number> {
  const run = new ProbeRun(input);
  setHandler(probeAddUpdate, (n) => run.add(n));
  setHandler(probeStateQuery, () => ({ total: run.total, runs: input.runs }));
  return runEntity(run);
}
