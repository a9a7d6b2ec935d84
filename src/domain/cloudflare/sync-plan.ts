/**
 * One sync of one target, decided without I/O: which registered sources contribute and which
 * stay as they are in Cloudflare (frozen), what the merge writes against the live object, whether
 * a difference is drift and whether it is repaired, each source's verdict, and the status and
 * Events that say so. The activity (src/activities/cloudflare/sync.ts) reads the facts, applies
 * the plan and records it — external-dns' source → plan → registry → provider, with this file as
 * the plan.
 */
import type { CloudflareSyncState, ConfigSource, ManagedSetting } from '../../api/cloudflare.js';
import { setCondition, type Condition } from '../conditions.js';
import { orderSources, type RegisteredSource } from './aggregate.js';
import { credentialsConflictMessage, targetIdentity } from './identity.js';
import type { ValidationContext } from './kinds/index.js';
import type { CredentialsUsePolicy } from './credentials-use.js';
import { type SourceRef, refString } from './markers.js';
import { canonical, planWrite, type Conflict, type DesiredItem, type ItemCodec, type WritePlan } from './merge.js';
import type { SettingsPlan } from './settings.js';
import {
  anchorOf,
  contributionFor,
  isSourceKind,
  priorityOf,
  targetUseRefusal,
  validateSource,
  type SourceKind,
  type SourceSpec,
} from './sources.js';
import { targetKey, type SyncTarget } from './targets.js';
import { conflictLine } from './tunnels.js';

/** The metadata of an object as the cluster answers it (what the sync reads of it). */
export interface ObjectFacts {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    generation?: number;
    creationTimestamp?: Date;
    deletionTimestamp?: Date;
    annotations?: Record<string, string>;
  };
}

/** A source object as read from the cluster (its spec expanded with what it refers to). */
export interface SourceObject extends ObjectFacts {
  spec: SourceSpec;
}

/** What a source told the target when it registered (the workflow's `SourceRegistration`). */
export interface SourceClaim {
  ref: SourceRef;
  uid: string;
  generation: number;
  anchor: string;
  credentials: string;
  subzones?: string[];
}

/** What happened to one registered source in this sync. */
export interface SourceVerdict {
  ref: SourceRef;
  /** The generation the verdict is about (the one read fresh). */
  generation: number;
  /**
   * Synced: in Cloudflare now. Invalid: its spec is wrong, its last good items stay.
   * CredentialsConflict: it names other credentials than the target is written with; its items
   * stay as they are. Rejected: Cloudflare refused its items, or the credentials' rules refuse
   * the spec as it now reads (`reason`: PriorityNotAllowed…); its last good items stay as they
   * are while the other sources are written. Gone/Elsewhere: left out.
   */
  result: 'Synced' | 'Invalid' | 'Conflict' | 'CredentialsConflict' | 'Rejected' | 'Gone' | 'Elsewhere';
  message: string;
  /** Rejected only: why Cloudflare refused the source's items (its failure type). */
  reason?: string;
  /** Conflict only: every item of the source is held by someone else (nothing of it is in Cloudflare). */
  allHeld?: boolean;
}

/** A source whose items Cloudflare refused, at the generation it refused (recorded on the SyncState). */
export type RejectedSource = NonNullable<NonNullable<CloudflareSyncState['status']>['rejectedSources']>[number];

export interface CollectedSources {
  sources: RegisteredSource[];
  verdicts: SourceVerdict[];
  frozen: Set<string>;
  frozenRecords: ConfigSource[];
  /** The credentials every write to the target uses (./identity.ts decides). */
  credentials: string | undefined;
}

type LiveSource = { claim: SourceClaim; key: string; obj: SourceObject; kind: SourceKind };

const createdAtOf = (obj: ObjectFacts) =>
  obj.metadata?.creationTimestamp ? new Date(obj.metadata.creationTimestamp).toISOString() : '';

/** The source's object as it stands, or the verdict that leaves it out (deleted, or moved to another target). */
function liveSourceOf(claim: SourceClaim, objects: ReadonlyMap<string, SourceObject>): LiveSource | SourceVerdict {
  const key = refString(claim.ref);
  const obj = objects.get(key);
  const kind = claim.ref.kind as SourceKind;
  if (!obj || obj.metadata?.uid !== claim.uid || !isSourceKind(kind))
    return { ref: claim.ref, generation: claim.generation, result: 'Gone', message: `${key} no longer exists` };
  if (anchorOf(kind, obj.spec) !== claim.anchor)
    return {
      ref: claim.ref,
      generation: obj.metadata.generation ?? 0,
      result: 'Elsewhere',
      message: `${key} now targets another zone or account`,
    };
  return { claim, key, obj, kind };
}

/**
 * Why a live source does not contribute this time (its items stay as they are), if it does not:
 * its spec is invalid, or the credentials' rules refuse the spec as it reads now — an edit the
 * webhook did not see and the source's workflow refused changes nothing in Cloudflare.
 */
function refusalOf(
  target: SyncTarget,
  { claim, obj, kind }: LiveSource,
  validation: ValidationContext,
  policies: ReadonlyMap<string, { policy: CredentialsUsePolicy; defaultDomain?: string }>,
): Pick<SourceVerdict, 'result' | 'message' | 'reason'> | undefined {
  const problems = validateSource(kind, obj.spec, claim.ref, validation);
  if (problems.length)
    return {
      result: 'Invalid',
      message: `${problems.join('; ')} (what it wrote before stays in Cloudflare until the spec is fixed)`,
    };
  const rules = policies.get(claim.credentials);
  const refused = rules && targetUseRefusal(kind, obj.spec, claim.ref.namespace, rules, target);
  if (refused)
    return {
      result: 'Rejected',
      reason: refused.reason,
      message: `${refused.message} (what it wrote before stays in Cloudflare as it was)`,
    };
  return undefined;
}

/**
 * Sources as the sync sees them, with a verdict each. A source whose spec became invalid is
 * frozen: its items in Cloudflare stay exactly as they are (the merge keeps them like anyone
 * else's) until the spec is fixed or the source deleted; the SyncState keeps listing it with the
 * configuration it last recorded.
 */
export function collectSources(
  target: SyncTarget,
  claims: readonly SourceClaim[],
  objects: ReadonlyMap<string, SourceObject>,
  previous: ReadonlyMap<string, ConfigSource>,
  /** `perSource`: every source is written with its own credentials (a zone's tunnel CNAMEs), none is in conflict. */
  identity: { established?: string; fallback?: string; perSource?: boolean } = {},
  validation: ValidationContext = {},
  /** The rules of each credentials the sources registered with (a source whose are unknown is not checked here: its writes fail without them). */
  policies: ReadonlyMap<string, { policy: CredentialsUsePolicy; defaultDomain?: string }> = new Map(),
): CollectedSources {
  const out: CollectedSources = { sources: [], verdicts: [], frozen: new Set(), frozenRecords: [], credentials: '' };
  const live: LiveSource[] = [];
  for (const claim of claims) {
    const found = liveSourceOf(claim, objects);
    if ('claim' in found) live.push(found);
    else out.verdicts.push(found);
  }
  const { credentials, conflicting } = targetIdentity(
    live.map(({ claim, key, obj }) => ({ key, credentials: claim.credentials, createdAt: createdAtOf(obj) })),
    identity.established,
    identity.fallback,
  );
  out.credentials = credentials;
  for (const source of live) {
    const { claim, key, obj, kind } = source;
    const generation = obj.metadata!.generation ?? 0;
    const refusal =
      conflicting.includes(key) && !identity.perSource
        ? {
            result: 'CredentialsConflict' as const,
            message: credentialsConflictMessage(targetKey(target), credentials!, claim.credentials),
          }
        : refusalOf(target, source, validation, policies);
    if (refusal) {
      out.frozen.add(key);
      const last = previous.get(key);
      if (last) out.frozenRecords.push(last);
      out.verdicts.push({ ref: claim.ref, generation, ...refusal });
      continue;
    }
    out.sources.push({
      ref: claim.ref,
      uid: claim.uid,
      createdAt: createdAtOf(obj),
      generation,
      priority: priorityOf(kind, obj.spec),
      config: contributionFor(
        kind,
        obj.spec,
        target,
        claim.ref,
        claim.subzones ? { subzones: claim.subzones } : undefined,
      ),
    });
    out.verdicts.push({ ref: claim.ref, generation, result: 'Synced', message: '' });
  }
  return out;
}

/**
 * The records a sync keeps as they are although their source is not registered: the sources
 * still there that have not registered again (`unregistered`), the ones removed with deletion
 * policy Orphan (marked `orphaned`, kept for good), and those orphaned before.
 */
export function keptSources(
  previous: ReadonlyMap<string, ConfigSource>,
  unregistered: ReadonlyMap<string, ConfigSource>,
  claims: readonly SourceClaim[],
  removing: ReadonlyArray<SourceRef & { orphan?: boolean }> = [],
): Map<string, ConfigSource> {
  const kept = new Map(unregistered);
  for (const removal of removing)
    if (removal.orphan) {
      const record = previous.get(refString(removal));
      if (record) kept.set(refString(removal), { ...record, orphaned: true });
    }
  const registered = new Set(claims.map((c) => refString(c.ref)));
  for (const [key, record] of previous)
    if (record.orphaned && !registered.has(key) && !kept.has(key)) kept.set(key, record);
  return kept;
}

/** The records the SyncState lists whose source neither registered nor is being removed: read to see whether they are still there. */
export function unregisteredRecords(
  previous: ReadonlyMap<string, ConfigSource>,
  claims: readonly SourceClaim[],
  removing: readonly SourceRef[] = [],
): ConfigSource[] {
  const known = new Set([...claims.map((c) => c.ref), ...removing].map(refString));
  return [...previous].filter(([key, r]) => !known.has(key) && isSourceKind(r.ref.kind)).map(([, r]) => r);
}

/** An unregistered source's record kept while its object is there and not being deleted (with its creation time, when it had none). */
export function keptWhileThere(record: ConfigSource, obj: ObjectFacts | undefined): ConfigSource | undefined {
  if (!obj || obj.metadata?.deletionTimestamp) return undefined;
  const at = obj.metadata?.creationTimestamp;
  return at && !record.createdAt ? { ...record, createdAt: new Date(at).toISOString() } : record;
}

/**
 * The sources of one sync and what happens to them while it runs: those that contribute, those
 * frozen (their items stay as they are, their last records kept), those Cloudflare refused, and
 * a verdict for each registered one.
 */
export class SyncSources {
  readonly sources: RegisteredSource[];
  readonly verdicts: SourceVerdict[];
  readonly frozen: Set<string>;
  readonly frozenRecords: ConfigSource[];
  readonly rejected: RejectedSource[] = [];

  constructor(
    collected: Pick<CollectedSources, 'sources' | 'verdicts' | 'frozen' | 'frozenRecords'>,
    private readonly previous: ReadonlyMap<string, ConfigSource>,
  ) {
    this.sources = collected.sources;
    this.verdicts = collected.verdicts;
    this.frozen = collected.frozen;
    this.frozenRecords = collected.frozenRecords;
  }

  /** Keeps a record as it is (a source not registered, or orphaned). */
  keep(key: string, record: ConfigSource): void {
    this.frozen.add(key);
    this.frozenRecords.push(record);
  }

  /** Leaves a contributing source out for now: its items stay as they are, with its last record. */
  holdBack(source: RegisteredSource): void {
    const key = refString(source.ref);
    this.sources.splice(this.sources.indexOf(source), 1);
    this.frozen.add(key);
    const last = this.previous.get(key);
    if (last) this.frozenRecords.push(last);
  }

  /** Lets a held-back source contribute again. */
  release(source: RegisteredSource): void {
    const key = refString(source.ref);
    this.sources.push(source);
    this.frozen.delete(key);
    const last = this.previous.get(key);
    if (last) this.frozenRecords.splice(this.frozenRecords.indexOf(last), 1);
  }

  /** Leaves a source Cloudflare refused out of this sync: its last good items stay as they are. */
  reject(refusal: RejectedSource): void {
    const source = this.sources.find((s) => refString(s.ref) === refusal.source);
    if (!source) return;
    this.holdBack(source);
    this.rejected.push(refusal);
    const verdict = this.verdicts.find((v) => refString(v.ref) === refusal.source);
    if (verdict) Object.assign(verdict, { result: 'Rejected', reason: refusal.reason, message: refusal.message });
  }

  /** A periodic observation does not ask Cloudflare again about a generation it refused. */
  rejectAgain(trigger: SyncTrigger, rejectedBefore: readonly RejectedSource[]): void {
    if (trigger !== 'observe') return;
    for (const refusal of rejectedBefore)
      if (this.sources.some((s) => refString(s.ref) === refusal.source && s.generation === refusal.generation))
        this.reject(refusal);
  }

  /** The contributing sources whose configuration differs from the one last recorded, in priority order. */
  changed(): RegisteredSource[] {
    return orderSources(
      this.sources.filter(
        (s) => canonical(this.previous.get(refString(s.ref))?.config ?? null) !== canonical(s.config),
      ),
    );
  }

  /** After a failure nothing was removed: the records of the sources being removed stay (unless kept already). */
  keepRemoved(removing: readonly SourceRef[], kept: ReadonlyMap<string, ConfigSource>): void {
    for (const removal of removing) {
      const last = this.previous.get(refString(removal));
      if (last && !kept.has(refString(removal))) this.frozenRecords.push(last);
    }
  }

  /** Marks the sources whose items the merge left out because someone else holds their key. */
  markConflicts(conflicts: readonly Conflict[], desired: readonly DesiredItem<unknown>[]): void {
    const wanted = new Map<string, number>();
    for (const d of desired) wanted.set(refString(d.owner), (wanted.get(refString(d.owner)) ?? 0) + 1);
    for (const conflict of conflicts) {
      const verdict = this.verdicts.find(
        (v) => refString(v.ref) === conflict.owner && (v.result === 'Synced' || v.result === 'Conflict'),
      );
      if (!verdict) continue;
      verdict.allHeld = conflicts.filter((c) => c.owner === conflict.owner).length === wanted.get(conflict.owner);
      verdict.result = 'Conflict';
      const holder =
        conflict.heldBy === 'external'
          ? `one this operator does not manage (never adopted${adoptHint(verdict.ref.kind)})`
          : conflict.heldBy;
      verdict.message = `${verdict.message ? `${verdict.message}; ` : ''}${conflict.key} is already held by ${holder}`;
    }
  }
}

/** How a user of a kind that can adopt takes over an unmarked object. */
function adoptHint(kind: string): string {
  return kind === 'DNSRecord' ? '; set spec.adoptExisting: true to take it over' : '';
}

/** Why a sync runs: sources changed, the periodic observation, or a user's `reaggregate`. */
export type SyncTrigger = 'change' | 'observe' | 'reaggregate';

/**
 * The pure half of a target adapter (src/activities/cloudflare/targets/adapter.ts): how its
 * items are compared and marked, and how the sources' items and the plan are made.
 */
export interface TargetPlanner<I> {
  codec: ItemCodec<I>;
  /**
   * The source kinds whose marked items are this target's, when another target reads the same
   * Cloudflare list (a zone's DNS records); undefined: every marker of this cluster.
   */
  ownedKinds?: readonly string[];
  /**
   * Targets owned whole (a tunnel configuration, whose rules carry no marker): the adapter plans
   * from every source itself instead of the marker merge. Frozen sources (invalid specs) come
   * with the configuration they last recorded, so nothing of theirs changes meanwhile.
   */
  planWhole?(
    live: I[],
    sources: RegisteredSource[],
    clusterId: string,
  ): { plan: WritePlan<I>; desired: DesiredItem<I>[] };
  /** The items the sources want, in aggregation order, each marked with its source. */
  desired(sources: RegisteredSource[], clusterId: string): DesiredItem<I>[];
  /**
   * Settings targets, whose items carry no marker: plans from what the SyncState remembers
   * holding (./settings.ts) instead of the marker merge.
   */
  planHeld?(
    live: I[],
    desired: DesiredItem<I>[],
    held: ManagedSetting[],
    frozenOwners: ReadonlySet<string>,
  ): SettingsPlan;
}

/** What the sources want of the target: a whole-owned target's own plan, else the marked items to merge. */
export function askedItems<I>(
  planner: TargetPlanner<I>,
  live: I[],
  sources: SyncSources,
  clusterId: string,
  /** A frozen source's place among equal priorities: its object's creation time, else the one recorded. */
  createdAtOf: (record: ConfigSource) => string,
): { desired: DesiredItem<I>[]; whole?: WritePlan<I> } {
  // A target owned whole keeps a frozen source's last recorded configuration in the whole, in its
  // own place in the order (its real creation time, not before everyone).
  const frozen = sources.frozenRecords.map(
    (r) => ({ ...r, createdAt: createdAtOf(r), generation: 0, uid: '' }) as RegisteredSource,
  );
  const whole = planner.planWhole?.(live, [...sources.sources, ...frozen], clusterId);
  return whole
    ? { desired: whole.desired, whole: whole.plan }
    : { desired: planner.desired(sources.sources, clusterId) };
}

/**
 * What one sync plans to write, and the digest of the desired managed subset (drift is a change
 * with the same digest; the activity computes it, src/activities/cloudflare/sync-read.ts `digestOf`).
 */
export interface TargetPlan<I> {
  desired: DesiredItem<I>[];
  settings?: SettingsPlan;
  plan: WritePlan<I>;
  digest: string;
}

/** Before the live object is read: nothing to write. */
export const NOTHING_PLANNED: TargetPlan<never> = {
  desired: [],
  plan: {
    items: [],
    write: false,
    differences: [],
    conflicts: [],
    counts: { ours: 0, external: 0, otherClusters: 0, legacy: 0, frozen: 0, desired: 0, adopted: 0 },
  },
  digest: '',
};

/** The plan for the desired items (completed by the activity) against the live ones. */
export function planTarget<I>(
  planner: TargetPlanner<I>,
  live: I[],
  asked: { desired: DesiredItem<I>[]; whole?: WritePlan<I> },
  options: { frozen: ReadonlySet<string>; held?: ManagedSetting[]; clusterId: string; adoptLegacy: boolean },
  digestOf: (desired: readonly DesiredItem<I>[]) => string,
): TargetPlan<I> {
  const { desired, whole } = asked;
  const settings = planner.planHeld?.(live, desired, options.held ?? [], options.frozen);
  const plan =
    whole ??
    (settings?.plan as WritePlan<I> | undefined) ??
    planWrite(live, desired, planner.codec, {
      frozenOwners: options.frozen,
      clusterId: options.clusterId,
      adoptLegacy: options.adoptLegacy,
      ...(planner.ownedKinds ? { ownedKinds: new Set(planner.ownedKinds) } : {}),
    });
  return { desired, ...(settings ? { settings } : {}), plan, digest: digestOf(desired) };
}

export interface WriteDecision {
  /** Our items in Cloudflare differ from what was last written, with no source change: someone edited them. */
  drifted: boolean;
  /** Drift found and left in place (drift policy observe). */
  driftLeft: boolean;
  write: boolean;
}

/** Whether to write: when the plan says so, unless it is drift the policy leaves in place. */
export function decideWrite(
  plan: Pick<WritePlan<unknown>, 'write'>,
  digest: string,
  request: { lastDigest?: string; driftPolicy: 'repair' | 'observe'; trigger: SyncTrigger },
): WriteDecision {
  const drifted = plan.write && request.lastDigest === digest;
  // A user's `reaggregate` is an explicit request to write: it repairs even under observe.
  const driftLeft = drifted && request.driftPolicy === 'observe' && request.trigger !== 'reaggregate';
  return { drifted, driftLeft, write: plan.write && !driftLeft };
}

/** What a successful sync records on the SyncState's status. */
export interface SyncedFacts {
  wrote: boolean;
  decision: WriteDecision;
  trigger: SyncTrigger;
  plan: WritePlan<unknown>;
  settings?: SettingsPlan;
  sourceCount: number;
  digest: string;
  configVersion: number;
  rejected: readonly RejectedSource[];
}

type SyncStatePrevious = Pick<CloudflareSyncState, 'metadata' | 'status'> | undefined;

function readyCondition(facts: SyncedFacts, generation: number | undefined): Omit<Condition, 'lastTransitionTime'> {
  const { plan, sourceCount } = facts;
  return {
    type: 'Ready',
    status: 'True',
    reason: 'Synced',
    message: facts.wrote
      ? `wrote ${plan.counts.desired} managed item(s) from ${sourceCount} source(s); kept ${plan.counts.external} external and ${plan.counts.otherClusters} other clusters' item(s)`
      : `Cloudflare already matches ${sourceCount} source(s) (${plan.counts.desired} managed item(s))`,
    observedGeneration: generation,
  };
}

function driftedCondition({ decision, plan }: SyncedFacts): Omit<Condition, 'lastTransitionTime'> {
  if (!decision.drifted)
    return { type: 'Drifted', status: 'False', reason: 'InSync', message: 'our items in Cloudflare match the sources' };
  return {
    type: 'Drifted',
    status: 'True',
    reason: decision.driftLeft ? 'DriftObserved' : 'DriftRepaired',
    message: `${plan.differences.slice(0, 10).join('; ')}${decision.driftLeft ? ' (drift policy observe: left as is)' : ' (re-applied)'}`,
  };
}

/** The SyncState's status after a sync that succeeded (Ready, and Drifted once drift was ever looked at). */
export function syncedStatus(prev: SyncStatePrevious, facts: SyncedFacts, now: Date): Record<string, unknown> {
  const { plan } = facts;
  let conditions = setCondition(
    prev?.status?.conditions as Condition[] | undefined,
    readyCondition(facts, prev?.metadata?.generation),
    now,
  );
  if (
    facts.decision.drifted ||
    facts.trigger === 'observe' ||
    prev?.status?.conditions?.some((c) => c.type === 'Drifted')
  )
    conditions = setCondition(conditions, driftedCondition(facts), now);
  return {
    syncStatus: 'Synced',
    ...(facts.wrote || !prev?.status?.lastSyncTime ? { lastSyncTime: now.toISOString() } : {}),
    configVersion: facts.configVersion,
    configHash: facts.digest,
    aggregatedConfig: {
      managedItems: plan.counts.desired,
      externalItems: plan.counts.external,
      otherClusterItems: plan.counts.otherClusters,
      legacyItems: plan.counts.legacy,
      sources: facts.sourceCount,
      ...(plan.conflicts.length ? { conflicts: plan.conflicts.map(conflictLine) } : {}),
    },
    ...(facts.settings ? { managedSettings: facts.settings.held } : {}),
    rejectedSources: facts.rejected.length ? [...facts.rejected] : null,
    error: null,
    failureReason: null,
    errorCategory: null,
    failedAt: null,
    retryCount: 0,
    conditions,
  };
}

/** The SyncState's status after a sync that failed: Failed when permanent, else Error and one more retry. */
export function failedStatus(
  prev: SyncStatePrevious,
  failure: { message: string; permanent: boolean; failureReason: string },
  now: Date,
): Record<string, unknown> {
  const { permanent } = failure;
  return {
    syncStatus: permanent ? 'Failed' : 'Error',
    error: failure.message,
    errorCategory: permanent ? 'Permanent' : 'Transient',
    ...(permanent
      ? { failureReason: failure.failureReason, failedAt: now.toISOString() }
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
      now,
    ),
  };
}
