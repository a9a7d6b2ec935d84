/**
 * Cloudflare source routing: every DeviceSettingsPolicy, ZoneRuleset, TransformRule and
 * RedirectRule event that matters to its workflow (`cloudflare-source/<Kind>/<ns>/<name>`) is a
 * `sourceChanged` hint, sent with signal-with-start so a new source gets its workflow. What
 * matters: the object appearing, its spec (generation) changing, its deletion starting, its
 * deletion policy changing (the Orphan annotation is the way out of a deletion already stuck).
 * Status-only updates — the workflows' own writes — are not passed on.
 *
 * Sources that refer to other objects (a TunnelBinding's Tunnel and Services, a
 * TunnelIngressClassConfig's Tunnel, IngressClasses, Ingresses and Services) also get a hint when
 * one of those changes, so an Ingress edit reaches the tunnel without waiting for a resync. The
 * hint says nothing but "look again": the source's workflow reads everything fresh.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { CLOUDFLARE_DELETION_POLICY_ANNOTATION } from '../../api/cloudflare.js';
import type { SourceRef } from '../../domain/cloudflare/markers.js';
import { SOURCE_KINDS, kindDefinition } from '../../domain/cloudflare/sources.js';
import { sourceWorkflowId } from '../../domain/cloudflare/targets.js';
import { K8sKind, K8sName, K8sNamespace, K8sUID } from '../../temporal/search-attributes.js';
import { cloudflareSourceWorkflow, sourceChangedSignal } from '../../workflows/cloudflare/contract.js';
import type { InformerEvent } from '../informer.js';
import type { Route, WatcherContext } from '../watcher.js';

/** The source kinds whose view includes other objects (src/activities/cloudflare/expand.ts). */
const DEPENDENT_KINDS = new Set(['TunnelBinding', 'TunnelIngressClassConfig', 'TunnelGatewayClassConfig']);
/**
 * The Gateway API kinds a TunnelGatewayClassConfig refers to: watched once such a config exists
 * and the cluster serves them (many clusters do not install the Gateway API; an informer on an
 * unserved kind would never sync).
 */
const GATEWAY_KINDS = [
  ['gateway.networking.k8s.io/v1', 'GatewayClass'],
  ['gateway.networking.k8s.io/v1', 'Gateway'],
  ['gateway.networking.k8s.io/v1', 'HTTPRoute'],
] as const;
/** How often a missing Gateway API is looked for again while a TunnelGatewayClassConfig exists. */
const GATEWAY_API_RECHECK_MS = 60_000;
/** The objects they refer to, beyond Tunnels and ClusterTunnels (watched as sources already). */
const REFERRED_KINDS = [
  ['v1', 'Service'],
  ['networking.k8s.io/v1', 'Ingress'],
  ['networking.k8s.io/v1', 'IngressClass'],
] as const;

/** Whether a dependent source's view may include an object of `kind` in `namespace`. */
function refersTo(source: SourceRef, kind: string, namespace: string | undefined): boolean {
  if (kind === 'Tunnel' || kind === 'ClusterTunnel') return true;
  if (kind === 'Service') return source.kind !== 'TunnelBinding' || source.namespace === namespace;
  if (kind === 'Ingress' || kind === 'IngressClass') return source.kind === 'TunnelIngressClassConfig';
  return source.kind === 'TunnelGatewayClassConfig'; // GatewayClass, Gateway, HTTPRoute
}

export class CloudflareSourceRoute implements Route {
  readonly name = 'cloudflare-sources';
  private ctx!: WatcherContext;
  /** Generation, deletion state and deletion policy last passed on per UID. */
  private readonly seen = new Map<string, string>();

  /** The sources that refer to other objects, by UID. */
  private readonly dependents = new Map<string, SourceRef>();
  /** What each referred object last looked like (resourceVersion, or generation for Tunnels). */
  private readonly referred = new Map<string, string>();
  /** Whether the Gateway API informers run, or since when the look for it is in flight/was done. */
  private gatewayApi: 'watching' | number | undefined;

  /** `reregisterMs`: a source's silence before it registers again (the observation interval). */
  constructor(private readonly opts: { reregisterMs?: number } = {}) {}

  register(ctx: WatcherContext): void {
    this.ctx = ctx;
    for (const def of SOURCE_KINDS.map(kindDefinition))
      ctx.watch<KubernetesObject>(def.apiVersion, def.kind, (ev) => this.onSource(def.kind, ev));
    for (const [apiVersion, kind] of REFERRED_KINDS)
      ctx.watch<KubernetesObject>(apiVersion, kind, (ev) => this.onReferred(kind, ev));
  }

  private onSource(kind: string, ev: InformerEvent<KubernetesObject>): void {
    const m = ev.object.metadata!;
    const uid = m.uid!;
    const ref: SourceRef = { kind, ...(m.namespace ? { namespace: m.namespace } : {}), name: m.name! };
    if (DEPENDENT_KINDS.has(kind)) {
      if (ev.type === 'DELETED') this.dependents.delete(uid);
      else this.dependents.set(uid, ref);
    }
    if (kind === 'TunnelGatewayClassConfig' && ev.type !== 'DELETED') this.watchGatewayApi();
    // A Tunnel's status (its ID appearing) matters to the sources naming it.
    if (kind === 'Tunnel' || kind === 'ClusterTunnel') this.onReferred(kind, ev);
    if (ev.type === 'DELETED') {
      // The finalizer guarantees the workflow saw the deletion start.
      this.seen.delete(uid);
      return;
    }
    const policy = m.annotations?.[CLOUDFLARE_DELETION_POLICY_ANNOTATION] ?? '';
    const fingerprint = `${m.generation ?? 0}|${m.deletionTimestamp ?? ''}|${policy}`;
    if (this.seen.get(uid) === fingerprint && !ev.fromList) return;
    this.seen.set(uid, fingerprint);
    this.hint(ref, m.deletionTimestamp ? 'Deleting' : ev.type, ev.receivedAt, uid);
  }

  /** Starts the Gateway API informers once the cluster serves it (looked for at most once a minute). */
  private watchGatewayApi(): void {
    const last = this.gatewayApi;
    if (last === 'watching' || (last !== undefined && Date.now() - last < GATEWAY_API_RECHECK_MS)) return;
    this.gatewayApi = Date.now();
    void (async () => {
      for (const [apiVersion, kind] of GATEWAY_KINDS) if (!(await this.ctx.served(apiVersion, kind))) return;
      this.gatewayApi = 'watching';
      for (const [apiVersion, kind] of GATEWAY_KINDS)
        this.ctx.watch<KubernetesObject>(apiVersion, kind, (ev) => this.onReferred(kind, ev));
    })().catch((err: Error) => this.ctx.log.warn({ err }, 'looking for the Gateway API failed'));
  }

  /** An object a dependent source may refer to changed: every dependent that could refer to it looks again. */
  private onReferred(kind: string, ev: InformerEvent<KubernetesObject>): void {
    const m = ev.object.metadata!;
    const key = `${kind}/${m.uid}`;
    if (ev.type === 'DELETED') this.referred.delete(key);
    else {
      const status = (ev.object as { status?: { tunnelId?: string } }).status;
      const look =
        kind === 'Tunnel' || kind === 'ClusterTunnel'
          ? `${m.generation ?? 0}|${status?.tunnelId ?? ''}|${m.deletionTimestamp ?? ''}`
          : (m.resourceVersion ?? '');
      const before = this.referred.get(key);
      this.referred.set(key, look);
      if (before === look || (before === undefined && ev.fromList)) return;
    }
    for (const [uid, ref] of this.dependents) {
      if (refersTo(ref, kind, m.namespace)) this.hint(ref, `${kind}Changed`, ev.receivedAt, uid);
    }
  }

  private hint(ref: SourceRef, event: string, receivedAt: number, uid: string): void {
    const { kind } = ref;
    const m = { namespace: ref.namespace, name: ref.name, uid };
    const workflowId = sourceWorkflowId(ref);
    this.ctx.enqueue(workflowId, async () => {
      await this.ctx.dispatcher.signalWithStart({
        workflow: cloudflareSourceWorkflow,
        workflowId,
        args: [{ ref, ...(this.opts.reregisterMs ? { reregisterMs: this.opts.reregisterMs } : {}) }],
        signal: sourceChangedSignal,
        signalArgs: [{ event }],
        kind,
        receivedAt,
        searchAttributes: [
          { key: K8sKind, value: kind },
          ...(m.namespace ? [{ key: K8sNamespace, value: m.namespace }] : []),
          { key: K8sName, value: m.name! },
          { key: K8sUID, value: m.uid },
        ],
        summary: `${kind} ${m.namespace ? `${m.namespace}/` : ''}${m.name}`,
        details:
          'Validates the source, registers it with the Cloudflare targets it feeds, and shows their result on its status.',
      });
    });
  }
}
