/**
 * One workflow per Cloudflare source object (`cloudflare-source/<Kind>/<namespace>/<name>`),
 * started by the watcher: validate the spec, resolve credentials (and the zone), register with
 * every target the source feeds, and show on the source's own status what Cloudflare shows —
 * the original left most sources "Syncing" forever. Deletion goes through the finalizer:
 * unregister, wait until each target reports the items gone from Cloudflare, release.
 *
 * A wrong spec (bad CIDR, empty expression…) is reported on the status and registers nothing
 * new: what the source contributed before stays in Cloudflare until the spec is fixed or the
 * source deleted. Registration is re-sent when no report came for a while (a lost hint costs a
 * delay, never a stuck source).
 */
import {
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  patched,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
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
import { credentialsUseRefusal } from '../../domain/cloudflare/credentials-use.js';
import { legacyCredentialsOf } from '../../domain/cloudflare/legacy-credentials.js';
import { syncStateName, targetKey, type SyncTarget } from '../../domain/cloudflare/targets.js';
import { unplacedMessage, type HostnameZone, type UnplacedHostname } from '../../domain/cloudflare/tunnels.js';
import { setCondition, type Condition } from '../../domain/conditions.js';
import { CloudflareTarget } from '../../temporal/search-attributes.js';
import { cloudflareCalls, sourceSteps } from './activity-options.js';
import { sourceChangedSignal, syncReportedSignal, type SourceInput, type SyncReport } from './messages.js';

/** Where a tunnel source's hostnames' CNAMEs go, and the first of those that get none. */
interface HostnamePlacement {
  zones: HostnameZone[];
  unplaced: UnplacedHostname[];
  unplacedCount: number;
}

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

export interface SourceWorkflowState {
  targets?: SyncTarget[];
  /**
   * What the previous run registered and last wrote on the status (carried across
   * continue-as-new): the new run's first registration is a quiet one, and writes nothing.
   */
  settled?: { generation: number; view: string; status: string; conditions: Condition[] };
}

export async function cloudflareSourceWorkflow(input: SourceInput & SourceWorkflowState): Promise<void> {
  const { ref } = input;
  const reregisterMs = input.reregisterMs ?? REREGISTER_MS;
  const kind = ref.kind as SourceKind;
  if (!isSourceKind(kind)) return;
  let hinted = true;
  const reports = new Map<string, SyncReport>();
  let reported = false;
  setHandler(sourceChangedSignal, () => {
    hinted = true;
  });
  setHandler(syncReportedSignal, (r) => {
    reports.set(r.target, r);
    reported = true;
  });

  let targets: SyncTarget[] = input.targets ?? [];
  let registeredGeneration = -1;
  /** The view (spec + what it refers to) last registered: a Service or Ingress change re-registers. */
  let registeredView = '';
  let conditions: Condition[] = input.settled?.conditions ?? [];
  let lastStatus = input.settled?.status ?? '';
  /**
   * The registration a silence repeats (or the previous run's): registered again unchanged, it
   * writes no `Syncing` — an idle source's Ready stays as it is (N7).
   */
  let quietFrom: { generation: number; view: string } | undefined = input.settled;
  let retryAt: number | undefined;
  /** The UID of the object last read (the tunnel lifecycle is pinned to it). */
  let currentUid = '';
  /** Zone ids looked up in this run, by credentials, account and zone name (forgotten on silence). */
  const zoneIds = new Map<string, string>();
  /** Where the hostnames' CNAMEs went at the last placement, by credentials, rules and view (one listing per change). */
  let placement: { key: string; placed: HostnamePlacement } | undefined;
  /** The placement last registered: its hostnames that get no CNAME, and why, show on the status. */
  let registeredPlacement: HostnamePlacement = { zones: [], unplaced: [], unplacedCount: 0 };

  const writeStatus = async (
    uid: string,
    generation: number,
    ready: { status: 'True' | 'False'; reason: string; message: string },
    extra: Record<string, unknown> = {},
  ) => {
    const key = JSON.stringify([ready, extra, generation]);
    if (key === lastStatus) return;
    setCurrentDetails(
      `**${ready.reason}** (generation ${generation}) — ${ready.message}` +
        (targets.length
          ? `\n\nTargets:\n${targets.map((t) => `- ${targetKey(t)} → \`${syncStateName(t)}\``).join('\n')}`
          : ''),
    );
    conditions = setCondition(conditions, { type: 'Ready', ...ready, observedGeneration: generation }, new Date());
    const state = stateOf(kind, ready);
    const found = await sourceSteps.writeCloudflareSourceStatus({
      ref,
      uid,
      status: {
        conditions,
        observedGeneration: generation,
        state,
        message: ready.message,
        syncState: targets.map(syncStateName).join(',') || null,
        ...extra,
      },
    });
    if (found.status === 'ok') lastStatus = key;
  };

  for (;;) {
    hinted = false;
    reported = false;
    const src = await sourceSteps.readCloudflareSource(ref);
    if (src.status === 'gone') {
      // Deleted without our finalizer (never registered) or already released: tell the targets anyway.
      for (const t of targets) await sourceSteps.unregisterCloudflareSource({ target: t, ref, uid: '' });
      return;
    }
    const { uid, generation, spec } = src;
    // Absent in results recorded before views existed: no view, nothing to compare.
    const viewDigest = src.viewDigest ?? '';
    currentUid = uid;

    if (src.deleting) {
      if (!src.finalized) return; // not ours to hold up
      if (targets.length === 0) {
        // A new run for a source that registered in an earlier one: find its targets from the spec.
        const resolved = validateSource(kind, spec, ref).length ? undefined : await resolve(spec, viewDigest);
        if (resolved?.status === 'ok') targets = targetsOf(kind, spec, resolved, ref);
      }
      if (src.orphan) {
        await releaseOrphan(uid);
        return;
      }
      if ((await deleteFromTargets(uid, generation)) === 'orphan') {
        await releaseOrphan(uid);
        return;
      }
      if (lifecycleOf(kind) === 'tunnel') {
        // The connector first: cloudflared stops before its tunnel is deleted under it.
        if (patched(TUNNEL_CONNECTOR)) await sourceSteps.removeTunnelConnector({ ref, uid });
        const creds = await sourceSteps.resolveCloudflareCredentials({ name: credentialsRefOf(kind, spec) });
        if (creds.status === 'ok') {
          const remove = () =>
            cloudflareCalls(creds.cloudflareTaskQueue).removeTunnel({
              ref,
              uid,
              credentials: creds.credentials,
              accountId: creds.accountId,
            });
          // A tunnel Cloudflare will not delete yet is retried; the Orphan annotation ends that
          // wait (patched: runs from before did not look while the deletion ran).
          if (!patched(ORPHAN_ENDS_TUNNEL_REMOVAL)) await remove();
          else if ((await unlessOrphaned(remove)) === 'orphan') {
            await releaseOrphan(uid);
            return;
          }
        }
      }
      await sourceSteps.setCloudflareSourceFinalizer({ ref, uid, present: false });
      return;
    }
    if (!src.finalized) await sourceSteps.setCloudflareSourceFinalizer({ ref, uid, present: true });

    if (
      generation !== registeredGeneration ||
      viewDigest !== registeredView ||
      (retryAt !== undefined && Date.now() >= retryAt)
    ) {
      retryAt = undefined;
      const quiet = quietFrom?.generation === generation && quietFrom.view === viewDigest;
      quietFrom = undefined;
      const problems = validateSource(kind, spec, ref);
      const waiting = problems.length ? undefined : waitingFor(kind, spec);
      if (waiting) {
        retryAt = Date.now() + WAITING_RETRY_MS;
        await writeStatus(uid, generation, { status: 'False', ...waiting });
      } else if (problems.length) {
        registeredGeneration = generation;
        registeredView = viewDigest;
        await writeStatus(uid, generation, {
          status: 'False',
          reason: 'InvalidSpec',
          message: `${problems.join('; ')}${targets.length ? ' (the last valid configuration stays in Cloudflare)' : ''}`,
        });
      } else {
        const resolved = await resolve(spec, viewDigest);
        if (resolved.status === 'failed') {
          retryAt = Date.now() + RESOLVE_RETRY_MS;
          await writeStatus(uid, generation, { status: 'False', reason: resolved.reason, message: resolved.message });
        } else {
          const next = targetsOf(kind, spec, resolved, ref);
          const anchor = anchorOf(kind, spec);
          registeredPlacement = resolved.placement ?? { zones: [], unplaced: [], unplacedCount: 0 };
          for (const t of next)
            await sourceSteps.registerCloudflareSource({
              target: t,
              registration: {
                ref,
                uid,
                generation,
                anchor,
                credentials: resolved.credentials,
                view: viewDigest,
                ...registrationHints(t, resolved),
              },
            });
          const sameTargets =
            next.length === targets.length && next.every((n) => targets.some((t) => targetKey(t) === targetKey(n)));
          for (const t of targets)
            if (!next.some((n) => targetKey(n) === targetKey(t))) {
              await sourceSteps.unregisterCloudflareSource({ target: t, ref, uid });
              reports.delete(targetKey(t));
            }
          targets = next;
          registeredGeneration = generation;
          registeredView = viewDigest;
          upsertSearchAttributes([{ key: CloudflareTarget, value: targets.map(targetKey) }]);
          if (targets.length === 0)
            await writeStatus(uid, generation, {
              status: 'True',
              reason: 'NothingToSync',
              message: 'the spec has no entries',
            });
          // The same registration again: the targets' last result stands (patched: runs from
          // before showed `Syncing` at each silence).
          else if (quiet && sameTargets && patched(QUIET_REREGISTRATION_KEEPS_STATUS)) {
            /* nothing to show */
          } else
            await writeStatus(
              uid,
              generation,
              {
                status: 'False',
                reason: 'Syncing',
                message: `registered with ${targets.map(syncStateName).join(', ')}`,
              },
              { ...zoneStatus(resolved), ...statusFieldsOf(kind, spec) },
            );
        }
      }
    }

    // Show what the targets report for this generation.
    if (targets.length && registeredGeneration === generation && !retryAt) {
      const current = targets.map((t) => reports.get(targetKey(t)));
      const failed = current.find((r) => r && r.result === 'Failed');
      const invalid = current.find((r) => r && r.result === 'Invalid' && r.generation >= generation);
      const conflict = current.find((r) => r && r.result === 'Conflict' && r.generation >= generation);
      // Every item of the source held by someone else: nothing of it is in Cloudflare.
      const allHeld = current.every(
        (r) => r && r.result === 'Conflict' && r.reason === 'Conflict' && r.generation >= generation,
      );
      const synced = current.every(
        (r) => r && (r.result === 'Synced' || r.result === 'Conflict') && r.generation >= generation,
      );
      if (failed)
        await writeStatus(uid, generation, { status: 'False', reason: failed.reason, message: failed.message });
      else if (invalid)
        await writeStatus(uid, generation, { status: 'False', reason: 'InvalidSpec', message: invalid.message });
      else if (allHeld && conflict)
        await writeStatus(uid, generation, {
          status: 'False',
          reason: 'Conflict',
          message: `not in Cloudflare: ${conflict.message}`,
        });
      else if (synced) {
        const idField = statusIdFieldOf(kind);
        const id = current.find((r) => r?.cloudflareId)?.cloudflareId;
        // Hostnames no zone of the credentials holds: their rules are in, their CNAMEs are not.
        const noDns = unplacedMessage(registeredPlacement.unplaced, registeredPlacement.unplacedCount);
        await writeStatus(
          uid,
          generation,
          {
            status: 'True',
            reason: conflict ? 'SyncedWithConflicts' : noDns ? 'SyncedWithoutDNS' : 'Synced',
            message: conflict
              ? `in Cloudflare except: ${conflict.message}${noDns ? `; ${noDns}` : ''}`
              : noDns
                ? `in Cloudflare (${targets.map(syncStateName).join(', ')}) except: ${noDns}`
                : `in Cloudflare (${targets.map(syncStateName).join(', ')})`,
          },
          { ...statusFieldsOf(kind, spec), ...(idField && id ? { [idField]: id } : {}) },
        );
      }
    }

    const waitMs = retryAt !== undefined ? Math.max(0, retryAt - Date.now()) : reregisterMs;
    const woke = await condition(() => hinted || reported, waitMs);
    if (!woke && retryAt === undefined) {
      // Silence: register again (a target whose workflow ended starts again; an unchanged
      // registration costs it no Cloudflare call). The zone stays as looked up: a lookup per
      // source every few minutes was most of an idle installation's API calls.
      quietFrom = { generation: registeredGeneration, view: registeredView };
      registeredGeneration = -1;
      if (!patched(KEEPS_ZONE_ON_SILENCE)) zoneIds.clear();
      // A hostname no zone held may have one now (a zone added to the account): look again.
      if (registeredPlacement.unplacedCount) placement = undefined;
    }
    if (workflowInfo().continueAsNewSuggested) {
      await condition(() => true);
      await continueAsNew<typeof cloudflareSourceWorkflow>({
        ref,
        targets,
        reregisterMs: input.reregisterMs,
        ...(registeredGeneration >= 0 && lastStatus
          ? { settled: { generation: registeredGeneration, view: registeredView, status: lastStatus, conditions } }
          : {}),
      });
    }
  }

  /**
   * Credentials, account and zone of the spec just read (no second read); `view`, the view's
   * digest: a tunnel source's hostnames are placed in their zones again when it changes.
   */
  async function resolve(
    spec: SourceSpec,
    view: string,
  ): Promise<
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
    | { status: 'failed'; reason: string; message: string }
  > {
    const creds = await sourceSteps.resolveCloudflareCredentials({
      name: credentialsRefOf(kind, spec),
      legacy: legacyCredentialsOf(spec),
    });
    if (creds.status === 'failed') return { status: 'failed', ...creds.outcome };
    // Absent from results recorded before the rules existed: nothing to check on replay.
    const use = credentialsUseOf(kind, spec, ref.namespace, creds.defaultDomain);
    // A binding's default was 50 before every hostname-claiming kind shared 100: histories from then replay so.
    if (kind === 'TunnelBinding' && !patched(BINDING_DEFAULT_PRIORITY_100)) use.defaultPriority = 50;
    const refused = creds.policy && credentialsUseRefusal(creds.policy, use);
    if (refused) return { status: 'failed', ...refused };
    const zone = zoneOf(kind, spec) ?? (zoneFromCredentials(kind) ? creds.defaultDomain : undefined);
    if (zone === undefined && zoneFromCredentials(kind))
      return {
        status: 'failed',
        reason: 'NoZone',
        message: `spec.cloudflare.domain is not set and CloudflareCredentials ${creds.credentials} has no defaultDomain: name the zone`,
      };
    let tunnelId: string | undefined;
    if (lifecycleOf(kind) === 'tunnel') {
      const tunnel = await cloudflareCalls(creds.cloudflareTaskQueue).ensureTunnel({
        ref,
        uid: currentUid,
        credentials: creds.credentials,
        accountId: creds.accountId,
      });
      if (tunnel.status === 'failed') return { status: 'failed', ...tunnel.outcome };
      tunnelId = tunnel.tunnelId;
      // Its connector, now that the tunnel and its token Secret exist (patched: runs from before
      // had no connector step).
      if (patched(TUNNEL_CONNECTOR)) {
        const connector = await sourceSteps.applyTunnelConnector({ ref, uid: currentUid });
        if (connector.status === 'failed') return { status: 'failed', ...connector.outcome };
      }
    }
    // Each hostname's CNAME in the zone that holds it (patched: runs from before looked up the
    // Tunnel's zone alone, and dropped the other hostnames).
    if (dnsHostnamesOf(kind, spec) !== undefined && patched(DNS_ZONE_PER_HOSTNAME)) {
      const allowedZones = creds.policy?.allowedZones;
      const key = JSON.stringify([creds.credentials, creds.accountId, allowedZones ?? null, view]);
      if (placement?.key !== key) {
        const placed = await cloudflareCalls(creds.cloudflareTaskQueue).placeTunnelHostnames({
          ref,
          credentials: creds.credentials,
          accountId: creds.accountId,
          ...(allowedZones ? { allowedZones } : {}),
        });
        if (placed.status === 'failed') return { status: 'failed', ...placed.outcome };
        const { status: _ok, ...result } = placed;
        placement = { key, placed: result };
      }
      return {
        status: 'ok',
        credentials: creds.credentials,
        accountId: creds.accountId,
        dnsZones: placement.placed.zones,
        placement: placement.placed,
      };
    }
    if (zone === undefined)
      return {
        status: 'ok',
        credentials: creds.credentials,
        accountId: creds.accountId,
        ...(tunnelId ? { tunnelId } : {}),
      };
    // A spec edit that keeps the zone costs no API call (the account's budget is shared).
    const cacheKey = `${creds.credentials}|${creds.accountId}|${zone}`;
    let zoneId = zoneIds.get(cacheKey) ?? zoneIdOf(spec);
    if (zoneId === undefined) {
      const found = await cloudflareCalls(creds.cloudflareTaskQueue).resolveZone({
        credentials: creds.credentials,
        zone,
        accountId: creds.accountId,
      });
      if (found.status === 'failed') return { status: 'failed', ...found.outcome };
      zoneId = found.zoneId;
      zoneIds.set(cacheKey, zoneId);
    }
    return {
      status: 'ok',
      credentials: creds.credentials,
      accountId: creds.accountId,
      zoneId,
      zoneName: zone,
      ...(tunnelId ? { tunnelId } : {}),
    };
  }

  function zoneStatus(resolved: { accountId: string; zoneId?: string }): Record<string, unknown> {
    return resolved.zoneId === undefined ? { accountId: resolved.accountId } : { zoneId: resolved.zoneId };
  }

  /**
   * Deletion policy Orphan: the targets keep its items as they are; nothing to wait for — also
   * the way out when its credentials are gone and Cloudflare cannot be written.
   */
  async function releaseOrphan(uid: string): Promise<void> {
    for (const t of targets) await sourceSteps.unregisterCloudflareSource({ target: t, ref, uid, orphan: true });
    await sourceSteps.setCloudflareSourceFinalizer({ ref, uid, present: false });
  }

  /** Whether the object, read again after a hint, now asks to be orphaned. */
  async function orphanedSince(): Promise<boolean> {
    hinted = false;
    const now = await sourceSteps.readCloudflareSource(ref);
    return now.status === 'ok' && now.uid === currentUid && !!now.orphan;
  }

  /**
   * Runs a step of the deletion that may wait long (Cloudflare refusing a tunnel's deletion) until
   * it ends, or until the object is annotated Orphan meanwhile: then the step is cancelled.
   */
  async function unlessOrphaned(step: () => Promise<unknown>): Promise<'done' | 'orphan'> {
    let finished = false;
    let orphaned = false;
    const scope = new CancellationScope();
    const watch = (async () => {
      while (!finished) {
        await condition(() => hinted || finished);
        if (finished || !(await orphanedSince()) || finished) continue;
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
  async function deleteFromTargets(uid: string, generation: number): Promise<'done' | 'orphan'> {
    const pending = new Set(targets.map(targetKey));
    for (const t of targets) reports.delete(targetKey(t));
    // Patched: runs from before did not read the object again once the deletion had started.
    const watchOrphan = patched(ORPHAN_ENDS_STUCK_DELETION);
    for (;;) {
      for (const t of targets) {
        if (!pending.has(targetKey(t))) continue;
        const sent = await sourceSteps.unregisterCloudflareSource({ target: t, ref, uid });
        // No workflow and no SyncState: the target was never written, nothing of ours is there.
        if (sent === 'not-running') pending.delete(targetKey(t));
      }
      for (const [k, r] of reports) if (r.result === 'Removed') pending.delete(k);
      if (pending.size === 0) return 'done';
      const failed = [...reports.values()].find((r) => r.result === 'Failed' && pending.has(r.target));
      await writeStatus(uid, generation, {
        status: 'False',
        reason: failed ? failed.reason : 'Deleting',
        message: failed
          ? `removing from Cloudflare failed: ${failed.message}`
          : `waiting for Cloudflare to drop this source's items from ${[...pending].join(', ')}`,
      });
      // On the reports themselves, not on a fresh `reported`: a Removed that arrived during the
      // status write above is already in `reports` and must not be waited for again (the old wait,
      // kept for histories recorded before the fix, missed it and slept 5 minutes).
      const onReports = patched(DELETE_WAITS_ON_REPORTS);
      if (!onReports) reported = false;
      const removed = () =>
        (onReports || reported) && [...reports.entries()].some(([k, r]) => pending.has(k) && r.result === 'Removed');
      if (!watchOrphan) await condition(removed, REREGISTER_MS);
      else {
        // A hint (the object changed) may be the Orphan annotation: read it again, wait on otherwise.
        const until = Date.now() + REREGISTER_MS;
        for (;;) {
          const left = until - Date.now();
          if (left <= 0 || !(await condition(() => removed() || hinted, left)) || removed()) break;
          if (await orphanedSince()) return 'orphan';
        }
      }
      for (const [k, r] of reports) if (r.result === 'Removed') pending.delete(k);
      if (pending.size === 0) return 'done';
    }
  }
}
