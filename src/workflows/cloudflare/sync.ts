/**
 * One workflow per Cloudflare target (`cloudflare-sync/<resourceType>/<target>`): the only
 * writer of that target's Cloudflare object and of its CloudflareSyncState, so concurrent source
 * changes never race (the original's optimistic-lock storms on the SyncState cannot happen).
 *
 * Sources register and unregister by signal; a burst of changes within the quiet window
 * (default 500 ms, at most `maxDebounceMs`) becomes one sync; each sync is one activity: fresh
 * read of the sources, GET, merge, at most one write, status. A durable timer observes the
 * target every `observeIntervalMs` to catch drift. The result goes back to every source whose
 * result changed (`syncReported`). When the last source has gone and Cloudflare no longer shows
 * its items, the SyncState is deleted and the workflow ends.
 */
import {
  CancellationScope,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  isCancellation,
  log,
  patched,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { SourceVerdict, SyncResult, SyncTargetRequest } from '../../activities/cloudflare/sync.js';
import { type SourceRef, refString } from '../../domain/cloudflare/markers.js';
import { observeTaskQueue, sourceWorkflowId, syncStateName, targetKey } from '../../domain/cloudflare/targets.js';
import { CloudflareSources } from '../../temporal/search-attributes.js';
import { cloudflareCalls } from './activity-options.js';
import {
  reaggregateSignal,
  registerSourceSignal,
  syncReportedSignal,
  syncStateQuery,
  unregisterSourceSignal,
  type SourceRegistration,
  type SourceRemoval,
  type SyncReport,
  type SyncStateView,
  type SyncWorkflowInput,
} from './messages.js';

/** How long an empty target waits for a new source before it ends (a late registration restarts it anyway). */
const EMPTY_GRACE_MS = 30_000;

// Patches (src/workflows/patches.ts has each one's release and stage).
/** A source's repeated registration at a silence is answered with the last result, not a new sync. */
const QUIET_REREGISTRATION = 'sync-quiet-reregistration';
/** A source that registers again is told the next result even when unchanged. */
const TELLS_EACH_REGISTRANT = 'sync-tells-each-registrant';
/** Periodic observations run on the account's observe queue. */
const OBSERVE_QUEUE = 'sync-observe-queue';
/** Sources the SyncState still lists are waited for before the target counts as done. */
const WAITS_FOR_KEPT_SOURCES = 'sync-waits-for-kept-sources';
/** A change cancels a running observation. */
const CHANGE_CANCELS_OBSERVATION = 'sync-change-cancels-observation';

export async function cloudflareSyncWorkflow(input: SyncWorkflowInput): Promise<void> {
  const { target, settings } = input;
  const key = targetKey(target);
  const syncState = syncStateName(target);
  const api = cloudflareCalls(settings.cloudflareTaskQueue);
  /** Periodic observations run on their own queue, behind no change (issue 23, D7). */
  const observeApi = cloudflareCalls(observeTaskQueue(settings.cloudflareTaskQueue));
  const sources = new Map<string, SourceRegistration>((input.sources ?? []).map((r) => [refString(r.ref), r]));
  const removals = new Map<string, SourceRemoval>((input.pendingRemovals ?? []).map((r) => [refString(r), r]));
  let credentials = input.credentials;
  let lastDigest = input.lastDigest;
  let configVersion = input.configVersion ?? 0;
  let changed = sources.size > 0 || removals.size > 0;
  let reaggregate = false;
  /** What each source was last told (result + generation), so unchanged results are not re-sent. */
  const told = new Map<string, string>();
  /**
   * The last report each source was given, and the sources that registered again unchanged since
   * (silence, or their workflow starting over): they are told it again without a sync — the cost
   * of an idle target is its observation, not its sources' re-registrations.
   */
  const lastReports = new Map<string, SyncReport>();
  const retell = new Set<string>();
  const quietReregistration = patched(QUIET_REREGISTRATION);
  /** When the next observation is due: re-tellings do not put it off. */
  let observeAt = Date.now() + settings.observeIntervalMs;
  const view: SyncStateView = { target: key, syncState, sources: [], configVersion };

  setHandler(registerSourceSignal, (reg) => {
    const k = refString(reg.ref);
    const known = sources.get(k);
    if (quietReregistration && known && !removals.has(k) && lastReports.has(k) && sameRegistration(known, reg)) {
      retell.add(k);
      return;
    }
    sources.set(k, reg);
    removals.delete(k);
    credentials = reg.credentials;
    changed = true;
    // A source registers again after its workflow continued as new or restarted, and shows
    // `Syncing` until told: the next result goes to it even when unchanged.
    if (patched(TELLS_EACH_REGISTRANT)) told.delete(k);
  });
  setHandler(unregisterSourceSignal, ({ ref, uid, orphan }) => {
    const k = refString(ref);
    const current = sources.get(k);
    if (current && current.uid !== uid) return; // a newer object of the same name registered since
    sources.delete(k);
    removals.set(k, orphan ? { ...ref, orphan } : ref);
    told.delete(k);
    lastReports.delete(k);
    retell.delete(k);
    changed = true;
  });
  setHandler(reaggregateSignal, () => {
    reaggregate = true;
  });
  setHandler(syncStateQuery, () => ({ ...view, sources: [...sources.keys()], configVersion }));

  let indexedSources = '';
  for (;;) {
    const woke = await condition(
      () => changed || reaggregate || retell.size > 0,
      quietReregistration ? Math.max(1, observeAt - Date.now()) : settings.observeIntervalMs,
    );
    if (woke && !changed && !reaggregate) {
      // Only unchanged re-registrations: their last result again, no Cloudflare call.
      const again = [...retell];
      retell.clear();
      await Promise.all(
        again.map((k) => {
          told.delete(k);
          const reg = sources.get(k);
          const report = lastReports.get(k);
          return reg && report ? tell(reg.ref, report) : undefined;
        }),
      );
      continue;
    }
    retell.clear(); // a sync follows: every registrant is told its result
    observeAt = Date.now() + settings.observeIntervalMs;
    let trigger: 'change' | 'observe' | 'reaggregate' = reaggregate ? 'reaggregate' : woke ? 'change' : 'observe';
    if (trigger === 'change') {
      // Debounce: wait for a quiet window, but never longer than maxDebounceMs in all.
      const started = Date.now();
      for (;;) {
        changed = false;
        const left = settings.maxDebounceMs - (Date.now() - started);
        if (left <= 0) break;
        const more = await condition(() => changed || reaggregate, Math.min(settings.debounceMs, left));
        if (!more) break;
        if (reaggregate) trigger = 'reaggregate';
      }
    }
    changed = false;
    reaggregate = false;
    if (!credentials) continue; // no source has registered yet: nothing to write with

    const names = [...sources.keys()].sort();
    if (names.join('\n') !== indexedSources) {
      indexedSources = names.join('\n');
      upsertSearchAttributes([{ key: CloudflareSources, value: names }]);
    }
    const gone = [...removals.values()];
    const request: SyncTargetRequest = {
      target,
      credentials,
      syncState,
      sources: [...sources.values()],
      removing: gone,
      trigger,
      lastDigest,
      configVersion,
      clusterId: settings.clusterId,
      adoptLegacyMarkers: settings.adoptLegacyMarkers,
      driftPolicy: settings.driftPolicy,
    };
    const result =
      trigger === 'observe' && patched(OBSERVE_QUEUE)
        ? await observeUnlessChanged(request)
        : await api.syncTarget(request);
    // A change came during the observation: its sync, next, reads the target again.
    if (!result) continue;

    const reports: Array<[SourceRef, SyncReport]> = [];
    if (result.status === 'ok') {
      lastDigest = result.digest;
      configVersion = result.configVersion;
      view.lastResult = result.wrote
        ? `wrote ${result.counts.desired} managed item(s)${result.drifted ? ' (repaired drift)' : ''}`
        : result.driftLeft
          ? `drift observed, left as is: ${result.differences.slice(0, 3).join('; ')}`
          : 'no change needed';
      if (result.wrote) view.lastWrite = `${trigger}: configVersion ${configVersion}`;
      for (const v of result.verdicts) {
        if (v.result === 'Gone') {
          sources.delete(refString(v.ref)); // its object is gone: its items went with this sync
          continue;
        }
        if (v.result === 'Elsewhere') continue;
        reports.push([v.ref, reportOf(v, result.cloudflareId)]);
      }
      for (const ref of gone) {
        removals.delete(refString(ref));
        reports.push([
          ref,
          {
            target: key,
            syncState,
            result: 'Removed',
            generation: 0,
            reason: 'Removed',
            message: `no longer in ${key}`,
          },
        ]);
      }
    } else {
      view.lastResult = `failed: ${result.outcome.message}`;
      const failed = (ref: SourceRef, generation: number): [SourceRef, SyncReport] => [
        ref,
        {
          target: key,
          syncState,
          result: 'Failed',
          generation,
          reason: result.outcome.reason,
          message: result.outcome.message,
        },
      ];
      for (const v of result.outcome.verdicts)
        if (v.result === 'CredentialsConflict') reports.push([v.ref, reportOf(v, '')]);
        else if (v.result !== 'Gone' && v.result !== 'Elsewhere') reports.push(failed(v.ref, v.generation));
      for (const ref of gone) reports.push(failed(ref, 0));
    }
    for (const [ref, report] of reports)
      if (report.result === 'Removed') lastReports.delete(refString(ref));
      else lastReports.set(refString(ref), report);
    await Promise.all(reports.map(([ref, report]) => tell(ref, report)));
    setCurrentDetails(
      [
        `**${result.status === 'ok' ? (result.wrote ? 'wrote' : 'in sync') : 'failed'}** (${trigger}) — ${view.lastResult}`,
        `SyncState \`${syncState}\`, configVersion ${configVersion}, ${sources.size} source(s):`,
        ...[...sources.keys()]
          .sort()
          .slice(0, 20)
          .map((k) => `- ${k}`),
        ...(sources.size > 20 ? [`- … and ${sources.size - 20} more`] : []),
        ...(result.status === 'ok' && result.differences.length
          ? ['', 'Differences found:', ...result.differences.slice(0, 10).map((d) => `- ${d}`)]
          : []),
      ].join('\n'),
    );

    // Sources it still keeps (listed on the SyncState, not registered yet) will register: not done.
    const keeps = result.status === 'ok' && !!result.kept && patched(WAITS_FOR_KEPT_SOURCES);
    if (sources.size === 0 && removals.size === 0 && result.status === 'ok' && !keeps) {
      // Nothing of ours is left in Cloudflare. Wait a little for a newcomer, then end.
      if (!(await condition(() => changed || reaggregate, EMPTY_GRACE_MS))) {
        await api.deleteSyncState({ syncState });
        await condition(() => true);
        if (!changed && !reaggregate) return;
      }
    }
    if (workflowInfo().continueAsNewSuggested) {
      await condition(() => true);
      await continueAsNew<typeof cloudflareSyncWorkflow>({
        target,
        settings,
        sources: [...sources.values()],
        pendingRemovals: [...removals.values()],
        credentials,
        lastDigest,
        configVersion,
      });
    }
  }

  /**
   * A periodic observation that gives way to a change (issue 23, D7): the workflow is its
   * target's one writer, so while an observation runs (its calls waiting for the user's API
   * budget behind other targets' observations, or Cloudflare slow to answer) a change could only
   * be synced after it. A change (or a `reaggregate`) arriving meanwhile cancels the observation's
   * activity and waits for the cancellation to complete (activity-options.ts): its calls are
   * aborted, it records nothing, and no call of it runs next to the change's sync, which reads the
   * target again (what the observation was for); the next observation is due an interval later.
   * Undefined when cancelled so; an observation that finished first is its result as before.
   */
  async function observeUnlessChanged(request: SyncTargetRequest): Promise<SyncResult | undefined> {
    let interrupted = false;
    const scope = new CancellationScope();
    try {
      return await scope.run(async () => {
        void condition(() => changed || reaggregate).then(
          () => {
            if (!patched(CHANGE_CANCELS_OBSERVATION)) return;
            interrupted = true;
            scope.cancel();
          },
          () => undefined, // the observation ended first: the watch is dropped with the scope
        );
        try {
          return await observeApi.syncTarget(request);
        } finally {
          if (!interrupted) scope.cancel();
        }
      });
    } catch (err) {
      if (interrupted) return undefined;
      throw err;
    }
  }

  function sameRegistration(a: SourceRegistration, b: SourceRegistration): boolean {
    return (
      a.uid === b.uid &&
      a.generation === b.generation &&
      a.credentials === b.credentials &&
      a.anchor === b.anchor &&
      a.view === b.view &&
      String(a.subzones ?? '') === String(b.subzones ?? '')
    );
  }

  function reportOf(v: SourceVerdict, cloudflareId: string): SyncReport {
    // Not written with its own credentials, or refused by Cloudflare while the others were
    // written: a failure of that source only, shown as such.
    if (v.result === 'CredentialsConflict' || v.result === 'Rejected')
      return {
        target: key,
        syncState,
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
    const known = result === 'Synced' && !cloudflareId.startsWith('pending-');
    return {
      target: key,
      syncState,
      result,
      generation: v.generation,
      reason,
      message: v.message,
      ...(known ? { cloudflareId } : {}),
    };
  }

  /** Reports to a source's workflow when its result changed; a source without a running workflow is skipped. */
  async function tell(ref: SourceRef, report: SyncReport): Promise<void> {
    const k = refString(ref);
    const fingerprint = `${report.result}|${report.generation}|${report.message}`;
    if (told.get(k) === fingerprint && report.result !== 'Removed') return;
    try {
      await getExternalWorkflowHandle(sourceWorkflowId(ref)).signal(syncReportedSignal, report);
      told.set(k, fingerprint);
    } catch (err) {
      // A source whose workflow has ended (its object is gone) is not an error; a cancellation is.
      if (isCancellation(err)) throw err;
      log.info('source workflow not running; result not reported', { source: k, error: (err as Error).message });
    }
  }
}
