/**
 * One sync of one target: read the registered sources fresh, aggregate them, GET the live
 * Cloudflare object, merge (src/domain/cloudflare/merge.ts decides), write once if our managed
 * subset differs from the live one, then record the result on the CloudflareSyncState. Runs on
 * the account's task queue, whose server-side rate limit is that account's API throttle.
 *
 * A crash anywhere in here re-runs the whole activity: the GET shows what the crashed attempt
 * already wrote, so the retry writes nothing twice and loses nothing.
 */
import { createHash } from 'node:crypto';
import { log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  CLOUDFLARE_API_VERSION,
  CLOUDFLARE_ID_ANNOTATION,
  CloudflareSyncStateKind,
  MANAGED_SETTINGS_ANNOTATION,
  type ManagedSetting,
  type CloudflareSyncState,
  type ConfigSource,
} from '../../api/cloudflare.js';
import type { CloudflareConfig } from '../../config.js';
import { orderSources, type RegisteredSource } from '../../domain/cloudflare/aggregate.js';
import { type SourceRef, marker, parseRefString, refString } from '../../domain/cloudflare/markers.js';
import { canonical, planWrite, type Conflict, type WritePlan } from '../../domain/cloudflare/merge.js';
import {
  anchorOf,
  contributionFor,
  dnsHostnamesOf,
  isSourceKind,
  kindDefinition,
  listedWhenMany,
  priorityOf,
  validateSource,
  zoneIdOf,
  zoneOf,
  type SourceKind,
  type SourceSpec,
} from '../../domain/cloudflare/sources.js';
import type { ValidationContext } from '../../domain/cloudflare/kinds/index.js';
import { targetCloudflareId, targetKey, type SyncTarget } from '../../domain/cloudflare/targets.js';
import {
  MAX_UNPLACED_SHOWN,
  conflictLine,
  hostnameConflictEvents,
  inZone,
  placeHostnames,
  type HostnameZone,
  type UnplacedHostname,
} from '../../domain/cloudflare/tunnels.js';
import { credentialsConflictMessage, targetIdentity } from '../../domain/cloudflare/identity.js';
import { setCondition, type Condition } from '../../domain/conditions.js';
import { driftEvent } from '../../domain/events.js';
import { failedWith, ok, type Failed, type Ok } from '../../domain/results.js';
import { statusCode, type KubeClient } from '../../kube/client.js';
import type { EventRecorder } from '../../kube/events.js';
import type { SourceRegistration, SourceRemoval } from '../../workflows/cloudflare/messages.js';
import { faultPoint } from '../fault-points.js';
import { getObject, heartbeat, listAll } from '../kubernetes/calls.js';
import { kubeFailure } from '../kubernetes/errors.js';
import type { CallBudget, CallPriority } from './call-budget.js';
import { activitySignal, clientFor, digestKeyOf, readSecretKey } from './credentials.js';
import { expandSource, isExpanded } from './expand.js';
import { CLOUDFLARE_FAILURE_TYPES, cloudflareFailure, failureReasonOf } from './errors.js';
import { adapterFor, type TargetContext } from './targets/index.js';
import { packConfigs, unpackConfigs } from '../../codec/packed-configs.js';
import { CLUSTER_ID_ANNOTATION, sameSourcesUnderOtherIds } from '../../kube/cluster-identity.js';
import { permissionFor, type Access } from '../../domain/cloudflare/permissions.js';

export interface SyncTargetRequest {
  target: SyncTarget;
  credentials: string;
  syncState: string;
  sources: SourceRegistration[];
  /**
   * Sources being removed by this sync. A source the SyncState lists that is neither registered
   * nor removed — its object still there — has not registered with this run of the workflow
   * (started for a removal, or restarted): its items are kept as they are.
   */
  removing?: SourceRemoval[];
  /** Why this sync runs: sources changed, the periodic observation, or a user's `reaggregate`. */
  trigger: 'change' | 'observe' | 'reaggregate';
  /** Digest of the desired managed subset last written (or found in place). */
  lastDigest?: string;
  /** The SyncState's configVersion so far (bumped by each write). */
  configVersion: number;
  clusterId: string;
  adoptLegacyMarkers: boolean;
  driftPolicy: 'repair' | 'observe';
}

/** What happened to one registered source in this sync. */
export interface SourceVerdict {
  ref: SourceRef;
  /** The generation the verdict is about (the one read fresh). */
  generation: number;
  /**
   * Synced: in Cloudflare now. Invalid: its spec is wrong, its last good items stay.
   * CredentialsConflict: it names other credentials than the target is written with; its items
   * stay as they are. Rejected: Cloudflare refused its items; its last good items stay as they
   * are while the other sources are written. Gone/Elsewhere: left out.
   */
  result: 'Synced' | 'Invalid' | 'Conflict' | 'CredentialsConflict' | 'Rejected' | 'Gone' | 'Elsewhere';
  message: string;
  /** Rejected only: why Cloudflare refused the source's items (its failure type). */
  reason?: string;
  /** Conflict only: every item of the source is held by someone else (nothing of it is in Cloudflare). */
  allHeld?: boolean;
}

export interface SyncSummary {
  wrote: boolean;
  /** Our items in Cloudflare differed from what was last written, with no source change: someone edited them. */
  drifted: boolean;
  /** Drift found and left in place (drift policy observe). */
  driftLeft: boolean;
  differences: string[];
  conflicts: Conflict[];
  counts: WritePlan<unknown>['counts'];
  digest: string;
  configVersion: number;
  cloudflareId: string;
  verdicts: SourceVerdict[];
  /** Sources the SyncState lists that have not registered: kept, so the target is not done. */
  kept?: number;
}

export interface SyncFailure {
  reason: string;
  message: string;
  verdicts: SourceVerdict[];
}

export type SyncResult = Ok<SyncSummary> | Failed<SyncFailure>;

interface SourceObject extends KubernetesObject {
  spec: SourceSpec;
}

function syncStateRef(name: string) {
  return {
    apiVersion: CloudflareSyncStateKind.apiVersion,
    kind: CloudflareSyncStateKind.kind,
    plural: CloudflareSyncStateKind.plural,
    name,
  };
}

/**
 * The registered sources' objects, fresh: a GET each when few, one list per kind when many
 * (except the kinds with one source per target, always a GET each).
 */
/** A source object as it stands now, by its reference (none when it is gone or not a source kind). */
async function getSource(kube: KubeClient, ref: SourceRef): Promise<SourceObject | undefined> {
  if (!isSourceKind(ref.kind)) return undefined;
  const def = kindDefinition(ref.kind);
  return getObject<SourceObject>(kube, {
    apiVersion: def.apiVersion,
    kind: def.kind,
    namespace: ref.namespace,
    name: ref.name,
  });
}

async function readSources(kube: KubeClient, regs: SourceRegistration[]): Promise<Map<string, SourceObject>> {
  const found = new Map<string, SourceObject>();
  const many = regs.length > 16;
  const kinds = [...new Set(regs.map((r) => r.ref.kind))].filter(isSourceKind).filter(listedWhenMany);
  for (const r of regs) {
    if (!isSourceKind(r.ref.kind) || (many && listedWhenMany(r.ref.kind))) continue;
    const obj = await getSource(kube, r.ref);
    if (obj) found.set(refString(r.ref), obj);
  }
  if (many)
    for (const kind of kinds) {
      const def = kindDefinition(kind);
      for (const obj of await listAll<SourceObject>(kube, def.apiVersion, def.kind)) {
        const m = obj.metadata!;
        found.set(refString({ kind, ...(m.namespace ? { namespace: m.namespace } : {}), name: m.name! }), obj);
      }
    }
  // The sources that refer to other objects (a binding's Tunnel and Services…) are read with them.
  for (const [key, obj] of found) {
    const kind = parseRefString(key)?.kind;
    if (kind && isSourceKind(kind) && isExpanded(kind)) obj.spec = await expandSource(kube, kind, obj);
  }
  return found;
}

/**
 * Sources as the sync sees them, with a verdict each. A source whose spec became invalid is
 * frozen: its items in Cloudflare stay exactly as they are (the merge keeps them like anyone
 * else's) until the spec is fixed or the source deleted; the SyncState keeps listing it with the
 * configuration it last recorded.
 */
export function collectSources(
  target: SyncTarget,
  regs: SourceRegistration[],
  objects: Map<string, SourceObject>,
  previous: Map<string, ConfigSource>,
  identity: { established?: string; fallback?: string } = {},
  validation: ValidationContext = {},
): {
  sources: RegisteredSource[];
  verdicts: SourceVerdict[];
  frozen: Set<string>;
  frozenRecords: ConfigSource[];
  /** The credentials every write to the target uses (./../../domain/cloudflare/identity.ts decides). */
  credentials: string | undefined;
} {
  const sources: RegisteredSource[] = [];
  const verdicts: SourceVerdict[] = [];
  const frozen = new Set<string>();
  const frozenRecords: ConfigSource[] = [];
  const live: Array<{ reg: SourceRegistration; key: string; obj: SourceObject; kind: SourceKind }> = [];
  for (const reg of regs) {
    const key = refString(reg.ref);
    const obj = objects.get(key);
    const kind = reg.ref.kind as SourceKind;
    if (!obj || obj.metadata?.uid !== reg.uid || !isSourceKind(kind)) {
      verdicts.push({ ref: reg.ref, generation: reg.generation, result: 'Gone', message: `${key} no longer exists` });
      continue;
    }
    if (anchorOf(kind, obj.spec) !== reg.anchor) {
      verdicts.push({
        ref: reg.ref,
        generation: obj.metadata.generation ?? 0,
        result: 'Elsewhere',
        message: `${key} now targets another zone or account`,
      });
      continue;
    }
    live.push({ reg, key, obj, kind });
  }
  const createdAt = (obj: SourceObject) =>
    obj.metadata?.creationTimestamp ? new Date(obj.metadata.creationTimestamp).toISOString() : '';
  const { credentials, conflicting } = targetIdentity(
    live.map(({ reg, key, obj }) => ({ key, credentials: reg.credentials, createdAt: createdAt(obj) })),
    identity.established,
    identity.fallback,
  );
  for (const { reg, key, obj, kind } of live) {
    const generation = obj.metadata!.generation ?? 0;
    const base = { ref: reg.ref, uid: reg.uid, createdAt: createdAt(obj), generation };
    const freeze = () => {
      frozen.add(key);
      const last = previous.get(key);
      if (last) frozenRecords.push(last);
    };
    if (conflicting.includes(key)) {
      freeze();
      verdicts.push({
        ref: reg.ref,
        generation,
        result: 'CredentialsConflict',
        message: credentialsConflictMessage(targetKey(target), credentials!, reg.credentials),
      });
      continue;
    }
    const problems = validateSource(kind, obj.spec, reg.ref, validation);
    if (problems.length) {
      freeze();
      verdicts.push({
        ref: reg.ref,
        generation,
        result: 'Invalid',
        message: `${problems.join('; ')} (what it wrote before stays in Cloudflare until the spec is fixed)`,
      });
      continue;
    }
    sources.push({
      ...base,
      priority: priorityOf(kind, obj.spec),
      config: contributionFor(kind, obj.spec, target, reg.ref, reg.subzones ? { subzones: reg.subzones } : undefined),
    });
    verdicts.push({ ref: reg.ref, generation, result: 'Synced', message: '' });
  }
  return { sources, verdicts, frozen, frozenRecords, credentials };
}

/**
 * The sources the SyncState lists that are neither registered nor being removed and whose object
 * is still there (not being deleted): they will register, and until then what they wrote stays.
 */
async function unregisteredSources(
  kube: KubeClient,
  previous: Map<string, ConfigSource>,
  req: SyncTargetRequest,
): Promise<Map<string, ConfigSource>> {
  const known = new Set([...req.sources.map((r) => r.ref), ...(req.removing ?? [])].map(refString));
  const kept = new Map<string, ConfigSource>();
  for (const [key, record] of previous) {
    if (known.has(key) || !isSourceKind(record.ref.kind)) continue;
    const obj = await getSource(kube, record.ref);
    const at = obj?.metadata?.creationTimestamp;
    if (obj && !obj.metadata?.deletionTimestamp)
      kept.set(key, at && !record.createdAt ? { ...record, createdAt: new Date(at).toISOString() } : record);
  }
  return kept;
}

/** A source whose items Cloudflare refused, at the generation it refused (recorded on the SyncState). */
type RejectedSource = NonNullable<CloudflareSyncState['status']>['rejectedSources'] extends (infer R)[] | undefined
  ? R
  : never;

/** Whether Cloudflare refused what was sent (a 4xx about the content), not who sent it or when. */
function refusedContent(err: unknown): boolean {
  const failure = cloudflareFailure(err, '');
  return !!failure.nonRetryable && failure.type === CLOUDFLARE_FAILURE_TYPES.invalid;
}

function digestOf(desired: { item: unknown }[]): string {
  return createHash('sha256')
    .update(canonical(desired.map((d) => d.item)))
    .digest('hex');
}

/** How a user of a kind that can adopt takes over an unmarked object. */
function adoptHint(kind: string): string {
  return kind === 'DNSRecord' ? '; set spec.adoptExisting: true to take it over' : '';
}

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

/** The sources a SyncState records, by source, with their configurations unpacked. */
export function recordedConfigsOf(state: CloudflareSyncState | undefined): Map<string, ConfigSource> {
  const packed = state?.spec.packedConfigs ? unpackConfigs(state.spec.packedConfigs) : {};
  return new Map(
    (state?.spec.sources ?? []).map((s) => {
      const key = refString(s.ref);
      const config = packed[key] as ConfigSource['config'] | undefined;
      return [key, config ? { ...s, config } : s];
    }),
  );
}

/** What a settings target's SyncState says it holds: its status, else its annotation. */
function heldSettingsOf(state: CloudflareSyncState | undefined): ManagedSetting[] {
  if (state?.status?.managedSettings) return state.status.managedSettings;
  const kept = state?.metadata?.annotations?.[MANAGED_SETTINGS_ANNOTATION];
  if (!kept) return [];
  try {
    const parsed = JSON.parse(kept) as unknown;
    return Array.isArray(parsed) ? (parsed as ManagedSetting[]) : [];
  } catch {
    return []; // unreadable (edited by hand): as if nothing were held
  }
}

/** Targets already warned about in this process (a sync runs at every observation). */
const warnedElsewhere = new Set<string>();

/** Logs once per target when our sources' items carry another cluster id (a restore without its SyncStates). */
function warnIfMarkedElsewhere(
  t: SyncTarget,
  descriptions: Array<string | undefined>,
  sources: RegisteredSource[],
  clusterId: string,
): void {
  const key = targetKey(t);
  if (warnedElsewhere.has(key) || !descriptions.some((d) => d?.includes('[managed-by:'))) return;
  const ids = sameSourcesUnderOtherIds(
    descriptions,
    sources.map((s) => s.ref),
    clusterId,
  );
  if (!ids.length) return;
  warnedElsewhere.add(key);
  log.warn(
    `${key}: items of its sources are marked with cluster id ${ids.join(', ')}, this worker marks with ${clusterId}; ` +
      `if this cluster replaces that one (a restore without the CloudflareSyncStates), set DO_CLUSTER_ID=${ids[0]} ` +
      "(docs/cloudflare.md, Ownership after a restore); those items are left as another cluster's",
  );
}

export function createCloudflareSyncActivities(
  kube: KubeClient,
  config: Pick<CloudflareConfig, 'baseURL'>,
  events: EventRecorder,
  budget?: CallBudget,
) {
  /** Observations spend the budget after changes (call-budget.ts). */
  const pacing = (priority: CallPriority) => (budget ? { budget, priority } : undefined);
  /** Writes the SyncState's spec (what the sources contribute) and status; creates it on first sync. */
  async function recordSyncState(
    req: SyncTargetRequest,
    spec: {
      cloudflareId: string;
      sources: RegisteredSource[];
      frozenRecords: ConfigSource[];
      /** A settings target's holdings, kept in an annotation too (a lost status must not lose them). */
      managedSettings?: ManagedSetting[];
    },
    status: (previous: CloudflareSyncState | undefined) => Record<string, unknown>,
  ): Promise<CloudflareSyncState> {
    const ref = syncStateRef(req.syncState);
    const t = req.target;
    const body: CloudflareSyncState = {
      apiVersion: CLOUDFLARE_API_VERSION,
      kind: CloudflareSyncStateKind.kind,
      metadata: {
        name: req.syncState,
        labels: {
          'cloudflare-operator.io/resource-type': t.resourceType,
          'cloudflare-operator.io/target': targetKey(t)
            .replaceAll('/', '.')
            .replace(/[^-A-Za-z0-9_.]/g, '_') // a network name may hold any character
            .slice(0, 63)
            .replace(/[^A-Za-z0-9]+$/, ''),
        },
        annotations: {
          // The id its items are marked with: a restore into a new cluster keeps them ours.
          [CLUSTER_ID_ANNOTATION]: req.clusterId,
          ...(spec.managedSettings ? { [MANAGED_SETTINGS_ANNOTATION]: JSON.stringify(spec.managedSettings) } : {}),
        },
      },
      spec: {
        resourceType: t.resourceType,
        cloudflareId: spec.cloudflareId,
        accountId: t.accountId,
        ...('zoneId' in t ? { zoneId: t.zoneId } : {}),
        credentialsRef: { name: req.credentials },
        ...recordedSources(spec),
      },
    };
    try {
      // The apply answers with the whole object, status included: what the status patch builds on.
      const previous = await kube.apply(body);
      await kube.patchCustomStatus(ref, {
        ...status(previous),
        observedGeneration: previous?.metadata?.generation ?? 0,
      });
      return previous;
    } catch (err) {
      throw kubeFailure(err, `record CloudflareSyncState ${req.syncState}`);
    }
  }

  async function syncTarget(request: SyncTargetRequest): Promise<SyncResult> {
    const t = request.target;
    const existing = await getObject<CloudflareSyncState>(kube, syncStateRef(request.syncState));
    const previous = recordedConfigsOf(existing);
    const objects = await readSources(kube, request.sources);
    heartbeat();
    const { sources, verdicts, frozen, frozenRecords, credentials } = collectSources(
      t,
      request.sources,
      objects,
      previous,
      // The workflow's credentials (its last registration's) only when no live source names any.
      { established: existing?.spec.credentialsRef?.name, fallback: request.credentials },
      { clusterId: request.clusterId },
    );
    const kept = await unregisteredSources(kube, previous, request);
    // Orphaned sources (deletion policy Orphan): their items stay in Cloudflare as they are, for good.
    const registered = new Set(request.sources.map((r) => refString(r.ref)));
    for (const r of request.removing ?? [])
      if (r.orphan) {
        const record = previous.get(refString(r));
        if (record) kept.set(refString(r), { ...record, orphaned: true });
      }
    for (const [key, record] of previous)
      if (record.orphaned && !registered.has(key) && !kept.has(key)) kept.set(key, record);
    for (const [key, record] of kept) {
      frozen.add(key);
      frozenRecords.push(record);
    }
    // Every read and write below, and the SyncState's credentialsRef, use the target's own identity.
    const req: SyncTargetRequest = { ...request, credentials: credentials ?? request.credentials };
    const now = () => new Date();
    let cloudflareId = existing?.spec.cloudflareId ?? targetCloudflareId(t);
    const memoryData: Record<string, string> = { ...(existing?.status?.resultData ?? {}) };
    /** A settings target's holdings: its status, else the annotation that keeps them when the status is lost. */
    let heldSettings = adapterFor(t).planHeld ? heldSettingsOf(existing) : undefined;
    const record = (status: (previous: CloudflareSyncState | undefined) => Record<string, unknown>) =>
      recordSyncState(
        req,
        { cloudflareId, sources, frozenRecords, ...(heldSettings ? { managedSettings: heldSettings } : {}) },
        status,
      );
    const context: TargetContext = {
      data: memoryData,
      async remember(patch) {
        for (const [k, v] of Object.entries(patch)) {
          if (v === null) delete memoryData[k];
          else memoryData[k] = v;
        }
        await record(() => ({ resultData: patch }));
      },
      secret: (ref) => readSecretKey(kube, ref),
      digestKey: () => (digestKey ??= digestKeyOf(kube, req.credentials)),
      claims: () => (claimed ??= claimsOf(req, objects)),
      async claim(ownerMarker, id) {
        await context.claims(); // fills `claimers`
        const owner = claimers.get(ownerMarker);
        if (!owner?.metadata?.uid) return;
        try {
          await kube.mergePatch(
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
      },
    };
    let claimed: Promise<Map<string, string>> | undefined;
    let digestKey: Promise<Buffer> | undefined;
    const claimers = new Map<string, SourceObject>();
    /** The sources' recorded IDs by marker: the registered ones read already, the removed ones now. */
    async function claimsOf(r: SyncTargetRequest, read: Map<string, SourceObject>): Promise<Map<string, string>> {
      const owners: Array<[SourceRef, SourceObject | undefined]> = r.sources.map((reg) => [
        reg.ref,
        read.get(refString(reg.ref)),
      ]);
      for (const ref of r.removing ?? []) if (isSourceKind(ref.kind)) owners.push([ref, await getSource(kube, ref)]);
      const out = new Map<string, string>();
      for (const [ref, obj] of owners) {
        if (!obj) continue;
        const m = marker(r.clusterId, ref);
        claimers.set(m, obj);
        const id = obj.metadata?.annotations?.[CLOUDFLARE_ID_ANNOTATION];
        if (id) out.set(m, id);
      }
      return out;
    }
    const rejected: RejectedSource[] = [];
    /** Leaves a source Cloudflare refused out of this sync: its last good items stay as they are. */
    const reject = (r: RejectedSource) => {
      const i = sources.findIndex((s) => refString(s.ref) === r.source);
      if (i < 0) return;
      sources.splice(i, 1);
      frozen.add(r.source);
      const last = previous.get(r.source);
      if (last) frozenRecords.push(last);
      rejected.push(r);
      const v = verdicts.find((x) => refString(x.ref) === r.source);
      if (v) Object.assign(v, { result: 'Rejected', reason: r.reason, message: r.message });
    };
    // A periodic observation does not ask Cloudflare again about a generation it refused.
    if (req.trigger === 'observe')
      for (const r of existing?.status?.rejectedSources ?? [])
        if (sources.some((s) => refString(s.ref) === r.source && s.generation === r.generation)) reject(r);
    /** The kind of call under way: Cloudflare's refusal of it names the permission it needs. */
    let access: Access = 'Read';
    const editing = async <T>(call: () => Promise<T>): Promise<T> => {
      access = 'Edit';
      const out = await call();
      access = 'Read';
      return out;
    };
    try {
      const cf = await clientFor(
        kube,
        req.credentials,
        config.baseURL,
        pacing(req.trigger === 'observe' ? 'observe' : 'change'),
      );
      const adapter = adapterFor(t);
      let live = await adapter.read(cf, t, context);
      if (live.cloudflareId) cloudflareId = targetCloudflareId(t, live.cloudflareId);
      faultPoint('cloudflare-read');
      /** A frozen source's place among equal priorities: its object's creation time, else the one recorded. */
      const createdAtOf = (r: ConfigSource) => {
        const at = objects.get(refString(r.ref))?.metadata?.creationTimestamp;
        return at ? new Date(at).toISOString() : (r.createdAt ?? '');
      };
      /** The plan for the sources as they stand (frozen ones kept as they are) against `items`. */
      const planFor = async (items: unknown[]) => {
        // A target owned whole keeps a frozen source's last recorded configuration in the whole,
        // in its own place in the order (its real creation time, not before everyone).
        const whole = adapter.planWhole?.(
          items,
          [
            ...sources,
            ...frozenRecords.map(
              (r) => ({ ...r, createdAt: createdAtOf(r), generation: 0, uid: '' }) as RegisteredSource,
            ),
          ],
          req.clusterId,
        );
        const asked = whole ? whole.desired : adapter.desired(sources, req.clusterId);
        const desired = adapter.complete ? await adapter.complete(asked, context, items) : asked;
        const settings = adapter.planHeld?.(items, desired, heldSettings ?? [], frozen);
        const p =
          whole?.plan ??
          settings?.plan ??
          planWrite(items, desired, adapter.codec, {
            frozenOwners: frozen,
            clusterId: req.clusterId,
            adoptLegacy: req.adoptLegacyMarkers,
            ...(adapter.ownedKinds ? { ownedKinds: new Set(adapter.ownedKinds) } : {}),
          });
        return { desired, settings, p };
      };
      let { desired, settings, p } = await planFor(live.items);
      warnIfMarkedElsewhere(
        t,
        live.items.map((i) => adapter.codec.descriptionOf(i)),
        sources,
        req.clusterId,
      );
      let digest = digestOf(desired);
      const drifted = p.write && req.lastDigest === digest;
      // A user's `reaggregate` is an explicit request to write: it repairs even under observe.
      const driftLeft = drifted && req.driftPolicy === 'observe' && req.trigger !== 'reaggregate';
      let wrote = p.write && !driftLeft;
      if (wrote) {
        // A setting taken for the first time: remember what it was before changing it, so a crash
        // right after the write cannot lose the value to restore — still remembering the settings
        // this write releases, whose restore may not have happened when it crashes.
        if (settings?.takesNew) {
          const held = settings.heldWhileWriting;
          heldSettings = held;
          await record(() => ({ managedSettings: held }));
          faultPoint('cloudflare-settings-recorded');
        }
        try {
          const written = await editing(() => adapter.write(cf, t, p, live.items, context));
          if (written.cloudflareId) cloudflareId = targetCloudflareId(t, written.cloudflareId);
        } catch (err) {
          // Settings targets write setting by setting and remember what they hold: not bisected.
          if (adapter.planHeld || !refusedContent(err)) throw err;
          // Cloudflare refused the whole: find the sources whose change it refuses, write the rest.
          const changed = orderSources(
            sources.filter((s) => canonical(previous.get(refString(s.ref))?.config ?? null) !== canonical(s.config)),
          );
          if (changed.length === 0) throw err;
          const trial = await isolateRefused(changed, err);
          ({ desired, settings, p } = await planFor(live.items));
          digest = digestOf(desired);
          wrote = trial.wrote;
          if (p.write) {
            const written = await editing(() => adapter.write(cf, t, p, live.items, context));
            if (written.cloudflareId) cloudflareId = targetCloudflareId(t, written.cloudflareId);
            wrote = true;
          }
        }
        faultPoint('cloudflare-write');
      }

      /**
       * Tries the sources whose change Cloudflare may refuse one at a time, in priority order, on
       * top of the others: first none of them (if Cloudflare refuses even that, the fault is not
       * in a change and the target fails as a whole), then each in turn. A refused one is left
       * out with Cloudflare's message. With a dry run (rulesets) nothing is written until the
       * end; otherwise each accepted step is a real write, and the live state is read again.
       */
      async function isolateRefused(changed: RegisteredSource[], first: unknown): Promise<{ wrote: boolean }> {
        let wroteAny = false;
        const attempt = async (): Promise<void> => {
          const step = await planFor(live.items);
          if (!step.p.write) return;
          if (adapter.check) await editing(() => adapter.check!(cf, t, step.p, live.items, context));
          else {
            await editing(() => adapter.write(cf, t, step.p, live.items, context));
            wroteAny = true;
            live = await adapter.read(cf, t, context);
          }
        };
        // Held back: kept as they are in Cloudflare (a whole-owned target with their last record).
        for (const source of changed) {
          const k = refString(source.ref);
          sources.splice(sources.indexOf(source), 1);
          frozen.add(k);
          const last = previous.get(k);
          if (last) frozenRecords.push(last);
        }
        try {
          await attempt();
        } catch (err) {
          if (refusedContent(err)) throw first;
          throw err;
        }
        for (const source of changed) {
          const k = refString(source.ref);
          sources.push(source);
          frozen.delete(k);
          const last = previous.get(k);
          if (last) frozenRecords.splice(frozenRecords.indexOf(last), 1);
          heartbeat();
          try {
            // One changed source: the refused write was already the others plus it.
            if (changed.length === 1) throw first;
            await attempt();
          } catch (err) {
            if (!refusedContent(err)) throw err;
            access = 'Read'; // the refused write is over
            const failure = cloudflareFailure(err, `sync ${targetKey(t)}`);
            reject({
              source: k,
              generation: source.generation,
              reason: failure.type ?? CLOUDFLARE_FAILURE_TYPES.invalid,
              message: `${failure.message} (its items in Cloudflare stay as they were; the other sources are written)`,
            });
          }
        }
        return { wrote: wroteAny };
      }
      const configVersion = req.configVersion + (wrote ? 1 : 0);
      const wanted = new Map<string, number>();
      for (const d of desired) wanted.set(refString(d.owner), (wanted.get(refString(d.owner)) ?? 0) + 1);
      for (const c of p.conflicts) {
        const v = verdicts.find(
          (x) => refString(x.ref) === c.owner && (x.result === 'Synced' || x.result === 'Conflict'),
        );
        if (v) {
          v.allHeld = p.conflicts.filter((x) => x.owner === c.owner).length === wanted.get(c.owner);
          v.result = 'Conflict';
          const holder =
            c.heldBy === 'external'
              ? `one this operator does not manage (never adopted${adoptHint(v.ref.kind)})`
              : c.heldBy;
          v.message = `${v.message ? `${v.message}; ` : ''}${c.key} is already held by ${holder}`;
        }
      }
      if (settings) heldSettings = settings.held;
      // A tunnel rule two objects want: an Event on each, once per conflict (before the status that
      // remembers it, so a retry records again — the recorder counts one activity's Event once).
      for (const e of hostnameConflictEvents(
        p.conflicts,
        (existing?.status?.aggregatedConfig as { conflicts?: string[] } | undefined)?.conflicts ?? [],
        (kind) => (isSourceKind(kind) ? kindDefinition(kind).apiVersion : undefined),
      ))
        await events.record(e.regarding, e.event);
      const recorded = await record((prev) => {
        let conditions: Condition[] = setCondition(
          prev?.status?.conditions as Condition[] | undefined,
          {
            type: 'Ready',
            status: 'True',
            reason: 'Synced',
            message: wrote
              ? `wrote ${p.counts.desired} managed item(s) from ${sources.length} source(s); kept ${p.counts.external} external and ${p.counts.otherClusters} other clusters' item(s)`
              : `Cloudflare already matches ${sources.length} source(s) (${p.counts.desired} managed item(s))`,
            observedGeneration: prev?.metadata?.generation,
          },
          now(),
        );
        if (drifted || req.trigger === 'observe' || prev?.status?.conditions?.some((c) => c.type === 'Drifted'))
          conditions = setCondition(
            conditions,
            drifted
              ? {
                  type: 'Drifted',
                  status: 'True',
                  reason: driftLeft ? 'DriftObserved' : 'DriftRepaired',
                  message: `${p.differences.slice(0, 10).join('; ')}${driftLeft ? ' (drift policy observe: left as is)' : ' (re-applied)'}`,
                }
              : {
                  type: 'Drifted',
                  status: 'False',
                  reason: 'InSync',
                  message: 'our items in Cloudflare match the sources',
                },
            now(),
          );
        return {
          syncStatus: 'Synced',
          ...(wrote || !prev?.status?.lastSyncTime ? { lastSyncTime: now().toISOString() } : {}),
          configVersion,
          configHash: digest,
          aggregatedConfig: {
            managedItems: p.counts.desired,
            externalItems: p.counts.external,
            otherClusterItems: p.counts.otherClusters,
            legacyItems: p.counts.legacy,
            sources: sources.length,
            ...(p.conflicts.length ? { conflicts: p.conflicts.map(conflictLine) } : {}),
          },
          ...(settings ? { managedSettings: settings.held } : {}),
          rejectedSources: rejected.length ? rejected : null,
          error: null,
          failureReason: null,
          errorCategory: null,
          failedAt: null,
          retryCount: 0,
          conditions,
        };
      });
      await events.record(
        {
          apiVersion: CLOUDFLARE_API_VERSION,
          kind: CloudflareSyncStateKind.kind,
          name: req.syncState,
          ...(recorded.metadata?.uid ? { uid: recorded.metadata.uid } : {}),
        },
        driftEvent(
          { drifted, left: driftLeft, differences: p.differences },
          (recorded.status?.conditions as Condition[] | undefined)?.find((c) => c.type === 'Drifted'),
        ),
      );
      return ok({
        wrote,
        drifted,
        driftLeft,
        differences: p.differences,
        conflicts: p.conflicts,
        counts: p.counts,
        digest,
        configVersion,
        cloudflareId,
        verdicts,
        ...(kept.size ? { kept: kept.size } : {}),
      });
    } catch (err) {
      // Cancelled: nothing to record — the sync that follows writes the status.
      if (activitySignal()?.aborted) throw err;
      const failure =
        err instanceof ApplicationFailure
          ? err
          : cloudflareFailure(err, `sync ${targetKey(t)}`, permissionFor(t, access));
      const permanent = failure.nonRetryable;
      // Nothing was removed: the records of the sources being removed stay (an Orphan annotation
      // on a deletion stuck here keeps its items as they are recorded).
      for (const r of request.removing ?? []) {
        const last = previous.get(refString(r));
        if (last && !kept.has(refString(r))) frozenRecords.push(last);
      }
      await record((prev) => ({
        syncStatus: permanent ? 'Failed' : 'Error',
        error: failure.message,
        errorCategory: permanent ? 'Permanent' : 'Transient',
        ...(permanent
          ? { failureReason: failureReasonOf(failure.type ?? undefined), failedAt: now().toISOString() }
          : { retryCount: (prev?.status?.retryCount ?? 0) + 1 }),
        conditions: setCondition(
          prev?.status?.conditions as Condition[] | undefined,
          {
            type: 'Ready',
            status: 'False',
            reason: permanent ? 'SyncFailed' : 'SyncError',
            message: failure.message,
            observedGeneration: prev?.metadata?.generation,
          },
          now(),
        ),
      })).catch(() => undefined); // the status is best effort here; the failure below is what counts
      if (!permanent) throw failure;
      return failedWith({
        reason: failure.type ?? CLOUDFLARE_FAILURE_TYPES.invalid,
        message: failure.message,
        verdicts,
      });
    }
  }

  /** Deletes the SyncState once no source is left (its target then has nothing of ours). */
  async function deleteSyncState(req: { syncState: string }): Promise<void> {
    try {
      await kube.delete(syncStateRef(req.syncState));
    } catch (err) {
      throw kubeFailure(err, `delete CloudflareSyncState ${req.syncState}`);
    }
  }

  /** The zone id of a zone name, with the source's credentials (a zone the token cannot see is not found). */
  async function resolveZone(req: {
    credentials: string;
    zone: string;
    accountId: string;
  }): Promise<Ok<{ zoneId: string }> | Failed<{ reason: string; message: string }>> {
    try {
      const cf = await clientFor(kube, req.credentials, config.baseURL, pacing('change'));
      for await (const z of cf.zones.list({ name: req.zone, account: { id: req.accountId } }))
        return ok({ zoneId: z.id });
      return failedWith({
        reason: 'ZoneNotFound',
        message: `zone ${req.zone} not found in account ${req.accountId} with credentials ${req.credentials}`,
      });
    } catch (err) {
      const failure =
        err instanceof ApplicationFailure
          ? err
          : cloudflareFailure(err, `look up zone ${req.zone}`, 'Zone Read (zone-level)');
      if (!failure.nonRetryable) throw failure;
      return failedWith({ reason: failure.type ?? 'CloudflareInvalid', message: failure.message });
    }
  }

  /**
   * Where the CNAME of each hostname of a tunnel source goes (src/domain/cloudflare/tunnels.ts
   * decides): the source read fresh here — a class config's Ingresses and routes stay out of its
   * workflow's history —, the zones holding its hostnames from one listing of the account's zones
   * (50 a page), none when the Tunnel gives its zone's ID and that zone holds every hostname (as
   * the original). Only the zones used and the first unplaced hostnames go back to the workflow.
   */
  async function placeTunnelHostnames(req: {
    ref: SourceRef;
    credentials: string;
    accountId: string;
    allowedZones?: string[];
  }): Promise<
    | Ok<{ zones: HostnameZone[]; unplaced: UnplacedHostname[]; unplacedCount: number }>
    | Failed<{ reason: string; message: string }>
  > {
    const kind = req.ref.kind;
    if (!isSourceKind(kind)) return ok({ zones: [], unplaced: [], unplacedCount: 0 });
    const obj = await getSource(kube, req.ref);
    const spec = obj && (isExpanded(kind) ? await expandSource(kube, kind, obj) : obj.spec);
    const hostnames = (spec && dnsHostnamesOf(kind, spec)) ?? [];
    const tunnelDomain = spec ? zoneOf(kind, spec) : undefined;
    const givenZoneId = spec ? zoneIdOf(spec) : undefined;
    const named = hostnames.filter((h) => !h.startsWith('*'));
    let zones: Array<{ id: string; name: string }> = [];
    if (tunnelDomain && givenZoneId && named.every((h) => inZone(h, tunnelDomain)))
      zones = [{ id: givenZoneId, name: tunnelDomain.toLowerCase() }];
    else if (named.length)
      try {
        const cf = await clientFor(kube, req.credentials, config.baseURL, pacing('change'));
        for await (const z of cf.zones.list({ account: { id: req.accountId }, per_page: 50 }))
          if (named.some((h) => inZone(h, z.name))) zones.push({ id: z.id, name: z.name.toLowerCase() });
      } catch (err) {
        const failure = err instanceof ApplicationFailure ? err : cloudflareFailure(err, 'list the zones');
        if (!failure.nonRetryable) throw failure;
        return failedWith({ reason: failure.type ?? 'CloudflareInvalid', message: failure.message });
      }
    const placed = placeHostnames(hostnames, zones, {
      credentials: req.credentials,
      ...(tunnelDomain ? { tunnelDomain } : {}),
      ...(req.allowedZones ? { allowedZones: req.allowedZones } : {}),
    });
    return ok({
      zones: placed.zones,
      unplaced: placed.unplaced.slice(0, MAX_UNPLACED_SHOWN),
      unplacedCount: placed.unplaced.length,
    });
  }

  return {
    syncTarget: (req: SyncTargetRequest) => whileAlive(() => syncTarget(req)),
    placeTunnelHostnames: (req: Parameters<typeof placeTunnelHostnames>[0]) =>
      whileAlive(() => placeTunnelHostnames(req)),
    deleteSyncState: (req: { syncState: string }) => whileAlive(() => deleteSyncState(req)),
    resolveZone: (req: Parameters<typeof resolveZone>[0]) => whileAlive(() => resolveZone(req)),
  };
}

/**
 * Heartbeats every few seconds while `fn` runs: a worker that dies mid-call (a crash between the
 * GET and the PUT) is noticed within the heartbeat timeout (activity-options.ts), and the retry
 * runs elsewhere then instead of after the 2-minute start-to-close timeout.
 */
async function whileAlive<T>(fn: () => Promise<T>): Promise<T> {
  heartbeat();
  // Every second: a heartbeat is also how a cancellation reaches the attempt (the account workers
  // send them at most a second apart), so a change waits at most about that for an observation.
  const timer = setInterval(() => heartbeat(), 1_000);
  try {
    return await fn();
  } catch (err) {
    // Cancelled (a change interrupted an observation, or Temporal gave up on the attempt): its
    // aborted call is reported as the cancellation it is, not as a Cloudflare failure to retry.
    const signal = activitySignal();
    if (signal?.aborted) throw signal.reason ?? err;
    throw err;
  } finally {
    clearInterval(timer);
  }
}

export type CloudflareSyncActivities = ReturnType<typeof createCloudflareSyncActivities>;
