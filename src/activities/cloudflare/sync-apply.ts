/**
 * The apply step of a target's sync: the Cloudflare calls for what src/domain/cloudflare/sync-plan.ts
 * planned, through the adapter of the target (the official `cloudflare` SDK) and classified by
 * ./errors.ts. When Cloudflare refuses the whole write, the sources whose change it refuses are
 * found one at a time and left out; the rest is written.
 */
import { ApplicationFailure } from '@temporalio/common';
import type Cloudflare from 'cloudflare';
import type { RegisteredSource } from '../../domain/cloudflare/aggregate.js';
import { plansByCredentials } from '../../domain/cloudflare/identity.js';
import { ownershipOf, refString } from '../../domain/cloudflare/markers.js';
import { canonical, type WritePlan } from '../../domain/cloudflare/merge.js';
import { permissionFor } from '../../domain/cloudflare/permissions.js';
import { targetCloudflareId, targetKey } from '../../domain/cloudflare/targets.js';
import { faultPoint } from '../fault-points.js';
import { heartbeat } from '../kubernetes/calls.js';
import { CLOUDFLARE_FAILURE_TYPES, cloudflareFailure } from './errors.js';
import { clientOf, readLive, replan, type SyncRun } from './sync-read.js';
import { recordSyncState } from './sync-record.js';

/** Whether Cloudflare refused what was sent (a 4xx about the content), not who sent it or when. */
function refusedContent(err: unknown): boolean {
  const failure = cloudflareFailure(err, '');
  return !!failure.nonRetryable && failure.type === CLOUDFLARE_FAILURE_TYPES.invalid;
}

/** Runs a call that edits: a refusal of it names the Edit permission (the read-only ones name Read). */
async function editing<T>(run: SyncRun, call: () => Promise<T>): Promise<T> {
  run.access = 'Edit';
  const out = await call();
  run.access = 'Read';
  return out;
}

/** Writes the current plan against the live items; keeps the object's id when the write gives one. */
async function writeCurrentPlan(run: SyncRun, cf: Cloudflare): Promise<void> {
  const written = await editing(run, () => writePlan(run, cf, run.planned.plan, run.live.items));
  if (written.cloudflareId) run.cloudflareId = targetCloudflareId(run.request.target, written.cloudflareId);
}

/**
 * Applies the plan (the decision said to write): records first a setting taken for the first
 * time, writes, and when Cloudflare refuses the whole, writes what it accepts. Returns whether
 * anything was written.
 */
export async function applyPlan(run: SyncRun, cf: Cloudflare): Promise<boolean> {
  const { settings } = run.planned;
  // A setting taken for the first time: remember what it was before changing it, so a crash right
  // after the write cannot lose the value to restore — still remembering the settings this write
  // releases, whose restore may not have happened when it crashes.
  if (settings?.takesNew) {
    const held = settings.heldWhileWriting;
    run.heldSettings = held;
    await recordSyncState(run, () => ({ managedSettings: held }));
    faultPoint('cloudflare-settings-recorded');
  }
  let wrote = true;
  try {
    await writeCurrentPlan(run, cf);
  } catch (err) {
    // Settings targets write setting by setting and remember what they hold: not bisected.
    if (run.adapter.planHeld || !refusedContent(err)) throw err;
    // Cloudflare refused the whole: find the sources whose change it refuses, write the rest.
    const changed = run.sources.changed();
    if (changed.length === 0) throw err;
    wrote = await isolateRefused(run, cf, changed, err);
    await replan(run);
    if (run.planned.plan.write) {
      await writeCurrentPlan(run, cf);
      wrote = true;
    }
  }
  faultPoint('cloudflare-write');
  return wrote;
}

/**
 * Writes a plan: with the target's credentials, or (perSource) each source's records with its
 * own. A team whose credentials Cloudflare refuses (a read-only token…) is left out like a
 * refused source — its records stay as they are —, never failing the others' writes.
 */
async function writePlan(
  run: SyncRun,
  cf: Cloudflare,
  plan: WritePlan<unknown>,
  items: unknown[],
): Promise<{ cloudflareId?: string }> {
  const { adapter, request, context } = run;
  if (!run.perSource) return adapter.write(cf, request.target, plan, items, context);
  let out: { cloudflareId?: string } = {};
  let refusedTeam = false;
  for (const part of planPerCredentials(run, plan, items)) {
    const own = part.credentials === request.credentials;
    try {
      const client = own ? cf : await clientOf(run, part.credentials);
      out = await adapter.write(client, request.target, { ...plan, items: part.items }, items, context);
    } catch (err) {
      const failure =
        err instanceof ApplicationFailure
          ? err
          : cloudflareFailure(
              err,
              `sync ${targetKey(request.target)} with ${part.credentials}`,
              permissionFor(request.target, 'Edit'),
            );
      if (own || !failure.nonRetryable) throw err;
      refusedTeam = true;
      rejectTeam(run, part.credentials, failure);
    }
  }
  if (refusedTeam) {
    // What is in Cloudflare now, without the refused team's changes: the digest to compare next time.
    await readLive(run, cf);
    await replan(run);
  }
  return out;
}

/** The plan cut into one plan per credentials, each source's records with those it registered with. */
function planPerCredentials(run: SyncRun, plan: WritePlan<unknown>, items: unknown[]) {
  const { adapter, request } = run;
  const credentialsOfSource = new Map(request.sources.map((r) => [refString(r.ref), r.credentials]));
  const credentialsOfRecord = (item: unknown) => {
    const ownership = ownershipOf(adapter.codec.descriptionOf(item), request.clusterId);
    return ownership.owner === 'ours' ? credentialsOfSource.get(refString(ownership.ref)) : undefined;
  };
  const same = (a: unknown, b: unknown) =>
    canonical(adapter.codec.comparable(a)) === canonical(adapter.codec.comparable(b));
  return plansByCredentials(
    plan as WritePlan<{ id?: string }>,
    items as { id?: string }[],
    credentialsOfRecord,
    request.credentials,
    same,
  );
}

/** Leaves out every source written with the credentials Cloudflare refused: their records stay as they were. */
function rejectTeam(run: SyncRun, credentials: string, failure: ApplicationFailure): void {
  for (const reg of run.request.sources)
    if (reg.credentials === credentials)
      run.sources.reject({
        source: refString(reg.ref),
        generation: run.objects.get(refString(reg.ref))?.metadata?.generation ?? reg.generation,
        reason: failure.type ?? CLOUDFLARE_FAILURE_TYPES.invalid,
        message: `${failure.message} (written with CloudflareCredentials ${credentials}; its records stay as they were, the others are written)`,
      });
}

/**
 * One step of the isolation: plans the sources as they now stand and writes it (or, with a dry
 * run — rulesets — only asks whether Cloudflare would accept it). Returns whether it wrote.
 */
async function tryStep(run: SyncRun, cf: Cloudflare): Promise<boolean> {
  const step = await replan(run);
  if (!step.plan.write) return false;
  const { adapter, request, context } = run;
  if (adapter.check) {
    await editing(run, () => adapter.check!(cf, request.target, step.plan, run.live.items, context));
    return false;
  }
  await editing(run, () => writePlan(run, cf, step.plan, run.live.items));
  await readLive(run, cf);
  return true;
}

/**
 * Tries the sources whose change Cloudflare may refuse one at a time, in priority order, on top
 * of the others: first none of them (if Cloudflare refuses even that, the fault is not in a
 * change and the target fails as a whole), then each in turn. A refused one is left out with
 * Cloudflare's message. With a dry run (rulesets) nothing is written until the end; otherwise
 * each accepted step is a real write, and the live state is read again.
 */
async function isolateRefused(
  run: SyncRun,
  cf: Cloudflare,
  changed: RegisteredSource[],
  first: unknown,
): Promise<boolean> {
  let wroteAny = false;
  // Held back: kept as they are in Cloudflare (a whole-owned target with their last record).
  for (const source of changed) run.sources.holdBack(source);
  try {
    wroteAny = (await tryStep(run, cf)) || wroteAny;
  } catch (err) {
    if (refusedContent(err)) throw first;
    throw err;
  }
  for (const source of changed) {
    run.sources.release(source);
    heartbeat();
    try {
      // One changed source: the refused write was already the others plus it.
      if (changed.length === 1) throw first;
      wroteAny = (await tryStep(run, cf)) || wroteAny;
    } catch (err) {
      if (!refusedContent(err)) throw err;
      run.access = 'Read'; // the refused write is over
      const failure = cloudflareFailure(err, `sync ${targetKey(run.request.target)}`);
      run.sources.reject({
        source: refString(source.ref),
        generation: source.generation,
        reason: failure.type ?? CLOUDFLARE_FAILURE_TYPES.invalid,
        message: `${failure.message} (its items in Cloudflare stay as they were; the other sources are written)`,
      });
    }
  }
  return wroteAny;
}
