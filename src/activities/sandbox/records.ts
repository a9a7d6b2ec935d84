/**
 * Activities on Sandbox objects, the record of every sandbox: write the fast path's record, read
 * it fresh, move the allocation to status, manage the cleanup finalizer. Every write is pinned to
 * the object's UID, so a same-name successor is never touched by its predecessor's workflow.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import {
  ALLOCATION_ANNOTATION,
  CREATE_TIMESTAMP_ANNOTATION,
  SANDBOX_FINALIZER,
  SandboxKind,
  parseAllocation,
  type Sandbox,
  type SandboxAllocation,
} from '../../api/sandbox.js';
import { GONE, failedWith, ok, type Found, type Outcome } from '../../domain/results.js';
import { slotKey } from '../../domain/sandbox-quota.js';
import {
  TENANT_LABEL,
  refusal,
  sandboxRecord,
  type RecordInput,
  type Refusal,
  type SandboxStatusPatch,
} from '../../domain/sandbox.js';
import { sandboxStatusEvent } from '../../domain/events.js';
import { envSourceOf } from '../../domain/sandbox-env.js';
import { apiMessage, isAlreadyExists, statusCode, type KubeClient } from '../../kube/client.js';
import type { EventRecorder } from '../../kube/events.js';
import { getObject, listAll, patchStatusUnlessGone } from '../kubernetes/calls.js';
import type { EnvSealer } from '../../fastpath/sealed-env.js';
import { kubeFailure } from '../kubernetes/errors.js';

export interface SandboxRef {
  namespace: string;
  name: string;
}

const ref = (r: SandboxRef) => ({
  apiVersion: SandboxKind.apiVersion,
  kind: SandboxKind.kind,
  plural: SandboxKind.plural,
  namespace: r.namespace,
  name: r.name,
});

export function createSandboxRecordActivities(kube: KubeClient, sealer: EnvSealer, events: EventRecorder) {
  /** Merge patch of metadata pinned to the UID; gone when the object is gone or replaced. */
  async function patchMetadata(
    r: SandboxRef,
    uid: string,
    metadata: Record<string, unknown>,
    what: string,
  ): Promise<Found<{ patched: Sandbox }>> {
    try {
      return ok({ patched: await kube.mergePatch<Sandbox>(ref(r), { metadata }, { uid }) });
    } catch (err) {
      const code = statusCode(err);
      if (code === 404 || (code === 409 && !String(apiMessage(err)).includes('the object has been modified')))
        return GONE;
      throw kubeFailure(err, `${what} on Sandbox ${r.namespace}/${r.name}`);
    }
  }

  /** Adds (kubectl-created sandboxes) or removes the cleanup finalizer, keeping everyone else's. */
  async function setSandboxFinalizer(req: SandboxRef & { uid: string; present: boolean }): Promise<Found> {
    const sb = await getObject<Sandbox>(kube, ref(req));
    if (!sb || sb.metadata?.uid !== req.uid) return GONE;
    const current = sb.metadata.finalizers ?? [];
    const has = current.includes(SANDBOX_FINALIZER);
    if (has === req.present) return ok();
    const finalizers = req.present ? [...current, SANDBOX_FINALIZER] : current.filter((f) => f !== SANDBOX_FINALIZER);
    // resourceVersion as precondition: another controller's finalizer change in between is a retried 409.
    const r = await patchMetadata(
      req,
      req.uid,
      { finalizers, resourceVersion: sb.metadata.resourceVersion },
      req.present ? 'add finalizer' : 'remove finalizer',
    );
    return r.status === 'ok' ? ok() : r;
  }

  /**
   * The record as a workflow may hold it (its history keeps it): env values sealed; an env's
   * valueFrom becomes a sealed reference, read by createOnAgent (./env.ts) in its namespace.
   */
  function sealedRecord(r: SandboxRef, sb: Sandbox): Sandbox {
    const envs = sb.spec?.envs?.map((e) => {
      const source = e.valueFrom && envSourceOf(r.namespace, e.valueFrom);
      if (source) return { name: e.name, value: sealer.sealSource(e.name, source) };
      return e.value === undefined ? e : { ...e, value: sealer.seal(e.name, e.value) };
    });
    return envs ? { ...sb, spec: { ...sb.spec, envs } } : sb;
  }

  return {
    /** `namespace/name` of every Sandbox labelled with the tenant (deleting ones too: they still hold their slot). */
    async listTenantSandboxes(req: { tenant: string }): Promise<string[]> {
      const all = await listAll<Sandbox>(kube, SandboxKind.apiVersion, SandboxKind.kind, {
        labelSelector: `${TENANT_LABEL}=${req.tenant}`,
      });
      return all.map((sb) => slotKey(sb.metadata!.namespace!, sb.metadata!.name!));
    },

    /**
     * Writes the fast path's record. An existing record with the same create timestamp is this
     * create's own (a retry after a crash): its UID and recorded allocation are returned. Any
     * other existing Sandbox of that name is someone else's: AlreadyExists. A record the
     * apiserver refuses (admission, validation) is a refusal, not retried.
     */
    async createSandboxRecord({
      returnRecord,
      ...input
    }: RecordInput & { returnRecord?: boolean }): Promise<
      Outcome<{ uid: string; allocation: SandboxAllocation; record?: Sandbox }, Refusal>
    > {
      // The record holds the values themselves (as the original's); history only sealed ones.
      const body = sandboxRecord({ ...input, spec: { ...input.spec, envs: sealer.openEnvs(input.spec.envs) } });
      // An attempt its run gave up on (its timeout passed) creates nothing: a later attempt may
      // have, and the run may have deleted that record since — this one would bring it back.
      if (attemptAbandoned()) throw new CancelledFailure('createSandboxRecord: this attempt timed out; not creating');
      try {
        const created = await kube.create(body);
        // The apiserver's answer is the record as it is now: the workflow needs no read after it.
        return ok({
          uid: created.metadata!.uid!,
          allocation: input.allocation,
          ...(returnRecord ? { record: sealedRecord(input, created) } : {}),
        });
      } catch (err) {
        const code = statusCode(err);
        if (isAlreadyExists(err)) {
          const existing = await getObject<Sandbox>(kube, ref(input));
          const mine =
            existing?.metadata?.annotations?.[CREATE_TIMESTAMP_ANNOTATION] === input.createTimestampNanos &&
            !existing.metadata.deletionTimestamp;
          if (existing && mine) {
            const recorded = parseAllocation(existing.metadata?.annotations);
            const allocation =
              recorded && !(recorded instanceof Error)
                ? recorded
                : existing.status?.assignedPod
                  ? {
                      ...input.allocation,
                      assignedPod: existing.status.assignedPod,
                      assignedNode: existing.status.nodeName ?? '',
                    }
                  : input.allocation;
            return ok({
              uid: existing.metadata!.uid!,
              allocation,
              ...(returnRecord ? { record: sealedRecord(input, existing) } : {}),
            });
          }
          if (!existing)
            throw ApplicationFailure.retryable(`Sandbox ${input.namespace}/${input.name} vanished after AlreadyExists`);
          const deleting = existing.metadata?.deletionTimestamp ? ' and is being deleted' : '';
          return failedWith(
            refusal(
              'AlreadyExists',
              `a Sandbox named ${input.name} already exists in namespace ${input.namespace}${deleting}`,
            ),
          );
        }
        if (code === 404) return failedWith(refusal('NotFound', `namespace ${input.namespace} not found`));
        if (code === 400 || code === 403 || code === 422)
          return failedWith(
            refusal('FailedPrecondition', `the apiserver refused the Sandbox record: ${apiMessage(err)}`),
          );
        throw kubeFailure(err, `create Sandbox ${input.namespace}/${input.name}`);
      }
    },

    /** A fresh read of the Sandbox, its env values sealed (the result is recorded in history). */
    async readSandbox(r: SandboxRef): Promise<Found<{ sandbox: Sandbox }>> {
      const sb = await getObject<Sandbox>(kube, ref(r));
      if (!sb) return GONE;
      return ok({ sandbox: sealedRecord(r, sb) });
    },

    /**
     * A merge patch of status: fields set to null are removed (an assignment cleared). The
     * workflow writes status only when it changed, so a phase written is a transition (its Event).
     */
    async patchSandboxStatus(req: SandboxRef & { uid: string; status: SandboxStatusPatch }): Promise<Found> {
      const written = await patchStatusUnlessGone(kube, ref(req), req.status as Record<string, unknown>, req.uid);
      if (written.status === 'ok') await events.record({ ...ref(req), uid: req.uid }, sandboxStatusEvent(req.status));
      return written;
    },

    /**
     * Removes the allocation annotation once it is in status (the seed's hand-off; the original
     * never did); with `returnRecord`, the record as the patch left it (no read after it).
     */
    async removeAllocationAnnotation(
      req: SandboxRef & { uid: string; returnRecord?: boolean },
    ): Promise<Found<{ record?: Sandbox }>> {
      const r = await patchMetadata(
        req,
        req.uid,
        { annotations: { [ALLOCATION_ANNOTATION]: null } },
        'remove allocation annotation',
      );
      if (r.status !== 'ok') return r;
      return req.returnRecord ? ok({ record: sealedRecord(req, r.patched) }) : ok();
    },

    /** Writes a new allocation annotation (Strong: the agent first chosen refused; placed elsewhere). */
    async setAllocationAnnotation(req: SandboxRef & { uid: string; allocation: SandboxAllocation }): Promise<Found> {
      const r = await patchMetadata(
        req,
        req.uid,
        { annotations: { [ALLOCATION_ANNOTATION]: JSON.stringify(req.allocation) } },
        'set allocation annotation',
      );
      // Only the outcome: the patched record's env values are not sealed.
      return r.status === 'ok' ? ok() : r;
    },

    setSandboxFinalizer,

    /**
     * Deletes the record, its finalizer kept: the workflow then removes the sandbox from its agent
     * and the finalizer, as for any deletion (a Fast create deleted while its record was written).
     */
    async requestSandboxDeletion(req: SandboxRef & { uid: string }): Promise<Found> {
      try {
        return (await kube.delete(ref(req), { uid: req.uid })) ? ok() : GONE;
      } catch (err) {
        throw kubeFailure(err, `delete Sandbox ${req.namespace}/${req.name}`);
      }
    },

    /** Strong mode's rollback: the record of a sandbox no agent took goes away entirely. */
    async deleteSandboxRecord(req: SandboxRef & { uid: string }): Promise<void> {
      const r = await setSandboxFinalizer({ ...req, present: false });
      if (r.status === 'gone') return;
      try {
        await kube.delete(ref(req), { uid: req.uid });
      } catch (err) {
        throw kubeFailure(err, `delete Sandbox ${req.namespace}/${req.name}`);
      }
    },
  };
}

export type SandboxRecordActivities = ReturnType<typeof createSandboxRecordActivities>;

/** Whether this activity attempt was cancelled (its timeout passed); false outside an activity (unit tests). */
function attemptAbandoned(): boolean {
  try {
    return Context.current().cancellationSignal.aborted;
  } catch {
    return false;
  }
}
