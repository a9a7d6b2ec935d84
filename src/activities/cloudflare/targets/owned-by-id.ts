/**
 * Targets whose one Cloudflare object has no field for a marker (Access groups, identity
 * providers): the operator owns the object whose ID the SyncState remembers
 * (`status.resultData.id`, with `marker` naming the source it was made for). The create is
 * idempotent across crashes: the intent (`creating`, `creatingMarker`) is recorded before the
 * POST and the ID right after it; a retry that finds the intent and an object of that name takes
 * it as the one it created instead of making a second. A POST Cloudflare refuses clears the
 * intent (it made nothing). An object of that name the operator did
 * not create is returned without a marker: the merge keeps it and reports its name as held.
 *
 * The ID is also recorded on the source itself (annotation `cloudflare-operator.io/cloudflare-id`):
 * when the SyncState has forgotten it (status dropped by a restore, SyncState deleted), an object
 * of the target's name with the ID a source's annotation records is that source's again.
 */
import type { ItemCodec, WritePlan } from '../../../domain/cloudflare/merge.js';
import { faultPoint } from '../../fault-points.js';
import { isCloudflareRefusal } from '../errors.js';
import type { TargetContext } from './adapter.js';
import { writeObjects } from './per-object.js';

export interface OwnedItem {
  id?: string;
  name: string;
  /** Not a Cloudflare field: the ownership the SyncState remembers for the object's ID. */
  marker?: string;
}

export interface OwnedObjectCalls<I> {
  /** The object, or undefined when Cloudflare has no such ID (404). */
  get(id: string): Promise<I | undefined>;
  /** The account's objects with exactly this name. */
  named(name: string): Promise<I[]>;
  create(item: I): Promise<string>;
  update(id: string, item: I): Promise<void>;
  /** Deletes; an ID Cloudflare no longer has is already deleted. */
  remove(id: string): Promise<void>;
}

/** The target's live object: ours by remembered ID (or intent), else any of that name (not ours). */
export async function readOwnedById<I extends OwnedItem>(
  name: string,
  ctx: TargetContext,
  calls: OwnedObjectCalls<I>,
): Promise<{ items: I[]; cloudflareId?: string }> {
  const { id, marker, creating, creatingMarker } = ctx.data;
  if (id) {
    const found = await calls.get(id);
    if (found) {
      if (marker && (await ctx.claims()).get(marker) !== id) await ctx.claim(marker, id); // made before annotations
      return { items: [{ ...found, ...(marker ? { marker } : {}) }], cloudflareId: id };
    }
    await ctx.remember({ id: null }); // deleted in the dashboard: made again by the write
  }
  // The SyncState forgot it: the ID a source's annotation records, if it still has the name.
  for (const [claimer, claimed] of await ctx.claims()) {
    if (claimed === id) continue; // just found gone
    const found = await calls.get(claimed);
    if (found?.name !== name) continue;
    await ctx.remember({ id: claimed, marker: claimer, creating: null, creatingMarker: null });
    return { items: [{ ...found, marker: claimer }], cloudflareId: claimed };
  }
  const named = await calls.named(name);
  // An intent with no ID: the crashed attempt's POST went through, and that object is ours.
  const ours = creating === name ? named[0] : undefined;
  if (ours?.id) {
    await ctx.remember({ id: ours.id, marker: creatingMarker ?? null, creating: null, creatingMarker: null });
    return { items: [{ ...ours, ...(creatingMarker ? { marker: creatingMarker } : {}) }], cloudflareId: ours.id };
  }
  return { items: named.map(({ marker: _m, ...rest }) => rest as I) };
}

/** Writes the plan: create (intent, POST, ID), update by ID, delete — remembering each step. */
export async function writeOwnedById<I extends OwnedItem>(
  plan: WritePlan<I>,
  live: readonly I[],
  codec: ItemCodec<I>,
  ctx: TargetContext,
  calls: OwnedObjectCalls<I>,
): Promise<string | undefined> {
  return writeObjects(plan, live, codec, {
    reuses: () => true, // one name per target: an object of ours being dropped is the one to keep
    async remove(id) {
      await calls.remove(id);
      await ctx.remember({ id: null, marker: null });
    },
    async update(id, item) {
      await calls.update(id, item);
      if (item.marker !== ctx.data.marker) await ctx.remember({ marker: item.marker ?? null });
    },
    async create(item) {
      await ctx.remember({ creating: item.name, creatingMarker: item.marker ?? null });
      let id: string;
      try {
        id = await calls.create(item);
      } catch (err) {
        // Refused: nothing was made, so no intent may stay to take a later hand-made object of
        // that name for ours. An answer that may have made one (timeout, 5xx) keeps it.
        if (isCloudflareRefusal(err)) await ctx.remember({ creating: null, creatingMarker: null });
        throw err;
      }
      faultPoint('cloudflare-created');
      await ctx.remember({ id, marker: item.marker ?? null, creating: null, creatingMarker: null });
      if (item.marker) await ctx.claim(item.marker, id);
      return id;
    },
  });
}
