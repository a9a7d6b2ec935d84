/**
 * The record step of a target's sync: the CloudflareSyncState (what the sources contribute, and
 * the status src/domain/cloudflare/sync-plan.ts decided), the Events, and the ownership markers
 * the adapters keep on sources (`cloudflare-operator.io/cloudflare-id`) and on the SyncState.
 */
import { ApplicationFailure } from '@temporalio/common';
import {
  CLOUDFLARE_API_VERSION,
  CLOUDFLARE_ID_ANNOTATION,
  CloudflareSyncStateKind,
  MANAGED_SETTINGS_ANNOTATION,
  type CloudflareSyncState,
  type ConfigSource,
} from '../../api/cloudflare.js';
import { packConfigs } from '../../codec/packed-configs.js';
import type { RegisteredSource } from '../../domain/cloudflare/aggregate.js';
import { marker, refString, type SourceRef } from '../../domain/cloudflare/markers.js';
import { permissionFor } from '../../domain/cloudflare/permissions.js';
import { isSourceKind, kindDefinition } from '../../domain/cloudflare/sources.js';
import {
  failedStatus,
  syncedStatus,
  type SourceObject,
  type WriteDecision,
} from '../../domain/cloudflare/sync-plan.js';
import { targetKey } from '../../domain/cloudflare/targets.js';
import { hostnameConflictEvents } from '../../domain/cloudflare/tunnels.js';
import type { Condition } from '../../domain/conditions.js';
import { driftEvent } from '../../domain/events.js';
import { failedWith, ok } from '../../domain/results.js';
import { CLUSTER_ID_ANNOTATION } from '../../kube/cluster-identity.js';
import { statusCode } from '../../kube/client.js';
import { kubeFailure } from '../kubernetes/errors.js';
import { activitySignal, digestKeyOf, readSecretKey } from './credentials.js';
import { CLOUDFLARE_FAILURE_TYPES, cloudflareFailure, failureReasonOf } from './errors.js';
import { getSource, syncStateRef, type SyncFacts, type SyncRun } from './sync-read.js';
import type { SyncResult } from './sync.js';
import type { TargetContext } from './targets/index.js';

/** Above this, the SyncState's sources carry no plain configuration: they are packed (etcd objects stay small). */
const MAX_RECORDED_CONFIG_BYTES = 256 * 1024;
/** The packed configurations stay well inside etcd's 1.5 MiB per object, beside the rest of the SyncState. */
const MAX_PACKED_CONFIG_CHARS = 1024 * 1024;

/**
 * `spec.sources` of the SyncState: every source with its configuration, plain when small, else
 * packed in `spec.packedConfigs`. A source that becomes invalid keeps contributing the
 * configuration recorded here (a target owned whole re-aggregates it), so it is never dropped;
 * only past even the packed limit are the configurations of the sources not frozen left out.
 */
export function recordedSources(
  spec: { sources: RegisteredSource[]; frozenRecords: ConfigSource[] },
  limits = { plain: MAX_RECORDED_CONFIG_BYTES, packed: MAX_PACKED_CONFIG_CHARS },
): { sources: ConfigSource[]; packedConfigs?: string } {
  const all: ConfigSource[] = [
    ...spec.sources.map((s) => ({
      ref: s.ref,
      priority: s.priority,
      ...(s.createdAt ? { createdAt: s.createdAt } : {}),
      config: s.config as unknown as ConfigSource['config'],
    })),
    ...spec.frozenRecords,
  ];
  if (JSON.stringify(all).length <= limits.plain) return { sources: all };
  const configs = Object.fromEntries(all.map((s) => [refString(s.ref), s.config]));
  let packedConfigs = packConfigs(configs);
  if (packedConfigs.length > limits.packed) {
    const frozen = new Set(spec.frozenRecords.map((r) => refString(r.ref)));
    packedConfigs = packConfigs(Object.fromEntries(Object.entries(configs).filter(([k]) => frozen.has(k))));
  }
  return { sources: all.map((s) => ({ ...s, config: {} })), packedConfigs };
}

/** The SyncState's body as the sync stands: what the sources contribute, with the markers that keep ownership. */
function syncStateBody(run: SyncFacts): CloudflareSyncState {
  const { request, sources, heldSettings } = run;
  const target = request.target;
  return {
    apiVersion: CLOUDFLARE_API_VERSION,
    kind: CloudflareSyncStateKind.kind,
    metadata: {
      name: request.syncState,
      labels: {
        'cloudflare-operator.io/resource-type': target.resourceType,
        'cloudflare-operator.io/target': targetKey(target)
          .replaceAll('/', '.')
          .replace(/[^-A-Za-z0-9_.]/g, '_') // a network name may hold any character
          .slice(0, 63)
          .replace(/[^A-Za-z0-9]+$/, ''),
      },
      annotations: {
        // The id its items are marked with: a restore into a new cluster keeps them ours.
        [CLUSTER_ID_ANNOTATION]: request.clusterId,
        // A settings target's holdings, kept here too (a lost status must not lose them).
        ...(heldSettings ? { [MANAGED_SETTINGS_ANNOTATION]: JSON.stringify(heldSettings) } : {}),
      },
    },
    spec: {
      resourceType: target.resourceType,
      cloudflareId: run.cloudflareId,
      accountId: target.accountId,
      ...('zoneId' in target ? { zoneId: target.zoneId } : {}),
      credentialsRef: { name: request.credentials },
      ...recordedSources({ sources: sources.sources, frozenRecords: sources.frozenRecords }),
    },
  };
}

/** Writes the SyncState's spec as the sync stands, then its status; creates it on the first sync. */
export async function recordSyncState(
  run: SyncFacts,
  status: (previous: CloudflareSyncState | undefined) => Record<string, unknown>,
): Promise<CloudflareSyncState> {
  const { kube } = run.deps;
  try {
    // The apply answers with the whole object, status included: what the status patch builds on.
    const previous = await kube.apply(syncStateBody(run));
    await kube.patchCustomStatus(syncStateRef(run.request.syncState), {
      ...status(previous),
      observedGeneration: previous?.metadata?.generation ?? 0,
    });
    return previous;
  } catch (err) {
    throw kubeFailure(err, `record CloudflareSyncState ${run.request.syncState}`);
  }
}

/**
 * What an adapter may use besides its Cloudflare client (targets/adapter.ts): the target's
 * remembered data (recorded on the SyncState at once), Secrets, and the ownership markers
 * recorded on its sources.
 */
export function targetContextOf(run: SyncFacts): TargetContext {
  const { kube } = run.deps;
  const data: Record<string, string> = { ...(run.existing?.status?.resultData ?? {}) };
  let digestKey: Promise<Buffer> | undefined;
  let claims: Promise<SourceClaimers> | undefined;
  const claimsOnce = () => (claims ??= claimersOf(run));
  return {
    data,
    async remember(patch) {
      for (const [key, value] of Object.entries(patch)) {
        if (value === null) delete data[key];
        else data[key] = value;
      }
      await recordSyncState(run, () => ({ resultData: patch }));
    },
    secret: (ref) => readSecretKey(kube, ref),
    digestKey: () => (digestKey ??= digestKeyOf(kube, run.request.credentials)),
    claims: async () => (await claimsOnce()).ids,
    async claim(ownerMarker, id) {
      const owner = (await claimsOnce()).owners.get(ownerMarker);
      if (owner) await recordClaim(run, ownerMarker, owner, id);
    },
  };
}

interface SourceClaimers {
  /** The IDs the sources record, by their marker. */
  ids: Map<string, string>;
  /** The source objects, by their marker. */
  owners: Map<string, SourceObject>;
}

/** The sources' recorded IDs by marker: the registered ones read already, the removed ones now. */
async function claimersOf(run: SyncFacts): Promise<SourceClaimers> {
  const { request, objects } = run;
  const candidates: Array<[SourceRef, SourceObject | undefined]> = request.sources.map((reg) => [
    reg.ref,
    objects.get(refString(reg.ref)),
  ]);
  for (const ref of request.removing ?? [])
    if (isSourceKind(ref.kind)) candidates.push([ref, await getSource(run.deps.kube, ref)]);
  const out: SourceClaimers = { ids: new Map(), owners: new Map() };
  for (const [ref, obj] of candidates) {
    if (!obj) continue;
    const ownerMarker = marker(request.clusterId, ref);
    out.owners.set(ownerMarker, obj);
    const id = obj.metadata?.annotations?.[CLOUDFLARE_ID_ANNOTATION];
    if (id) out.ids.set(ownerMarker, id);
  }
  return out;
}

/** Records `id` in the annotation of the source whose marker this is (gone or replaced: nothing to record). */
async function recordClaim(
  run: Pick<SyncRun, 'deps'>,
  ownerMarker: string,
  owner: SourceObject,
  id: string,
): Promise<void> {
  if (!owner.metadata?.uid) return;
  try {
    await run.deps.kube.mergePatch(
      {
        apiVersion: owner.apiVersion!,
        kind: owner.kind!,
        name: owner.metadata.name!,
        ...(owner.metadata.namespace ? { namespace: owner.metadata.namespace } : {}),
      },
      { metadata: { annotations: { [CLOUDFLARE_ID_ANNOTATION]: id } } },
      { uid: owner.metadata.uid },
    );
  } catch (err) {
    if (statusCode(err) !== 404 && statusCode(err) !== 409) throw kubeFailure(err, `annotate ${ownerMarker}`);
  }
}

/** Records a sync that succeeded: the conflict Events, the SyncState and its status, the drift Event. */
export async function recordSynced(run: SyncRun, decision: WriteDecision, wrote: boolean): Promise<SyncResult> {
  const { request, sources, planned, existing } = run;
  const { plan, desired, settings, digest } = planned;
  const configVersion = request.configVersion + (wrote ? 1 : 0);
  sources.markConflicts(plan.conflicts, desired);
  if (settings) run.heldSettings = settings.held;
  // A tunnel rule two objects want: an Event on each, once per conflict (before the status that
  // remembers it, so a retry records again — the recorder counts one activity's Event once).
  const reportedBefore = (existing?.status?.aggregatedConfig as { conflicts?: string[] } | undefined)?.conflicts ?? [];
  for (const e of hostnameConflictEvents(plan.conflicts, reportedBefore, (kind) =>
    isSourceKind(kind) ? kindDefinition(kind).apiVersion : undefined,
  ))
    await run.deps.events.record(e.regarding, e.event);
  const facts = {
    wrote,
    decision,
    trigger: request.trigger,
    plan,
    ...(settings ? { settings } : {}),
    sourceCount: sources.sources.length,
    digest,
    configVersion,
    rejected: sources.rejected,
  };
  const recorded = await recordSyncState(run, (prev) => syncedStatus(prev, facts, new Date()));
  await run.deps.events.record(
    {
      apiVersion: CLOUDFLARE_API_VERSION,
      kind: CloudflareSyncStateKind.kind,
      name: request.syncState,
      ...(recorded.metadata?.uid ? { uid: recorded.metadata.uid } : {}),
    },
    driftEvent(
      { drifted: decision.drifted, left: decision.driftLeft, differences: plan.differences },
      (recorded.status?.conditions as Condition[] | undefined)?.find((c) => c.type === 'Drifted'),
    ),
  );
  return ok({
    wrote,
    drifted: decision.drifted,
    driftLeft: decision.driftLeft,
    differences: plan.differences,
    conflicts: plan.conflicts,
    counts: plan.counts,
    digest,
    configVersion,
    cloudflareId: run.cloudflareId,
    verdicts: sources.verdicts,
    ...(run.kept.size ? { kept: run.kept.size } : {}),
  });
}

/**
 * Records a sync that failed on the SyncState (best effort), classified by the project's one
 * Cloudflare error classification (./errors.ts): a transient failure is thrown for Temporal to
 * retry, a permanent one returned with the verdicts so far.
 */
export async function recordFailed(run: SyncRun, err: unknown): Promise<SyncResult> {
  // Cancelled: nothing to record — the sync that follows writes the status.
  if (activitySignal()?.aborted) throw err;
  const target = run.request.target;
  const failure =
    err instanceof ApplicationFailure
      ? err
      : cloudflareFailure(err, `sync ${targetKey(target)}`, permissionFor(target, run.access));
  const permanent = !!failure.nonRetryable;
  // Nothing was removed: the records of the sources being removed stay (an Orphan annotation
  // on a deletion stuck here keeps its items as they are recorded).
  run.sources.keepRemoved(run.request.removing ?? [], run.kept);
  const status = { message: failure.message, permanent, failureReason: failureReasonOf(failure.type ?? undefined) };
  await recordSyncState(run, (prev) => failedStatus(prev, status, new Date())).catch(() => undefined); // the status is best effort here; the failure below is what counts
  if (!permanent) throw failure;
  return failedWith({
    reason: failure.type ?? CLOUDFLARE_FAILURE_TYPES.invalid,
    message: failure.message,
    verdicts: run.sources.verdicts,
  });
}
