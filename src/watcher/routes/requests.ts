/**
 * Fire-and-forget request routing: every request (ManifestCaptureRequest, VolumeCaptureRequest,
 * VolumeRestoreRequest) gets one workflow, `request/<kind>/<ns>/<name>/<uid>`, started on the
 * first event the watcher sees and deduplicated on every later one. Deletion is passed on as a
 * `requestDeleted` hint, which the workflow verifies.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { REQUEST_KINDS, REQUEST_KIND_NAMES, type RequestKindName } from '../../api/request-kinds.js';
import type { Condition } from '../../domain/conditions.js';
import { isTerminal, requestWorkflowId, type RequestRef } from '../../domain/requests.js';
import { K8sKind, K8sName, K8sNamespace, K8sUID, OperationPhase } from '../../temporal/search-attributes.js';
import {
  requestDeletedSignal,
  requestWorkflows,
  type RequestWorkflowInput,
} from '../../workflows/requests/contract.js';
import type { InformerEvent } from '../informer.js';
import type { Route, WatcherContext } from '../watcher.js';

type RequestObject = KubernetesObject & { spec?: Record<string, unknown> };

/** One line per kind for the Web UI's summary. */
const DESCRIBE: Record<RequestKindName, (obj: RequestObject) => string> = {
  ManifestCaptureRequest: (request) =>
    `capture ${(request.spec?.targets as unknown[] | undefined)?.length ?? 0} object(s)`,
  VolumeCaptureRequest: (request) =>
    `${String(request.spec?.mode)} ${(request.spec?.targets as { name: string }[] | undefined)?.map((t) => t.name).join(', ') ?? ''}`,
  VolumeRestoreRequest: (request) => {
    const src = request.spec?.sourceRef as { kind?: string; name?: string } | undefined;
    return `restore ${src?.kind ?? '?'} ${src?.name ?? '?'} into PVC ${String(request.spec?.targetPVCName)}`;
  },
};

/** The spec as a JSON block for the Web UI, cut short: a capture may name thousands of targets. */
const DETAILS_SPEC_CHARS = 4000;
function specBlock(obj: KubernetesObject): string {
  const json = JSON.stringify((obj as { spec?: unknown }).spec, null, 2) ?? '';
  const shown =
    json.length > DETAILS_SPEC_CHARS ? `${json.slice(0, DETAILS_SPEC_CHARS)}\n… (${json.length} characters)` : json;
  return `\`\`\`json\n${shown}\n\`\`\``;
}

export class RequestRoute implements Route {
  readonly name = 'requests';
  private ctx!: WatcherContext;

  register(ctx: WatcherContext): void {
    this.ctx = ctx;
    for (const kind of REQUEST_KIND_NAMES) {
      const { apiVersion } = REQUEST_KINDS[kind].definition;
      ctx.watch(apiVersion, kind, (ev) => this.onRequest(kind, apiVersion, ev));
    }
  }

  private onRequest(kind: RequestKindName, apiVersion: string, ev: InformerEvent<KubernetesObject>): void {
    const obj = ev.object;
    const ref: RequestRef = {
      apiVersion,
      kind,
      namespace: obj.metadata!.namespace!,
      name: obj.metadata!.name!,
      uid: obj.metadata!.uid!,
    };
    const workflowId = requestWorkflowId(ref);
    const { dispatcher } = this.ctx;
    if (ev.type === 'DELETED' || obj.metadata?.deletionTimestamp) {
      // A terminal request's workflow has ended or is ending with nothing left to wait for (its
      // finalization made it terminal): a hint would only race its completion (UnhandledCommand).
      if (isTerminal((obj as { status?: { conditions?: Condition[] } }).status?.conditions)) {
        if (ev.type === 'DELETED') this.ctx.enqueue(workflowId, async () => dispatcher.forget(workflowId));
        return;
      }
      this.ctx.enqueue(workflowId, async () => {
        await dispatcher.signal(workflowId, requestDeletedSignal);
        if (ev.type === 'DELETED') dispatcher.forget(workflowId);
      });
      return;
    }
    const input: RequestWorkflowInput = { ref };
    this.ctx.enqueue(workflowId, async () => {
      await dispatcher.start({
        workflow: requestWorkflows[kind],
        workflowId,
        args: [input],
        kind,
        receivedAt: ev.receivedAt,
        searchAttributes: [
          { key: K8sKind, value: kind },
          { key: K8sNamespace, value: ref.namespace },
          { key: K8sName, value: ref.name },
          { key: K8sUID, value: ref.uid },
          // The phase the workflow's first step reports: it upserts only when the phase changes.
          { key: OperationPhase, value: 'Processing' },
        ],
        summary: `${kind} ${ref.namespace}/${ref.name}: ${DESCRIBE[kind](obj)}`,
        details: `One-shot operation for \`${kind}\` **${ref.namespace}/${ref.name}** (uid ${ref.uid}).\n\n${specBlock(obj)}`,
      });
    });
  }
}
