/**
 * SandboxPool routing: a pool appearing, its spec changing or its deletion starting is a
 * `poolChanged` hint to the pool's workflow (`sandbox-pool/<ns>/<name>`), sent with
 * signal-with-start so every pool gets its workflow. Status-only updates (the workflow's own
 * writes) are not passed on. A Sandbox no agent holds appearing or being deleted hints its
 * pool's workflow too (a plain signal, from SandboxRoute), and the fast path's registry hints it
 * when sandboxes appear on or leave its agents, so it resizes without waiting for its timer.
 */
import { SandboxPoolKind, type SandboxPool } from '../../api/sandbox.js';
import { POOL_FINALIZER, poolWorkflowId } from '../../domain/sandbox-pool.js';
import { K8sKind, K8sName, K8sNamespace, K8sUID } from '../../temporal/search-attributes.js';
import { poolChangedSignal, sandboxPoolWorkflow } from '../../workflows/sandbox/contract.js';
import type { InformerEvent } from '../informer.js';
import type { Route, WatcherContext } from '../watcher.js';

export class SandboxPoolRoute implements Route {
  readonly name = 'sandbox-pools';
  private ctx!: WatcherContext;
  private readonly seen = new Map<string, string>();

  constructor(private readonly taskQueue: string) {}

  register(ctx: WatcherContext): void {
    this.ctx = ctx;
    ctx.watch<SandboxPool>(SandboxPoolKind.apiVersion, SandboxPoolKind.kind, (ev) => this.onPool(ev));
  }

  private onPool(ev: InformerEvent<SandboxPool>): void {
    const m = ev.object.metadata!;
    const uid = m.uid!;
    if (ev.type === 'DELETED') {
      this.seen.delete(uid);
      return;
    }
    const finalized = (m.finalizers ?? []).includes(POOL_FINALIZER);
    const fingerprint = `${m.generation ?? 0}|${m.deletionTimestamp ?? ''}|${finalized}`;
    const before = this.seen.get(uid);
    if (before === fingerprint && !ev.fromList) return;
    this.seen.set(uid, fingerprint);
    // The workflow's own finalizer write echoed back: nothing new for it.
    if (before !== undefined && before === `${m.generation ?? 0}||false` && finalized && !ev.fromList) return;
    const namespace = m.namespace!;
    const name = m.name!;
    const workflowId = poolWorkflowId(namespace, name);
    this.ctx.enqueue(workflowId, async () => {
      await this.ctx.dispatcher.signalWithStart({
        workflow: sandboxPoolWorkflow,
        workflowId,
        taskQueue: this.taskQueue,
        args: [{ namespace, name }],
        signal: poolChangedSignal,
        signalArgs: [{ event: m.deletionTimestamp ? 'Deleting' : ev.type }],
        kind: SandboxPoolKind.kind,
        receivedAt: ev.receivedAt,
        searchAttributes: [
          { key: K8sKind, value: SandboxPoolKind.kind },
          { key: K8sNamespace, value: namespace },
          { key: K8sName, value: name },
          { key: K8sUID, value: uid },
        ],
        summary: `SandboxPool ${namespace}/${name}`,
      });
    });
  }
}
