/**
 * The read step of a target's sync: the SyncState, the registered sources fresh, the rules of
 * their credentials, the records kept for sources not registered, and then Cloudflare's live
 * object — the facts src/domain/cloudflare/sync-plan.ts decides on.
 */
import { createHash } from 'node:crypto';
import { log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type Cloudflare from 'cloudflare';
import {
  CloudflareSyncStateKind,
  MANAGED_SETTINGS_ANNOTATION,
  type CloudflareSyncState,
  type ConfigSource,
  type ManagedSetting,
} from '../../api/cloudflare.js';
import type { CloudflareConfig } from '../../config.js';
import { unpackConfigs } from '../../codec/packed-configs.js';
import type { CredentialsUsePolicy } from '../../domain/cloudflare/credentials-use.js';
import { type SourceRef, parseRefString, refString } from '../../domain/cloudflare/markers.js';
import { canonical } from '../../domain/cloudflare/merge.js';
import type { Access } from '../../domain/cloudflare/permissions.js';
import { isSourceKind, kindDefinition, listedWhenMany } from '../../domain/cloudflare/sources.js';
import {
  NOTHING_PLANNED,
  SyncSources,
  askedItems,
  collectSources,
  keptSources,
  keptWhileThere,
  planTarget,
  unregisteredRecords,
  type SourceObject,
  type TargetPlan,
} from '../../domain/cloudflare/sync-plan.js';
import { targetCloudflareId, targetKey } from '../../domain/cloudflare/targets.js';
import { sameSourcesUnderOtherIds } from '../../kube/cluster-identity.js';
import type { KubeClient } from '../../kube/client.js';
import type { EventRecorder } from '../../kube/events.js';
import type { SourceRegistration } from '../../workflows/cloudflare/messages.js';
import { faultPoint } from '../fault-points.js';
import { getObject, heartbeat, listAll } from '../kubernetes/calls.js';
import type { CallBudget, CallPriority } from './call-budget.js';
import { clientFor, credentialsUsePolicy, findCredentials } from './credentials.js';
import { expandSource, isExpanded } from './expand.js';
import type { SyncTargetRequest } from './sync.js';
import { adapterFor, type TargetAdapter, type TargetContext } from './targets/index.js';

/** What every step of a sync uses: the cluster, Cloudflare's address, the Event recorder and the call budget. */
export interface SyncDeps {
  kube: KubeClient;
  config: Pick<CloudflareConfig, 'baseURL'>;
  events: EventRecorder;
  /** Observations spend the budget after changes (call-budget.ts). */
  pacing(priority: CallPriority): { budget: CallBudget; priority: CallPriority } | undefined;
}

/** One sync of one target as it goes: the facts read, the plan, and what the apply step changed. */
export interface SyncRun {
  readonly deps: SyncDeps;
  /** The request with the target's own credentials: every read and write and the SyncState's credentialsRef use them. */
  readonly request: SyncTargetRequest;
  readonly existing: CloudflareSyncState | undefined;
  /** The sources the SyncState records, by source. */
  readonly previous: Map<string, ConfigSource>;
  readonly objects: Map<string, SourceObject>;
  /** Records kept as they are: sources not registered (yet) and orphans. */
  readonly kept: Map<string, ConfigSource>;
  readonly sources: SyncSources;
  readonly adapter: TargetAdapter<unknown>;
  /** A zone's tunnel CNAMEs: each source's records are written with its own credentials (issue 33, N10). */
  readonly perSource: boolean;
  context: TargetContext;
  cloudflareId: string;
  /** A settings target's holdings: its status, else the annotation that keeps them when the status is lost. */
  heldSettings: ManagedSetting[] | undefined;
  /** The kind of call under way: Cloudflare's refusal of it names the permission it needs. */
  access: Access;
  live: { items: unknown[]; cloudflareId?: string };
  planned: TargetPlan<unknown>;
}

/** What the read step knows before the adapter's context exists. */
export type SyncFacts = Omit<SyncRun, 'context' | 'live' | 'planned'>;

export function syncStateRef(name: string) {
  return {
    apiVersion: CloudflareSyncStateKind.apiVersion,
    kind: CloudflareSyncStateKind.kind,
    plural: CloudflareSyncStateKind.plural,
    name,
  };
}

/** A source object as it stands now, by its reference (none when it is gone or not a source kind). */
export async function getSource(kube: KubeClient, ref: SourceRef): Promise<SourceObject | undefined> {
  if (!isSourceKind(ref.kind)) return undefined;
  const def = kindDefinition(ref.kind);
  return getObject<SourceObject>(kube, {
    apiVersion: def.apiVersion,
    kind: def.kind,
    namespace: ref.namespace,
    name: ref.name,
  });
}

/**
 * The registered sources' objects, fresh: a GET each when few, one list per kind when many
 * (except the kinds with one source per target, always a GET each).
 */
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
        const meta = obj.metadata!;
        found.set(refString({ kind, ...(meta.namespace ? { namespace: meta.namespace } : {}), name: meta.name! }), obj);
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
 * The rules of every credentials the sources registered with (usually one), read now: the
 * target checks each spec it reads against them. Credentials gone are left out: every write
 * with them fails anyway.
 */
async function policiesOf(
  kube: KubeClient,
  regs: SourceRegistration[],
): Promise<Map<string, { policy: CredentialsUsePolicy; defaultDomain?: string }>> {
  const out = new Map<string, { policy: CredentialsUsePolicy; defaultDomain?: string }>();
  for (const name of new Set(regs.map((r) => r.credentials)))
    try {
      const creds = await findCredentials(kube, name);
      out.set(name, {
        policy: credentialsUsePolicy(creds),
        ...(creds.spec.defaultDomain ? { defaultDomain: creds.spec.defaultDomain } : {}),
      });
    } catch (err) {
      if (!(err instanceof ApplicationFailure && err.nonRetryable)) throw err;
    }
  return out;
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
  const kept = new Map<string, ConfigSource>();
  for (const record of unregisteredRecords(previous, req.sources, req.removing)) {
    const still = keptWhileThere(record, await getSource(kube, record.ref));
    if (still) kept.set(refString(record.ref), still);
  }
  return kept;
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
  const annotation = state?.metadata?.annotations?.[MANAGED_SETTINGS_ANNOTATION];
  if (!annotation) return [];
  try {
    const parsed = JSON.parse(annotation) as unknown;
    return Array.isArray(parsed) ? (parsed as ManagedSetting[]) : [];
  } catch {
    return []; // unreadable (edited by hand): as if nothing were held
  }
}

/**
 * Reads what the cluster says about the target: its SyncState, its sources fresh with the rules
 * of their credentials, and the records kept for sources that are not registered (orphans
 * included). The Cloudflare side is read later (`readLive`), inside the part whose failure is
 * recorded on the SyncState.
 */
export async function readTarget(
  deps: SyncDeps,
  request: SyncTargetRequest,
  contextOf: (run: SyncFacts) => TargetContext,
): Promise<SyncRun> {
  const { kube } = deps;
  const target = request.target;
  const existing = await getObject<CloudflareSyncState>(kube, syncStateRef(request.syncState));
  const previous = recordedConfigsOf(existing);
  const objects = await readSources(kube, request.sources);
  const policies = await policiesOf(kube, request.sources);
  const perSource = target.resourceType === 'TunnelDNS';
  heartbeat();
  const collected = collectSources(
    target,
    request.sources,
    objects,
    previous,
    // The workflow's credentials (its last registration's) only when no live source names any.
    { established: existing?.spec.credentialsRef?.name, fallback: request.credentials, perSource },
    { clusterId: request.clusterId },
    policies,
  );
  const sources = new SyncSources(collected, previous);
  const unregistered = await unregisteredSources(kube, previous, request);
  const kept = keptSources(previous, unregistered, request.sources, request.removing);
  for (const [key, record] of kept) sources.keep(key, record);
  const adapter = adapterFor(target);
  const facts: SyncFacts = {
    deps,
    request: { ...request, credentials: collected.credentials ?? request.credentials },
    existing,
    previous,
    objects,
    kept,
    sources,
    adapter,
    perSource,
    cloudflareId: existing?.spec.cloudflareId ?? targetCloudflareId(target),
    heldSettings: adapter.planHeld ? heldSettingsOf(existing) : undefined,
    access: 'Read',
  };
  // One object for the whole sync: the context records what the later steps change on it.
  const context = contextOf(facts);
  return Object.assign(facts, { context, live: { items: [] }, planned: NOTHING_PLANNED });
}

/** The Cloudflare client of the target's own credentials, paced as a change or an observation. */
export function clientOf(run: Pick<SyncRun, 'deps' | 'request'>, credentials = run.request.credentials) {
  const priority = run.deps.pacing(run.request.trigger === 'observe' ? 'observe' : 'change');
  return clientFor(run.deps.kube, credentials, run.deps.config.baseURL, priority);
}

/** Reads the target's live object in Cloudflare (and its id, when it has one). */
export async function readLive(run: SyncRun, cf: Cloudflare): Promise<void> {
  run.live = await run.adapter.read(cf, run.request.target, run.context);
  if (run.live.cloudflareId) run.cloudflareId = targetCloudflareId(run.request.target, run.live.cloudflareId);
  faultPoint('cloudflare-read');
}

/** Plans the sources as they stand (frozen ones kept as they are) against the live items read last. */
export async function replan(run: SyncRun): Promise<TargetPlan<unknown>> {
  const { adapter, request, sources, live } = run;
  const asked = askedItems(adapter, live.items, sources, request.clusterId, (record) => createdAtOf(run, record));
  // Completing the desired items may read (a Secret's digest): the part of planning that is I/O.
  if (adapter.complete) asked.desired = await adapter.complete(asked.desired, run.context, live.items);
  run.planned = planTarget(
    adapter,
    live.items,
    asked,
    {
      frozen: sources.frozen,
      ...(run.heldSettings ? { held: run.heldSettings } : {}),
      clusterId: request.clusterId,
      adoptLegacy: request.adoptLegacyMarkers,
    },
    digestOf,
  );
  return run.planned;
}

/** The digest of the desired managed subset: what a later sync compares with to tell drift from change. */
export function digestOf(desired: readonly { item: unknown }[]): string {
  return createHash('sha256')
    .update(canonical(desired.map((d) => d.item)))
    .digest('hex');
}

/** A frozen source's place among equal priorities: its object's creation time, else the one recorded. */
function createdAtOf(run: Pick<SyncRun, 'objects'>, record: ConfigSource): string {
  const at = run.objects.get(refString(record.ref))?.metadata?.creationTimestamp;
  return at ? new Date(at).toISOString() : (record.createdAt ?? '');
}

/** Targets already warned about in this process (a sync runs at every observation). */
const warnedElsewhere = new Set<string>();

/** Logs once per target when our sources' items carry another cluster id (a restore without its SyncStates). */
export function warnIfMarkedElsewhere(run: SyncRun): void {
  const { target, clusterId } = run.request;
  const descriptions = run.live.items.map((i) => run.adapter.codec.descriptionOf(i));
  const key = targetKey(target);
  if (warnedElsewhere.has(key) || !descriptions.some((d) => d?.includes('[managed-by:'))) return;
  const ids = sameSourcesUnderOtherIds(
    descriptions,
    run.sources.sources.map((s) => s.ref),
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
