/**
 * One workflow per Cloudflare target (`cloudflare-sync/<resourceType>/<target>`): the only
 * writer of that target's Cloudflare object and of its CloudflareSyncState, so concurrent source
 * changes never race on either.
 *
 * Sources register and unregister by signal; a burst of changes within the quiet window
 * (default 500 ms, at most `maxDebounceMs`) becomes one sync; each sync is one activity: fresh
 * read of the sources, GET, merge, at most one write, status. A durable timer observes the
 * target every `observeIntervalMs` to catch drift. The result goes back to every source whose
 * result changed (`syncReported`). When the last source has gone and Cloudflare no longer shows
 * its items, the SyncState is deleted and the workflow ends.
 *
 * An entity run (../entity.ts): `SyncRun` holds the state, its handlers only record, each pass is
 * one sync; the decisions are src/domain/cloudflare/sync-run.ts's.
 */
import {
  CancellationScope,
  allHandlersFinished,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  log,
  patched,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { SyncResult, SyncTargetRequest } from '../../activities/cloudflare/sync.js';
import { type SourceRef, refString } from '../../domain/cloudflare/markers.js';
import type { SyncTrigger } from '../../domain/cloudflare/sync-plan.js';
import {
  answeredByLastReport,
  lastResultOf,
  needsSending,
  quietWindowMs,
  reportFingerprint,
  reportsOf,
  syncDetails,
  syncTrigger,
  targetEmptied,
  untilObservationMs,
  type ReportedFrom,
} from '../../domain/cloudflare/sync-run.js';
import { observeTaskQueue, sourceWorkflowId, syncStateName, targetKey } from '../../domain/cloudflare/targets.js';
import { CloudflareSources } from '../../temporal/search-attributes.js';
import { EntityRun, runEntity, type Next, type Wait } from '../entity.js';
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

type Removal = { ref: SourceRef; uid: string; orphan?: boolean };

export class SyncRun extends EntityRun<void, SyncWorkflowInput> {
  private readonly sources: Map<string, SourceRegistration>;
  private readonly removals: Map<string, SourceRemoval>;
  private credentials?: string;
  private lastDigest?: string;
  private configVersion: number;
  /** A user's `reaggregate`: the next sync is a full GET-merge-write, debounce or not. */
  private reaggregateRequested = false;
  /** What each source was last sent (`reportFingerprint`), so an unchanged result is not sent again. */
  private readonly lastSent = new Map<string, string>();
  /** Each source's last report: a source registering again unchanged is sent it, with no sync. */
  private readonly lastReports = new Map<string, SyncReport>();
  /** Sources that registered again unchanged since the last sync. */
  private readonly repeatedRegistrations = new Set<string>();
  /** Runs from before QUIET_REREGISTRATION sync at every registration, and observe every full interval. */
  private readonly answersRepeats: boolean;
  /** When the next observation is due: answering repeats does not put it off. */
  private observeAtMs: number;
  private indexedSources = '';
  private readonly from: ReportedFrom;
  private lastResult?: string;
  private lastWrite?: string;
  private readonly calls: ReturnType<typeof cloudflareCalls>;
  /** Periodic observations run on their own queue, behind no change. */
  private readonly observeCalls: ReturnType<typeof cloudflareCalls>;

  constructor(private readonly input: SyncWorkflowInput) {
    super();
    const { settings } = input;
    this.sources = new Map((input.sources ?? []).map((r) => [refString(r.ref), r]));
    this.removals = new Map((input.pendingRemovals ?? []).map((r) => [refString(r), r]));
    this.credentials = input.credentials;
    this.lastDigest = input.lastDigest;
    this.configVersion = input.configVersion ?? 0;
    // A continued run syncs first: what it carried may not be written yet.
    this.needsReconcile = this.sources.size > 0 || this.removals.size > 0;
    this.answersRepeats = patched(QUIET_REREGISTRATION);
    this.observeAtMs = Date.now() + settings.observeIntervalMs;
    this.from = { target: targetKey(input.target), syncState: syncStateName(input.target) };
    this.calls = cloudflareCalls(settings.cloudflareTaskQueue);
    this.observeCalls = cloudflareCalls(observeTaskQueue(settings.cloudflareTaskQueue));
  }

  /** `registerSource`: a new or changed registration is a hint; an unchanged one only asks for its last report. */
  register(registration: SourceRegistration): void {
    const key = refString(registration.ref);
    const known = this.sources.get(key);
    if (
      this.answersRepeats &&
      answeredByLastReport(known, registration, this.removals.has(key), this.lastReports.has(key))
    ) {
      this.recorded();
      this.repeatedRegistrations.add(key);
      return;
    }
    this.sources.set(key, registration);
    this.removals.delete(key);
    this.credentials = registration.credentials;
    this.hint();
    // A source registers again after its workflow continued as new or restarted, and shows
    // `Syncing` until told: the next result goes to it even when unchanged.
    if (patched(TELLS_EACH_REGISTRANT)) this.lastSent.delete(key);
  }

  /** `unregisterSource`: the source leaves; its items go (or stay, `orphan`) with the next sync. */
  unregister({ ref, uid, orphan }: Removal): void {
    this.recorded();
    const key = refString(ref);
    const current = this.sources.get(key);
    if (current && current.uid !== uid) return; // a newer object of the same name registered since
    this.sources.delete(key);
    this.removals.set(key, orphan ? { ...ref, orphan } : ref);
    this.lastSent.delete(key);
    this.lastReports.delete(key);
    this.repeatedRegistrations.delete(key);
    this.hint();
  }

  /** `reaggregate`, from a user. */
  reaggregate(): void {
    this.recorded();
    this.reaggregateRequested = true;
  }

  view(): SyncStateView {
    const { target, syncState } = this.from;
    const { lastResult, lastWrite, configVersion } = this;
    return {
      target,
      syncState,
      sources: [...this.sources.keys()],
      configVersion,
      ...(lastResult !== undefined && { lastResult }),
      ...(lastWrite !== undefined && { lastWrite }),
    };
  }

  private changedOrReaggregated(): boolean {
    return this.needsReconcile || this.reaggregateRequested;
  }

  /** The wait between syncs: until a change, a repeated registration, a `reaggregate`, or the next observation. */
  untilDue(): Wait {
    const { observeIntervalMs } = this.input.settings;
    return {
      waitMs: this.answersRepeats ? () => untilObservationMs(this.observeAtMs, Date.now()) : observeIntervalMs,
      wakeWhen: () => this.changedOrReaggregated() || this.repeatedRegistrations.size > 0,
    };
  }

  /** One pass after `untilDue`: repeats answered, or debounce → sync → reports → end when emptied. */
  async reconcile(): Promise<Next<void>> {
    // Signals are applied before timers in an activation: what is pending is what ended the wait.
    const woke = this.changedOrReaggregated() || this.repeatedRegistrations.size > 0;
    if (woke && !this.changedOrReaggregated()) {
      await this.answerRepeatedRegistrations();
      return this.untilDue();
    }
    this.repeatedRegistrations.clear(); // a sync follows: every registrant is sent its result
    this.observeAtMs = Date.now() + this.input.settings.observeIntervalMs;
    const trigger = await this.debounce(syncTrigger(this.reaggregateRequested, woke));
    this.needsReconcile = false;
    this.reaggregateRequested = false;
    if (!this.credentials) return this.untilDue(); // no source has registered yet: nothing to write with
    this.indexSources();
    const request = this.requestOf(this.credentials, trigger);
    const result =
      trigger === 'observe' && patched(OBSERVE_QUEUE)
        ? await this.observeUnlessChanged(request)
        : await this.calls.syncTarget(request);
    // A change came during the observation: its sync, next, reads the target again.
    if (!result) return this.untilDue();
    await this.report(result, request);
    // Sources it still keeps (listed on the SyncState, not registered yet) will register: not done.
    const keepsListedSources = result.status === 'ok' && !!result.kept && patched(WAITS_FOR_KEPT_SOURCES);
    const emptied = targetEmptied({
      registered: this.sources.size,
      leaving: this.removals.size,
      synced: result.status === 'ok',
      keepsListedSources,
    });
    if (emptied && (await this.endsEmpty())) return { done: undefined };
    if (workflowInfo().continueAsNewSuggested) return { continueAsNew: true };
    return this.untilDue();
  }

  /** Waits out a burst of changes (src/domain/cloudflare/sync-run.ts); a `reaggregate` meanwhile makes it one. */
  private async debounce(trigger: SyncTrigger): Promise<SyncTrigger> {
    if (trigger !== 'change') return trigger;
    const { debounceMs, maxDebounceMs } = this.input.settings;
    const started = Date.now();
    for (;;) {
      this.needsReconcile = false;
      const window = quietWindowMs(started, Date.now(), debounceMs, maxDebounceMs);
      if (window === undefined) return trigger;
      if (!(await condition(() => this.changedOrReaggregated(), window))) return trigger;
      if (this.reaggregateRequested) trigger = 'reaggregate';
    }
  }

  /** The `CloudflareSources` search attribute, upserted when the registered sources changed. */
  private indexSources(): void {
    const names = [...this.sources.keys()].sort();
    if (names.join('\n') === this.indexedSources) return;
    this.indexedSources = names.join('\n');
    upsertSearchAttributes([{ key: CloudflareSources, value: names }]);
  }

  private requestOf(credentials: string, trigger: SyncTrigger): SyncTargetRequest {
    const { target, settings } = this.input;
    return {
      target,
      credentials,
      syncState: this.from.syncState,
      sources: [...this.sources.values()],
      removing: [...this.removals.values()],
      trigger,
      lastDigest: this.lastDigest,
      configVersion: this.configVersion,
      clusterId: settings.clusterId,
      adoptLegacyMarkers: settings.adoptLegacyMarkers,
      driftPolicy: settings.driftPolicy,
    };
  }

  /**
   * A periodic observation that gives way to a change: the workflow is its target's one writer,
   * so a change arriving while an observation runs (waiting for the account's API budget, or on a
   * slow Cloudflare) cancels the observation's activity and waits until it has stopped
   * (activity-options.ts) — nothing of it is recorded, and the change's sync reads the target
   * again. Undefined when cancelled so; an observation that finished first is its result.
   */
  private async observeUnlessChanged(request: SyncTargetRequest): Promise<SyncResult | undefined> {
    let interrupted = false;
    const scope = new CancellationScope();
    try {
      return await scope.run(async () => {
        void condition(() => this.changedOrReaggregated()).then(
          () => {
            if (!patched(CHANGE_CANCELS_OBSERVATION)) return;
            interrupted = true;
            scope.cancel();
          },
          () => undefined, // the observation ended first: the watch is dropped with the scope
        );
        try {
          return await this.observeCalls.syncTarget(request);
        } finally {
          if (!interrupted) scope.cancel();
        }
      });
    } catch (err) {
      if (interrupted) return undefined;
      throw err;
    }
  }

  /** Records the sync's answer and sends each source its report (src/domain/cloudflare/sync-run.ts decides them). */
  private async report(result: SyncResult, request: SyncTargetRequest): Promise<void> {
    const removing = request.removing ?? [];
    const { reports, gone } = reportsOf(result, removing, this.from);
    this.lastResult = lastResultOf(result);
    if (result.status === 'ok') {
      this.lastDigest = result.digest;
      this.configVersion = result.configVersion;
      if (result.wrote) this.lastWrite = `${request.trigger}: configVersion ${this.configVersion}`;
      for (const ref of gone) this.sources.delete(refString(ref));
      for (const ref of removing) this.removals.delete(refString(ref));
    }
    for (const [ref, report] of reports)
      if (report.result === 'Removed') this.lastReports.delete(refString(ref));
      else this.lastReports.set(refString(ref), report);
    await Promise.all(reports.map(([ref, report]) => this.send(ref, report)));
    const { syncState } = this.from;
    const sourceKeys = [...this.sources.keys()];
    setCurrentDetails(syncDetails(result, request.trigger, this.lastResult, syncState, this.configVersion, sourceKeys));
  }

  /** Repeated registrations only: each is sent its last report again, no Cloudflare call. */
  private async answerRepeatedRegistrations(): Promise<void> {
    const repeated = [...this.repeatedRegistrations];
    this.repeatedRegistrations.clear();
    await Promise.all(
      repeated.map((key) => {
        this.lastSent.delete(key);
        const registration = this.sources.get(key);
        const report = this.lastReports.get(key);
        return registration && report ? this.send(registration.ref, report) : undefined;
      }),
    );
  }

  /**
   * Nothing of the target is left: waits a little for a newcomer, else deletes the SyncState.
   * True when the run ends; a source that registered meanwhile keeps it going.
   */
  private async endsEmpty(): Promise<boolean> {
    if (await condition(() => this.changedOrReaggregated(), EMPTY_GRACE_MS)) return false;
    await this.calls.deleteSyncState({ syncState: this.from.syncState });
    await condition(allHandlersFinished); // a registration that came with the deletion's answer is seen first
    return !this.changedOrReaggregated();
  }

  /** Sends a source its report unless it was sent the same; a source without a running workflow is skipped. */
  private async send(ref: SourceRef, report: SyncReport): Promise<void> {
    const key = refString(ref);
    if (!needsSending(this.lastSent.get(key), report)) return;
    try {
      await getExternalWorkflowHandle(sourceWorkflowId(ref)).signal(syncReportedSignal, report);
      this.lastSent.set(key, reportFingerprint(report));
    } catch (err) {
      // A source whose workflow has ended (its object is gone) is not an error; a cancellation is.
      if (isCancellation(err)) throw err;
      log.info('source workflow not running; result not reported', { source: key, error: (err as Error).message });
    }
  }

  /** Continues as new right after a sync Temporal suggested it for (`reconcile`), as its recorded runs do. */
  protected onKitRule(): boolean {
    return false;
  }

  carry(): SyncWorkflowInput {
    const { target, settings } = this.input;
    return {
      target,
      settings,
      sources: [...this.sources.values()],
      pendingRemovals: [...this.removals.values()],
      credentials: this.credentials,
      lastDigest: this.lastDigest,
      configVersion: this.configVersion,
    };
  }
}

export async function cloudflareSyncWorkflow(input: SyncWorkflowInput): Promise<void> {
  const run = new SyncRun(input);
  setHandler(registerSourceSignal, (registration) => run.register(registration));
  setHandler(unregisterSourceSignal, (removal) => run.unregister(removal));
  setHandler(reaggregateSignal, () => run.reaggregate());
  setHandler(syncStateQuery, () => run.view());
  // Every pass follows a wait: a change, a repeated registration, a `reaggregate` or the observation.
  await run.wait(run.untilDue());
  return runEntity(run);
}
