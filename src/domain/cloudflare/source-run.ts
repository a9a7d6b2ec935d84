/**
 * What a Cloudflare source's workflow (src/workflows/cloudflare/source.ts) decides, pure: when it
 * registers again, what its Ready condition says after a registration, after its targets' reports
 * and while its deletion waits, which targets it leaves, what it carries into its next run. The
 * workflow gathers the facts (activities) and sequences the writes; nothing here does I/O or
 * reads a clock.
 */
import { unplacedMessage, type HostnameZone, type UnplacedHostname } from './tunnels.js';

/**
 * The source's Ready condition as the workflow writes it. Built with its keys in this order
 * (status, reason, message): its JSON is how a run tells a write it already made, also across
 * continue-as-new.
 */
export interface SourceReady {
  status: 'True' | 'False';
  reason: string;
  message: string;
}

/** What a registration was made for: the source's generation and the digest of its view. */
export interface Registration {
  generation: number;
  view: string;
}

/** No registration in this run yet (or one a silence asks to repeat). */
export const NOT_REGISTERED: Registration = { generation: -1, view: '' };

/** Register when the spec or what it refers to changed since the last registration, or a retry is due. */
export function registrationDue(
  registered: Registration,
  read: Registration,
  retryAtMs: number | undefined,
  nowMs: number,
): boolean {
  return (
    read.generation !== registered.generation ||
    read.view !== registered.view ||
    (retryAtMs !== undefined && nowMs >= retryAtMs)
  );
}

/** Whether this registration repeats the one a silence (or the previous run) already showed. */
export function repeatsRegistration(repeating: Registration | undefined, read: Registration): boolean {
  return repeating?.generation === read.generation && repeating.view === read.view;
}

/** A spec that fails validation; what it registered before stays in Cloudflare, and the message says so. */
export function invalidSpecReady(problems: readonly string[], registeredBefore: boolean): SourceReady {
  const kept = registeredBefore ? ' (the last valid configuration stays in Cloudflare)' : '';
  return { status: 'False', reason: 'InvalidSpec', message: `${problems.join('; ')}${kept}` };
}

/**
 * What the status shows right after registering with targets (their SyncState names):
 * `unchanged` when the same registration with the same targets is sent again — the targets' last
 * result stands, so an idle source's Ready does not flip to Syncing at every silence.
 */
export function shownAfterRegistration(
  syncStates: readonly string[],
  repeated: boolean,
  sameTargets: boolean,
): 'nothing-to-sync' | 'unchanged' | 'syncing' {
  if (syncStates.length === 0) return 'nothing-to-sync';
  return repeated && sameTargets ? 'unchanged' : 'syncing';
}

export const NOTHING_TO_SYNC: SourceReady = {
  status: 'True',
  reason: 'NothingToSync',
  message: 'the spec has no entries',
};

export function syncingReady(syncStates: readonly string[]): SourceReady {
  return { status: 'False', reason: 'Syncing', message: `registered with ${syncStates.join(', ')}` };
}

/** Whether two target lists (by key) name the same targets. */
export function sameTargets(before: readonly string[], after: readonly string[]): boolean {
  return after.length === before.length && after.every((k) => before.includes(k));
}

/** The targets of `before` that `after` no longer names: the source leaves them. */
export function targetsLeft<T>(before: readonly T[], after: readonly T[], key: (t: T) => string): T[] {
  const kept = new Set(after.map(key));
  return before.filter((t) => !kept.has(key(t)));
}

/** What a target's sync reported for this source (src/workflows/cloudflare/messages.ts's SyncReport). */
export interface SourceReport {
  /** The target's key. */
  target: string;
  result: 'Synced' | 'Removed' | 'Invalid' | 'Conflict' | 'Failed';
  generation: number;
  reason: string;
  message: string;
  cloudflareId?: string;
}

export interface ReportFacts {
  /** The generation just read, and the one last registered. */
  generation: number;
  registeredGeneration: number;
  /** A retry is pending (the registration waits or failed): its status stands. */
  retrying: boolean;
  /** Each current target's last report, in the targets' order (undefined: none yet). */
  reports: readonly (SourceReport | undefined)[];
  /** The targets' SyncState names, in the same order. */
  syncStates: readonly string[];
  /** The registered tunnel hostnames no zone of the credentials holds (their CNAMEs are not made). */
  unplaced: readonly UnplacedHostname[];
  unplacedCount: number;
}

/** Ready from the targets' reports; `synced` also shows the kind's fields and the Cloudflare ID. */
export interface ReportedReady {
  ready: SourceReady;
  synced?: { cloudflareId?: string };
}

/**
 * What the targets' reports for the registered generation say (undefined: nothing to show yet).
 * A failure wins, then an invalid spec, then a conflict that holds every item back; synced once
 * every target reports this generation in Cloudflare, conflicts and hostnames without DNS named.
 */
export function reportedReady(f: ReportFacts): ReportedReady | undefined {
  if (!f.reports.length || f.registeredGeneration !== f.generation || f.retrying) return undefined;
  const current = (r: SourceReport | undefined): r is SourceReport => !!r && r.generation >= f.generation;
  const failed = f.reports.find((r) => r && r.result === 'Failed');
  if (failed) return { ready: { status: 'False', reason: failed.reason, message: failed.message } };
  const invalid = f.reports.find((r) => current(r) && r.result === 'Invalid');
  if (invalid) return { ready: { status: 'False', reason: 'InvalidSpec', message: invalid.message } };
  const conflict = f.reports.find((r) => current(r) && r.result === 'Conflict');
  // Every item of the source held by someone else: nothing of it is in Cloudflare.
  const allHeld = f.reports.every((r) => current(r) && r.result === 'Conflict' && r.reason === 'Conflict');
  if (allHeld && conflict)
    return { ready: { status: 'False', reason: 'Conflict', message: `not in Cloudflare: ${conflict.message}` } };
  if (!f.reports.every((r) => current(r) && (r.result === 'Synced' || r.result === 'Conflict'))) return undefined;
  const cloudflareId = f.reports.find((r) => r?.cloudflareId)?.cloudflareId;
  return { ready: syncedReady(f, conflict), synced: cloudflareId ? { cloudflareId } : {} };
}

function syncedReady(f: ReportFacts, conflict: SourceReport | undefined): SourceReady {
  const noDns = unplacedMessage(f.unplaced, f.unplacedCount);
  const where = f.syncStates.join(', ');
  if (conflict)
    return {
      status: 'True',
      reason: 'SyncedWithConflicts',
      message: `in Cloudflare except: ${conflict.message}${noDns ? `; ${noDns}` : ''}`,
    };
  if (noDns)
    return { status: 'True', reason: 'SyncedWithoutDNS', message: `in Cloudflare (${where}) except: ${noDns}` };
  return { status: 'True', reason: 'Synced', message: `in Cloudflare (${where})` };
}

/** The targets still to report the source's items gone: a `Removed` report ends a target's wait. */
export function stillPending(pending: ReadonlySet<string>, reports: Iterable<SourceReport>): Set<string> {
  const left = new Set(pending);
  for (const r of reports) if (r.result === 'Removed') left.delete(r.target);
  return left;
}

/** Whether a pending target has reported its removal (the deletion's wait ends). */
export function anyRemoved(pending: ReadonlySet<string>, reports: Iterable<SourceReport>): boolean {
  for (const r of reports) if (r.result === 'Removed' && pending.has(r.target)) return true;
  return false;
}

/** Ready while a deletion waits for its targets: a pending target's failure, else what it waits for. */
export function deletingReady(pending: ReadonlySet<string>, reports: Iterable<SourceReport>): SourceReady {
  const failed = [...reports].find((r) => r.result === 'Failed' && pending.has(r.target));
  if (failed)
    return { status: 'False', reason: failed.reason, message: `removing from Cloudflare failed: ${failed.message}` };
  return {
    status: 'False',
    reason: 'Deleting',
    message: `waiting for Cloudflare to drop this source's items from ${[...pending].join(', ')}`,
  };
}

/**
 * The zone a source writes to: its spec's, else — for a kind that always writes to a zone — its
 * credentials' default domain; such a kind with neither is refused (`NoZone`).
 */
export function sourceZone(f: {
  specZone?: string;
  zoneFromCredentials: boolean;
  defaultDomain?: string;
  credentials: string;
}): { zone?: string } | { refused: { reason: string; message: string } } {
  const zone = f.specZone ?? (f.zoneFromCredentials ? f.defaultDomain : undefined);
  if (zone === undefined && f.zoneFromCredentials)
    return {
      refused: {
        reason: 'NoZone',
        message: `spec.cloudflare.domain is not set and CloudflareCredentials ${f.credentials} has no defaultDomain: name the zone`,
      },
    };
  return { zone };
}

/** Where a tunnel source's hostnames' CNAMEs go, and the first of those that get none. */
export interface HostnamePlacement {
  zones: HostnameZone[];
  unplaced: UnplacedHostname[];
  unplacedCount: number;
}

export const NO_PLACEMENT: HostnamePlacement = { zones: [], unplaced: [], unplacedCount: 0 };

/** The status fields naming where the source went: its zone's ID, else its account. */
export function placeStatusFields(place: { accountId: string; zoneId?: string }): Record<string, unknown> {
  return place.zoneId === undefined ? { accountId: place.accountId } : { zoneId: place.zoneId };
}

/** How long the run waits for a hint or a report: until a pending retry, else until it re-registers. */
export function waitMs(retryAtMs: number | undefined, nowMs: number, reregisterMs: number): number {
  return retryAtMs !== undefined ? Math.max(0, retryAtMs - nowMs) : reregisterMs;
}

/**
 * The registration the next run may repeat without showing `Syncing` (with the status last
 * written): the last one made, or the one a silence is about to repeat; none before a status was
 * written.
 */
export function settledRegistration(
  registered: Registration,
  repeating: Registration | undefined,
  lastStatus: string,
): Registration | undefined {
  if (!lastStatus) return undefined;
  return [registered, repeating].find((r) => r !== undefined && r.generation >= 0);
}

/** The run's details in the Web UI: its Ready reason and each target's SyncState. */
export function sourceDetails(
  ready: SourceReady,
  generation: number,
  targets: readonly { key: string; syncState: string }[],
): string {
  const listed = targets.map((t) => `- ${t.key} → \`${t.syncState}\``).join('\n');
  return `**${ready.reason}** (generation ${generation}) — ${ready.message}${targets.length ? `\n\nTargets:\n${listed}` : ''}`;
}
