/**
 * The five operations of `fastpath.v1.FastPathService`, shared by the gRPC server and the
 * HTTP/JSON face: they take and return the proto's messages as plain objects (camelCase fields)
 * and fail with a FastPathError whose code maps to one gRPC status and one HTTP status.
 *
 * Create starts (or reaches) the sandbox's workflow with update-with-start and answers with the
 * update's result: the mode's synchronous part done, the rest carried on by the workflow. Get,
 * List, Update and Delete read and write the Sandbox records, as the original does, restricted to
 * the caller's tenant (a Sandbox of another tenant is NOT_FOUND, never revealed).
 *
 * A tenant with sandbox settings (`tenants/{id}/sandbox`) is held to them before anything is
 * created: a namespace or pool it may not use is PERMISSION_DENIED, and with `maxSandboxes` its
 * quota workflow (one per tenant, shared by every replica) grants the name a slot or refuses it
 * RESOURCE_EXHAUSTED with the count.
 */
import {
  WithStartWorkflowOperation,
  WorkflowUpdateFailedError,
  WorkflowNotFoundError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  isGrpcServiceError,
  type Client,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { SandboxKind, type Sandbox } from '../api/sandbox.js';
import { quotaWorkflowId, sandboxPlacementRefusal, slotKey } from '../domain/sandbox-quota.js';
import { poolMaxZero } from '../domain/sandbox-pool.js';
import {
  NO_READY_AGENT,
  SCALE_UP_RETRY_AFTER_SECONDS,
  TENANT_LABEL,
  deleteReachesCreation,
  deletionHintRequestId,
  invalidCreate,
  sandboxWorkflowId,
  type ConsistencyMode,
  type RefusalCode,
  type SandboxCreateSpec,
} from '../domain/sandbox.js';
import { apiMessage, isNotFound, statusCode, type KubeClient } from '../kube/client.js';
import type { Logger } from '../log.js';
import type { HoldsTenantSnapshot } from '../tenancy/middleware.js';
import { K8sKind, K8sName, K8sNamespace, OperationPhase, Tenant } from '../temporal/search-attributes.js';
import {
  acquireSlotUpdate,
  createSandboxUpdate,
  sandboxChangedSignal,
  sandboxQuotaWorkflow,
  sandboxWorkflow,
  type PoolDemand,
} from '../workflows/sandbox/contract.js';
import type { CreateRequest__Output } from './gen/fastpath/v1/CreateRequest.js';
import type { CreateResponse__Output } from './gen/fastpath/v1/CreateResponse.js';
import type { DeleteResponse__Output } from './gen/fastpath/v1/DeleteResponse.js';
import type { GetRequest__Output } from './gen/fastpath/v1/GetRequest.js';
import type { ListRequest__Output } from './gen/fastpath/v1/ListRequest.js';
import type { ListResponse__Output } from './gen/fastpath/v1/ListResponse.js';
import type { SandboxInfo__Output } from './gen/fastpath/v1/SandboxInfo.js';
import type { UpdateRequest__Output } from './gen/fastpath/v1/UpdateRequest.js';
import type { UpdateResponse__Output } from './gen/fastpath/v1/UpdateResponse.js';
import type { FastPathMetrics } from './metrics.js';
import { runningSandbox } from './sandbox-runs.js';
import { signalOnce } from '../temporal/signal-once.js';
import type { SandboxRegistry } from './registry.js';
import type { EnvSealer } from './sealed-env.js';

/** How long DeleteSandbox waits for the watcher's hint to reach the run before telling it itself. */

export class FastPathError extends Error {
  constructor(
    readonly code: RefusalCode | 'Unauthenticated' | 'PermissionDenied',
    message: string,
    /** When to try again (gRPC RetryInfo and `retry-after`, HTTP `Retry-After`), for a refusal that will pass. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

// ---- the proto's messages as plain objects: proto-loader's shapes (enums as names, int64 as
// numbers), generated from fastpath.proto into ./gen by `npm run protos`. A request has every
// field from the gRPC face, only the fields sent from the HTTP face's JSON check.
export type CreateRequest = Partial<CreateRequest__Output>;
export type CreateResponse = CreateResponse__Output;
export type NameRequest = Partial<GetRequest__Output>;
/** `update` names which member of the oneof is set (proto-loader's `oneofs: true`). */
export type UpdateRequest = Partial<UpdateRequest__Output>;
export type UpdateResponse = Omit<UpdateResponse__Output, 'sandbox'> & { sandbox?: SandboxInfo };
export type ListRequest = Partial<ListRequest__Output>;
export type ListResponse = ListResponse__Output;
export type DeleteResponse = DeleteResponse__Output;
export type SandboxInfo = SandboxInfo__Output;

export interface FastPathServiceOptions {
  client: Client;
  kube: KubeClient;
  registry: SandboxRegistry;
  taskQueue: string;
  /** `--fastpath-consistency-mode`: used unless the request says STRONG (FAST = 0 is proto3's default). */
  defaultMode: ConsistencyMode;
  metrics: FastPathMetrics;
  log: Logger;
  /** Seals sandboxes' env values before they reach Temporal. */
  sealer: EnvSealer;
  /** The tenant configuration, for each tenant's sandbox settings; without it no tenant is limited. */
  tenants?: HoldsTenantSnapshot;
  /** `--fastpath-scale-up-timeout`: how long a Strong create waits for a pool scaling up from zero. */
  scaleUpWaitMs?: number;
  /** Tells the pool's workflow a create found no Ready agent (the poolDemand hint). */
  hintPoolDemand?: (namespace: string, pool: string, demand: PoolDemand) => void;
}

const sandboxRef = (namespace: string, name: string) => ({
  apiVersion: SandboxKind.apiVersion,
  kind: SandboxKind.kind,
  namespace,
  name,
});

/** How long a create waits for a same-name predecessor that is being deleted. */
const PREDECESSOR_WAIT_MS = 30_000;

/** 9999-12-31T23:59:59Z: the last time an RFC 3339 timestamp (the record's spec.expireTime) can hold. */
const MAX_EXPIRE_TIME_SECONDS = 253_402_300_799;

export class FastPathService {
  constructor(private readonly opts: FastPathServiceOptions) {}

  async create(req: CreateRequest, tenant: string): Promise<CreateResponse> {
    const started = process.hrtime.bigint();
    const mode: ConsistencyMode = req.consistencyMode === 'STRONG' ? 'strong' : this.opts.defaultMode;
    let success = false;
    try {
      const res = await this.createOnce(req, tenant, mode);
      success = true;
      return res;
    } catch (err) {
      const code = err instanceof FastPathError ? err.code : 'Internal';
      this.opts.metrics.createRejections.inc({ mode, code });
      throw err;
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      this.opts.metrics.createDuration.observe({ mode, success: String(success) }, seconds);
    }
  }

  private async createOnce(req: CreateRequest, tenant: string, mode: ConsistencyMode): Promise<CreateResponse> {
    const receivedAtNanos = (BigInt(Date.now()) * 1_000_000n + (process.hrtime.bigint() % 1_000_000n)).toString();
    const namespace = req.namespace || 'default';
    const name = req.name || `sb-${receivedAtNanos}`;
    const spec: SandboxCreateSpec = {
      image: req.image ?? '',
      poolRef: req.poolRef ?? '',
      exposedPorts: req.exposedPorts ?? [],
      command: req.command ?? [],
      args: req.args ?? [],
      envs: req.envs ?? {},
      workingDir: req.workingDir ?? '',
    };
    const invalid = invalidCreate(spec, namespace, name);
    if (invalid) throw new FastPathError('InvalidArgument', invalid);
    const limits = this.opts.tenants?.snapshot.getSandboxConfig?.(Number(tenant));
    const denied = sandboxPlacementRefusal(tenant, limits, namespace, spec.poolRef);
    if (denied) throw new FastPathError('PermissionDenied', denied);
    // Refused here, before any workflow exists: nothing is half-created by a bad pool name.
    if (!this.opts.registry.knowsPool(namespace, spec.poolRef))
      throw new FastPathError('NotFound', `SandboxPool ${spec.poolRef} not found in namespace ${namespace}`);
    if (this.opts.registry.poolTerminating(namespace, spec.poolRef))
      throw new FastPathError(
        'FailedPrecondition',
        `SandboxPool ${spec.poolRef} in namespace ${namespace} is being deleted: it takes no new sandboxes`,
      );
    if (this.opts.registry.poolMax(namespace, spec.poolRef) === 0)
      throw new FastPathError('FailedPrecondition', poolMaxZero(namespace, spec.poolRef));
    // No Ready agent (poolMin 0, or every agent gone): demand the pool's workflow scales up for,
    // told before the create so the agent starts as early as it can.
    let demandSent = false;
    const hintDemand = () => {
      if (demandSent) return;
      demandSent = true;
      this.opts.hintPoolDemand?.(namespace, spec.poolRef, { sandbox: name, mode });
    };
    if (!this.opts.registry.hasUsableAgent(namespace, spec.poolRef)) hintDemand();

    const workflowId = sandboxWorkflowId(namespace, name);
    const deadline = Date.now() + PREDECESSOR_WAIT_MS;
    for (;;) {
      // Asked again after waiting for a same-name predecessor: the slot it held went with it.
      if (limits?.maxSandboxes !== undefined) await this.acquireSlot(tenant, namespace, name, limits.maxSandboxes);
      const start = new WithStartWorkflowOperation(sandboxWorkflow, {
        workflowId,
        taskQueue: this.opts.taskQueue,
        args: [{ namespace, name }],
        workflowIdConflictPolicy: 'USE_EXISTING',
        typedSearchAttributes: [
          { key: K8sKind, value: SandboxKind.kind },
          { key: K8sNamespace, value: namespace },
          { key: K8sName, value: name },
          { key: Tenant, value: tenant },
          // What the run's first step says it is doing: it need not upsert it.
          { key: OperationPhase, value: 'creating' },
        ],
        staticSummary: `Sandbox ${namespace}/${name} (${mode}, pool ${spec.poolRef}, tenant ${tenant})`,
      });
      try {
        const answer = await this.opts.client.workflow.executeUpdateWithStart(createSandboxUpdate, {
          // Env values enter Temporal (the update is recorded in history) sealed.
          args: [
            {
              spec: { ...spec, envs: this.opts.sealer.sealEnvs(spec.envs) },
              mode,
              tenant,
              receivedAtNanos,
              ...(mode === 'strong' && this.opts.scaleUpWaitMs !== undefined
                ? { scaleUpWaitMs: this.opts.scaleUpWaitMs }
                : {}),
            },
          ],
          startWorkflowOperation: start,
        });
        if (answer.status === 'ok') {
          this.opts.metrics.allocations.inc({ result: 'placed' });
          return {
            sandboxId: answer.sandboxId,
            agentPod: answer.agentPod,
            endpoints: answer.endpoints,
            sandboxName: answer.sandboxName,
          };
        }
        if (answer.outcome.code === 'ResourceExhausted') this.opts.metrics.allocations.inc({ result: 'exhausted' });
        if (answer.outcome.reason === NO_READY_AGENT) {
          // Fast answers at once: the agent is on its way, the retry hint says when to ask again.
          hintDemand();
          throw new FastPathError(
            'Unavailable',
            `${answer.outcome.message}; retry in ${SCALE_UP_RETRY_AFTER_SECONDS}s`,
            SCALE_UP_RETRY_AFTER_SECONDS,
          );
        }
        throw new FastPathError(answer.outcome.code, answer.outcome.message);
      } catch (err) {
        if (err instanceof FastPathError) throw err;
        const type =
          err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure
            ? err.cause.type
            : undefined;
        if (type === 'AlreadyExists')
          throw new FastPathError('AlreadyExists', (err as WorkflowUpdateFailedError).cause!.message);
        if (type === 'Terminating' && Date.now() < deadline) {
          // The name's previous incarnation is finishing its deletion: wait for its run, then create anew.
          await this.waitForRunEnd(workflowId, deadline);
          continue;
        }
        if (type === 'Terminating')
          throw new FastPathError('Unavailable', (err as WorkflowUpdateFailedError).cause!.message);
        if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError)
          // The create goes on in its workflow; the same name and spec again gets its answer.
          throw new FastPathError(
            'Unavailable',
            `the create of ${namespace}/${name} did not answer in time and may still complete; retry with name ${JSON.stringify(name)} to get its answer`,
          );
        if (isGrpcServiceError(err) || (err as Error).name === 'ServiceError')
          throw new FastPathError('Unavailable', `Temporal unavailable: ${(err as Error).message}`);
        throw err;
      }
    }
  }

  /**
   * A slot for the name from the tenant's quota workflow (started by the first create). The same
   * name asked again (a retried create) holds the one slot it has.
   */
  private async acquireSlot(tenant: string, namespace: string, name: string, limit: number): Promise<void> {
    const start = new WithStartWorkflowOperation(sandboxQuotaWorkflow, {
      workflowId: quotaWorkflowId(tenant),
      taskQueue: this.opts.taskQueue,
      args: [{ tenant }],
      workflowIdConflictPolicy: 'USE_EXISTING',
      typedSearchAttributes: [{ key: Tenant, value: tenant }],
      staticSummary: `Sandbox quota of tenant ${tenant}`,
    });
    let answer;
    try {
      answer = await this.opts.client.workflow.executeUpdateWithStart(acquireSlotUpdate, {
        args: [{ slot: slotKey(namespace, name), limit }],
        startWorkflowOperation: start,
      });
    } catch (err) {
      throw new FastPathError(
        'Unavailable',
        `the sandbox quota of tenant ${tenant} could not be checked: ${(err as Error).message}`,
      );
    }
    if (!answer.granted) throw new FastPathError('ResourceExhausted', answer.message);
  }

  private async waitForRunEnd(workflowId: string, deadline: number): Promise<void> {
    const handle = this.opts.client.workflow.getHandle(workflowId);
    await Promise.race([
      handle.result().catch(() => undefined),
      new Promise((r) => setTimeout(r, Math.max(0, deadline - Date.now()))),
    ]);
  }

  /** The caller's Sandbox, or NOT_FOUND (also for another tenant's). */
  async ownSandbox(req: NameRequest, tenant: string): Promise<Sandbox> {
    const namespace = req.namespace || 'default';
    if (!req.sandboxName) throw new FastPathError('InvalidArgument', 'sandbox_name is required');
    let sb: Sandbox | undefined;
    try {
      sb = await this.opts.kube.get<Sandbox>(sandboxRef(namespace, req.sandboxName));
    } catch (err) {
      throw kubeError(err, `get Sandbox ${namespace}/${req.sandboxName}`);
    }
    if (!sb || sb.metadata?.labels?.[TENANT_LABEL] !== tenant)
      throw new FastPathError('NotFound', `Sandbox ${req.sandboxName} not found in namespace ${namespace}`);
    return sb;
  }

  async get(req: NameRequest, tenant: string): Promise<SandboxInfo> {
    try {
      return sandboxInfo(await this.ownSandbox(req, tenant));
    } catch (err) {
      // A Fast sandbox whose record is still being written: its workflow knows it (the original could not tell).
      if (!(err instanceof FastPathError) || err.code !== 'NotFound' || !req.sandboxName) throw err;
      const pending = await this.fromWorkflow(req.namespace || 'default', req.sandboxName, tenant);
      if (!pending) throw err;
      return pending;
    }
  }

  /**
   * Tells a run that is creating the name for this tenant, before its record exists, that the
   * sandbox is deleted; false when there is no such run (the caller answers NOT_FOUND).
   */
  private async creatingFor(namespace: string, name: string, tenant: string): Promise<boolean> {
    const run = await this.runOf(namespace, name, tenant);
    if (!run || !deleteReachesCreation(run.state)) return false;
    // No UID: the creation's own delete (the run deletes its record should it be written meanwhile).
    await run.handle.signal(sandboxChangedSignal, { event: 'Deleting' });
    return true;
  }

  /** The name's running workflow, if this tenant's, with its state (undefined when none or unreachable). */
  private async runOf(namespace: string, name: string, tenant: string) {
    const run = await runningSandbox(this.opts.client, namespace, name).catch(() => undefined);
    return run?.tenant === tenant ? run : undefined;
  }

  private async fromWorkflow(namespace: string, name: string, tenant: string): Promise<SandboxInfo | undefined> {
    const run = await this.runOf(namespace, name, tenant);
    const s = run?.state;
    if (!run || !s?.sandboxId || s.stage !== 'recording') return undefined;
    return {
      sandboxId: s.sandboxId,
      phase: 'Pending',
      agentPod: s.agentPod ?? '',
      endpoints: s.endpoints ?? [],
      createdAt: Math.floor(run.startTime.getTime() / 1000),
      image: '',
      poolRef: '',
      sandboxName: name,
    };
  }

  async list(req: ListRequest, tenant: string): Promise<ListResponse> {
    const namespace = req.namespace || 'default';
    const items: SandboxInfo[] = [];
    try {
      for await (const sb of this.opts.kube.listAll<Sandbox>(SandboxKind.apiVersion, SandboxKind.kind, {
        namespace,
        labelSelector: `${TENANT_LABEL}=${tenant}`,
      }))
        items.push(sandboxInfo(sb));
    } catch (err) {
      throw kubeError(err, `list Sandboxes in ${namespace}`);
    }
    return { items };
  }

  async delete(req: NameRequest, tenant: string): Promise<DeleteResponse> {
    const notFound = (err: unknown) => err instanceof FastPathError && err.code === 'NotFound';
    let sb = await this.ownSandbox(req, tenant).catch((err: unknown) => {
      if (notFound(err) && req.sandboxName) return undefined;
      throw err;
    });
    if (!sb) {
      // A Fast sandbox whose record is not written yet: its run records nothing once told.
      if (await this.creatingFor(req.namespace || 'default', req.sandboxName ?? '', tenant)) return { success: true };
      sb = await this.ownSandbox(req, tenant); // written meanwhile, or NOT_FOUND for good
    }
    try {
      await this.opts.kube.delete(sandboxRef(sb.metadata!.namespace!, sb.metadata!.name!), { uid: sb.metadata!.uid });
    } catch (err) {
      throw kubeError(err, `delete Sandbox ${sb.metadata!.namespace}/${sb.metadata!.name}`);
    }
    // Told here, under the deletion's request ID (the watcher's hint for it is then dropped by
    // Temporal: one hint per run), so a create after this answer meets a run that knows.
    const { namespace, name, uid } = sb.metadata as { namespace: string; name: string; uid: string };
    await signalOnce(
      this.opts.client,
      sandboxWorkflowId(namespace, name),
      sandboxChangedSignal,
      deletionHintRequestId(uid),
      {
        event: 'Deleting',
        uid,
      },
    ).catch((err: unknown) => {
      // Ended meanwhile, or Temporal unreachable: the watcher's hint still reaches a running run.
      if (!(err instanceof WorkflowNotFoundError))
        this.opts.log.warn({ err, namespace, name }, 'Deleting hint not sent');
    });
    return { success: true };
  }

  /** Applies one change (and labels) to the record; a refused change is success=false with the reason, as the original. */
  async update(req: UpdateRequest, tenant: string): Promise<UpdateResponse> {
    let sb: Sandbox;
    try {
      sb = await this.ownSandbox(req, tenant);
    } catch (err) {
      // The original answers an unknown name with success=false, not an error status.
      if (err instanceof FastPathError && err.code === 'NotFound') return { success: false, message: err.message };
      throw err;
    }
    const spec: Record<string, unknown> = {};
    switch (req.update) {
      case 'expireTimeSeconds': {
        const s = Number(req.expireTimeSeconds ?? 0);
        if (!Number.isInteger(s) || s < 0 || s > MAX_EXPIRE_TIME_SECONDS)
          return {
            success: false,
            message: `expire_time_seconds ${req.expireTimeSeconds} is not a Unix time up to 9999-12-31 (0 removes the expiry)`,
          };
        spec.expireTime = s === 0 ? null : new Date(s * 1000).toISOString().replace('.000Z', 'Z');
        break;
      }
      case 'resetRevision':
        if (Number.isNaN(Date.parse(req.resetRevision ?? '')))
          return {
            success: false,
            message: `reset_revision ${JSON.stringify(req.resetRevision)} is not an RFC 3339 time`,
          };
        spec.resetRevision = req.resetRevision;
        break;
      case 'failurePolicy':
        spec.failurePolicy = req.failurePolicy === 'AUTO_RECREATE' ? 'AutoRecreate' : 'Manual';
        break;
      case 'recoveryTimeoutSeconds':
        if (!req.recoveryTimeoutSeconds || req.recoveryTimeoutSeconds < 1)
          return { success: false, message: 'recovery_timeout_seconds must be at least 1' };
        spec.recoveryTimeoutSeconds = req.recoveryTimeoutSeconds;
        break;
    }
    const labels = req.labels ?? {};
    for (const k of Object.keys(labels))
      if (k === TENANT_LABEL || k.startsWith('sandbox.fast.io/'))
        return { success: false, message: `label ${k} is managed by the fast path and cannot be changed` };
    if (Object.keys(spec).length === 0 && Object.keys(labels).length === 0)
      return { success: false, message: 'nothing to update', sandbox: sandboxInfo(sb) };
    try {
      const updated = await this.opts.kube.mergePatch<Sandbox>(
        sandboxRef(sb.metadata!.namespace!, sb.metadata!.name!),
        {
          ...(Object.keys(spec).length ? { spec } : {}),
          ...(Object.keys(labels).length ? { metadata: { labels } } : {}),
        },
        { uid: sb.metadata!.uid },
      );
      return { success: true, message: 'updated', sandbox: sandboxInfo(updated) };
    } catch (err) {
      return { success: false, message: apiMessage(err) };
    }
  }
}

function kubeError(err: unknown, action: string): FastPathError {
  const code = statusCode(err);
  if (isNotFound(err)) return new FastPathError('NotFound', `${action}: not found`);
  if (code === 403) return new FastPathError('PermissionDenied', `${action}: ${apiMessage(err)}`);
  return new FastPathError('Unavailable', `${action}: ${apiMessage(err)}`);
}

export function sandboxInfo(sb: Sandbox): SandboxInfo {
  return {
    sandboxId: sb.status?.sandboxID ?? '',
    phase: sb.status?.phase ?? 'Pending',
    agentPod: sb.status?.assignedPod ?? '',
    endpoints: sb.status?.endpoints ?? [],
    createdAt: sb.metadata?.creationTimestamp
      ? Math.floor(new Date(sb.metadata.creationTimestamp).getTime() / 1000)
      : 0,
    image: sb.spec.image,
    poolRef: sb.spec.poolRef,
    sandboxName: sb.metadata?.name ?? '',
  };
}
