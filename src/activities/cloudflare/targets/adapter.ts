/**
 * How one kind of Cloudflare target is read and written. The sync activity (../sync.ts) is the
 * same for every target: read (fresh sources, the live object) → plan (pure,
 * src/domain/cloudflare/sync-plan.ts) → apply (write when the plan says so) → record. What differs
 * per target lives in an adapter: the API calls, and how items are compared and marked (the codec).
 */
import type Cloudflare from 'cloudflare';
import type { DesiredItem, WritePlan } from '../../../domain/cloudflare/merge.js';
import type { TargetPlanner } from '../../../domain/cloudflare/sync-plan.js';
import type { SyncTarget } from '../../../domain/cloudflare/targets.js';

/**
 * What an adapter may use besides the Cloudflare client. `data`/`remember`: what the target keeps
 * on its SyncState between syncs (`status.resultData`) — for objects owned by their ID (no field
 * can carry a marker) the ID and the intent to create, recorded before the create so a crash in
 * between never makes a second object. `secret`: a key of a Secret, read now (its value never
 * leaves the activity: not in a result, history, log or status).
 */
export interface TargetContext {
  readonly data: Readonly<Record<string, string>>;
  /** Merges `patch` into the SyncState's `status.resultData` now (null removes a key). */
  remember(patch: Record<string, string | null>): Promise<void>;
  /**
   * The IDs the target's sources (registered or being removed) record in their
   * `cloudflare-operator.io/cloudflare-id` annotation, by their marker: ownership that survives
   * a lost SyncState status.
   */
  claims(): Promise<ReadonlyMap<string, string>>;
  /** Records `id` in the annotation of the source whose marker this is. */
  claim(marker: string, id: string): Promise<void>;
  secret(ref: { namespace?: string; name: string; key: string }): Promise<string>;
  /**
   * The key of digests of such secrets kept on the SyncState (../credentials.ts `digestKeyOf`:
   * from the target's credentials, held by the worker only).
   */
  digestKey(): Promise<Buffer>;
}

/** A target's planner (the pure half, src/domain/cloudflare/sync-plan.ts) and its Cloudflare calls. */
export interface TargetAdapter<I> extends TargetPlanner<I> {
  /** The target's items as Cloudflare has them now (one read), and the object's id when it has one. */
  read(cf: Cloudflare, target: SyncTarget, ctx: TargetContext): Promise<{ items: I[]; cloudflareId?: string }>;
  /**
   * Completes the desired items with what only I/O or the live object can tell (a digest of a
   * Secret the item refers to; a field Cloudflare cannot change back), before they are compared
   * with the live ones.
   */
  complete?(desired: DesiredItem<I>[], ctx: TargetContext, live: I[]): Promise<DesiredItem<I>[]>;
  /**
   * Asks Cloudflare whether it would accept the plan, writing nothing (a dry run), where the API
   * has one: finding which source's items it refuses then costs no write.
   */
  check?(cf: Cloudflare, target: SyncTarget, plan: WritePlan<I>, live: I[], ctx: TargetContext): Promise<void>;
  /** Writes the plan (called only when it says to write); returns the object's id when it has one. */
  write(
    cf: Cloudflare,
    target: SyncTarget,
    plan: WritePlan<I>,
    live: I[],
    ctx: TargetContext,
  ): Promise<{ cloudflareId?: string }>;
}
