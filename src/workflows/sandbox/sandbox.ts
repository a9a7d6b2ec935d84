/**
 * One workflow per sandbox name (`sandbox/<namespace>/<name>`); each run is one incarnation of the
 * name, from its create to the removal of its finalizer. A same-name recreate after that is a new
 * run; a create retried while the run lives is the same create.
 *
 * Fast-path creates arrive as the `createSandbox` update, sent with update-with-start: the update
 * does the mode's synchronous part and its result is the caller's answer, while the run carries
 * on with the rest — so the rest happens even if the fast-path process dies right after answering.
 *
 *   Fast:   allocate → agent create → answer │ write the Sandbox (allocation annotation) → hand-off
 *   Strong: allocate → write the Sandbox → agent create → answer │ hand-off
 *           (an agent that refuses: placed elsewhere; none left: the record is deleted, the slot released)
 *
 * Sandboxes created with kubectl arrive as the watcher's `sandboxChanged` signal and are placed
 * by the same run. The hand-off moves the allocation annotation to status (Bound) and then
 * removes the annotation; a malformed one is removed and the sandbox placed normally. Then the
 * run follows the agent (Running, Failed with the exit) on the registry's hints, and on deletion
 * deletes the sandbox on the agent, waits until the agent no longer reports it, releases the slot
 * and removes the finalizer.
 *
 * Lifecycle, on the same loop: the wait for hints is also the expiry's durable timer (it ends at
 * spec.expireTime at the latest), so a spec change — the watcher's hint — re-arms it. Expired:
 * removed from the agent, slot released, phase Expired with no assignment, the record kept until
 * the user deletes it. Reset (spec.resetRevision later than status.acceptedResetRevision): the
 * same removal, then Pending with no assignment and the revision accepted in that one status
 * write, and the sandbox is placed again under a new sandbox ID.
 */
import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  patched,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertSearchAttributes,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { AgentSandboxSpec } from '../../agent/api.js';
import {
  SANDBOX_FINALIZER,
  parseAllocation,
  type Sandbox,
  type SandboxAllocation,
  type SandboxStatus,
} from '../../api/sandbox.js';
import type { AgentCreateRefusal } from '../../activities/sandbox/agents.js';
import type { PlacementRefusal } from '../../activities/sandbox/create.js';
import type { Placement } from '../../domain/allocation.js';
import { quotaWorkflowId, slotKey } from '../../domain/sandbox-quota.js';
import { failedWith, ok } from '../../domain/results.js';
import {
  AGENT_LOST,
  AGENT_UNREACHABLE,
  agentGoneSinceMs,
  agentLossStep,
  createConflict,
  createFingerprint,
  createSpecOf,
  endpointsOf,
  failurePolicyOf,
  lifecycleStep,
  nextLookInMs,
  phaseFromAgent,
  failureReason,
  PLACED_PHASES,
  recoveryTimeoutMs,
  refusal,
  TENANT_LABEL,
  type Refusal,
  type LifecycleStep,
  type SandboxCreateSpec,
  type SandboxStatusPatch,
  UNASSIGNED,
} from '../../domain/sandbox.js';
import { K8sUID, OperationPhase } from '../../temporal/search-attributes.js';
import { agentWaits, createSteps, sandboxCalls } from './activity-options.js';
import {
  agentReportedSignal,
  createSandboxUpdate,
  sandboxChangedSignal,
  sandboxStateQuery,
  type AnsweredCreate,
  type CreateAnswer,
  type CreateSandboxCall,
  type SandboxState,
  type SandboxWorkflowInput,
} from './messages.js';
import { releaseSlotSignal } from './quota.js';

/**
 * The synchronous part of a create in one local activity, Fast and Strong alike (see
 * activities/sandbox/create.ts). Runs recorded before took a local activity per step.
 */
const ONE_ROUND_TRIP = 'sandbox-create-one-round-trip';
/** Runs from before it took a delete that came ahead of the Fast record as a delete. */
const DELETE_BEFORE_RECORD = 'sandbox-delete-before-record';
/** Patch: when no agent is left after one did not answer, the answer says so (not the pool's "full"). */
const UNANSWERED_AGENT_ANSWER = 'sandbox-unanswered-agent-answer';
/** A sandbox missing from an agent that restarted since its placement: the agent's loss, not the sandbox's alone. */
const AGENT_RESTARTED = 'sandbox-agent-restarted';
/** A bound on agents tried after refusals; each refusal excludes its agent, so the table runs out first. */
const MAX_PLACEMENT_TRIES = 64;
/** Re-read the record this often without any hint (a backstop; hints normally arrive first). */
const RESYNC_MS = 5 * 60_000;
/** A sandbox no agent has room for is tried again this often (or on the next hint). */
const UNSCHEDULABLE_RETRY_MS = 10_000;

interface Incarnation {
  sandboxId: string;
  placement: Placement;
  spec: SandboxCreateSpec;
}

export async function sandboxWorkflow(input: SandboxWorkflowInput): Promise<string> {
  const { namespace, name } = input;
  const state: SandboxState = { stage: 'waiting' };
  let phaseIndexed = false;
  let uidIndexed: string | undefined;
  let creation: { fingerprint: string; answer?: CreateAnswer; call: CreateSandboxCall } | undefined;
  // Set once the create was answered with a placement (or the run adopted one from the record).
  let live: Incarnation | undefined;
  // A reset's or a recreate's new incarnation gets a new sandbox ID, so the agents and the
  // placement table never mistake it for the one just removed or lost.
  let nextSandboxId: string | undefined;
  let hinted = false;
  // Set by a pass that found the agent gone: when its recovery timeout ends (the record read in
  // that pass does not carry the loss yet, so the wait cannot learn it from there).
  let recoveryEndsAtMs: number | undefined;

  const stage = (s: SandboxState['stage'], details: string) => {
    // Search attributes only on a change: each upsert is a history event. The fast path starts
    // the run with the phase `creating` already set, so its first stage needs none (no upsert on
    // the caller's clock); a continued run carries its predecessor's phase and indexes its first
    // stage, as runs always did.
    const info = workflowInfo();
    const indexed = phaseIndexed
      ? state.stage
      : info.continuedFromExecutionRunId
        ? undefined
        : info.typedSearchAttributes.get(OperationPhase);
    if (indexed !== s) upsertSearchAttributes([{ key: OperationPhase, value: s }]);
    phaseIndexed = true;
    state.stage = s;
    state.message = details;
    setCurrentDetails(`**${s}** — ${details}`);
  };

  setHandler(sandboxStateQuery, () => state);
  // A deletion hint closes the name to creates at once (before the run has read the record):
  // a create right after DeleteSandbox must make a new incarnation, not get this one back.
  let deletionRequested = false;
  setHandler(sandboxChangedSignal, (change) => {
    hinted = true;
    if (change?.event === 'Deleting') deletionRequested = true;
  });
  setHandler(agentReportedSignal, () => void (hinted = true));
  setHandler(
    createSandboxUpdate,
    async (call) => {
      if (creation) {
        await condition(() => creation!.answer !== undefined);
        return creation.answer!;
      }
      if (input.created) return input.created.answer; // answered by an earlier run (validated)
      creation = { fingerprint: createFingerprint(call.spec), call };
      state.mode = call.mode;
      stage('creating', `${call.mode} create in pool ${call.spec.poolRef}`);
      creation.answer = call.mode === 'strong' ? await createStrong(call) : await createFast(call);
      return creation.answer;
    },
    {
      validator: (call) => {
        const conflict = createConflict({
          namespace,
          name,
          closing: deletionRequested || state.stage === 'deleting' || state.stage === 'done',
          // A create that failed ends its run, which is a moment away: a retry is a new attempt
          // in the next run (the fast path waits for this one to end), not this failure again.
          failedEnding: creation?.answer?.status === 'failed' && !state.uid,
          answered: creation ? { fingerprint: creation.fingerprint, tenant: creation.call.tenant } : input.created,
          recorded: Boolean(state.uid),
          call: { fingerprint: createFingerprint(call.spec), tenant: call.tenant },
        });
        if (conflict) throw ApplicationFailure.nonRetryable(conflict.message, conflict.reason);
      },
    },
  );

  function agentSpec(sandboxId: string, spec: SandboxCreateSpec, claimUid: string): AgentSandboxSpec {
    return {
      sandboxId,
      claimUid,
      claimName: name,
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
   * kubectl-created record, and creates recorded before ONE_ROUND_TRIP). `reservation` keys the slot
   * until the sandbox ID is known; `claimUid` runs between the two (a step-wise Strong create
   * writes its record there).
   */
  async function place(
    spec: SandboxCreateSpec,
    steps: typeof sandboxCalls,
    ids: { sandboxId: string; reservation: string },
    claimUid: (placement: Placement) => Promise<string | Refusal>,
  ): Promise<Incarnation | Refusal> {
    return onSomeAgent(spec.poolRef, async (exclude) => {
      const alloc = await steps.allocateSandbox(placeRequest(spec, ids.reservation, exclude));
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
        spec: agentSpec(sandboxId, spec, uid),
      });
      if (created.status === 'ok') return { sandboxId, placement, spec };
      return { ...created.outcome, agentId: placement.agentId };
    });
  }

  /** The answer for a placed sandbox. */
  const answerFor = (inc: Incarnation): CreateAnswer =>
    ok({
      sandboxId: inc.sandboxId,
      agentPod: inc.placement.pod,
      endpoints: endpointsOf(inc.placement.ip, inc.spec.exposedPorts),
      sandboxName: name,
    });

  /** Activity failures in the synchronous part become UNAVAILABLE answers, never a hung caller. */
  async function answering(fn: () => Promise<CreateAnswer>): Promise<CreateAnswer> {
    try {
      return await fn();
    } catch (err) {
      const message =
        err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
      return failedWith(refusal('Unavailable', `the sandbox could not be created now: ${message}`));
    }
  }

  /** allocatedAt from the receive time: deterministic, and what the caller saw. */
  function allocatedAtOf(call: CreateSandboxCall): string {
    return new Date(Number(BigInt(call.receivedAtNanos) / 1_000_000n)).toISOString();
  }

  function allocationOf(p: Placement, call: CreateSandboxCall): SandboxAllocation {
    return { assignedPod: p.pod, assignedNode: p.node, allocatedAt: allocatedAtOf(call) };
  }

  /**
   * What the allocation needs to know, excluding the agents that refused this create. (A function
   * declaration, as everything the update handler calls: with update-with-start the handler starts
   * inside setHandler, before the run has reached any `const` below it.)
   */
  function placeRequest(spec: SandboxCreateSpec, reservation: string, exclude: string[]) {
    return {
      sandboxId: reservation,
      namespace,
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
  async function onSomeAgent(
    poolRef: string,
    attempt: (exclude: string[]) => Promise<Incarnation | PlacementRefusal>,
  ): Promise<Incarnation | Refusal> {
    const exclude: string[] = [];
    let last: Refusal | undefined;
    let unanswered: Refusal | undefined;
    for (let i = 0; i < MAX_PLACEMENT_TRIES; i++) {
      const r = await attempt(exclude);
      if (!('code' in r)) return r;
      const { retryElsewhere, agentId } = r as Partial<AgentCreateRefusal & { agentId: string }>;
      // The allocation found no agent left after one did not answer: that agent's failure is why.
      if (!agentId && unanswered && patched(UNANSWERED_AGENT_ANSWER)) return unanswered;
      last = { ...refusal(r.code, r.message), ...(r.reason ? { reason: r.reason } : {}) };
      if (!retryElsewhere || !agentId) return last;
      if (r.code === 'Unavailable') unanswered = last;
      exclude.push(agentId);
    }
    return last ?? refusal('ResourceExhausted', `no agent of pool ${poolRef} took the sandbox`);
  }

  async function createFast(call: CreateSandboxCall): Promise<CreateAnswer> {
    const sandboxId = uuid4().replaceAll('-', '');
    const { spec } = call;
    return answering(async () => {
      const placed = patched(ONE_ROUND_TRIP)
        ? await onSomeAgent(spec.poolRef, async (exclude) => {
            // Allocation and agent create in one local activity: one round trip on the caller's clock.
            const r = await createSteps.placeOnAgent({
              ...placeRequest(spec, sandboxId, exclude),
              spec: agentSpec(sandboxId, spec, ''),
            });
            return r.status === 'ok' ? { sandboxId, placement: r.placement, spec } : r.outcome;
          })
        : await place(spec, createSteps, { sandboxId, reservation: sandboxId }, async () => '');
      if ('code' in placed) return failedWith(placed);
      live = placed;
      return answerFor(placed);
    });
  }

  async function createStrong(call: CreateSandboxCall): Promise<CreateAnswer> {
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
      const placed = patched(ONE_ROUND_TRIP)
        ? await onSomeAgent(spec.poolRef, async (exclude) => {
            // Allocation, record and agent create in one local activity (in that order).
            const r = await createSteps.placeWithRecord({
              ...placeRequest(spec, reservation, exclude),
              spec: agentSpec('', spec, ''),
              record: { ...record, allocatedAt: allocatedAtOf(call) },
              ...(recordedUid ? { recordedUid } : {}),
            });
            const uid = r.status === 'ok' ? r.uid : r.outcome.uid;
            if (uid) recordedUid = state.uid = uid;
            return r.status === 'ok' ? { sandboxId: r.uid, placement: r.placement, spec } : r.outcome;
          })
        : // Runs recorded before ONE_ROUND_TRIP: allocation, record and agent create one step each.
          await place(spec, createSteps, { sandboxId: '', reservation }, async (placement) => {
            const allocation = allocationOf(placement, call);
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
            recordedUid = state.uid = rec.uid;
            return rec.uid;
          });
      if ('code' in placed) {
        if (recordedUid) await sandboxCalls.deleteSandboxRecord({ namespace, name, uid: recordedUid });
        state.uid = undefined;
        return failedWith(placed);
      }
      live = placed;
      return answerFor(placed);
    });
  }

  // ---- the run: wait for a create or a record, then follow it until it is deleted ----

  /**
   * Ends the run once no create is half-answered (a caller always gets its answer). Every end
   * here leaves no record of this incarnation, so its tenant's quota slot is given back.
   */
  async function finish(result: string): Promise<string> {
    await condition(allHandlersFinished);
    await releaseQuotaSlot();
    return result;
  }
  let recordTenant: string | undefined;

  /** Only tenants with a limit have a quota workflow; for the others the signal finds none, which is fine. */
  async function releaseQuotaSlot(): Promise<void> {
    const tenant = creation?.call.tenant ?? recordTenant;
    // Runs recorded before quotas existed end without the signal; the marker keeps their replay unchanged.
    if (!tenant || !patched('sandbox-quota-release')) return;
    try {
      await getExternalWorkflowHandle(quotaWorkflowId(tenant)).signal(releaseSlotSignal, {
        slot: slotKey(namespace, name),
        runStartMs: workflowInfo().runStartTime.getTime(),
      });
    } catch {
      // No quota workflow for this tenant: nothing was counted.
    }
  }
  let recorded = false;
  let answerSent = false;

  await condition(() => creation !== undefined || hinted);
  for (;;) {
    // A create in progress is answered before anything else: a hint (the registry seeing the
    // sandbox on its agent, say) must not make the run act on a record that is not written yet.
    if (creation && creation.answer === undefined) await condition(() => creation!.answer !== undefined);
    if (creation && !answerSent) {
      // End the workflow task here: the caller's answer leaves with its completion, so it must
      // not wait for the steps after it (recording, hand-off), nor share a task with the run's end.
      answerSent = true;
      await sleep(1);
    }
    if (creation?.answer?.status === 'failed' && !state.uid) {
      stage('done', `not created: ${creation.answer.outcome.message}`);
      return finish(`not created (${creation.answer.outcome.code}): ${creation.answer.outcome.message}`);
    }
    if (deletionRequested && creation?.call.mode === 'fast' && live && !recorded && patched(DELETE_BEFORE_RECORD)) {
      // DeleteSandbox came between the answer and the record (it found no record and told this
      // run): record nothing, remove the sandbox from its agent.
      const where = `sandbox ${live.sandboxId} on agent ${live.placement.pod}`;
      stage('deleting', `deleted before its record was written; removing ${where}`);
      await removeFromAgent(live);
      stage('done', `deleted before it was recorded; removed ${where}`);
      return finish(`deleted before it was recorded; removed ${where}`);
    }
    // Known before the record is written: Get answers a recording sandbox from it, and the
    // janitor spares the sandbox it names while the record is on its way.
    if (live) {
      state.sandboxId = live.sandboxId;
      state.agentPod = live.placement.pod;
      state.endpoints = endpointsOf(live.placement.ip, live.spec.exposedPorts);
    }
    if (creation && creation.call.mode === 'fast' && live && !recorded) {
      stage('recording', `on agent ${live.placement.pod}; writing the Sandbox record`);
      const rec = await sandboxCalls.createSandboxRecord({
        namespace,
        name,
        spec: creation.call.spec,
        mode: 'fast',
        allocation: allocationOf(live.placement, creation.call),
        createTimestampNanos: creation.call.receivedAtNanos,
        tenant: creation.call.tenant,
      });
      if (rec.status !== 'ok') {
        const why = `sandbox ${live.sandboxId} runs on agent ${live.placement.pod} but its record was refused (${rec.outcome.message}); the janitor removes it from the agent once it is older than the orphan timeout`;
        stage('unrecorded', why);
        return finish(why);
      }
      state.uid = rec.uid;
      recorded = true;
    }

    hinted = false;
    recoveryEndsAtMs = undefined;
    const read = await sandboxCalls.readSandbox({ namespace, name });
    const sb = read.status === 'ok' ? read.sandbox : undefined;
    const uid = sb?.metadata?.uid;
    recordTenant = sb?.metadata?.labels?.[TENANT_LABEL] ?? recordTenant;
    if (!sb && creation?.call.mode === 'fast' && live && !recorded) continue; // a create landed meanwhile: record it
    if (!sb || (state.uid && uid !== state.uid)) {
      // Our record is gone without passing through our finalizer (force-removed), or was never ours.
      if (live) await removeFromAgent(live);
      if (sb) {
        stage('done', `Sandbox ${namespace}/${name} was replaced; following the new one`);
        await condition(allHandlersFinished);
        return continueAsNew<typeof sandboxWorkflow>({ namespace, name, previousUid: state.uid });
      }
      stage('done', `Sandbox ${namespace}/${name} is gone`);
      return finish(`Sandbox ${namespace}/${name} is gone`);
    }
    state.uid ??= uid;
    if (uidIndexed !== state.uid) {
      upsertSearchAttributes([{ key: K8sUID, value: state.uid! }]);
      uidIndexed = state.uid;
    }
    const ref = { namespace, name, uid: state.uid! };

    if (sb.metadata?.deletionTimestamp) {
      await deleteSandbox(sb, ref);
      return finish(`Sandbox ${namespace}/${name} deleted`);
    }
    if (!(sb.metadata?.finalizers ?? []).includes(SANDBOX_FINALIZER)) {
      if ((await sandboxCalls.setSandboxFinalizer({ ...ref, present: true })).status === 'gone') continue;
    }

    // Hand-off: the allocation annotation → status, then the annotation goes.
    const alloc = parseAllocation(sb.metadata?.annotations);
    if (alloc instanceof Error) {
      stage('scheduling', `removing a malformed allocation annotation (${alloc.message})`);
      if ((await sandboxCalls.removeAllocationAnnotation(ref)).status === 'gone') continue;
    } else if (alloc) {
      if (!sb.status?.assignedPod) {
        live ??= await adoptPlacement(sb, alloc);
        const status: SandboxStatus = {
          phase: 'Bound',
          assignedPod: alloc.assignedPod,
          nodeName: alloc.assignedNode,
          ...(live
            ? { sandboxID: live.sandboxId, endpoints: endpointsOf(live.placement.ip, live.spec.exposedPorts) }
            : {}),
        };
        if ((await sandboxCalls.patchSandboxStatus({ ...ref, status })).status === 'gone') continue;
        state.phase = 'Bound';
      }
      if ((await sandboxCalls.removeAllocationAnnotation(ref)).status === 'gone') continue;
      continue; // read again: status and annotation as they are now
    }

    // Expiry and reset act on whatever the sandbox is doing now: placed, waiting for room, failed.
    const lifecycle = lifecycleStep(sb, Date.now());
    if (lifecycle) {
      await applyLifecycle(sb, ref, lifecycle);
      continue;
    }

    if (!live && !sb.status?.assignedPod && !isTerminal(sb)) {
      // Created with kubectl (or its annotation was malformed): placed by this run.
      const placed = await scheduleRecord(sb, ref);
      if (placed === 'gone') continue;
      if (placed) live = placed;
      continue;
    }
    live ??= await adoptPlacement(sb, undefined);
    if (live || PLACED_PHASES.has(sb.status?.phase)) await followAgent(sb, ref, live);
    stage(
      'live',
      `${state.phase ?? sb.status?.phase ?? 'Pending'} on agent ${live?.placement.pod ?? sb.status?.assignedPod ?? '-'}`,
    );

    // Also the durable timer of the expiry and of a lost agent's recovery timeout: a hint (a spec
    // change, the agent back) ends it early and the next pass arms it anew.
    const lookInMs = nextLookInMs(sb, Date.now(), RESYNC_MS);
    await condition(
      () => hinted,
      recoveryEndsAtMs === undefined ? lookInMs : Math.max(1, Math.min(lookInMs, recoveryEndsAtMs - Date.now())),
    );
    if (workflowInfo().continueAsNewSuggested && !hinted) {
      await condition(allHandlersFinished);
      const created: AnsweredCreate | undefined =
        creation?.answer?.status === 'ok'
          ? { fingerprint: creation.fingerprint, tenant: creation.call.tenant, answer: creation.answer }
          : input.created;
      return continueAsNew<typeof sandboxWorkflow>({ namespace, name, previousUid: input.previousUid, created });
    }
  }

  function isTerminal(sb: Sandbox): boolean {
    return sb.status?.phase === 'Failed' || sb.status?.phase === 'Expired' || sb.status?.phase === 'Lost';
  }

  /**
   * A run that did not place the sandbox itself (a new run after continue-as-new or a lost
   * history) learns where it is from the record: the agent named by status or the annotation.
   */
  async function adoptPlacement(sb: Sandbox, alloc: SandboxAllocation | undefined): Promise<Incarnation | undefined> {
    const pod = sb.status?.assignedPod ?? alloc?.assignedPod;
    if (!pod) return undefined;
    const sandboxId = sb.status?.sandboxID ?? sb.metadata!.uid!;
    const found = await sandboxCalls.locateSandbox({ namespace, pod, sandboxId, claimName: name });
    if (!found) return undefined;
    return { sandboxId: found.sandboxId, placement: found.placement, spec: createSpecOf(sb) };
  }

  /** A record without a placement: allocate, record Pending on the agent, create there, Bound. */
  async function scheduleRecord(
    sb: Sandbox,
    ref: { namespace: string; name: string; uid: string },
  ): Promise<Incarnation | undefined | 'gone'> {
    const spec = createSpecOf(sb);
    stage('scheduling', `placing in pool ${spec.poolRef}`);
    let gone = false;
    const sandboxId = nextSandboxId ?? ref.uid;
    const placed = await place(spec, sandboxCalls, { sandboxId, reservation: sandboxId }, async (placement) => {
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
        status: {
          phase: 'Pending',
          assignedPod: null,
          nodeName: null,
          conditions: [readyCondition('False', placed.reason ?? 'Unschedulable', placed.message)],
        },
      });
      stage('scheduling', `waiting for room: ${placed.message}`);
      if (r.status === 'gone') return 'gone';
      // No room now: try again on the next hint, a little later, or at the expiry.
      await condition(() => hinted, nextLookInMs(sb, Date.now(), UNSCHEDULABLE_RETRY_MS));
      return undefined;
    }
    const status: SandboxStatus = {
      phase: 'Bound',
      assignedPod: placed.placement.pod,
      nodeName: placed.placement.node,
      sandboxID: placed.sandboxId,
      endpoints: endpointsOf(placed.placement.ip, spec.exposedPorts),
    };
    if ((await sandboxCalls.patchSandboxStatus({ ...ref, status })).status === 'gone') {
      await removeFromAgent(placed);
      return 'gone';
    }
    state.phase = 'Bound';
    return placed;
  }

  /**
   * Status follows the agent: Running while its process runs, Failed with the exit or when a live
   * agent no longer has it (AgentLostSandbox). An agent that is gone (Pod deleted, not Ready, or
   * stale) is waited for up to spec.recoveryTimeoutSeconds; only then does spec.failurePolicy
   * apply (see agentLost). `inc` is undefined when no agent could be asked where the sandbox is:
   * the record's own assignment is checked.
   */
  async function followAgent(
    sb: Sandbox,
    ref: { namespace: string; name: string; uid: string },
    inc: Incarnation | undefined,
  ) {
    if (isTerminal(sb)) return;
    const pod = inc?.placement.pod ?? sb.status?.assignedPod;
    const sandboxId = inc?.sandboxId ?? sb.status?.sandboxID ?? ref.uid;
    if (!pod) return;
    state.sandboxId = sandboxId;
    state.agentPod = pod;
    const seen = await sandboxCalls.agentSandbox({ namespace, pod, sandboxId });
    if (seen.state === 'agent-gone') return agentGone(sb, ref, pod, sandboxId);
    // Back and holding it, though the look just before found nothing: the registry's hint for
    // the agent's return brings the next pass, which adopts it.
    if (!inc && seen.state === 'held') return;
    let phase: SandboxStatus['phase'];
    let condition_: ReturnType<typeof readyCondition>;
    if (seen.state === 'held') {
      phase = phaseFromAgent(seen.phase as Parameters<typeof phaseFromAgent>[0]);
      condition_ =
        phase === 'Running'
          ? readyCondition('True', 'Running', `running on agent ${pod}`)
          : phase === 'Failed'
            ? readyCondition('False', failureReason(seen), seen.message)
            : readyCondition('False', phase ?? 'Pending', seen.message || `${seen.phase} on agent ${pod}`);
    } else if (
      inc?.placement.bootId &&
      seen.bootId &&
      seen.bootId !== inc.placement.bootId &&
      patched(AGENT_RESTARTED)
    ) {
      // The agent restarted in place (a container restart, an OOM kill) and its sandboxes went
      // with it: the agent was lost and is back at once, so failurePolicy applies now.
      return applyFailurePolicy(
        sb,
        ref,
        pod,
        sandboxId,
        `agent ${pod} restarted and no longer has sandbox ${sandboxId}`,
        failurePolicyOf(sb) === 'AutoRecreate' ? 'recreate' : 'lost',
      );
    } else {
      // The agent answers and does not have it: not a lost agent, so no recovery to wait for.
      phase = 'Failed';
      condition_ = readyCondition('False', 'AgentLostSandbox', `agent ${pod} no longer has sandbox ${sandboxId}`);
    }
    const runtime = seen.state === 'held' ? seen.runtime : undefined;
    if (
      phase === sb.status?.phase &&
      sb.status?.conditions?.[0]?.reason === condition_.reason &&
      (runtime === undefined || runtime === sb.status?.runtime)
    ) {
      state.phase = phase;
      return;
    }
    const r = await sandboxCalls.patchSandboxStatus({
      ...ref,
      status: {
        phase,
        sandboxID: sandboxId,
        assignedPod: pod,
        ...(inc
          ? { nodeName: inc.placement.node, endpoints: endpointsOf(inc.placement.ip, inc.spec.exposedPorts) }
          : {}),
        ...(runtime ? { runtime } : {}),
        conditions: [condition_],
      },
    });
    if (r.status === 'ok') state.phase = phase;
  }

  /**
   * The sandbox's agent is gone. Within the recovery timeout the assignment is kept and the loss
   * recorded (Ready=False AgentUnreachable, its time the start of the timeout): the main wait is
   * the timeout's durable timer, and the agent's return — the registry's hint — ends it early.
   * After it, AutoRecreate places the sandbox again under a new sandbox ID (Pending → Bound →
   * Running on another agent); Manual makes it Lost, keeping the last assignment to read.
   * Either way the old agent's copy, should it come back, is an orphan the janitor removes.
   */
  async function agentGone(
    sb: Sandbox,
    ref: { namespace: string; name: string; uid: string },
    pod: string,
    sandboxId: string,
  ): Promise<void> {
    const loss = agentLossStep(sb, Date.now());
    const since = new Date(loss.sinceMs).toISOString();
    const timeout = recoveryTimeoutMs(sb) / 1000;
    if (loss.step === 'wait') {
      recoveryEndsAtMs = loss.untilMs;
      stage('live', `agent ${pod} gone since ${since}; waiting ${timeout}s for it to return`);
      if (agentGoneSinceMs(sb) !== undefined) return;
      const unreachable = {
        ...readyCondition(
          'False',
          AGENT_UNREACHABLE,
          `agent ${pod} is gone (Pod deleted, not Ready or not answering); sandbox ${sandboxId} is kept for ` +
            `${timeout}s in case it returns, then failurePolicy ${failurePolicyOf(sb)} applies`,
        ),
        lastTransitionTime: since,
      };
      await sandboxCalls.patchSandboxStatus({ ...ref, status: { conditions: [unreachable] } });
      return;
    }
    const lostFor = `agent ${pod} gone since ${since}, not back within recoveryTimeoutSeconds ${timeout}`;
    await applyFailurePolicy(sb, ref, pod, sandboxId, lostFor, loss.step);
  }

  /**
   * The agent lost the sandbox with itself (gone past the recovery timeout, or restarted without
   * it): AutoRecreate places it again under a new sandbox ID; Manual makes it Lost.
   */
  async function applyFailurePolicy(
    sb: Sandbox,
    ref: { namespace: string; name: string; uid: string },
    pod: string,
    sandboxId: string,
    lostFor: string,
    step: 'recreate' | 'lost',
  ): Promise<void> {
    recoveryEndsAtMs = Date.now(); // look again at once: the record just changed
    // The slot is the lost agent's; the table forgot the agent already, this keeps it that way.
    await sandboxCalls.releaseSandbox({ agentId: `${namespace}/${pod}`, sandboxId });
    live = undefined;
    state.sandboxId = state.agentPod = state.endpoints = undefined;
    if (step === 'recreate') {
      stage('scheduling', `${lostFor}; placing it again (failurePolicy AutoRecreate)`);
      // A new sandbox ID, so the old agent's copy (should it return) is never taken for this one.
      nextSandboxId = uuid4().replaceAll('-', '');
      const status: SandboxStatusPatch = {
        phase: 'Pending',
        ...UNASSIGNED,
        conditions: [
          readyCondition(
            'False',
            AGENT_LOST,
            `${lostFor}; sandbox ${sandboxId} is placed again on another agent (failurePolicy AutoRecreate)`,
          ),
        ],
      };
      if ((await sandboxCalls.patchSandboxStatus({ ...ref, status })).status === 'ok') state.phase = 'Pending';
      return;
    }
    const status: SandboxStatusPatch = {
      phase: 'Lost',
      endpoints: null,
      conditions: [
        readyCondition(
          'False',
          AGENT_LOST,
          `${lostFor}; sandbox ${sandboxId} was not placed again (failurePolicy Manual): delete the Sandbox, ` +
            `or raise spec.resetRevision to place it again`,
        ),
      ],
    };
    stage('live', `Lost: ${lostFor}`);
    if ((await sandboxCalls.patchSandboxStatus({ ...ref, status })).status === 'ok') state.phase = 'Lost';
  }

  /**
   * Expiry: the runtime goes (agent delete, slot released) and the record stays, Expired and
   * unassigned. Reset: the same removal, then Pending and unassigned with the revision accepted
   * in that same write — so it is acted upon exactly once — and the loop places it anew.
   */
  async function applyLifecycle(
    sb: Sandbox,
    ref: { namespace: string; name: string; uid: string },
    lifecycle: NonNullable<LifecycleStep>,
  ): Promise<void> {
    live ??= await adoptPlacement(sb, undefined);
    const removed = live ? `; sandbox ${live.sandboxId} removed from agent ${live.placement.pod}` : '';
    stage(
      lifecycle.step === 'expire' ? 'expiring' : 'resetting',
      lifecycle.step === 'expire' ? `expireTime ${lifecycle.at} reached` : `resetRevision ${lifecycle.revision}`,
    );
    if (live) {
      await removeFromAgent(live);
      live = undefined;
      state.sandboxId = state.agentPod = state.endpoints = undefined;
    }
    const status: SandboxStatusPatch =
      lifecycle.step === 'expire'
        ? {
            phase: 'Expired',
            ...UNASSIGNED,
            conditions: [readyCondition('False', 'Expired', `expired at ${lifecycle.at}${removed}`)],
          }
        : {
            phase: 'Pending',
            ...UNASSIGNED,
            acceptedResetRevision: lifecycle.revision,
            conditions: [
              readyCondition('False', 'Reset', `reset to revision ${lifecycle.revision}${removed}; placing it again`),
            ],
          };
    if (lifecycle.step === 'reset') nextSandboxId = uuid4().replaceAll('-', '');
    if ((await sandboxCalls.patchSandboxStatus({ ...ref, status })).status === 'ok') state.phase = status.phase!;
  }

  async function removeFromAgent(inc: Incarnation): Promise<void> {
    const agent = { namespace, pod: inc.placement.pod, sandboxId: inc.sandboxId };
    await sandboxCalls.deleteOnAgent(agent);
    await agentWaits.waitUntilAgentForgets(agent);
    await sandboxCalls.releaseSandbox({ agentId: inc.placement.agentId, sandboxId: inc.sandboxId });
  }

  async function deleteSandbox(sb: Sandbox, ref: { namespace: string; name: string; uid: string }): Promise<void> {
    live ??= await adoptPlacement(sb, undefined);
    stage(
      'deleting',
      live ? `removing sandbox ${live.sandboxId} from agent ${live.placement.pod}` : 'no agent holds it',
    );
    if (live) {
      if (sb.status?.phase !== 'Terminating')
        await sandboxCalls.patchSandboxStatus({ ...ref, status: { phase: 'Terminating' } });
      await removeFromAgent(live);
    }
    await sandboxCalls.setSandboxFinalizer({ ...ref, present: false });
    stage('done', `deleted${live ? `; sandbox ${live.sandboxId} removed from agent ${live.placement.pod}` : ''}`);
  }
}

function readyCondition(status: 'True' | 'False', reason: string, message: string) {
  return { type: 'Ready', status, reason, message, lastTransitionTime: new Date().toISOString() };
}
