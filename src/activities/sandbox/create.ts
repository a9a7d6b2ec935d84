/**
 * The synchronous part of a create, while the caller waits: each local activity costs the
 * answer one round trip between the workflow and the activity (3–6 ms on the bench machine, more
 * than the allocation itself), so the steps that must run back to back share one:
 *
 *   Fast:   placeOnAgent    = allocate → agent create
 *   Strong: placeWithRecord = allocate → write the Sandbox with the allocation → agent create
 *
 * Strong keeps its order — the record is written before the agent is asked — inside the one
 * activity; a crash between the two (fault point `sandbox-recorded`) is retried from the top, and
 * the retry finds the record it wrote and the agent that may already hold the sandbox.
 *
 * Each is as idempotent as its parts: the allocation is an in-memory reservation keyed by the
 * create (a retry finds the one it made, and a crash loses it with the process that held it), the
 * agent create is idempotent by sandbox ID and the record by its create timestamp. So a retry or
 * a crash between the parts (fault point `sandbox-allocated` after the allocation) repeats
 * nothing twice.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { AgentSandboxSpec } from '../../agent/api.js';
import type { SandboxAllocation } from '../../api/sandbox.js';
import type { Placement } from '../../domain/allocation.js';
import { failedWith, ok, type Outcome } from '../../domain/results.js';
import { refusal, type RecordInput, type Refusal } from '../../domain/sandbox.js';
import { faultPoint } from '../fault-points.js';
import type { AgentCreateRefusal, PlaceRequest, SandboxAgentActivities } from './agents.js';
import type { SandboxRecordActivities } from './records.js';

/** A refusal of the agent create, with the agent that refused (the workflow tries elsewhere). */
export type PlacementRefusal = (Refusal & { retryElsewhere?: false }) | (AgentCreateRefusal & { agentId: string });

export interface StrongRecordRequest extends PlaceRequest {
  /** The sandbox as the agent runs it; its ID and claim UID become the record's UID. */
  spec: AgentSandboxSpec;
  /** The record to write; its allocation comes from the placement made here. */
  record: Omit<RecordInput, 'allocation'> & { allocatedAt: string };
  /** Set when the record exists and the sandbox moves to another agent after a refusal. */
  recordedUid?: string;
}

/**
 * An agent create that threw — unreachable, timed out, 5xx, or our token refused (review M2,
 * m6) — as a refusal naming the agent: the workflow tries another agent (not after a refused
 * token: the pool's agents share it), and a Strong record is moved or rolled back instead of
 * left behind with nobody following it. A copy the agent made after all (a timeout after it
 * accepted) is on an agent no record names: an orphan the janitor removes.
 */
function didNotAnswer(err: unknown, placement: Placement): AgentCreateRefusal & { agentId: string } {
  const unauthorized = err instanceof ApplicationFailure && err.type === 'AgentUnauthorized';
  return {
    ...refusal('Unavailable', `agent ${placement.pod} did not create it: ${(err as Error).message}`),
    retryElsewhere: !unauthorized,
    agentId: placement.agentId,
  };
}

export function createSandboxCreateActivities(
  agentSteps: Pick<SandboxAgentActivities, 'allocateSandbox' | 'createOnAgent' | 'releaseSandbox'>,
  recordSteps: Pick<SandboxRecordActivities, 'createSandboxRecord' | 'setAllocationAnnotation'>,
  /** The agent that reports (or was given) a sandbox ID, from the placement table. */
  holderOf: (sandboxId: string) => Placement | undefined,
) {
  return {
    /** Fast: picks the agent (or finds the one already holding the create) and creates the sandbox there. */
    async placeOnAgent(
      req: PlaceRequest & { spec: AgentSandboxSpec },
    ): Promise<Outcome<{ placement: Placement; createdAt: number }, PlacementRefusal>> {
      const { spec, ...place } = req;
      const alloc = await agentSteps.allocateSandbox(place);
      if (alloc.status !== 'ok') return alloc;
      faultPoint('sandbox-allocated');
      let created;
      try {
        created = await agentSteps.createOnAgent({ placement: alloc.placement, reservation: req.sandboxId, spec });
      } catch (err) {
        await agentSteps.releaseSandbox({ agentId: alloc.placement.agentId, sandboxId: req.sandboxId });
        return failedWith(didNotAnswer(err, alloc.placement));
      }
      if (created.status !== 'ok') return failedWith({ ...created.outcome, agentId: alloc.placement.agentId });
      return ok({ placement: alloc.placement, createdAt: created.createdAt });
    },

    /**
     * Strong: picks the agent, writes the Sandbox naming it (phase Pending) — or, after a refusal,
     * moves the existing record's allocation to the new agent — and then creates the sandbox
     * there, under the record's UID. A record the apiserver refuses gives the slot back; an agent
     * refusal comes back with the UID, so the workflow moves the record or deletes it.
     */
    async placeWithRecord(
      req: StrongRecordRequest,
    ): Promise<Outcome<{ placement: Placement; uid: string }, PlacementRefusal & { uid?: string }>> {
      const { record, recordedUid, ...place } = req;
      const alloc = await agentSteps.allocateSandbox(place);
      if (alloc.status !== 'ok') return alloc;
      const allocated = alloc.placement;
      let placement = allocated;
      faultPoint('sandbox-allocated');
      const target = { namespace: record.namespace, name: record.name };
      const allocationOn = (p: Placement): SandboxAllocation => ({
        assignedPod: p.pod,
        assignedNode: p.node,
        allocatedAt: record.allocatedAt,
      });
      /** The slot allocated here goes back (once), whichever agent the sandbox ends up on. */
      let reserved = true;
      const giveBack = async () => {
        if (reserved) await agentSteps.releaseSandbox({ agentId: allocated.agentId, sandboxId: req.sandboxId });
        reserved = false;
      };

      let uid = recordedUid;
      let recordedPod: string | undefined;
      if (!uid) {
        const { allocatedAt: _, ...input } = record;
        const rec = await recordSteps.createSandboxRecord({ ...input, allocation: allocationOn(placement) });
        if (rec.status !== 'ok') {
          await giveBack();
          return rec;
        }
        uid = rec.uid;
        recordedPod = rec.allocation.assignedPod;
      }
      // A retry after a crash may find the sandbox already created under the record's UID (the
      // reservation made before the crash died with its process): that agent keeps it.
      const holder = holderOf(uid);
      if (holder && holder.agentId !== placement.agentId) {
        await giveBack();
        placement = holder;
      }
      // The record names the agent the sandbox goes to: moved after a refusal, or when a retry
      // placed it elsewhere than the attempt that wrote the record.
      if (recordedPod !== placement.pod) {
        const moved = await recordSteps.setAllocationAnnotation({
          ...target,
          uid,
          allocation: allocationOn(placement),
        });
        if (moved.status !== 'ok') {
          await giveBack();
          return failedWith(refusal('Unavailable', `Sandbox ${record.namespace}/${record.name} vanished`));
        }
      }
      faultPoint('sandbox-recorded');
      let created;
      try {
        created = await agentSteps.createOnAgent({
          placement,
          reservation: req.sandboxId,
          spec: { ...req.spec, sandboxId: uid, claimUid: uid },
        });
      } catch (err) {
        // The record exists: with the UID, the workflow moves it to another agent or rolls it back.
        await giveBack();
        return failedWith({ ...didNotAnswer(err, placement), uid });
      }
      if (created.status !== 'ok') return failedWith({ ...created.outcome, agentId: placement.agentId, uid });
      return ok({ placement, uid });
    },
  };
}

export type SandboxCreateActivities = ReturnType<typeof createSandboxCreateActivities>;
