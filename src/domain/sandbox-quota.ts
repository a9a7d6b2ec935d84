/**
 * Tenant sandbox quotas, as pure rules: whether a tenant may create in a namespace and pool (its
 * `tenants/{id}/sandbox` settings), and the slot book its quota workflow keeps — one slot per
 * live sandbox name, granted one request at a time, released when the sandbox's record is gone,
 * reconciled against the records that exist. No I/O: the workflow holds the book, activities
 * bring the facts.
 */
/** A tenant's sandbox settings as the tenant configuration holds them; absent fields mean no limit. */
export interface SandboxLimits {
  readonly maxSandboxes?: number;
  readonly namespaces?: readonly string[];
  readonly pools?: readonly string[];
}

export function quotaWorkflowId(tenant: string): string {
  return `sandbox-quota/${tenant}`;
}

/** Why the tenant may not create there (PERMISSION_DENIED); undefined when allowed (no settings, or a field left out: any). */
export function sandboxPlacementRefusal(
  tenant: string,
  limits: SandboxLimits | undefined,
  namespace: string,
  pool: string,
): string | undefined {
  if (limits?.namespaces && !limits.namespaces.includes(namespace))
    return `tenant ${tenant} may not create sandboxes in namespace ${namespace} (allowed: ${limits.namespaces.join(', ')})`;
  if (limits?.pools && !limits.pools.includes(pool))
    return `tenant ${tenant} may not use SandboxPool ${pool} (allowed: ${limits.pools.join(', ')})`;
  return undefined;
}

export function quotaMessage(tenant: string, count: number, limit: number): string {
  return `tenant ${tenant} has ${count} of ${limit} sandboxes`;
}

/** `namespace/name`: a slot belongs to a sandbox name, so a retried create of the name holds one slot. */
export function slotKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/** Slot → when it was granted or first seen (workflow time, epoch ms). */
export type SlotBook = Record<string, number>;

export type SlotAnswer =
  | { readonly granted: true; readonly count: number; readonly limit: number }
  | { readonly granted: false; readonly count: number; readonly limit: number; readonly message: string };

/**
 * Grants `slot` unless the tenant holds `limit` others already. A slot already held is granted
 * again without counting twice and keeps its first grant time (the release rule compares it).
 */
export function acquireSlot(book: SlotBook, tenant: string, slot: string, limit: number, nowMs: number): SlotAnswer {
  const count = Object.keys(book).length;
  if (slot in book) return { granted: true, count, limit };
  if (count >= limit) return { granted: false, count, limit, message: quotaMessage(tenant, count, limit) };
  book[slot] = nowMs;
  return { granted: true, count: count + 1, limit };
}

/**
 * A sandbox workflow's run ended with its record gone. Its slot goes only if it was granted no
 * later than that run started: a grant made after is a new incarnation of the name (created
 * while the old one was finishing its deletion) and must stay. A create that found the slot
 * held by the old incarnation asks again once that one has ended (the fast path does).
 */
export function releaseSlot(book: SlotBook, slot: string, runStartMs: number): boolean {
  const grantedAt = book[slot];
  if (grantedAt === undefined || grantedAt > runStartMs) return false;
  delete book[slot];
  return true;
}

/**
 * The book against the tenant's Sandbox records listed at `listedAtMs`: a slot with no record
 * is dropped once older than `graceMs` (a Fast create writes its record after answering; a
 * fast path that died between grant and create never will), and a record without a slot (one
 * created with kubectl, or before the tenant had a limit) gets one — unless it was released
 * while the listing ran (the listing may predate the record's removal). A counted record's slot
 * is dated 0: it belongs to whichever run has the record, so that run's release drops it.
 * Returns what changed.
 */
export function reconcileSlots(
  book: SlotBook,
  records: readonly string[],
  listedAtMs: number,
  graceMs: number,
  releasedDuringListing: ReadonlySet<string> = new Set(),
): { dropped: string[]; added: string[] } {
  const present = new Set(records);
  const dropped = Object.keys(book).filter((slot) => !present.has(slot) && book[slot]! + graceMs < listedAtMs);
  for (const slot of dropped) delete book[slot];
  const added = records.filter((slot) => !(slot in book) && !releasedDuringListing.has(slot));
  for (const slot of added) book[slot] = 0;
  return { dropped, added };
}
