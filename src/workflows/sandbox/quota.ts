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
 */
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  defineQuery,
  defineSignal,
  defineUpdate,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import {
  acquireSlot,
  reconcileSlots,
  releaseSlot,
  type SlotAnswer,
  type SlotBook,
} from '../../domain/sandbox-quota.js';
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

export async function sandboxQuotaWorkflow(input: SandboxQuotaInput): Promise<void> {
  const { tenant } = input;
  const book: SlotBook = { ...input.book };
  let counted = input.book !== undefined;
  let releasedDuringListing: Set<string> | undefined;

  setHandler(quotaSlotsQuery, () => Object.keys(book).sort());
  setHandler(
    acquireSlotUpdate,
    async (call) => {
      // The first run grants nothing before it knows the sandboxes the tenant already has.
      if (!counted) await condition(() => counted);
      return acquireSlot(book, tenant, call.slot, call.limit, Date.now());
    },
    {
      validator: (call) => {
        if (!Number.isInteger(call.limit) || call.limit < 0) throw new Error(`limit ${call.limit} is not a count`);
        if (!call.slot.includes('/')) throw new Error(`slot ${JSON.stringify(call.slot)} is not namespace/name`);
      },
    },
  );
  setHandler(releaseSlotSignal, ({ slot, runStartMs }) => {
    releaseSlot(book, slot, runStartMs);
    releasedDuringListing?.add(slot);
  });

  const every = input.reconcileEveryMs ?? DEFAULT_RECONCILE_EVERY_MS;
  const grace = input.graceMs ?? DEFAULT_GRACE_MS;
  for (;;) {
    if (counted) await sleep(every);
    const listedAtMs = Date.now();
    releasedDuringListing = new Set();
    const records = await quotaSteps.listTenantSandboxes({ tenant });
    reconcileSlots(book, records, listedAtMs, grace, releasedDuringListing);
    releasedDuringListing = undefined;
    counted = true;
    if (workflowInfo().continueAsNewSuggested) {
      await condition(allHandlersFinished);
      return continueAsNew<typeof sandboxQuotaWorkflow>({ ...input, book });
    }
  }
}
