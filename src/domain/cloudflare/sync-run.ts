/**
 * What a Cloudflare target's sync workflow decides, pure: whether a registration needs a sync or
 * only its last report again, why a sync runs, how long a burst of changes is waited out, what
 * each source is told after a sync, whether a report is worth a signal, and when the target is
 * done. The workflow (src/workflows/cloudflare/sync.ts) gathers the facts and sends the signals.
 */
import type { SourceRegistration, SyncReport } from '../../workflows/cloudflare/messages.js';
import type { SourceRef } from './markers.js';
import type { SourceVerdict, SyncTrigger } from './sync-plan.js';

/** Which target and SyncState a report is about. */
export interface ReportedFrom {
  /** `targetKey` of the target. */
  target: string;
  syncState: string;
}

/** A sync's answer, as far as the workflow's decisions read it (the activity's `SyncResult`). */
export type SyncAnswer =
  | {
      status: 'ok';
      wrote: boolean;
      drifted: boolean;
      driftLeft: boolean;
      differences: string[];
      counts: { desired: number };
      configVersion: number;
      cloudflareId: string;
      verdicts: SourceVerdict[];
      kept?: number;
    }
  | { status: 'failed'; outcome: { reason: string; message: string; verdicts: SourceVerdict[] } };

/** Nothing a sync reads from the registration differs: it would sync the same. */
export function sameRegistration(a: SourceRegistration, b: SourceRegistration): boolean {
  return (
    a.uid === b.uid &&
    a.generation === b.generation &&
    a.credentials === b.credentials &&
    a.anchor === b.anchor &&
    a.view === b.view &&
    String(a.subzones ?? '') === String(b.subzones ?? '')
  );
}

/**
 * A source registering again unchanged (its silence timer, or its workflow starting over) while
 * registered, not leaving, and already reported to: its last report answers it, no sync needed.
 */
export function answeredByLastReport(
  known: SourceRegistration | undefined,
  incoming: SourceRegistration,
  leaving: boolean,
  reported: boolean,
): boolean {
  return known !== undefined && !leaving && reported && sameRegistration(known, incoming);
}

/** Why a sync runs after a wait: a user's `reaggregate` first, then a change that ended the wait, else the observation. */
export function syncTrigger(reaggregate: boolean, woke: boolean): SyncTrigger {
  if (reaggregate) return 'reaggregate';
  return woke ? 'change' : 'observe';
}

/**
 * How long to wait for the burst of changes to go quiet: one quiet window, but never past
 * `maxDebounceMs` since the burst began; undefined once that is used up (sync now).
 */
export function quietWindowMs(startedMs: number, nowMs: number, debounceMs: number, maxDebounceMs: number) {
  const left = maxDebounceMs - (nowMs - startedMs);
  return left <= 0 ? undefined : Math.min(debounceMs, left);
}

/** When the next observation is due, as a wait from now (at least 1 ms: a timer of 0 is no timer). */
export function untilObservationMs(observeAtMs: number, nowMs: number): number {
  return Math.max(1, observeAtMs - nowMs);
}

/** The report of one source's verdict in a sync that went through. */
export function reportOf(v: SourceVerdict, cloudflareId: string, from: ReportedFrom): SyncReport {
  // Not written with its own credentials, or refused by Cloudflare while the others were
  // written: a failure of that source only, shown as such.
  if (v.result === 'CredentialsConflict' || v.result === 'Rejected')
    return {
      ...from,
      result: 'Failed',
      generation: v.generation,
      reason: v.result === 'Rejected' ? (v.reason ?? 'CloudflareInvalid') : 'CredentialsConflict',
      message: v.message,
    };
  const result = v.result === 'Synced' ? 'Synced' : v.result === 'Invalid' ? 'Invalid' : 'Conflict';
  // `Conflict`: nothing of the source could be written; `PartialConflict`: some of its items could not.
  const reason =
    v.result === 'Synced'
      ? 'Synced'
      : v.result === 'Invalid'
        ? 'InvalidSpec'
        : v.allHeld === false
          ? 'PartialConflict'
          : 'Conflict';
  // A pending ID is a placeholder until Cloudflare assigns one: not shown.
  const known = result === 'Synced' && !cloudflareId.startsWith('pending-');
  return { ...from, result, generation: v.generation, reason, message: v.message, ...(known ? { cloudflareId } : {}) };
}

/** What a sync's answer tells the sources, in the order they are told. */
export interface SyncReports {
  reports: Array<[SourceRef, SyncReport]>;
  /** Sources whose object is gone: their items went with this sync, they are no longer registered. */
  gone: SourceRef[];
}

/**
 * The reports of one sync: each registered source's verdict (a gone one or one that moved
 * elsewhere is told nothing here), then `Removed` to each source this sync removed; when the sync
 * failed, `Failed` to every source it was about, removed ones included (their items may remain).
 */
export function reportsOf(answer: SyncAnswer, removing: readonly SourceRef[], from: ReportedFrom): SyncReports {
  const reports: Array<[SourceRef, SyncReport]> = [];
  const gone: SourceRef[] = [];
  if (answer.status === 'ok') {
    for (const v of answer.verdicts)
      if (v.result === 'Gone') gone.push(v.ref);
      else if (v.result !== 'Elsewhere') reports.push([v.ref, reportOf(v, answer.cloudflareId, from)]);
    const removed = `no longer in ${from.target}`;
    for (const ref of removing)
      reports.push([ref, { ...from, result: 'Removed', generation: 0, reason: 'Removed', message: removed }]);
    return { reports, gone };
  }
  const { reason, message, verdicts } = answer.outcome;
  const failed = (generation: number): SyncReport => ({ ...from, result: 'Failed', generation, reason, message });
  for (const v of verdicts)
    if (v.result === 'CredentialsConflict') reports.push([v.ref, reportOf(v, '', from)]);
    else if (v.result !== 'Gone' && v.result !== 'Elsewhere') reports.push([v.ref, failed(v.generation)]);
  for (const ref of removing) reports.push([ref, failed(0)]);
  return { reports, gone };
}

/** What a source was told, as far as a repeat would show it nothing new. */
export function reportFingerprint(report: SyncReport): string {
  return `${report.result}|${report.generation}|${report.message}`;
}

/** A report is sent unless the source was told the same already; a removal always (it ends the source's wait). */
export function needsSending(lastSent: string | undefined, report: SyncReport): boolean {
  return report.result === 'Removed' || lastSent !== reportFingerprint(report);
}

/** One line on the last sync, for the state query and the Web UI. */
export function lastResultOf(answer: SyncAnswer): string {
  if (answer.status === 'failed') return `failed: ${answer.outcome.message}`;
  if (answer.wrote) return `wrote ${answer.counts.desired} managed item(s)${answer.drifted ? ' (repaired drift)' : ''}`;
  if (answer.driftLeft) return `drift observed, left as is: ${answer.differences.slice(0, 3).join('; ')}`;
  return 'no change needed';
}

/** The facts the target's end depends on, after a sync. */
export interface TargetFacts {
  registered: number;
  leaving: number;
  synced: boolean;
  /** Sources the SyncState still lists that will register (their items are kept meanwhile). */
  keepsListedSources: boolean;
}

/** Nothing of the target's sources is left in Cloudflare, and none is still to come: it may end (after a grace). */
export function targetEmptied(f: TargetFacts): boolean {
  return f.registered === 0 && f.leaving === 0 && f.synced && !f.keepsListedSources;
}

/** The run's current details (Temporal's Web UI): the last sync, its sources, what differed. */
export function syncDetails(
  answer: SyncAnswer,
  trigger: SyncTrigger,
  lastResult: string,
  syncState: string,
  configVersion: number,
  sourceKeys: readonly string[],
): string {
  const verdict = answer.status === 'ok' ? (answer.wrote ? 'wrote' : 'in sync') : 'failed';
  const sorted = [...sourceKeys].sort();
  return [
    `**${verdict}** (${trigger}) — ${lastResult}`,
    `SyncState \`${syncState}\`, configVersion ${configVersion}, ${sorted.length} source(s):`,
    ...sorted.slice(0, 20).map((k) => `- ${k}`),
    ...(sorted.length > 20 ? [`- … and ${sorted.length - 20} more`] : []),
    ...(answer.status === 'ok' && answer.differences.length
      ? ['', 'Differences found:', ...answer.differences.slice(0, 10).map((d) => `- ${d}`)]
      : []),
  ].join('\n');
}
