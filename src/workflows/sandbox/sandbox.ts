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
  allHandlersFinished,
  condition,
  continueAsNew,
  patched,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import { SANDBOX_FINALIZER, parseAllocation, type Sandbox } from '../../api/sandbox.js';
import {
  PLACED_PHASES,
  TENANT_LABEL,
  deletesBeforeRecord,
  deletesOwnRecord,
  endpointsOf,
  lifecycleStep,
} from '../../domain/sandbox.js';
import { handOffStatus, isTerminal, waitForHintsMs } from '../../domain/sandbox-run.js';
import { sandboxCalls } from './activity-options.js';

import {
  agentReportedSignal,
  createSandboxUpdate,
  sandboxChangedSignal,
  sandboxStateQuery,
  type SandboxWorkflowInput,
} from './messages.js';
import { SandboxRun, leanLife, leanLife3, type RecordRef } from './sandbox-run.js';

/** Runs from before it took a delete that came ahead of the Fast record as a delete. */
const DELETE_BEFORE_RECORD = 'sandbox-delete-before-record';
/** Runs from before it deleted the Fast record written while the create's delete was on its way. */
const DELETE_AFTER_RECORD = 'sandbox-delete-after-record';
/** A deletion the run read before its hint arrived: it waits for the hint before it ends. */
const DELETION_HEARD = 'sandbox-deletion-heard';
/** How long the run waits for that hint: the watcher down or slow only delays the end. */
const DELETION_HINT_WAIT_MS = 10_000;
/** Re-read the record this often without any hint (a backstop; hints normally arrive first). */
const RESYNC_MS = 5 * 60_000;

/** What a pass over the record decided: another pass, or the run's result. */
type Pass = { again: true } | { again?: false; result: string };
const AGAIN: Pass = { again: true };
const ended = (result: string): Pass => ({ result });

export async function sandboxWorkflow(input: SandboxWorkflowInput): Promise<string> {
  const run = new SandboxRun(input);
  setHandler(sandboxStateQuery, () => run.state);
  setHandler(sandboxChangedSignal, (change) => run.hint(change));
  setHandler(agentReportedSignal, () => run.hint());
  setHandler(createSandboxUpdate, (call) => run.create(call), { validator: (call) => run.validateCreate(call) });

  // The run: wait for a create or a record, then follow it until it is deleted.
  await condition(() => run.creation !== undefined || run.needsReconcile);
  for (;;) {
    const pass = await reconcile(run, input);
    if (!pass.again) return pass.result;
  }
}

/** One pass: the create's part first, then the record as it is now. */
async function reconcile(run: SandboxRun, input: SandboxWorkflowInput): Promise<Pass> {
  const beforeRecord = await answerAndRecordCreate(run);
  if (beforeRecord) return beforeRecord;
  // A write of this pass answered with the record as it is now (a lean run): no read after it.
  const known = run.takeKnownRecord();
  run.needsReconcile = false;
  run.recoveryEndsAtMs = undefined;
  const read = known
    ? { status: 'ok' as const, sandbox: known }
    : await sandboxCalls.readSandbox({ namespace: input.namespace, name: input.name });
  const sb = read.status === 'ok' ? read.sandbox : undefined;
  const uid = sb?.metadata?.uid;
  run.recordTenant = sb?.metadata?.labels?.[TENANT_LABEL] ?? run.recordTenant;
  if (!sb && run.creation?.call.mode === 'fast' && run.placed && !run.recorded) return AGAIN; // a create landed meanwhile: record it
  if (!sb || (run.state.uid && uid !== run.state.uid)) return await recordGoneOrReplaced(run, input, sb);
  run.state.uid ??= uid;
  run.indexUid();
  const ref = { namespace: input.namespace, name: input.name, uid: run.state.uid! };
  const deletion = await followDeletion(run, sb, ref);
  if (deletion) return deletion;
  if (await handOff(run, sb, ref)) return AGAIN;
  // Expiry and reset act on whatever the sandbox is doing now: placed, waiting for room, failed.
  const lifecycle = lifecycleStep(sb, Date.now());
  if (lifecycle) {
    await run.applyLifecycle(sb, ref, lifecycle);
    return AGAIN;
  }
  if (!run.placed && !sb.status?.assignedPod && !isTerminal(sb)) {
    // Created with kubectl (or its annotation was malformed): placed by this run.
    const scheduled = await run.scheduleRecord(sb, ref);
    if (scheduled && scheduled !== 'gone') run.placed = scheduled;
    return AGAIN;
  }
  await followAgent(run, sb, ref);
  return await waitForHints(run, input, sb);
}

/**
 * The create's part of a pass: its answer leaves first (its own workflow task), then a Fast
 * create's record is written — or nothing is, when DeleteSandbox came before the record.
 */
async function answerAndRecordCreate(run: SandboxRun): Promise<Pass | undefined> {
  // A create in progress is answered before anything else: a hint (the registry seeing the
  // sandbox on its agent, say) must not make the run act on a record that is not written yet.
  const { creation } = run;
  if (creation && creation.answer === undefined) await condition(() => creation.answer !== undefined);
  if (creation && !run.answerSent) {
    // End the workflow task here: the caller's answer leaves with its completion, so it must
    // not wait for the steps after it (recording, hand-off), nor share a task with the run's end.
    run.answerSent = true;
    run.index();
    await sleep(1);
  }
  if (creation?.answer?.status === 'failed' && !run.state.uid) {
    run.reportPhase('done', `not created: ${creation.answer.outcome.message}`);
    return ended(await run.finish(`not created (${creation.answer.outcome.code}): ${creation.answer.outcome.message}`));
  }
  const placed = run.placed;
  if (
    deletesBeforeRecord({
      deletionRequested: run.deletionRequested,
      fastCreate: creation?.call.mode === 'fast',
      placed: !!placed,
      recorded: run.recorded,
    }) &&
    (leanLife() || patched(DELETE_BEFORE_RECORD))
  ) {
    // DeleteSandbox came between the answer and the record (it found no record and told this
    // run): record nothing, remove the sandbox from its agent.
    const where = `sandbox ${placed!.sandboxId} on agent ${placed!.placement.pod}`;
    run.reportPhase('deleting', `deleted before its record was written; removing ${where}`);
    await run.removeFromAgent(placed!);
    run.reportPhase('done', `deleted before it was recorded; removed ${where}`);
    return ended(await run.finish(`deleted before it was recorded; removed ${where}`));
  }
  // Known before the record is written: Get answers a recording sandbox from it, and the
  // janitor spares the sandbox it names while the record is on its way.
  if (placed) {
    run.state.sandboxId = placed.sandboxId;
    run.state.agentPod = placed.placement.pod;
    run.state.endpoints = endpointsOf(placed.placement.ip, placed.spec.exposedPorts);
  }
  if (creation && creation.call.mode === 'fast' && placed && !run.recorded) {
    const refused = await run.recordFastCreate(creation, placed);
    if (refused) return ended(await run.finish(refused));
  }
  return undefined;
}

/** Our record is gone without passing through our finalizer (force-removed), or was never ours. */
async function recordGoneOrReplaced(
  run: SandboxRun,
  input: SandboxWorkflowInput,
  sb: Sandbox | undefined,
): Promise<Pass> {
  const { namespace, name } = input;
  if (run.placed) await run.removeFromAgent(run.placed);
  if (sb) {
    run.reportPhase('done', `Sandbox ${namespace}/${name} was replaced; following the new one`);
    run.index();
    await condition(allHandlersFinished);
    return continueAsNew<typeof sandboxWorkflow>({ namespace, name, previousUid: run.state.uid });
  }
  run.reportPhase('done', `Sandbox ${namespace}/${name} is gone`);
  return ended(await run.finish(`Sandbox ${namespace}/${name} is gone`));
}

/** The record's deletion: the run's own (DeleteSandbox reached the creation), or anyone's. */
async function followDeletion(run: SandboxRun, sb: Sandbox, ref: RecordRef): Promise<Pass | undefined> {
  if (
    deletesOwnRecord({
      creationDeleted: run.creationDeleted,
      recordedHere: run.recorded,
      recordDeleting: !!sb.metadata?.deletionTimestamp,
    }) &&
    (leanLife() || patched(DELETE_AFTER_RECORD))
  ) {
    run.reportPhase('deleting', 'deleted while its record was being written; deleting the record');
    await sandboxCalls.requestSandboxDeletion(ref);
    return AGAIN; // read again: the deletion below removes the sandbox and the finalizer
  }
  if (sb.metadata?.deletionTimestamp) {
    // Read before its hint (the watcher's, DeleteSandbox's) arrived — the run deleted the record
    // itself, or was busy: heard before the run ends, the hint cannot land in the task that ends
    // it (Temporal would refuse that task).
    if (!run.deletionsHeard.has(ref.uid) && patched(DELETION_HEARD))
      await condition(() => run.deletionsHeard.has(ref.uid), DELETION_HINT_WAIT_MS);
    await run.deleteSandbox(sb, ref);
    return ended(await run.finish(`Sandbox ${ref.namespace}/${ref.name} deleted`));
  }
  return undefined;
}

/**
 * The finalizer, then the hand-off: the allocation annotation → status, then the annotation goes
 * (a malformed one goes at once). True when the pass must read the record again.
 */
async function handOff(run: SandboxRun, sb: Sandbox, ref: RecordRef): Promise<boolean> {
  if (!(sb.metadata?.finalizers ?? []).includes(SANDBOX_FINALIZER)) {
    if ((await sandboxCalls.setSandboxFinalizer({ ...ref, present: true })).status === 'gone') return true;
  }
  const alloc = parseAllocation(sb.metadata?.annotations);
  if (alloc instanceof Error) {
    // Removed, and the sandbox placed as any other in the same pass.
    run.reportPhase('scheduling', `removing a malformed allocation annotation (${alloc.message})`);
    return (await sandboxCalls.removeAllocationAnnotation(ref)).status === 'gone';
  }
  if (!alloc) return false;
  const statusWritten = !!sb.status?.assignedPod;
  if (leanLife3()) {
    // Both writes in one local activity; its answer is the record as it is now.
    if (!statusWritten) run.placed ??= await run.adoptPlacement(sb, alloc);
    const status = handOffStatus(alloc, run.placed);
    const handed = await sandboxCalls.handOffRecord({ ...ref, status, statusWritten });
    if (handed.status === 'ok') {
      run.knownRecord = handed.record;
      if (!statusWritten) run.state.phase = 'Bound';
    }
    return true;
  }
  if (!statusWritten) {
    run.placed ??= await run.adoptPlacement(sb, alloc);
    const status = handOffStatus(alloc, run.placed);
    if ((await sandboxCalls.patchSandboxStatus({ ...ref, status })).status === 'gone') return true;
    run.state.phase = 'Bound';
  }
  const lean = leanLife();
  const removed = await sandboxCalls.removeAllocationAnnotation({ ...ref, ...(lean ? { returnRecord: true } : {}) });
  // Read again (a lean run: the patch's answer): status and annotation as they are now.
  if (removed.status !== 'gone') run.knownRecord = removed.record;
  return true;
}

/** A placed sandbox: its agent's view of it (Running, Failed with the exit, lost). */
async function followAgent(run: SandboxRun, sb: Sandbox, ref: RecordRef): Promise<void> {
  run.placed ??= await run.adoptPlacement(sb, undefined);
  if (run.placed || PLACED_PHASES.has(sb.status?.phase)) await run.followAgent(sb, ref, run.placed);
  run.reportPhase(
    'live',
    `${run.state.phase ?? sb.status?.phase ?? 'Pending'} on agent ${run.placed?.placement.pod ?? sb.status?.assignedPod ?? '-'}`,
  );
}

/**
 * Waits for a hint — also the durable timer of the expiry and of a lost agent's recovery timeout:
 * a hint (a spec change, the agent back) ends it early and the next pass arms it anew.
 */
async function waitForHints(run: SandboxRun, input: SandboxWorkflowInput, sb: Sandbox): Promise<Pass> {
  run.index();
  await condition(() => run.needsReconcile, waitForHintsMs(sb, Date.now(), RESYNC_MS, run.recoveryEndsAtMs));
  if (workflowInfo().continueAsNewSuggested && !run.needsReconcile) {
    await condition(allHandlersFinished);
    return continueAsNew<typeof sandboxWorkflow>({
      namespace: input.namespace,
      name: input.name,
      previousUid: input.previousUid,
      created: run.answeredCreate(),
    });
  }
  return AGAIN;
}
