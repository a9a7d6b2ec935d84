/**
 * Sandbox routing: every Sandbox event that matters to its workflow (`sandbox/<ns>/<name>`) is a
 * `sandboxChanged` hint, sent with signal-with-start so a Sandbox created with kubectl gets its
 * workflow, and a fast-path one (whose workflow already runs) is told its record exists. What
 * matters: the object appearing, its spec (generation) or annotations changing, its deletion
 * starting. Not passed on: status-only updates (the workflow's own writes), its finalizer removed
 * during the deletion (its run's last write), and a record the fast path's run created itself
 * (that run is only made sure to exist). A deletion starts a run only while the record is there:
 * the run it was meant for may have ended with the record meanwhile. A record no agent holds yet
 * appearing or being deleted is also a `poolChanged` hint to its pool.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  ALLOCATION_ANNOTATION,
  CREATED_BY_LABEL,
  SANDBOX_FINALIZER,
  SandboxKind,
  type Sandbox,
} from '../../api/sandbox.js';
import { TENANT_LABEL, deletionHintRequestId, sandboxWorkflowId } from '../../domain/sandbox.js';
import { poolWorkflowId, recordChangesPoolDemand } from '../../domain/sandbox-pool.js';
import { K8sKind, K8sName, K8sNamespace, K8sUID, Tenant } from '../../temporal/search-attributes.js';
import { poolChangedSignal, sandboxChangedSignal, sandboxWorkflow } from '../../workflows/sandbox/contract.js';
import type { InformerEvent } from '../informer.js';
import type { Route, WatcherContext } from '../watcher.js';

export class SandboxRoute implements Route {
  readonly name = 'sandboxes';
  private ctx!: WatcherContext;
  /** What was last passed on per UID, so status-only updates are skipped. */
  private readonly seen = new Map<string, string>();

  constructor(private readonly taskQueue: string) {}

  register(ctx: WatcherContext): void {
    this.ctx = ctx;
    ctx.watch<Sandbox>(SandboxKind.apiVersion, SandboxKind.kind, (ev) => this.onSandbox(ev));
  }

  private onSandbox(ev: InformerEvent<Sandbox>): void {
    const obj = ev.object as Sandbox & KubernetesObject;
    const uid = obj.metadata!.uid!;
    if (ev.type === 'DELETED') {
      // The finalizer guarantees the workflow saw the deletion start; nothing more to say.
      this.seen.delete(uid);
      return;
    }
    const m = obj.metadata!;
    const allocation = m.annotations?.[ALLOCATION_ANNOTATION] ?? '';
    const finalized = (m.finalizers ?? []).includes(SANDBOX_FINALIZER);
    const fingerprint = `${m.generation ?? 0}|${m.deletionTimestamp ?? ''}|${allocation}|${finalized}`;
    const before = this.seen.get(uid);
    if (before === fingerprint && !ev.fromList) return;
    this.seen.set(uid, fingerprint);
    // The workflow's own writes echoed back (finalizer added, allocation annotation removed):
    // nothing for it to do, so no wake-up. A re-list still passes everything on.
    const echo =
      before !== undefined &&
      before.split('|')[0] === String(m.generation ?? 0) &&
      !m.deletionTimestamp &&
      finalized &&
      !allocation;
    if (echo && !ev.fromList) return;
    // The run removed its finalizer (its last write), or the record goes anyway: nothing to tell it.
    const finalizerGone =
      before !== undefined &&
      !!m.deletionTimestamp &&
      before === `${m.generation ?? 0}|${m.deletionTimestamp}|${allocation}|true` &&
      !finalized;
    if (finalizerGone && !ev.fromList) return;
    const namespace = m.namespace!;
    const name = m.name!;
    const workflowId = sandboxWorkflowId(namespace, name);
    const tenant = m.labels?.[TENANT_LABEL];
    // A record no agent holds appearing or being deleted changes its pool's demand: a hint to the
    // pool's workflow. A placed one's agent tells the pool (the fast path's registry).
    const changesDemand = recordChangesPoolDemand({
      appeared: before === undefined,
      deletionStarted: !!m.deletionTimestamp && !before?.split('|')[1],
      placed: !!allocation || !!obj.status?.assignedPod,
    });
    if (changesDemand) {
      const poolId = poolWorkflowId(namespace, obj.spec.poolRef);
      const event = m.deletionTimestamp ? `Sandbox ${name} deleting` : `Sandbox ${name} ${ev.type}`;
      this.ctx.enqueue(
        poolId,
        async () => void (await this.ctx.dispatcher.signal(poolId, poolChangedSignal, { event })),
      );
    }
    const start = {
      workflow: sandboxWorkflow,
      workflowId,
      taskQueue: this.taskQueue,
      args: [{ namespace, name }] as Parameters<typeof sandboxWorkflow>,
      kind: SandboxKind.kind,
      receivedAt: ev.receivedAt,
      searchAttributes: [
        { key: K8sKind, value: SandboxKind.kind },
        { key: K8sNamespace, value: namespace },
        { key: K8sName, value: name },
        { key: K8sUID, value: uid },
        ...(tenant ? [{ key: Tenant, value: tenant }] : []),
      ],
      summary: `Sandbox ${namespace}/${name} (pool ${obj.spec.poolRef})`,
    };
    // A record the fast path's run created (with its finalizer and its label) is that run's own
    // doing: it is only made sure to have a run, not woken (a signal would cost it a task).
    const createdByItsRun =
      before === undefined && finalized && !m.deletionTimestamp && isFastPathRecord(m.labels) && !ev.fromList;
    const hint = { event: m.deletionTimestamp ? 'Deleting' : ev.type, uid };
    this.ctx.enqueue(workflowId, async () => {
      if (createdByItsRun) return void (await this.ctx.dispatcher.ensureRunning(start));
      // A deletion usually finds its run, told already by the fast path under the same request ID
      // (Temporal then drops this one), or ended since, record and all: a run is started for it
      // only while the record is still here.
      if (m.deletionTimestamp && !ev.fromList) {
        const delivered = await this.ctx.dispatcher.signalOnce(
          workflowId,
          sandboxChangedSignal,
          deletionHintRequestId(uid),
          hint,
        );
        if (delivered !== 'not-running' || !this.seen.has(uid)) return;
      }
      await this.ctx.dispatcher.signalWithStart({ ...start, signal: sandboxChangedSignal, signalArgs: [hint] });
    });
  }
}

/** Labelled by the fast path's run when it creates the record (`fastpath-fast`, `fastpath-strong`). */
function isFastPathRecord(labels: Record<string, string> | undefined): boolean {
  return labels?.[CREATED_BY_LABEL]?.startsWith('fastpath-') ?? false;
}
