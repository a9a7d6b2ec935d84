/**
 * One workflow per Cloudflare source object (`cloudflare-source/<Kind>/<namespace>/<name>`),
 * started by the watcher: validate the spec, resolve credentials (and the zone), register with
 * every target the source feeds, and show on the source's own status what Cloudflare shows.
 * Deletion goes through the finalizer: unregister, wait until each target reports the items gone
 * from Cloudflare, release.
 *
 * A wrong spec (bad CIDR, empty expression…) is reported on the status and registers nothing
 * new: what the source contributed before stays in Cloudflare until the spec is fixed or the
 * source deleted. Registration is re-sent when no report came for a while (a lost hint costs a
 * delay, never a stuck source).
 *
 * An entity run (../entity.ts): `SourceRun` holds the state and the pass; the decisions are
 * src/domain/cloudflare/source-run.ts's.
 */
import {
  CancellationScope,
  condition,
  isCancellation,
  patched,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { SourceSnapshot } from '../../activities/cloudflare/sources.js';
import {
  anchorOf,
  credentialsRefOf,
  credentialsUseOf,
  dnsHostnamesOf,
  isSourceKind,
  lifecycleOf,
  registrationHints,
  targetsOf,
  stateOf,
  statusFieldsOf,
  statusIdFieldOf,
  validateSource,
  waitingFor,
  zoneFromCredentials,
  zoneIdOf,
  zoneOf,
  type SourceKind,
  type SourceSpec,
} from '../../domain/cloudflare/sources.js';
import {
  NOTHING_TO_SYNC,
  NOT_REGISTERED,
  NO_PLACEMENT,
  anyRemoved,
  deletingReady,
  invalidSpecReady,
  placeStatusFields,
  registrationDue,
  repeatsRegistration,
  reportedReady,
  sameTargets,
  settledRegistration,
  shownAfterRegistration,
  sourceDetails,
  sourceZone,
  stillPending,
  syncingReady,
  targetsLeft,
  waitMs,
  type HostnamePlacement,
  type Registration,
  type SourceReady,
} from '../../domain/cloudflare/source-run.js';
import { credentialsUseRefusal } from '../../domain/cloudflare/credentials-use.js';
import { legacyCredentialsOf } from '../../domain/cloudflare/legacy-credentials.js';
import { syncStateName, targetKey, type SyncTarget } from '../../domain/cloudflare/targets.js';
import type { HostnameZone } from '../../domain/cloudflare/tunnels.js';
import { setCondition, type Condition } from '../../domain/conditions.js';
import { CloudflareTarget } from '../../temporal/search-attributes.js';
import { EntityRun, runEntity, type Next, type Wait } from '../entity.js';
import { cloudflareCalls, sourceSteps } from './activity-options.js';
import { sourceChangedSignal, syncReportedSignal, type SourceInput, type SyncReport } from './messages.js';

/** Retry of a resolution that failed for a reason outside the source (missing credentials, unknown zone). */
const RESOLVE_RETRY_MS = 30_000;
/** Retry of a source waiting for something another workflow makes (its tunnel's ID). */
const WAITING_RETRY_MS = 5_000;
/** Re-register when a target has not reported for this long (unless the input says otherwise). */
const REREGISTER_MS = 5 * 60_000;

// Patches (src/workflows/patches.ts has each one's release and stage).
/** A Tunnel's cloudflared Deployment: made after the tunnel, removed before it. */
const TUNNEL_CONNECTOR = 'tunnel-connector';
/** The Orphan annotation ends a tunnel removal Cloudflare refuses for now. */
const ORPHAN_ENDS_TUNNEL_REMOVAL = 'source-orphan-ends-tunnel-removal';
/** A registration repeated at a silence keeps the targets' last result (no `Syncing`). */
const QUIET_REREGISTRATION_KEEPS_STATUS = 'source-quiet-reregistration-keeps-status';
/** A silence keeps the zone IDs already resolved. */
const KEEPS_ZONE_ON_SILENCE = 'source-keeps-zone-on-silence';
/** A TunnelBinding's default priority is 100, as every hostname-claiming kind's. */
const BINDING_DEFAULT_PRIORITY_100 = 'binding-default-priority-100';
/** Each hostname's CNAME goes in the zone that holds it. */
const DNS_ZONE_PER_HOSTNAME = 'tunnel-dns-zone-per-hostname';
/** The Orphan annotation ends a deletion that is stuck. */
const ORPHAN_ENDS_STUCK_DELETION = 'source-orphan-ends-stuck-deletion';
/** A deletion waits on the reports themselves (a Removed during the status write counts). */
const DELETE_WAITS_ON_REPORTS = 'source-delete-waits-on-reports';
/** Continue-as-new by the entity kit's rule (at a quiet moment), carrying a registration a silence repeats. */
const CONTINUE_WHEN_QUIET = 'source-continue-when-quiet';

export interface SourceWorkflowState {
  targets?: SyncTarget[];
  /**
   * What the previous run registered and last wrote on the status (carried across
   * continue-as-new): the new run's first registration is a quiet one, and writes nothing.
   */
  settled?: { generation: number; view: string; status: string; conditions: Condition[] };
}

type SourceRunInput = SourceInput & SourceWorkflowState;
type SourceFound = SourceSnapshot & { status: 'ok' };
type Credentials = Extract<Awaited<ReturnType<typeof sourceSteps.resolveCloudflareCredentials>>, { status: 'ok' }>;
type Refused = { status: 'failed'; reason: string; message: string };
/** Where the source goes: its credentials, account and, per kind, zone, tunnel or hostnames' zones. */
type Resolved =
  | {
      status: 'ok';
      credentials: string;
      accountId: string;
      zoneId?: string;
      zoneName?: string;
      tunnelId?: string;
      dnsZones?: HostnameZone[];
      placement?: HostnamePlacement;
    }
  | Refused;

export class SourceRun extends EntityRun<void, SourceRunInput> {
  private readonly ref: SourceInput['ref'];
  private readonly kind: SourceKind;
  /** Each target's last report, by target key. */
  private readonly reports = new Map<string, SyncReport>();
  /** A report arrived since the pass began (it wakes the wait, as a hint does). */
  private reportArrived = false;
  private targets: SyncTarget[];
  private registered: Registration = NOT_REGISTERED;
  /** The registration a silence repeats (or the previous run's): sent again unchanged, it writes no `Syncing`. */
  private repeating?: Registration;
  private retryAtMs?: number;
  private conditions: Condition[];
  /** The key of the status last written (what, and for which generation): an equal write is skipped. */
  private lastStatus: string;
  /** The UID of the object last read (the tunnel lifecycle is pinned to it). */
  private uid = '';
  /** Zone IDs looked up in this run, by credentials, account and zone name. */
  private readonly zoneIds = new Map<string, string>();
  /** Where the hostnames' CNAMEs went at the last placement, by credentials, rules and view (one listing per change). */
  private placement?: { key: string; placed: HostnamePlacement };
  /** The placement last registered: its hostnames that get no CNAME, and why, show on the status. */
  private registeredPlacement: HostnamePlacement = NO_PLACEMENT;

  constructor(private readonly input: SourceRunInput) {
    super();
    this.ref = input.ref;
    this.kind = input.ref.kind as SourceKind;
    this.targets = input.targets ?? [];
    this.conditions = input.settled?.conditions ?? [];
    this.lastStatus = input.settled?.status ?? '';
    this.repeating = input.settled;
    this.historyBound = input.continueAfterEvents;
  }

  /** `syncReported`: a target's result for this source. */
  recordReport(report: SyncReport): void {
    this.recorded();
    this.reports.set(report.target, report);
    this.reportArrived = true;
  }

  /** Read → finalizer → register when due → show the targets' reports; a deletion runs to its end. */
  async reconcile(): Promise<Next<void>> {
    this.needsReconcile = false;
    this.reportArrived = false;
    const read = await sourceSteps.readCloudflareSource(this.ref);
    if (read.status === 'gone') {
      // Deleted without our finalizer (never registered) or already released: tell the targets anyway.
      for (const target of this.targets)
        await sourceSteps.unregisterCloudflareSource({ target, ref: this.ref, uid: '' });
      return { done: undefined };
    }
    this.uid = read.uid;
    if (read.deleting) {
      if (read.finalized) await this.delete(read); // else not ours to hold up
      return { done: undefined };
    }
    if (!read.finalized)
      await sourceSteps.setCloudflareSourceFinalizer({ ref: this.ref, uid: read.uid, present: true });
    const current = { generation: read.generation, view: viewOf(read) };
    if (registrationDue(this.registered, current, this.retryAtMs, Date.now())) await this.register(read);
    await this.showReports(read);
    return { waitMs: waitMs(this.retryAtMs, Date.now(), this.input.reregisterMs ?? REREGISTER_MS) };
  }

  /**
   * One `condition` on a hint or a report for the time left — also at 0 (a 1 ms timer), as the
   * source's recorded histories wait; at a silence the registration is repeated. True when quiet.
   */
  override async wait(next: Wait): Promise<boolean> {
    const woke = await condition(() => this.needsReconcile || this.reportArrived, next.waitMs as number);
    if (!woke && this.retryAtMs === undefined) this.repeatAtSilence();
    return !woke && !this.needsReconcile && !this.reportArrived;
  }

  /**
   * Silence: register again (a target whose workflow ended starts again; an unchanged
   * registration costs it no Cloudflare call). The zone stays as looked up: a lookup per source
   * every few minutes was most of an idle installation's API calls.
   */
  private repeatAtSilence(): void {
    this.repeating = this.registered;
    this.registered = NOT_REGISTERED;
    if (!patched(KEEPS_ZONE_ON_SILENCE)) this.zoneIds.clear();
    // A hostname no zone held may have one now (a zone added to the account): look again.
    if (this.registeredPlacement.unplacedCount) this.placement = undefined;
  }

  /** Validate → (wait | refuse | resolve) → register with the targets → show it. */
  private async register(read: SourceFound): Promise<void> {
    const { generation, spec } = read;
    const current = { generation, view: viewOf(read) };
    this.retryAtMs = undefined;
    const repeated = repeatsRegistration(this.repeating, current);
    this.repeating = undefined;
    const problems = validateSource(this.kind, spec, this.ref);
    const waiting = problems.length ? undefined : waitingFor(this.kind, spec);
    if (waiting) {
      this.retryAtMs = Date.now() + WAITING_RETRY_MS;
      return this.writeStatus(generation, { status: 'False', ...waiting });
    }
    if (problems.length) {
      this.registered = current;
      return this.writeStatus(generation, invalidSpecReady(problems, this.targets.length > 0));
    }
    const resolved = await this.resolve(spec, current.view);
    if (resolved.status === 'failed') {
      this.retryAtMs = Date.now() + RESOLVE_RETRY_MS;
      return this.writeStatus(generation, { status: 'False', reason: resolved.reason, message: resolved.message });
    }
    const keptTargets = await this.registerWithTargets(read, resolved);
    const syncStates = this.targets.map(syncStateName);
    const shown = shownAfterRegistration(syncStates, repeated, keptTargets);
    if (shown === 'nothing-to-sync') return this.writeStatus(generation, NOTHING_TO_SYNC);
    // The same registration again: the targets' last result stands.
    if (shown === 'unchanged' && patched(QUIET_REREGISTRATION_KEEPS_STATUS)) return;
    const fields = { ...placeStatusFields(resolved), ...statusFieldsOf(this.kind, spec) };
    await this.writeStatus(generation, syncingReady(syncStates), fields);
  }

  /**
   * Registers with every target of the resolved spec and leaves the targets it no longer feeds;
   * true when they are the targets it had.
   */
  private async registerWithTargets(read: SourceFound, resolved: Resolved & { status: 'ok' }): Promise<boolean> {
    const { uid, generation, spec } = read;
    const view = viewOf(read);
    const next = targetsOf(this.kind, spec, resolved, this.ref);
    const anchor = anchorOf(this.kind, spec);
    this.registeredPlacement = resolved.placement ?? NO_PLACEMENT;
    const { credentials } = resolved;
    for (const target of next) {
      const registration = { ref: this.ref, uid, generation, anchor, credentials, view };
      await sourceSteps.registerCloudflareSource({
        target,
        registration: { ...registration, ...registrationHints(target, resolved) },
      });
    }
    const kept = sameTargets(this.targets.map(targetKey), next.map(targetKey));
    for (const target of targetsLeft(this.targets, next, targetKey)) {
      await sourceSteps.unregisterCloudflareSource({ target, ref: this.ref, uid });
      this.reports.delete(targetKey(target));
    }
    this.targets = next;
    this.registered = { generation, view };
    upsertSearchAttributes([{ key: CloudflareTarget, value: this.targets.map(targetKey) }]);
    return kept;
  }

  /** What the targets report for the registered generation, on the status. */
  private async showReports(read: SourceFound): Promise<void> {
    const shown = reportedReady({
      generation: read.generation,
      registeredGeneration: this.registered.generation,
      retrying: this.retryAtMs !== undefined,
      reports: this.targets.map((t) => this.reports.get(targetKey(t))),
      syncStates: this.targets.map(syncStateName),
      unplaced: this.registeredPlacement.unplaced,
      unplacedCount: this.registeredPlacement.unplacedCount,
    });
    if (!shown) return;
    if (!shown.synced) return this.writeStatus(read.generation, shown.ready);
    const idField = statusIdFieldOf(this.kind);
    const id = shown.synced.cloudflareId;
    const fields = { ...statusFieldsOf(this.kind, read.spec), ...(idField && id ? { [idField]: id } : {}) };
    await this.writeStatus(read.generation, shown.ready, fields);
  }

  /** Writes Ready (and the kind's fields) unless the same was written last. */
  private async writeStatus(generation: number, ready: SourceReady, fields: Record<string, unknown> = {}) {
    const key = JSON.stringify([ready, fields, generation]);
    if (key === this.lastStatus) return;
    const targets = this.targets.map((t) => ({ key: targetKey(t), syncState: syncStateName(t) }));
    setCurrentDetails(sourceDetails(ready, generation, targets));
    const observedGeneration = generation;
    this.conditions = setCondition(this.conditions, { type: 'Ready', ...ready, observedGeneration }, new Date());
    const found = await sourceSteps.writeCloudflareSourceStatus({
      ref: this.ref,
      uid: this.uid,
      status: {
        conditions: this.conditions,
        observedGeneration,
        state: stateOf(this.kind, ready),
        message: ready.message,
        syncState: this.targets.map(syncStateName).join(',') || null,
        ...fields,
      },
    });
    if (found.status === 'ok') this.lastStatus = key;
  }

  // ---- resolving: credentials, their rules, the zone, the tunnel, the hostnames' zones ----

  /** Credentials, account and zone of the spec just read; `view` places a tunnel's hostnames again when it changes. */
  private async resolve(spec: SourceSpec, view: string): Promise<Resolved> {
    const { kind } = this;
    const creds = await sourceSteps.resolveCloudflareCredentials({
      name: credentialsRefOf(kind, spec),
      legacy: legacyCredentialsOf(spec),
    });
    if (creds.status === 'failed') return { status: 'failed', ...creds.outcome };
    const refused = this.useRefusal(spec, creds);
    if (refused) return { status: 'failed', ...refused };
    const zone = sourceZone({
      specZone: zoneOf(kind, spec),
      zoneFromCredentials: zoneFromCredentials(kind),
      defaultDomain: creds.defaultDomain,
      credentials: creds.credentials,
    });
    if ('refused' in zone) return { status: 'failed', ...zone.refused };
    let tunnelId: string | undefined;
    if (lifecycleOf(kind) === 'tunnel') {
      const tunnel = await this.ensureTunnel(creds);
      if (tunnel.status === 'failed') return tunnel;
      tunnelId = tunnel.tunnelId;
    }
    const account = { status: 'ok' as const, credentials: creds.credentials, accountId: creds.accountId };
    if (dnsHostnamesOf(kind, spec) !== undefined && patched(DNS_ZONE_PER_HOSTNAME))
      return this.placeHostnames(creds, view);
    if (zone.zone === undefined) return { ...account, ...(tunnelId ? { tunnelId } : {}) };
    const zoneId = await this.lookUpZoneId(creds, zone.zone, spec);
    if (typeof zoneId !== 'string') return zoneId;
    return { ...account, zoneId, zoneName: zone.zone, ...(tunnelId ? { tunnelId } : {}) };
  }

  /** The credentials' rules refusing this source (its namespace, zones, priority). */
  private useRefusal(spec: SourceSpec, creds: Credentials) {
    const use = credentialsUseOf(this.kind, spec, this.ref.namespace, creds.defaultDomain);
    // A binding's default was 50 before every hostname-claiming kind shared 100: histories from then replay so.
    if (this.kind === 'TunnelBinding' && !patched(BINDING_DEFAULT_PRIORITY_100)) use.defaultPriority = 50;
    return creds.policy && credentialsUseRefusal(creds.policy, use);
  }

  /** The Tunnel's tunnel, then its connector (now that the tunnel and its token Secret exist). */
  private async ensureTunnel(creds: Credentials): Promise<{ status: 'ok'; tunnelId: string } | Refused> {
    const tunnel = await cloudflareCalls(creds.cloudflareTaskQueue).ensureTunnel({
      ref: this.ref,
      uid: this.uid,
      credentials: creds.credentials,
      accountId: creds.accountId,
    });
    if (tunnel.status === 'failed') return { status: 'failed', ...tunnel.outcome };
    if (patched(TUNNEL_CONNECTOR)) {
      const connector = await sourceSteps.applyTunnelConnector({ ref: this.ref, uid: this.uid });
      if (connector.status === 'failed') return { status: 'failed', ...connector.outcome };
    }
    return { status: 'ok', tunnelId: tunnel.tunnelId };
  }

  /** Each hostname's CNAME in the zone that holds it; listed again only when credentials, rules or view change. */
  private async placeHostnames(creds: Credentials, view: string): Promise<Resolved> {
    const allowedZones = creds.policy?.allowedZones;
    const key = JSON.stringify([creds.credentials, creds.accountId, allowedZones ?? null, view]);
    if (this.placement?.key !== key) {
      const placed = await cloudflareCalls(creds.cloudflareTaskQueue).placeTunnelHostnames({
        ref: this.ref,
        credentials: creds.credentials,
        accountId: creds.accountId,
        ...(allowedZones ? { allowedZones } : {}),
      });
      if (placed.status === 'failed') return { status: 'failed', ...placed.outcome };
      const { status: _ok, ...result } = placed;
      this.placement = { key, placed: result };
    }
    const { placed } = this.placement;
    return {
      status: 'ok',
      credentials: creds.credentials,
      accountId: creds.accountId,
      dnsZones: placed.zones,
      placement: placed,
    };
  }

  /** The zone's ID: from the spec, or looked up once per run (a spec edit that keeps the zone costs no API call). */
  private async lookUpZoneId(creds: Credentials, zone: string, spec: SourceSpec): Promise<string | Refused> {
    const cacheKey = `${creds.credentials}|${creds.accountId}|${zone}`;
    const known = this.zoneIds.get(cacheKey) ?? zoneIdOf(spec);
    if (known !== undefined) return known;
    const found = await cloudflareCalls(creds.cloudflareTaskQueue).resolveZone({
      credentials: creds.credentials,
      zone,
      accountId: creds.accountId,
    });
    if (found.status === 'failed') return { status: 'failed', ...found.outcome };
    this.zoneIds.set(cacheKey, found.zoneId);
    return found.zoneId;
  }

  // ---- deletion: unregister, wait for Cloudflare, the tunnel last, release ----

  /** The finalizer's part: the targets drop the items (or keep them, Orphan), the tunnel goes, the finalizer last. */
  private async delete(read: SourceFound): Promise<void> {
    const { kind } = this;
    if (this.targets.length === 0) {
      // A new run for a source that registered in an earlier one: find its targets from the spec.
      const resolved = validateSource(kind, read.spec, this.ref).length
        ? undefined
        : await this.resolve(read.spec, viewOf(read));
      if (resolved?.status === 'ok') this.targets = targetsOf(kind, read.spec, resolved, this.ref);
    }
    if (read.orphan || (await this.removeFromTargets(read.generation)) === 'orphan') return this.releaseOrphan();
    if (lifecycleOf(kind) === 'tunnel' && (await this.removeTunnel(read.spec)) === 'orphan')
      return this.releaseOrphan();
    await sourceSteps.setCloudflareSourceFinalizer({ ref: this.ref, uid: this.uid, present: false });
  }

  /** The connector first (cloudflared stops before its tunnel is deleted under it), then the tunnel. */
  private async removeTunnel(spec: SourceSpec): Promise<'done' | 'orphan'> {
    const { ref, uid } = this;
    if (patched(TUNNEL_CONNECTOR)) await sourceSteps.removeTunnelConnector({ ref, uid });
    const creds = await sourceSteps.resolveCloudflareCredentials({ name: credentialsRefOf(this.kind, spec) });
    if (creds.status !== 'ok') return 'done';
    const { credentials, accountId } = creds;
    const remove = () => cloudflareCalls(creds.cloudflareTaskQueue).removeTunnel({ ref, uid, credentials, accountId });
    // A tunnel Cloudflare will not delete yet is retried; the Orphan annotation ends that wait.
    if (!patched(ORPHAN_ENDS_TUNNEL_REMOVAL)) {
      await remove();
      return 'done';
    }
    return this.unlessOrphaned(remove);
  }

  /**
   * Deletion policy Orphan: the targets keep its items as they are; nothing to wait for — also
   * the way out when its credentials are gone and Cloudflare cannot be written.
   */
  private async releaseOrphan(): Promise<void> {
    const { ref, uid } = this;
    for (const target of this.targets) await sourceSteps.unregisterCloudflareSource({ target, ref, uid, orphan: true });
    await sourceSteps.setCloudflareSourceFinalizer({ ref, uid, present: false });
  }

  /** Whether the object, read again after a hint, now asks to be orphaned. */
  private async orphanedSince(): Promise<boolean> {
    this.needsReconcile = false;
    const read = await sourceSteps.readCloudflareSource(this.ref);
    return read.status === 'ok' && read.uid === this.uid && !!read.orphan;
  }

  /**
   * Runs a step of the deletion that may wait long (Cloudflare refusing a tunnel's deletion) until
   * it ends, or until the object is annotated Orphan meanwhile: then the step is cancelled.
   */
  private async unlessOrphaned(step: () => Promise<unknown>): Promise<'done' | 'orphan'> {
    let finished = false;
    let orphaned = false;
    const scope = new CancellationScope();
    const watch = (async () => {
      while (!finished) {
        await condition(() => this.needsReconcile || finished);
        if (finished || !(await this.orphanedSince()) || finished) continue;
        orphaned = true;
        scope.cancel();
        return;
      }
    })();
    try {
      await scope.run(step);
      return 'done';
    } catch (err) {
      if (orphaned && isCancellation(err)) return 'orphan';
      throw err;
    } finally {
      finished = true;
      await watch;
    }
  }

  /**
   * Unregister everywhere and wait until every target reports our items gone from Cloudflare;
   * `orphan` when the object is annotated Orphan meanwhile (a deletion stuck on a target).
   */
  private async removeFromTargets(generation: number): Promise<'done' | 'orphan'> {
    const { ref, uid } = this;
    let pending = new Set(this.targets.map(targetKey));
    for (const t of this.targets) this.reports.delete(targetKey(t));
    const watchOrphan = patched(ORPHAN_ENDS_STUCK_DELETION);
    for (;;) {
      for (const target of this.targets) {
        if (!pending.has(targetKey(target))) continue;
        const sent = await sourceSteps.unregisterCloudflareSource({ target, ref, uid });
        // No workflow and no SyncState: the target was never written, nothing of ours is there.
        if (sent === 'not-running') pending.delete(targetKey(target));
      }
      pending = stillPending(pending, this.reports.values());
      if (pending.size === 0) return 'done';
      await this.writeStatus(generation, deletingReady(pending, this.reports.values()));
      if ((await this.waitForRemoval(pending, watchOrphan)) === 'orphan') return 'orphan';
      pending = stillPending(pending, this.reports.values());
      if (pending.size === 0) return 'done';
    }
  }

  /** Up to REREGISTER_MS for a pending target's `Removed`; a hint may be the Orphan annotation. */
  private async waitForRemoval(pending: ReadonlySet<string>, watchOrphan: boolean): Promise<'orphan' | undefined> {
    // On the reports themselves: a Removed that arrived during the status write counts.
    const onReports = patched(DELETE_WAITS_ON_REPORTS);
    if (!onReports) this.reportArrived = false;
    const removed = () => (onReports || this.reportArrived) && anyRemoved(pending, this.reports.values());
    if (!watchOrphan) {
      await condition(removed, REREGISTER_MS);
      return undefined;
    }
    const untilMs = Date.now() + REREGISTER_MS;
    for (;;) {
      const left = untilMs - Date.now();
      if (left <= 0 || !(await condition(() => removed() || this.needsReconcile, left)) || removed()) return undefined;
      if (await this.orphanedSince()) return 'orphan';
    }
  }

  protected onKitRule(): boolean {
    return patched(CONTINUE_WHEN_QUIET);
  }

  /** Runs from before the kit continued as new whenever Temporal suggested it. */
  protected override continuesAsBefore(): boolean {
    return true;
  }

  carry(): SourceRunInput {
    const settled = settledRegistration(this.registered, this.repeating, this.lastStatus);
    return {
      ref: this.ref,
      targets: this.targets,
      reregisterMs: this.input.reregisterMs,
      continueAfterEvents: this.input.continueAfterEvents,
      ...(settled ? { settled: { ...settled, status: this.lastStatus, conditions: this.conditions } } : {}),
    };
  }
}

/** The view's digest (absent in reads recorded before views existed: nothing to compare). */
function viewOf(read: SourceFound): string {
  return read.viewDigest ?? '';
}

export async function cloudflareSourceWorkflow(input: SourceRunInput): Promise<void> {
  if (!isSourceKind(input.ref.kind)) return;
  const run = new SourceRun(input);
  setHandler(sourceChangedSignal, () => run.hint());
  setHandler(syncReportedSignal, (report) => run.recordReport(report));
  return runEntity(run);
}
