/**
 * One run of a sandbox's workflow: its state in one place, and the steps the workflow sequences —
 * the create (the update's synchronous part), the Fast record, the hand-off, placing a record
 * without a placement, following the agent, a lost agent's failure policy, expiry and reset, and
 * deletion. Each step gathers facts through activities and leaves the decision to the pure
 * functions of domain/sandbox.ts and domain/sandbox-run.ts. (A class built before any handler is
 * set: with update-with-start the create's handler runs inside `setHandler`.)
 */
import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  getExternalWorkflowHandle,
  patched,
  setCurrentDetails,
  upsertSearchAttributes,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import type { AgentSandboxSpec } from '../../agent/api.js';
import type { Sandbox, SandboxAllocation, SandboxStatus } from '../../api/sandbox.js';
import type { PlacementRefusal } from '../../activities/sandbox/create.js';
import type { Placement } from '../../domain/allocation.js';
import { failedWith, ok } from '../../domain/results.js';
import { quotaWorkflowId, slotKey } from '../../domain/sandbox-quota.js';
import { poolWorkflowId } from '../../domain/sandbox-pool.js';
import {
  DEFAULT_SCALE_UP_WAIT_MS,
  NO_READY_AGENT,
  agentGoneSinceMs,
  agentLossStep,
  createConflict,
  createFingerprint,
  createSpecOf,
  endpointsOf,
  nextLookInMs,
  recoveryTimeoutMs,
  refusal,
  type LifecycleStep,
  type Refusal,
  type SandboxCreateSpec,
} from '../../domain/sandbox.js';
import {
  afterPlacementRefusal,
  agentLostStatus,
  agentUnreachableCondition,
  boundStatus,
  handOffStatus,
  isTerminal,
  lifecycleStatus,
  observedStatus,
  phaseNeedsIndexing,
  statusCurrent,
  unschedulableStatus,
  type Incarnation,
} from '../../domain/sandbox-run.js';
import { K8sUID, OperationPhase } from '../../temporal/search-attributes.js';
import { agentWaits, createSteps, quotaCalls, sandboxCalls } from './activity-options.js';
import type {
  AnsweredCreate,
  CreateAnswer,
  CreateSandboxCall,
  SandboxChange,
  SandboxState,
  SandboxWorkflowInput,
} from './messages.js';
import { poolDemandSignal } from './pool.js';
import { releaseSlotSignal } from './quota.js';

/**
 * Patch: the synchronous part of a create in one local activity, Fast and Strong alike
 * (activities/sandbox/create.ts), instead of one per step: one round trip on the caller's clock.
 */
const ONE_ROUND_TRIP = 'sandbox-create-one-round-trip';
/** Patch: when no agent is left after one did not answer, the answer says so (not the pool's "full"). */
const UNANSWERED_AGENT_ANSWER = 'sandbox-unanswered-agent-answer';
/** A sandbox missing from an agent that restarted since its placement: the agent's loss, not the sandbox's alone. */
const AGENT_RESTARTED = 'sandbox-agent-restarted';
/**
 * Patch: sandbox IDs derived from the run's ID, not uuid4(). The workflow's random numbers are
 * shared with interceptors (OpenTelemetry draws span IDs from them) on paths a replay skips
 * (update validators), so after a crash the replay derived another ID for the same sandbox.
 */
const SANDBOX_ID_FROM_RUN = 'sandbox-id-from-run';
/**
 * Patch: a Strong create that finds no Ready agent in its pool tells the pool's workflow and
 * waits for one (scale from zero) instead of answering UNAVAILABLE at once.
 */
const STRONG_WAITS_FOR_AGENT = 'sandbox-strong-waits-for-agent';
/** A bound on agents tried after refusals; each refusal excludes its agent, so the table runs out first. */
/** Patch: a sandbox's tenant quota slot is released when its record is gone. */
const QUOTA_RELEASE = 'sandbox-quota-release';
/**
 * Patch: the lean sandbox life — one marker (and so one TemporalChangeVersion upsert) per run
 * instead of one per patch: it implies every sandbox patch before it, which such a run no longer
 * calls. Its own changes: the search attributes upserted once when a task ends (not per step), the
 * Fast record's and the hand-off's writes answer with the record (no read after them), and the
 * removal from an agent is one local activity when the agent forgets the sandbox within a moment.
 */
const LEAN_LIFE = 'sandbox-lean-life';
/**
 * Patch: the lean life's second step, again the run's one marker (it implies the first): the run
 * ends in the task that removes its sandbox — the tenant's quota slot is released by a local
 * activity of that task, not by a signal awaited in a task of its own.
 */
const LEAN_LIFE_2 = 'sandbox-lean-life-2';
/**
 * Patch: the lean life's third step, again the run's one marker (it implies the others): the
 * record's steps a run only sequences share one local activity each (activities/sandbox/
 * life-steps.ts) — the Fast record with its hand-off, a hand-off's two writes, a deletion's
 * Terminating, removal from the agent and finalizer — four activations fewer per Fast life.
 */
const LEAN_LIFE_3 = 'sandbox-lean-life-3';
/** Whether this run takes the lean life's third step (and every sandbox patch before it). */
export function leanLife3(): boolean {
  return patched(LEAN_LIFE_3);
}
/** Whether this run takes the lean life's second step (and every sandbox patch before it). */
function leanLife2(): boolean {
  return leanLife3() || patched(LEAN_LIFE_2);
}
/** Whether this run takes the lean life (and every sandbox patch before it). */
export function leanLife(): boolean {
  return leanLife2() || patched(LEAN_LIFE);
}
const MAX_PLACEMENT_TRIES = 64;
/** How long the one-step removal waits for the agent to forget a sandbox before the polling activity takes over. */
const QUICK_REMOVAL_MS = 3_000;
/** A sandbox no agent has room for is tried again this often (or on the next hint). */
const UNSCHEDULABLE_RETRY_MS = 10_000;

/** The record a step acts on, pinned to its UID. */
export interface RecordRef {
  namespace: string;
  name: string;
  uid: string;
}

/** The create this run answers (or answered): its identity and, once given, its answer. */
interface Creation {
  fingerprint: string;
  call: CreateSandboxCall;
  answer?: CreateAnswer;
}

export class SandboxRun {
  readonly namespace: string;
  readonly name: string;
  /** What the state query answers (the fast path's Get and Delete, the janitor). */
  readonly state: SandboxState = { stage: 'waiting' };
  creation?: Creation;
  /** Where the sandbox runs: set once the create was answered with a placement, or adopted from the record. */
  placed?: Incarnation;
  /**
   * A reset's or a recreate's new incarnation gets a new sandbox ID, so the agents and the
   * placement table never mistake it for the one just removed or lost.
   */
  nextSandboxId?: string;
  /** A hint arrived since the last read: read the record again. */
  needsReconcile = false;
  /**
   * Set by a pass that found the agent gone: when its recovery timeout ends (the record read in
   * that pass does not carry the loss yet, so the wait cannot learn it from there).
   */
  recoveryEndsAtMs?: number;
  /** The tenant the record is labelled with (its quota slot is released at the end). */
  recordTenant?: string;
  /** This run wrote the Fast record. */
  recorded = false;
  /** The caller's answer has left with a workflow task completion. */
  answerSent = false;
  /** A deletion hint: closes the name to creates at once (before the run has read the record); in the state, so the fast path can see it. */
  get deletionRequested(): boolean {
    return this.state.deletionRequested === true;
  }
  /**
   * The fast path's DeleteSandbox reached this creation (no record found): it may arrive only
   * after the record is written (the hint waits while the record write holds the workflow task).
   */
  creationDeleted = false;
  /** The UIDs whose deletion the watcher (or DeleteSandbox) has told this run of. */
  readonly deletionsHeard = new Set<string>();
  private phaseIndexed = false;
  /** The phase last indexed. */
  private indexedPhase?: string;
  private uidIndexed?: string;
  /** Set by a write that answered with the record (a lean run); a hint clears it. */
  knownRecord?: Sandbox;
  /** Sandbox IDs this run has made (each incarnation a new one). */
  private idsMade = 0;

  constructor(private readonly input: SandboxWorkflowInput) {
    this.namespace = input.namespace;
    this.name = input.name;
  }

  // ---- messages ----

  /** The watcher's or the registry's hint: read again (a `Deleting` one also closes the name). */
  hint(change?: SandboxChange): void {
    this.needsReconcile = true;
    this.knownRecord = undefined;
    if (change?.event === 'Deleting') this.state.deletionRequested = true;
    if (change?.event === 'Deleting' && !change.uid) this.creationDeleted = true;
    if (change?.event === 'Deleting' && change.uid) this.deletionsHeard.add(change.uid);
  }

  /** The create's validator: a create the name cannot take now is refused before it is recorded. */
  validateCreate(call: CreateSandboxCall): void {
    const { creation, state } = this;
    const conflict = createConflict({
      namespace: this.namespace,
      name: this.name,
      closing: this.deletionRequested || state.stage === 'deleting' || state.stage === 'done',
      // A create that failed ends its run, which is a moment away: a retry is a new attempt
      // in the next run (the fast path waits for this one to end), not this failure again.
      failedEnding: creation?.answer?.status === 'failed' && !state.uid,
      answered: creation ? { fingerprint: creation.fingerprint, tenant: creation.call.tenant } : this.input.created,
      recorded: Boolean(state.uid),
      call: { fingerprint: createFingerprint(call.spec), tenant: call.tenant },
    });
    if (conflict) throw ApplicationFailure.nonRetryable(conflict.message, conflict.reason);
  }

  /** The create's handler: the mode's synchronous part; a retry waits for (and gets) the first answer. */
  async create(call: CreateSandboxCall): Promise<CreateAnswer> {
    if (this.creation) {
      const creation = this.creation;
      await condition(() => creation.answer !== undefined);
      return creation.answer!;
    }
    if (this.input.created) return this.input.created.answer; // answered by an earlier run (validated)
    const creation: Creation = { fingerprint: createFingerprint(call.spec), call };
    this.creation = creation;
    this.state.mode = call.mode;
    this.reportPhase('creating', `${call.mode} create in pool ${call.spec.poolRef}`);
    creation.answer = call.mode === 'strong' ? await this.createStrong(call) : await this.createFast(call);
    return creation.answer;
  }

  /** What a continued run carries: the answered create, so a retry by name still gets it. */
  answeredCreate(): AnsweredCreate | undefined {
    const c = this.creation;
    return c?.answer?.status === 'ok'
      ? { fingerprint: c.fingerprint, tenant: c.call.tenant, answer: c.answer }
      : this.input.created;
  }

  /**
   * The run's phase: the query's stage, the Web UI's details, and the search attribute on a change
   * (a lean run indexes it with the UID when the task ends: see index()).
   */
  reportPhase(stage: SandboxState['stage'], details: string): void {
    if (!leanLife()) {
      const info = workflowInfo();
      const needed = phaseNeedsIndexing(stage, {
        reported: this.phaseIndexed,
        indexed: this.state.stage,
        continued: !!info.continuedFromExecutionRunId,
        startPhase: info.typedSearchAttributes.get(OperationPhase),
      });
      if (needed) upsertSearchAttributes([{ key: OperationPhase, value: stage }]);
      this.phaseIndexed = true;
      this.indexedPhase = stage;
    }
    this.state.stage = stage;
    this.state.message = details;
    setCurrentDetails(`**${stage}** — ${details}`);
  }

  /** Indexes the record's UID once it is known (or changed); a lean run at the end of the task. */
  indexUid(): void {
    if (this.uidIndexed === this.state.uid || leanLife()) return;
    upsertSearchAttributes([{ key: K8sUID, value: this.state.uid! }]);
    this.uidIndexed = this.state.uid;
  }

  /**
   * A lean run's search attributes, as they are when the task ends, in one upsert: called before
   * every wait (a task ends only there), so the phases a task passes through are not indexed.
   */
  index(): void {
    if (!leanLife()) return;
    const info = workflowInfo();
    const attrs: SearchAttributeUpdatePair[] = [];
    const stage = this.state.stage;
    const phaseNeeded = phaseNeedsIndexing(stage, {
      reported: this.phaseIndexed,
      indexed: this.indexedPhase,
      continued: !!info.continuedFromExecutionRunId,
      startPhase: info.typedSearchAttributes.get(OperationPhase),
    });
    if (phaseNeeded) attrs.push({ key: OperationPhase, value: stage });
    this.phaseIndexed = true;
    this.indexedPhase = stage;
    if (this.state.uid && this.uidIndexed !== this.state.uid) {
      attrs.push({ key: K8sUID, value: this.state.uid });
      this.uidIndexed = this.state.uid;
    }
    if (attrs.length) upsertSearchAttributes(attrs);
  }

  /** The record a write of this task answered with, if no hint came since: the next pass needs no read. */
  takeKnownRecord(): Sandbox | undefined {
    const known = this.knownRecord;
    this.knownRecord = undefined;
    return known;
  }

  // ---- the create ----

  private agentSpec(sandboxId: string, spec: SandboxCreateSpec, claimUid: string): AgentSandboxSpec {
    return {
      sandboxId,
      claimUid,
      claimName: this.name,
      image: spec.image,
      command: spec.command,
      args: spec.args,
      env: spec.envs,
      workingDir: spec.workingDir,
      exposedPorts: spec.exposedPorts,
    };
  }

  /**
   * Allocate → agent create as separate steps, trying other agents after refusals (placing a
   * kubectl-created record, and a create without ONE_ROUND_TRIP). `reservation` keys the slot
   * until the sandbox ID is known; `claimUid` runs between the two (a step-wise Strong create
   * writes its record there).
   */
  private async place(
    spec: SandboxCreateSpec,
    steps: Pick<typeof sandboxCalls, 'allocateSandbox' | 'createOnAgent' | 'releaseSandbox'>,
    ids: { sandboxId: string; reservation: string },
    claimUid: (placement: Placement) => Promise<string | Refusal>,
  ): Promise<Incarnation | Refusal> {
    return this.onSomeAgent(spec.poolRef, async (exclude) => {
      const alloc = await steps.allocateSandbox(this.placeRequest(spec, ids.reservation, exclude));
      if (alloc.status !== 'ok') return alloc.outcome;
      const placement = alloc.placement;
      const uid = await claimUid(placement);
      if (typeof uid !== 'string') {
        await steps.releaseSandbox({ agentId: placement.agentId, sandboxId: ids.reservation });
        return uid;
      }
      const sandboxId = ids.sandboxId || uid;
      const created = await steps.createOnAgent({
        placement,
        reservation: ids.reservation,
        spec: this.agentSpec(sandboxId, spec, uid),
      });
      if (created.status === 'ok') return { sandboxId, placement, spec };
      return { ...created.outcome, agentId: placement.agentId };
    });
  }

  /** The answer for a placed sandbox. */
  private answerFor(inc: Incarnation): CreateAnswer {
    return ok({
      sandboxId: inc.sandboxId,
      agentPod: inc.placement.pod,
      endpoints: endpointsOf(inc.placement.ip, inc.spec.exposedPorts),
      sandboxName: this.name,
    });
  }

  /** allocatedAt from the receive time: deterministic, and what the caller saw. */
  private allocationOf(p: Placement, call: CreateSandboxCall): SandboxAllocation {
    return { assignedPod: p.pod, assignedNode: p.node, allocatedAt: allocatedAtOf(call) };
  }

  /** What the allocation needs to know, excluding the agents that refused this create. */
  private placeRequest(spec: SandboxCreateSpec, reservation: string, exclude: string[]) {
    return {
      sandboxId: reservation,
      namespace: this.namespace,
      pool: spec.poolRef,
      image: spec.image,
      ports: spec.exposedPorts,
      exclude,
      runStartMs: workflowInfo().runStartTime.getTime(),
    };
  }

  /**
   * Runs `attempt` on one agent after another until one takes the sandbox: each refusal that
   * another agent may not share excludes its agent, anything else is the answer.
   */
  private async onSomeAgent(
    poolRef: string,
    attempt: (exclude: string[]) => Promise<Incarnation | PlacementRefusal>,
  ): Promise<Incarnation | Refusal> {
    const exclude: string[] = [];
    let last: Refusal | undefined;
    let unanswered: Refusal | undefined;
    for (let i = 0; i < MAX_PLACEMENT_TRIES; i++) {
      const r = await attempt(exclude);
      if (!('code' in r)) return r;
      const next = afterPlacementRefusal(r, unanswered);
      if (next.next === 'answer' && next.unansweredInstead && (leanLife() || patched(UNANSWERED_AGENT_ANSWER)))
        return next.unansweredInstead;
      last = next.refusal;
      if (next.next === 'answer') return last;
      unanswered = next.unanswered;
      exclude.push(next.exclude);
    }
    return last ?? refusal('ResourceExhausted', `no agent of pool ${poolRef} took the sandbox`);
  }

  /** A new sandbox ID (32 hex): the run's ID with the count of IDs made so far mixed into its tail. */
  private newSandboxId(): string {
    if (!(leanLife() || patched(SANDBOX_ID_FROM_RUN))) return uuid4().replaceAll('-', '');
    const hex = workflowInfo().runId.replaceAll('-', '');
    const tail = ((parseInt(hex.slice(24), 16) ^ this.idsMade++) >>> 0).toString(16).padStart(8, '0');
    return hex.slice(0, 24) + tail;
  }

  private async createFast(call: CreateSandboxCall): Promise<CreateAnswer> {
    const sandboxId = this.newSandboxId();
    const { spec } = call;
    return answering(async () => {
      const placed =
        leanLife() || patched(ONE_ROUND_TRIP)
          ? await this.onSomeAgent(spec.poolRef, async (exclude) => {
              // Allocation and agent create in one local activity: one round trip on the caller's clock.
              const r = await createSteps.placeOnAgent({
                ...this.placeRequest(spec, sandboxId, exclude),
                spec: this.agentSpec(sandboxId, spec, ''),
              });
              return r.status === 'ok' ? { sandboxId, placement: r.placement, spec } : r.outcome;
            })
          : await this.place(spec, createSteps, { sandboxId, reservation: sandboxId }, async () => '');
      if ('code' in placed) return failedWith(placed);
      this.placed = placed;
      return this.answerFor(placed);
    });
  }

  private async createStrong(call: CreateSandboxCall): Promise<CreateAnswer> {
    const { namespace, name } = this;
    const reservation = `pending:${workflowInfo().workflowId}/${workflowInfo().runId}`;
    const { spec } = call;
    let recordedUid: string | undefined;
    const record = {
      namespace,
      name,
      spec,
      mode: 'strong' as const,
      createTimestampNanos: call.receivedAtNanos,
      tenant: call.tenant,
    };
    return answering(async () => {
      const attempt = () =>
        this.onSomeAgent(spec.poolRef, async (exclude) => {
          // Allocation, record and agent create in one local activity (in that order).
          const r = await createSteps.placeWithRecord({
            ...this.placeRequest(spec, reservation, exclude),
            spec: this.agentSpec('', spec, ''),
            record: { ...record, allocatedAt: allocatedAtOf(call) },
            ...(recordedUid ? { recordedUid } : {}),
          });
          const uid = r.status === 'ok' ? r.uid : r.outcome.uid;
          if (uid) recordedUid = this.state.uid = uid;
          return r.status === 'ok' ? { sandboxId: r.uid, placement: r.placement, spec } : r.outcome;
        });
      let placed =
        leanLife() || patched(ONE_ROUND_TRIP)
          ? await attempt()
          : // Without ONE_ROUND_TRIP: allocation, record and agent create one step each.
            await this.place(spec, createSteps, { sandboxId: '', reservation }, async (placement) => {
              const allocation = this.allocationOf(placement, call);
              if (recordedUid) {
                // Placed elsewhere after a refusal: the record follows.
                const moved = await createSteps.setAllocationAnnotation({
                  namespace,
                  name,
                  uid: recordedUid,
                  allocation,
                });
                return moved.status === 'ok'
                  ? recordedUid
                  : refusal('Unavailable', `Sandbox ${namespace}/${name} vanished`);
              }
              const rec = await createSteps.createSandboxRecord({ ...record, allocation });
              if (rec.status !== 'ok') return rec.outcome;
              recordedUid = this.state.uid = rec.uid;
              return rec.uid;
            });
      if ('code' in placed && placed.reason === NO_READY_AGENT && (leanLife() || patched(STRONG_WAITS_FOR_AGENT)))
        placed = await this.waitForAgent(call, placed, attempt);
      if ('code' in placed) {
        if (recordedUid) await sandboxCalls.deleteSandboxRecord({ namespace, name, uid: recordedUid });
        this.state.uid = undefined;
        return failedWith(placed);
      }
      this.placed = placed;
      return this.answerFor(placed);
    });
  }

  /**
   * Strong, with no Ready agent in the pool (poolMin 0, or every agent gone): tells the pool's
   * workflow (the demand it scales up from zero for) and waits for an agent of the pool, up to
   * the create's scale-up timeout, then places the sandbox. The timeout's refusal names it.
   */
  private async waitForAgent(
    call: CreateSandboxCall,
    refused: Refusal,
    attempt: () => Promise<Incarnation | Refusal>,
  ): Promise<Incarnation | Refusal> {
    const pool = call.spec.poolRef;
    const waitMs = call.scaleUpWaitMs ?? DEFAULT_SCALE_UP_WAIT_MS;
    const untilMs = Date.now() + waitMs;
    let placed: Incarnation | Refusal = refused;
    while ('code' in placed && placed.reason === NO_READY_AGENT) {
      if (Date.now() >= untilMs)
        return {
          ...refusal(
            'Unavailable',
            `no agent of pool ${pool} in namespace ${this.namespace} became ready within the scale-up timeout of ${waitMs / 1000}s (--fastpath-scale-up-timeout): ${placed.message}`,
          ),
          reason: NO_READY_AGENT,
        };
      this.reportPhase('creating', `strong create waiting up to ${waitMs / 1000}s for an agent of pool ${pool}`);
      this.index();
      await getExternalWorkflowHandle(poolWorkflowId(this.namespace, pool))
        .signal(poolDemandSignal, { sandbox: this.name, mode: 'strong' })
        .catch(() => undefined); // no pool workflow (yet): the watcher starts it, the fast path hinted too
      await agentWaits.waitForPoolAgent({ namespace: this.namespace, pool, untilMs });
      placed = await attempt();
    }
    return placed;
  }

  /**
   * Writes the Fast create's record (the allocation annotation); the reason the run ends when the
   * apiserver refuses it (the janitor removes the sandbox from its agent then).
   */
  async recordFastCreate(creation: Creation, placed: Incarnation): Promise<string | undefined> {
    this.reportPhase('recording', `on agent ${placed.placement.pod}; writing the Sandbox record`);
    const allocation = this.allocationOf(placed.placement, creation.call);
    const input = {
      namespace: this.namespace,
      name: this.name,
      spec: creation.call.spec,
      mode: 'fast' as const,
      allocation,
      createTimestampNanos: creation.call.receivedAtNanos,
      tenant: creation.call.tenant,
    };
    // A lean run's third step: the hand-off in the same local activity (the record it answers with is handed off).
    const rec = leanLife3()
      ? await sandboxCalls.recordAndHandOff({ ...input, status: handOffStatus(allocation, placed) })
      : await sandboxCalls.createSandboxRecord({ ...input, ...(leanLife() ? { returnRecord: true } : {}) });
    if (rec.status !== 'ok') {
      const why = `sandbox ${placed.sandboxId} runs on agent ${placed.placement.pod} but its record was refused (${rec.outcome.message}); the janitor removes it from the agent once it is older than the orphan timeout`;
      this.reportPhase('unrecorded', why);
      return why;
    }
    this.state.uid = rec.uid;
    this.recorded = true;
    this.knownRecord = rec.record;
    if ('handedOff' in rec && rec.handedOff) this.state.phase = 'Bound';
    return undefined;
  }

  // ---- the end ----

  /**
   * Ends the run once no create is half-answered (a caller always gets its answer). Every end
   * here leaves no record of this incarnation, so its tenant's quota slot is given back.
   */
  async finish(result: string): Promise<string> {
    this.index();
    await condition(allHandlersFinished);
    await this.releaseQuotaSlot();
    return result;
  }

  /** Only tenants with a limit have a quota workflow; for the others the signal finds none, which is fine. */
  private async releaseQuotaSlot(): Promise<void> {
    const tenant = this.creation?.call.tenant ?? this.recordTenant;
    // Without QUOTA_RELEASE a run releases nothing: its history has no release to replay.
    if (!tenant || !(leanLife() || patched(QUOTA_RELEASE))) return;
    const release = { slot: slotKey(this.namespace, this.name), runStartMs: workflowInfo().runStartTime.getTime() };
    // A local activity of this (last) task: the run ends in it. (A signal from the workflow is
    // awaited in a task of its own; one not awaited is dropped by Temporal once the run closed.)
    if (leanLife2()) return void (await quotaCalls.releaseQuotaSlot({ tenant, ...release }));
    try {
      await getExternalWorkflowHandle(quotaWorkflowId(tenant)).signal(releaseSlotSignal, release);
    } catch {
      // No quota workflow for this tenant: nothing was counted.
    }
  }

  // ---- following the record ----

  /**
   * A run that did not place the sandbox itself (a new run after continue-as-new or a lost
   * history) learns where it is from the record: the agent named by status or the annotation.
   */
  async adoptPlacement(sb: Sandbox, alloc: SandboxAllocation | undefined): Promise<Incarnation | undefined> {
    const pod = sb.status?.assignedPod ?? alloc?.assignedPod;
    if (!pod) return undefined;
    const sandboxId = sb.status?.sandboxID ?? sb.metadata!.uid!;
    const found = await sandboxCalls.locateSandbox({ namespace: this.namespace, pod, sandboxId, claimName: this.name });
    if (!found) return undefined;
    return { sandboxId: found.sandboxId, placement: found.placement, spec: createSpecOf(sb) };
  }

  /** A record without a placement: allocate, record Pending on the agent, create there, Bound. */
  async scheduleRecord(sb: Sandbox, ref: RecordRef): Promise<Incarnation | undefined | 'gone'> {
    const spec = createSpecOf(sb);
    this.reportPhase('scheduling', `placing in pool ${spec.poolRef}`);
    let gone = false;
    const sandboxId = this.nextSandboxId ?? ref.uid;
    const placed = await this.place(spec, sandboxCalls, { sandboxId, reservation: sandboxId }, async (placement) => {
      const pending = await sandboxCalls.patchSandboxStatus({
        ...ref,
        status: { phase: 'Pending', assignedPod: placement.pod, nodeName: placement.node },
      });
      if (pending.status === 'gone') {
        gone = true;
        return refusal('NotFound', 'gone');
      }
      return ref.uid;
    });
    if (gone) return 'gone';
    if ('code' in placed) {
      const r = await sandboxCalls.patchSandboxStatus({
        ...ref,
        status: unschedulableStatus(placed.message, new Date(), placed.reason),
      });
      this.reportPhase('scheduling', `waiting for room: ${placed.message}`);
      if (r.status === 'gone') return 'gone';
      // No room now: try again on the next hint, a little later, or at the expiry.
      this.index();
      await condition(() => this.needsReconcile, nextLookInMs(sb, Date.now(), UNSCHEDULABLE_RETRY_MS));
      return undefined;
    }
    const status: SandboxStatus = boundStatus(placed);
    if ((await sandboxCalls.patchSandboxStatus({ ...ref, status })).status === 'gone') {
      await this.removeFromAgent(placed);
      return 'gone';
    }
    this.state.phase = 'Bound';
    return placed;
  }

  /**
   * Status follows the agent: Running while its process runs, Failed with the exit or when a live
   * agent no longer has it (AgentLostSandbox). An agent that is gone (Pod deleted, not Ready, or
   * stale) is waited for up to spec.recoveryTimeoutSeconds; only then does spec.failurePolicy
   * apply (see agentGone). `inc` is undefined when no agent could be asked where the sandbox is:
   * the record's own assignment is checked.
   */
  async followAgent(sb: Sandbox, ref: RecordRef, inc: Incarnation | undefined): Promise<void> {
    if (isTerminal(sb)) return;
    const pod = inc?.placement.pod ?? sb.status?.assignedPod;
    const sandboxId = inc?.sandboxId ?? sb.status?.sandboxID ?? ref.uid;
    if (!pod) return;
    this.state.sandboxId = sandboxId;
    this.state.agentPod = pod;
    const seen = await sandboxCalls.agentSandbox({ namespace: this.namespace, pod, sandboxId });
    if (seen.state === 'agent-gone') return this.agentGone(sb, ref, pod, sandboxId);
    // Back and holding it, though the look just before found nothing: the registry's hint for
    // the agent's return brings the next pass, which adopts it.
    if (!inc && seen.state === 'held') return;
    const observed = observedStatus(sb, seen, { pod, sandboxId, placedBootId: inc?.placement.bootId }, new Date());
    if (observed.agentRestarted && (leanLife() || patched(AGENT_RESTARTED)))
      // The agent restarted in place (a container restart, an OOM kill) and its sandboxes went
      // with it: the agent was lost and is back at once, so failurePolicy applies now.
      return this.applyFailurePolicy(
        ref,
        pod,
        sandboxId,
        observed.agentRestarted.lostFor,
        observed.agentRestarted.step,
      );
    if (statusCurrent(sb, observed)) {
      this.state.phase = observed.phase;
      return;
    }
    const r = await sandboxCalls.patchSandboxStatus({
      ...ref,
      status: {
        phase: observed.phase,
        sandboxID: sandboxId,
        assignedPod: pod,
        ...(inc
          ? { nodeName: inc.placement.node, endpoints: endpointsOf(inc.placement.ip, inc.spec.exposedPorts) }
          : {}),
        ...(observed.runtime ? { runtime: observed.runtime } : {}),
        conditions: [observed.condition],
      },
    });
    if (r.status === 'ok') this.state.phase = observed.phase;
  }

  /**
   * The sandbox's agent is gone. Within the recovery timeout the assignment is kept and the loss
   * recorded (Ready=False AgentUnreachable, its time the start of the timeout): the main wait is
   * the timeout's durable timer, and the agent's return — the registry's hint — ends it early.
   * After it, AutoRecreate places the sandbox again under a new sandbox ID (Pending → Bound →
   * Running on another agent); Manual makes it Lost, keeping the last assignment to read.
   * Either way the old agent's copy, should it come back, is an orphan the janitor removes.
   */
  private async agentGone(sb: Sandbox, ref: RecordRef, pod: string, sandboxId: string): Promise<void> {
    const loss = agentLossStep(sb, Date.now());
    const since = new Date(loss.sinceMs).toISOString();
    const timeout = recoveryTimeoutMs(sb) / 1000;
    if (loss.step === 'wait') {
      this.recoveryEndsAtMs = loss.untilMs;
      this.reportPhase('live', `agent ${pod} gone since ${since}; waiting ${timeout}s for it to return`);
      if (agentGoneSinceMs(sb) !== undefined) return;
      const unreachable = agentUnreachableCondition(
        sb,
        { pod, sandboxId, timeoutSeconds: timeout, sinceIso: since },
        new Date(),
      );
      await sandboxCalls.patchSandboxStatus({ ...ref, status: { conditions: [unreachable] } });
      return;
    }
    const lostFor = `agent ${pod} gone since ${since}, not back within recoveryTimeoutSeconds ${timeout}`;
    await this.applyFailurePolicy(ref, pod, sandboxId, lostFor, loss.step);
  }

  /**
   * The agent lost the sandbox with itself (gone past the recovery timeout, or restarted without
   * it): AutoRecreate places it again under a new sandbox ID; Manual makes it Lost.
   */
  private async applyFailurePolicy(
    ref: RecordRef,
    pod: string,
    sandboxId: string,
    lostFor: string,
    step: 'recreate' | 'lost',
  ): Promise<void> {
    this.recoveryEndsAtMs = Date.now(); // look again at once: the record just changed
    // The slot is the lost agent's; the table forgot the agent already, this keeps it that way.
    await sandboxCalls.releaseSandbox({ agentId: `${this.namespace}/${pod}`, sandboxId });
    this.forgetPlacement();
    if (step === 'recreate') {
      this.reportPhase('scheduling', `${lostFor}; placing it again (failurePolicy AutoRecreate)`);
      // A new sandbox ID, so the old agent's copy (should it return) is never taken for this one.
      this.nextSandboxId = this.newSandboxId();
      const status = agentLostStatus(step, lostFor, sandboxId, new Date());
      if ((await sandboxCalls.patchSandboxStatus({ ...ref, status })).status === 'ok') this.state.phase = 'Pending';
      return;
    }
    const status = agentLostStatus(step, lostFor, sandboxId, new Date());
    this.reportPhase('live', `Lost: ${lostFor}`);
    if ((await sandboxCalls.patchSandboxStatus({ ...ref, status })).status === 'ok') this.state.phase = 'Lost';
  }

  /**
   * Expiry: the runtime goes (agent delete, slot released) and the record stays, Expired and
   * unassigned. Reset: the same removal, then Pending and unassigned with the revision accepted
   * in that same write — so it is acted upon exactly once — and the loop places it anew.
   */
  async applyLifecycle(sb: Sandbox, ref: RecordRef, lifecycle: NonNullable<LifecycleStep>): Promise<void> {
    this.placed ??= await this.adoptPlacement(sb, undefined);
    const placed = this.placed;
    const removed = placed ? `; sandbox ${placed.sandboxId} removed from agent ${placed.placement.pod}` : '';
    this.reportPhase(
      lifecycle.step === 'expire' ? 'expiring' : 'resetting',
      lifecycle.step === 'expire' ? `expireTime ${lifecycle.at} reached` : `resetRevision ${lifecycle.revision}`,
    );
    if (placed) {
      await this.removeFromAgent(placed);
      this.forgetPlacement();
    }
    const status = lifecycleStatus(lifecycle, removed, new Date());
    if (lifecycle.step === 'reset') this.nextSandboxId = this.newSandboxId();
    if ((await sandboxCalls.patchSandboxStatus({ ...ref, status })).status === 'ok') this.state.phase = status.phase!;
  }

  /** The placement is gone (removed or lost): nothing to show, nothing to follow. */
  private forgetPlacement(): void {
    this.placed = undefined;
    this.state.sandboxId = this.state.agentPod = this.state.endpoints = undefined;
  }

  async removeFromAgent(inc: Incarnation): Promise<void> {
    if (leanLife()) {
      // Delete, the agent forgetting it and the slot's release in one step; a slow agent is waited for after it.
      if ((await sandboxCalls.removeFromAgent(this.quickRemoval(inc))) === 'removed') return;
      return await this.awaitRemoval(inc);
    }
    await sandboxCalls.deleteOnAgent({ namespace: this.namespace, pod: inc.placement.pod, sandboxId: inc.sandboxId });
    await this.awaitRemoval(inc);
  }

  /** The one-step removal's request: the agent's delete, a short wait for it to forget, the slot released. */
  private quickRemoval(inc: Incarnation) {
    const { pod, agentId } = inc.placement;
    return { namespace: this.namespace, pod, sandboxId: inc.sandboxId, agentId, withinMs: QUICK_REMOVAL_MS };
  }

  /** A removal the agent has not finished: waited for by a heartbeating activity, then the slot released. */
  private async awaitRemoval(inc: Incarnation): Promise<void> {
    this.index();
    await agentWaits.waitUntilAgentForgets({
      namespace: this.namespace,
      pod: inc.placement.pod,
      sandboxId: inc.sandboxId,
    });
    await sandboxCalls.releaseSandbox({ agentId: inc.placement.agentId, sandboxId: inc.sandboxId });
  }

  /** The record is being deleted: Terminating, off its agent, then its finalizer goes. */
  async deleteSandbox(sb: Sandbox, ref: RecordRef): Promise<void> {
    this.placed ??= await this.adoptPlacement(sb, undefined);
    const placed = this.placed;
    this.reportPhase(
      'deleting',
      placed ? `removing sandbox ${placed.sandboxId} from agent ${placed.placement.pod}` : 'no agent holds it',
    );
    const terminating = sb.status?.phase !== 'Terminating';
    if (placed && leanLife3()) {
      // The three in one local activity while the agent forgets it quickly; else waited for, then the finalizer.
      const removal = { ...ref, agent: this.quickRemoval(placed), terminating };
      if ((await sandboxCalls.removeSandbox(removal)) === 'pending') {
        await this.awaitRemoval(placed);
        await sandboxCalls.setSandboxFinalizer({ ...ref, present: false });
      }
    } else {
      if (placed) {
        if (terminating) await sandboxCalls.patchSandboxStatus({ ...ref, status: { phase: 'Terminating' } });
        await this.removeFromAgent(placed);
      }
      await sandboxCalls.setSandboxFinalizer({ ...ref, present: false });
    }
    this.reportPhase(
      'done',
      `deleted${placed ? `; sandbox ${placed.sandboxId} removed from agent ${placed.placement.pod}` : ''}`,
    );
  }
}

/** Activity failures in the synchronous part become UNAVAILABLE answers, never a hung caller. */
async function answering(fn: () => Promise<CreateAnswer>): Promise<CreateAnswer> {
  try {
    return await fn();
  } catch (err) {
    const message = err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
    return failedWith(refusal('Unavailable', `the sandbox could not be created now: ${message}`));
  }
}

/** allocatedAt from the receive time: deterministic, and what the caller saw. */
function allocatedAtOf(call: CreateSandboxCall): string {
  return new Date(Number(BigInt(call.receivedAtNanos) / 1_000_000n)).toISOString();
}
