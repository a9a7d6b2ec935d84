/**
 * One workflow per tenant with a sandbox limit (`sandbox-quota/<tenant>`): the shared authority
 * every fast-path replica asks before a create. It holds the tenant's slots (one per live sandbox
 * name) and grants them through the `acquire` update; Temporal runs one update handler at a time
 * on the workflow, and the handler decides without awaiting, so concurrent creates from any
 * replica are serialized and never exceed the limit together.
 *
 * A slot goes when its sandbox's workflow ends with the record gone (the `release` signal), and a
 * durable-timer reconcile compares the book with the tenant's Sandbox records: a grant whose
 * create never happened (a fast path that died in between) or whose release was lost is dropped,
 * so no crash leaks quota; a sandbox created with kubectl is counted.
 *
 * An entity run (../entity.ts): `QuotaRun` holds the book; the rules are src/domain/sandbox-quota.ts's.
 */
import {
  condition,
  defineQuery,
  defineSignal,
  defineUpdate,
  patched,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import {
  acquireSlot,
  reconcileSlots,
  releaseSlot,
  type SlotAnswer,
  type SlotBook,
} from '../../domain/sandbox-quota.js';
import { EntityRun, runEntity, type Next } from '../entity.js';
import { quotaSteps } from './activity-options.js';

export interface SandboxQuotaInput {
  /** The tenant ID, as the fast path and the Sandbox label carry it. */
  tenant: string;
  /** Carried across continue-as-new; absent on the first run, which counts the records first. */
  book?: SlotBook;
  /** How often the book is compared with the records (default 60 s). */
  reconcileEveryMs?: number;
  /** How long a grant may stay without a record (default 120 s): a Fast create records after answering. */
  graceMs?: number;
}

export interface AcquireSlotCall {
  /** `namespace/name` of the sandbox. */
  slot: string;
  /** The tenant's maxSandboxes as the asking replica reads the tenant configuration. */
  limit: number;
}
export const acquireSlotUpdate = defineUpdate<SlotAnswer, [AcquireSlotCall]>('acquire');

export interface ReleaseSlot {
  slot: string;
  /** When the releasing sandbox run started: a grant made after it belongs to a newer incarnation. */
  runStartMs: number;
}
export const releaseSlotSignal = defineSignal<[ReleaseSlot]>('release');

export const quotaSlotsQuery = defineQuery<string[]>('slots');

const DEFAULT_RECONCILE_EVERY_MS = 60_000;
const DEFAULT_GRACE_MS = 120_000;
/**
 * Patch: continue-as-new by the entity kit's rule, after the timer and at a quiet moment; runs
 * from before continued right after a listing when Temporal suggested it.
 */
const CONTINUE_WHEN_QUIET = 'quota-continue-when-quiet';

export class QuotaRun extends EntityRun<void, SandboxQuotaInput> {
  readonly book: SlotBook;
  /** The first run grants nothing before it knows the sandboxes the tenant already has. */
  counted: boolean;
  private releasedDuringListing?: Set<string>;

  constructor(private readonly input: SandboxQuotaInput) {
    super();
    this.book = { ...input.book };
    this.counted = input.book !== undefined;
  }

  /** The `acquire` update: decides without awaiting (once counted), so grants are serialized. */
  async acquire(call: AcquireSlotCall): Promise<SlotAnswer> {
    this.recorded();
    if (!this.counted) await condition(() => this.counted);
    return acquireSlot(this.book, this.input.tenant, call.slot, call.limit, Date.now());
  }

  /** The `release` signal: the sandbox's record is gone. */
  release({ slot, runStartMs }: ReleaseSlot): void {
    this.recorded();
    releaseSlot(this.book, slot, runStartMs);
    this.releasedDuringListing?.add(slot);
  }

  /** The book against the tenant's Sandbox records, then the timer (no hint wakes it). */
  async reconcile(): Promise<Next<void>> {
    const listedAtMs = Date.now();
    this.releasedDuringListing = new Set();
    const records = await quotaSteps.listTenantSandboxes({ tenant: this.input.tenant });
    const grace = this.input.graceMs ?? DEFAULT_GRACE_MS;
    reconcileSlots(this.book, records, listedAtMs, grace, this.releasedDuringListing);
    this.releasedDuringListing = undefined;
    this.counted = true;
    if (workflowInfo().continueAsNewSuggested && !this.onKitRule()) return { continueAsNew: true };
    return { sleepMs: this.input.reconcileEveryMs ?? DEFAULT_RECONCILE_EVERY_MS };
  }

  protected onKitRule(): boolean {
    return patched(CONTINUE_WHEN_QUIET);
  }

  carry(): SandboxQuotaInput {
    return { ...this.input, book: this.book };
  }
}

function validateAcquire(call: AcquireSlotCall): void {
  if (!Number.isInteger(call.limit) || call.limit < 0) throw new Error(`limit ${call.limit} is not a count`);
  if (!call.slot.includes('/')) throw new Error(`slot ${JSON.stringify(call.slot)} is not namespace/name`);
}

export async function sandboxQuotaWorkflow(input: SandboxQuotaInput): Promise<void> {
  const run = new QuotaRun(input);
  setHandler(quotaSlotsQuery, () => Object.keys(run.book).sort());
  setHandler(acquireSlotUpdate, (call) => run.acquire(call), { validator: validateAcquire });
  setHandler(releaseSlotSignal, (release) => run.release(release));
  // A continued run already knows the book: it waits for its timer before listing again.
  if (run.counted) await run.wait({ sleepMs: input.reconcileEveryMs ?? DEFAULT_RECONCILE_EVERY_MS });
  return runEntity(run);
}
