/**
 * Cloudflare source routing: every DeviceSettingsPolicy, ZoneRuleset, TransformRule and
 * RedirectRule event that matters to its workflow (`cloudflare-source/<Kind>/<ns>/<name>`) is a
 * `sourceChanged` hint, sent with signal-with-start so a new source gets its workflow. What
 * matters: the object appearing, its spec (generation) changing, its deletion starting.
 * Status-only updates — the workflows' own writes — are not passed on.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { SourceRef } from '../../domain/cloudflare/markers.js';
import { SOURCE_KINDS, kindDefinition } from '../../domain/cloudflare/sources.js';
import { sourceWorkflowId } from '../../domain/cloudflare/targets.js';
import { K8sKind, K8sName, K8sNamespace, K8sUID } from '../../temporal/search-attributes.js';
import { cloudflareSourceWorkflow, sourceChangedSignal } from '../../workflows/cloudflare/contract.js';
import type { InformerEvent } from '../informer.js';
import type { Route, WatcherContext } from '../watcher.js';

export class CloudflareSourceRoute implements Route {
  readonly name = 'cloudflare-sources';
  private ctx!: WatcherContext;
  /** Generation and deletion state last passed on per UID. */
  private readonly seen = new Map<string, string>();

  register(ctx: WatcherContext): void {
    this.ctx = ctx;
    for (const def of SOURCE_KINDS.map(kindDefinition))
      ctx.watch<KubernetesObject>(def.apiVersion, def.kind, (ev) => this.onSource(def.kind, ev));
  }

  private onSource(kind: string, ev: InformerEvent<KubernetesObject>): void {
    const m = ev.object.metadata!;
    const uid = m.uid!;
    if (ev.type === 'DELETED') {
      // The finalizer guarantees the workflow saw the deletion start.
      this.seen.delete(uid);
      return;
    }
    const fingerprint = `${m.generation ?? 0}|${m.deletionTimestamp ?? ''}`;
    if (this.seen.get(uid) === fingerprint && !ev.fromList) return;
    this.seen.set(uid, fingerprint);
    const ref: SourceRef = { kind, ...(m.namespace ? { namespace: m.namespace } : {}), name: m.name! };
    const workflowId = sourceWorkflowId(ref);
    this.ctx.enqueue(workflowId, async () => {
      await this.ctx.dispatcher.signalWithStart({
        workflow: cloudflareSourceWorkflow,
        workflowId,
        args: [{ ref }],
        signal: sourceChangedSignal,
        signalArgs: [{ event: m.deletionTimestamp ? 'Deleting' : ev.type }],
        kind,
        receivedAt: ev.receivedAt,
        searchAttributes: [
          { key: K8sKind, value: kind },
          ...(m.namespace ? [{ key: K8sNamespace, value: m.namespace }] : []),
          { key: K8sName, value: m.name! },
          { key: K8sUID, value: uid },
        ],
        summary: `${kind} ${m.namespace ? `${m.namespace}/` : ''}${m.name}`,
        details:
          'Validates the source, registers it with the Cloudflare targets it feeds, and shows their result on its status.',
      });
    });
  }
}
