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

/** Applies the plan object by object; returns the id of the last object of ours written or kept. */
export async function writeObjects<I extends { id?: string }>(
  plan: WritePlan<I>,
  live: readonly I[],
  codec: ItemCodec<I>,
  calls: ObjectCalls<I>,
): Promise<string | undefined> {
  const same = (a: I, b: I) => canonical(codec.comparable(a)) === canonical(codec.comparable(b));
  // The plan keeps everyone else's objects as the very objects read; the others in it are ours.
  const kept = new Set(plan.items.filter((i) => live.includes(i)));
  const ours = plan.items.filter((i) => !kept.has(i));
  const removed = live.filter((l) => !kept.has(l) && !ours.some((o) => o.id !== undefined && o.id === l.id));
  const results = ours.map((item): { item: I; was?: I } => {
    if (item.id !== undefined) return { item, was: live.find((l) => l.id === item.id) };
    const i = removed.findIndex((l) => calls.reuses(l, item));
    return i < 0 ? { item } : { item: { ...item, id: removed[i]!.id }, was: removed.splice(i, 1)[0] };
  });
  let lastId: string | undefined;
  // Deletes first: they free the names the creates may need.
  for (const l of removed) if (l.id) await calls.remove(l.id);
  for (const { item, was } of results) {
    if (item.id !== undefined) {
      lastId = item.id;
      if (!was || !same(item, was)) await calls.update(item.id, item, was);
      continue;
    }
    lastId = await calls.create(item);
  }
  return lastId;
}
