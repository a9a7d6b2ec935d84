/**
 * Writing a target whose items are Cloudflare objects of their own (virtual networks, DNS
 * records), one API call per changed object instead of one PUT of a list. From the merge plan
 * (src/domain/cloudflare/merge.ts) and the live items it was made from: DELETE ours no longer
 * wanted, PATCH ours whose fields changed (by id, so the object keeps its id and whatever hangs
 * on it), POST the wanted ones that do not exist yet.
 */
import { canonical, type ItemCodec, type WritePlan } from '../../../domain/cloudflare/merge.js';

export interface ObjectCalls<I> {
  remove(id: string): Promise<void>;
  /** `was` is the live object being replaced (undefined when it was taken over from a removed one). */
  update(id: string, item: I, was: I | undefined): Promise<void>;
  /** Returns the new object's id. */
  create(item: I): Promise<string>;
  /** A wanted object that does not exist yet may take over one of ours being removed (same name…). */
  reuses(removed: I, item: I): boolean;
}

/** What a plan asks of the objects: deletes, then updates (by id), then creates, in that order. */
export interface ObjectChanges<I> {
  removes: string[];
  updates: Array<{ id: string; item: I; was: I | undefined }>;
  creates: I[];
  /** The id of the last object of ours written or kept (a create's is known once made). */
  lastKept: string | undefined;
}

/** The calls a plan needs: ours no longer wanted, ours that changed, the wanted ones missing. */
export function objectChanges<I extends { id?: string }>(
  plan: WritePlan<I>,
  live: readonly I[],
  codec: ItemCodec<I>,
  reuses: ObjectCalls<I>['reuses'],
): ObjectChanges<I> {
  const same = (a: I, b: I) => canonical(codec.comparable(a)) === canonical(codec.comparable(b));
  // The plan keeps everyone else's objects as the very objects read; the others in it are ours.
  const kept = new Set(plan.items.filter((i) => live.includes(i)));
  const ours = plan.items.filter((i) => !kept.has(i));
  const removed = live.filter((l) => !kept.has(l) && !ours.some((item) => item.id !== undefined && item.id === l.id));
  const results = ours.map((item): { item: I; was?: I } => {
    if (item.id !== undefined) return { item, was: live.find((l) => l.id === item.id) };
    const i = removed.findIndex((l) => reuses(l, item));
    return i < 0 ? { item } : { item: { ...item, id: removed[i]!.id }, was: removed.splice(i, 1)[0] };
  });
  const changes: ObjectChanges<I> = { removes: [], updates: [], creates: [], lastKept: undefined };
  // Deletes first: they free the names the creates may need.
  for (const l of removed) if (l.id) changes.removes.push(l.id);
  for (const { item, was } of results) {
    if (item.id === undefined) {
      changes.creates.push(item);
      continue;
    }
    changes.lastKept = item.id;
    if (!was || !same(item, was)) changes.updates.push({ id: item.id, item, was });
  }
  return changes;
}

/** Applies the plan object by object; returns the id of the last object of ours written or kept. */
export async function writeObjects<I extends { id?: string }>(
  plan: WritePlan<I>,
  live: readonly I[],
  codec: ItemCodec<I>,
  calls: ObjectCalls<I>,
): Promise<string | undefined> {
  const changes = objectChanges(plan, live, codec, (removed, item) => calls.reuses(removed, item));
  let lastId = changes.lastKept;
  for (const id of changes.removes) await calls.remove(id);
  for (const { id, item, was } of changes.updates) await calls.update(id, item, was);
  for (const item of changes.creates) lastId = await calls.create(item);
  return lastId;
}
