/**
 * Steps of a sandbox's life after the answer that its workflow only ever runs back to back, each
 * as one local activity: every local activity's result is an activation of the workflow (a round
 * trip between the Temporal core and the workflow's VM, a few calls into it), and these were the
 * most frequent (issue 35). What the workflow decides stays in the workflow: it passes the status
 * to write, and reads what happened from the result.
 *
 *   recordAndHandOff = write the Fast record (allocation annotation) → status from it → annotation removed
 *   handOffRecord    = status from the annotation → annotation removed (Strong, kubectl-created)
 *   removeSandbox    = Terminating → removed from its agent (a short wait) → finalizer removed
 *
 * Each part is idempotent and each step skips what a previous attempt already did (the record
 * read back carries it), so a retry after a crash between parts repeats no write and makes no
 * duplicate.
 */
import { ALLOCATION_ANNOTATION, type Sandbox } from '../../api/sandbox.js';
import { GONE, ok, type Found, type Outcome } from '../../domain/results.js';
import type { RecordInput, Refusal, SandboxStatusPatch } from '../../domain/sandbox.js';
import { faultPoint } from '../fault-points.js';
import type { AgentRef, SandboxAgentActivities } from './agents.js';
import type { SandboxRecordActivities } from './records.js';

type RecordRef = { namespace: string; name: string; uid: string };

export function createSandboxLifeStepActivities(
  agentSteps: Pick<SandboxAgentActivities, 'removeFromAgent'>,
  recordSteps: Pick<
    SandboxRecordActivities,
    'createSandboxRecord' | 'patchSandboxStatus' | 'removeAllocationAnnotation' | 'setSandboxFinalizer'
  >,
) {
  /**
   * The hand-off of a record that carries the allocation annotation: `status` written (unless
   * `statusWritten`: the record has its assignment already), then the annotation removed. The
   * record as the removal left it; gone when it is gone or replaced (the workflow reads again).
   */
  async function handOffRecord(
    req: RecordRef & { status: SandboxStatusPatch; statusWritten?: boolean },
  ): Promise<Found<{ record?: Sandbox }>> {
    if (!req.statusWritten) {
      const written = await recordSteps.patchSandboxStatus({ ...req, status: req.status });
      if (written.status !== 'ok') return GONE;
      faultPoint('sandbox-handed-off');
    }
    return await recordSteps.removeAllocationAnnotation({ ...req, returnRecord: true });
  }

  return {
    handOffRecord,

    /**
     * The Fast record, then its hand-off. A retry finds the record it wrote (createSandboxRecord
     * knows it by its create timestamp) and carries on from what that record shows.
     */
    async recordAndHandOff(
      req: RecordInput & { status: SandboxStatusPatch },
    ): Promise<Outcome<{ uid: string; handedOff: boolean; record?: Sandbox }, Refusal>> {
      const { status, ...input } = req;
      const rec = await recordSteps.createSandboxRecord({ ...input, returnRecord: true });
      if (rec.status !== 'ok') return rec;
      faultPoint('sandbox-fast-recorded');
      const ref = { namespace: input.namespace, name: input.name, uid: rec.uid };
      // What an earlier attempt did already shows on the record it finds.
      const found = rec.record;
      if (found?.status?.assignedPod && found.metadata?.annotations?.[ALLOCATION_ANNOTATION] === undefined)
        return ok({ uid: rec.uid, handedOff: true, record: found });
      const handed = await handOffRecord({ ...ref, status, statusWritten: !!found?.status?.assignedPod });
      return handed.status === 'ok'
        ? ok({ uid: rec.uid, handedOff: true, ...(handed.record ? { record: handed.record } : {}) })
        : ok({ uid: rec.uid, handedOff: false });
    },

    /**
     * A deleted record's end when its agent forgets the sandbox within `withinMs`: `removed` with
     * the finalizer gone; `pending` when the agent still holds it (the workflow waits for it with
     * a heartbeating activity, then removes the finalizer itself).
     */
    async removeSandbox(
      req: RecordRef & {
        agent: AgentRef & { sandboxId: string; agentId: string; withinMs: number };
        terminating: boolean;
      },
    ): Promise<'removed' | 'pending'> {
      const ref = { namespace: req.namespace, name: req.name, uid: req.uid };
      if (req.terminating) await recordSteps.patchSandboxStatus({ ...ref, status: { phase: 'Terminating' } });
      if ((await agentSteps.removeFromAgent(req.agent)) === 'pending') return 'pending';
      faultPoint('sandbox-removed-from-agent');
      await recordSteps.setSandboxFinalizer({ ...ref, present: false });
      return 'removed';
    },
  };
}

export type SandboxLifeStepActivities = ReturnType<typeof createSandboxLifeStepActivities>;
