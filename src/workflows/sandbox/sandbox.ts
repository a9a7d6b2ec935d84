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
import { SANDBOX_FINALIZER, parseAllocation } from '../../api/sandbox.js';
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
import { SandboxRun, leanLife } from './sandbox-run.js';

/** Runs from before it took a delete that came ahead of the Fast record as a delete. */
const DELETE_BEFORE_RECORD = 'sandbox-delete-before-record';
/** Runs from before it deleted the Fast record written while the create's delete was on its way. */
const DELETE_AFTER_RECORD = 'sandbox-delete-after-record';
/** Re-read the record this often without any hint (a backstop; hints normally arrive first). */
const RESYNC_MS = 5 * 60_000;

export async function sandboxWorkflow(input: SandboxWorkflowInput): Promise<string> {
  const { namespace, name } = input;
  const run = new SandboxRun(input);
  setHandler(sandboxStateQuery, () => run.state);
  setHandler(sandboxChangedSignal, (change) => run.hint(change));
  setHandler(agentReportedSignal, () => run.hint());
  setHandler(createSandboxUpdate, (call) => run.create(call), { validator: (call) => run.validateCreate(call) });

  // ---- the run: wait for a create or a record, then follow it until it is deleted ----
  await condition(() => run.creation !== undefined || run.needsReconcile);
  for (;;) {
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
      return run.finish(`not created (${creation.answer.outcome.code}): ${creation.answer.outcome.message}`);
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
      return run.finish(`deleted before it was recorded; removed ${where}`);
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
      if (refused) return run.finish(refused);
    }

    // A write of this pass answered with the record as it is now (a lean run): no read after it.
    const known = run.takeKnownRecord();
    run.needsReconcile = false;
    run.recoveryEndsAtMs = undefined;
    const read = known
      ? { status: 'ok' as const, sandbox: known }
      : await sandboxCalls.readSandbox({ namespace, name });
    const sb = read.status === 'ok' ? read.sandbox : undefined;
    const uid = sb?.metadata?.uid;
    run.recordTenant = sb?.metadata?.labels?.[TENANT_LABEL] ?? run.recordTenant;
    if (!sb && run.creation?.call.mode === 'fast' && run.placed && !run.recorded) continue; // a create landed meanwhile: record it
    if (!sb || (run.state.uid && uid !== run.state.uid)) {
      // Our record is gone without passing through our finalizer (force-removed), or was never ours.
      if (run.placed) await run.removeFromAgent(run.placed);
      if (sb) {
        run.reportPhase('done', `Sandbox ${namespace}/${name} was replaced; following the new one`);
        run.index();
        await condition(allHandlersFinished);
        return continueAsNew<typeof sandboxWorkflow>({ namespace, name, previousUid: run.state.uid });
      }
      run.reportPhase('done', `Sandbox ${namespace}/${name} is gone`);
      return run.finish(`Sandbox ${namespace}/${name} is gone`);
    }
    run.state.uid ??= uid;
    run.indexUid();
    const ref = { namespace, name, uid: run.state.uid! };

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
      continue; // read again: the deletion below removes the sandbox and the finalizer
    }
    if (sb.metadata?.deletionTimestamp) {
      await run.deleteSandbox(sb, ref);
      return run.finish(`Sandbox ${namespace}/${name} deleted`);
    }
    if (!(sb.metadata?.finalizers ?? []).includes(SANDBOX_FINALIZER)) {
      if ((await sandboxCalls.setSandboxFinalizer({ ...ref, present: true })).status === 'gone') continue;
    }

    // Hand-off: the allocation annotation → status, then the annotation goes.
    const alloc = parseAllocation(sb.metadata?.annotations);
    if (alloc instanceof Error) {
      run.reportPhase('scheduling', `removing a malformed allocation annotation (${alloc.message})`);
      if ((await sandboxCalls.removeAllocationAnnotation(ref)).status === 'gone') continue;
    } else if (alloc) {
      if (!sb.status?.assignedPod) {
        run.placed ??= await run.adoptPlacement(sb, alloc);
        const status = handOffStatus(alloc, run.placed);
        if ((await sandboxCalls.patchSandboxStatus({ ...ref, status })).status === 'gone') continue;
        run.state.phase = 'Bound';
      }
      const lean = leanLife();
      const removed = await sandboxCalls.removeAllocationAnnotation({
        ...ref,
        ...(lean ? { returnRecord: true } : {}),
      });
      if (removed.status === 'gone') continue;
      run.knownRecord = removed.record;
      continue; // read again (a lean run: the patch's answer): status and annotation as they are now
    }

    // Expiry and reset act on whatever the sandbox is doing now: placed, waiting for room, failed.
    const lifecycle = lifecycleStep(sb, Date.now());
    if (lifecycle) {
      await run.applyLifecycle(sb, ref, lifecycle);
      continue;
    }

    if (!run.placed && !sb.status?.assignedPod && !isTerminal(sb)) {
      // Created with kubectl (or its annotation was malformed): placed by this run.
      const scheduled = await run.scheduleRecord(sb, ref);
      if (scheduled === 'gone') continue;
      if (scheduled) run.placed = scheduled;
      continue;
    }
    run.placed ??= await run.adoptPlacement(sb, undefined);
    if (run.placed || PLACED_PHASES.has(sb.status?.phase)) await run.followAgent(sb, ref, run.placed);
    run.reportPhase(
      'live',
      `${run.state.phase ?? sb.status?.phase ?? 'Pending'} on agent ${run.placed?.placement.pod ?? sb.status?.assignedPod ?? '-'}`,
    );

    // Also the durable timer of the expiry and of a lost agent's recovery timeout: a hint (a spec
    // change, the agent back) ends it early and the next pass arms it anew.
    run.index();
    await condition(() => run.needsReconcile, waitForHintsMs(sb, Date.now(), RESYNC_MS, run.recoveryEndsAtMs));
    if (workflowInfo().continueAsNewSuggested && !run.needsReconcile) {
      await condition(allHandlersFinished);
      return continueAsNew<typeof sandboxWorkflow>({
        namespace,
        name,
        previousUid: input.previousUid,
        created: run.answeredCreate(),
      });
    }
  }
}
