/**
 * A source as the Cloudflare rules read it: its spec plus the facts it refers to. Most kinds are
 * their spec. A TunnelBinding adds the Tunnel it names (ID, credentials, zone) and its Services'
 * ports; a TunnelIngressClassConfig adds its Tunnel, the Ingresses of every IngressClass whose
 * `parameters` name it, and their Services; a TunnelGatewayClassConfig its Tunnel, the Gateways of
 * every GatewayClass whose `parametersRef` names it, the HTTPRoutes and their Services (none when
 * the cluster does not serve the Gateway API). Gathered here, once per read, so the rules in
 * src/domain/cloudflare/kinds/ stay pure and the source's workflow and the target's sync see
 * the same thing.
 */
import { createHash } from 'node:crypto';
import type { KubernetesObject } from '@kubernetes/client-node';
import { CLOUDFLARE_GROUP, ORIGINAL_GATEWAY_FINALIZER, ORIGINAL_INGRESS_FINALIZER } from '../../api/cloudflare.js';
import { ClusterTunnelKind, TunnelKind, type TunnelSpec } from '../../api/cloudflare-tunnels.js';
import { canonical } from '../../domain/cloudflare/merge.js';
import type { AccessIdentityProviderSpec } from '../../api/cloudflare-zerotrust.js';
import { withoutInlineSecrets } from '../../domain/cloudflare/kinds/access-identity-provider.js';
import {
  attachedRoutes,
  ingressSkips,
  routeSkips,
  type ExpandedGatewayClassConfig,
  type ExpandedIngressClassConfig,
} from '../../domain/cloudflare/kinds/tunnels.js';
import type { SourceKind, SourceSpec } from '../../domain/cloudflare/sources.js';
import {
  GATEWAY_API_GROUP,
  type GatewayFacts,
  type HTTPRouteFacts,
  type IngressFacts,
  type ListenerFacts,
  type ServiceFacts,
  type TunnelFacts,
  classParametersNamespace,
} from '../../domain/cloudflare/tunnels.js';
import type { KubeClient, ObjectRef } from '../../kube/client.js';
import { releaseOriginalFinalizers } from './original-finalizers.js';
import { getObject, listAll } from '../kubernetes/calls.js';

interface RawSource extends KubernetesObject {
  spec?: SourceSpec;
  [field: string]: unknown;
}

async function tunnelFacts(
  kube: KubeClient,
  ref: { kind: string; name: string },
  namespace: string | undefined,
): Promise<TunnelFacts | null> {
  const cluster = ref.kind === 'ClusterTunnel';
  const def = cluster ? ClusterTunnelKind : TunnelKind;
  const obj = await getObject<KubernetesObject & { spec?: TunnelSpec; status?: { tunnelId?: string } }>(kube, {
    apiVersion: def.apiVersion,
    kind: def.kind,
    ...(cluster ? {} : { namespace }),
    name: ref.name,
  });
  if (!obj || obj.metadata?.deletionTimestamp) return null;
  const cf = obj.spec?.cloudflare;
  return {
    kind: cluster ? 'ClusterTunnel' : 'Tunnel',
    name: ref.name,
    ...(cluster ? {} : { namespace }),
    ...(obj.status?.tunnelId ? { tunnelId: obj.status.tunnelId } : {}),
    ...(cf?.credentialsRef?.name ? { credentialsRef: cf.credentialsRef.name } : {}),
    ...(cf?.domain ? { domain: cf.domain } : {}),
    ...(cf?.domain && cf.zoneId ? { zoneId: cf.zoneId } : {}),
  };
}

interface ServiceObject extends KubernetesObject {
  spec?: { ports?: Array<{ name?: string; port: number; protocol?: string; appProtocol?: string }> };
}

const servicePorts = (s: ServiceObject): ServiceFacts => ({
  ports: (s.spec?.ports ?? []).map((p) => ({
    port: p.port,
    ...(p.name ? { name: p.name } : {}),
    ...(p.protocol ? { protocol: p.protocol } : {}),
    ...(p.appProtocol ? { appProtocol: p.appProtocol } : {}),
  })),
});

async function bindingView(kube: KubeClient, obj: RawSource): Promise<SourceSpec> {
  const namespace = obj.metadata!.namespace!;
  const tunnelRef = obj.tunnelRef as { kind: string; name: string; disableDNSUpdates?: boolean };
  const subjects = (obj.subjects ?? []) as Array<{ name: string; spec?: { target?: string } }>;
  const services: Record<string, ServiceFacts> = {};
  for (const s of subjects) {
    if (s.spec?.target || s.name in services) continue;
    const svc = await getObject<ServiceObject>(kube, { apiVersion: 'v1', kind: 'Service', namespace, name: s.name });
    services[s.name] = svc ? servicePorts(svc) : null;
  }
  return {
    ...(obj.spec?.priority !== undefined ? { priority: obj.spec.priority } : {}),
    namespace,
    subjects,
    tunnelRef,
    tunnel: await tunnelFacts(kube, tunnelRef, namespace),
    services,
  };
}

interface IngressClassObject extends KubernetesObject {
  spec?: { parameters?: { apiGroup?: string; kind?: string; name?: string; namespace?: string; scope?: string } };
}
interface IngressObject extends KubernetesObject {
  spec?: { ingressClassName?: string; rules?: IngressFacts['rules'] };
}

/** A class's reference to its parameters (IngressClass `parameters`, GatewayClass `parametersRef`). */
interface ParametersRef {
  group?: string;
  kind?: string;
  name?: string;
  namespace?: string;
  scope?: string;
}

/**
 * The names of the classes whose parameters are the config `kind` `namespace/name`, and a note for
 * each class naming a config of this name without naming this namespace (it means another one).
 */
function classesNaming(
  classes: readonly KubernetesObject[],
  classKind: 'IngressClass' | 'GatewayClass',
  refOf: (c: KubernetesObject) => ParametersRef | undefined,
  config: { kind: string; namespace: string; name: string },
): { names: Set<string>; notes: string[] } {
  const names = new Set<string>();
  const notes: string[] = [];
  for (const c of classes) {
    const p = refOf(c);
    if (p?.group !== CLOUDFLARE_GROUP || p.kind !== config.kind || p.name !== config.name) continue;
    const meant = classParametersNamespace(classKind, p);
    if ('namespace' in meant && meant.namespace === config.namespace) names.add(c.metadata!.name!);
    // Refused with the reason, on the configs of that name it could be taken to mean.
    else if (!p.namespace || p.namespace === config.namespace)
      notes.push(
        `${classKind} ${c.metadata!.name} is not served by this config: ${
          'problem' in meant
            ? meant.problem
            : `its parameters name no namespace, so they mean ${config.kind} ${meant.namespace}/${config.name}`
        }`,
      );
  }
  return { names, notes };
}

/** The IngressClasses whose parameters are this TunnelIngressClassConfig. */
async function classesOf(kube: KubeClient, namespace: string, name: string) {
  const classes = await listAll<IngressClassObject>(kube, 'networking.k8s.io/v1', 'IngressClass');
  return classesNaming(
    classes,
    'IngressClass',
    (c) => {
      const p = (c as IngressClassObject).spec?.parameters;
      return p && { group: p.apiGroup, kind: p.kind, name: p.name, namespace: p.namespace, scope: p.scope };
    },
    { kind: 'TunnelIngressClassConfig', namespace, name },
  );
}

/** An object's creationTimestamp as RFC 3339 UTC ('' when unknown). */
const createdAtOf = (obj: KubernetesObject) =>
  obj.metadata?.creationTimestamp ? new Date(obj.metadata.creationTimestamp).toISOString() : '';

async function ingressClassConfigView(kube: KubeClient, obj: RawSource): Promise<SourceSpec> {
  const namespace = obj.metadata!.namespace!;
  const spec = (obj.spec ?? {}) as SourceSpec & {
    tunnelRef: { kind: string; name: string; namespace?: string };
    watchNamespaces?: string[];
  };
  const { names: classes, notes } = await classesOf(kube, namespace, obj.metadata!.name!);
  const watched = spec.watchNamespaces?.length ? spec.watchNamespaces : [undefined];
  const ingresses: IngressFacts[] = [];
  if (classes.size)
    for (const ns of watched)
      for (const ing of await listAll<IngressObject>(
        kube,
        'networking.k8s.io/v1',
        'Ingress',
        ns ? { namespace: ns } : {},
      )) {
        const cls = ing.spec?.ingressClassName ?? ing.metadata?.annotations?.['kubernetes.io/ingress.class'];
        if (!cls || !classes.has(cls)) continue;
        await releaseOriginalFinalizers(
          kube,
          refOf('networking.k8s.io/v1', 'Ingress', ing),
          ing,
          (f) => f === ORIGINAL_INGRESS_FINALIZER,
        );
        if (ing.metadata?.deletionTimestamp) continue;
        ingresses.push({
          namespace: ing.metadata!.namespace!,
          name: ing.metadata!.name!,
          createdAt: createdAtOf(ing),
          ...(ing.metadata?.uid ? { uid: ing.metadata.uid } : {}),
          ...(ing.metadata?.annotations ? { annotations: ing.metadata.annotations } : {}),
          rules: ing.spec?.rules ?? [],
        });
      }
  ingresses.sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
  // One list of Services per namespace that has Ingresses of the class, not one GET per backend.
  const services = await servicesIn(
    kube,
    ingresses.map((i) => i.namespace),
  );
  return {
    ...spec,
    namespace,
    tunnel: await tunnelFacts(kube, spec.tunnelRef, spec.tunnelRef.namespace || namespace),
    ingresses,
    services,
    ...(notes.length ? { classNotes: notes } : {}),
  };
}

const GATEWAY_API = `${GATEWAY_API_GROUP}/v1`;

/** Where a listed object is (a list's items carry no apiVersion/kind of their own). */
const refOf = (apiVersion: string, kind: string, obj: KubernetesObject): ObjectRef => ({
  apiVersion,
  kind,
  namespace: obj.metadata!.namespace!,
  name: obj.metadata!.name!,
});

interface GatewayClassObject extends KubernetesObject {
  spec?: { parametersRef?: { group?: string; kind?: string; name?: string; namespace?: string } };
}
interface GatewayObject extends KubernetesObject {
  spec?: { gatewayClassName?: string; listeners?: ListenerFacts[] };
}
interface HTTPRouteObject extends KubernetesObject {
  spec?: Omit<HTTPRouteFacts, 'namespace' | 'name'>;
}

/** Every object of a kind in the namespaces given (all when none). */
async function listIn<T extends KubernetesObject>(
  kube: KubeClient,
  apiVersion: string,
  kind: string,
  namespaces: readonly string[] | undefined,
): Promise<T[]> {
  if (!namespaces?.length) return listAll<T>(kube, apiVersion, kind);
  const out: T[] = [];
  for (const ns of namespaces) out.push(...(await listAll<T>(kube, apiVersion, kind, { namespace: ns })));
  return out;
}

/** One list of Services per namespace named, keyed `namespace/name`. */
async function servicesIn(kube: KubeClient, namespaces: Iterable<string>): Promise<Record<string, ServiceFacts>> {
  const services: Record<string, ServiceFacts> = {};
  for (const ns of new Set(namespaces))
    for (const s of await listAll<ServiceObject>(kube, 'v1', 'Service', { namespace: ns }))
      services[`${ns}/${s.metadata!.name}`] = servicePorts(s);
  return services;
}

const byName = (a: { namespace: string; name: string }, b: { namespace: string; name: string }) =>
  `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`);

async function gatewayClassConfigView(kube: KubeClient, obj: RawSource): Promise<SourceSpec> {
  const namespace = obj.metadata!.namespace!;
  const name = obj.metadata!.name!;
  const spec = (obj.spec ?? {}) as SourceSpec & {
    tunnelRef: { kind: string; name: string; namespace?: string };
    watchNamespaces?: string[];
  };
  const tunnel = await tunnelFacts(kube, spec.tunnelRef, spec.tunnelRef.namespace || namespace);
  const view = {
    ...spec,
    namespace,
    tunnel,
    gateways: [] as GatewayFacts[],
    routes: [] as HTTPRouteFacts[],
    services: {},
  };
  // A cluster without the Gateway API has no Gateways of any class.
  if (!(await kube.objects.servedResource(GATEWAY_API, 'GatewayClass'))) return view;
  const { names: classes, notes } = classesNaming(
    await listAll<GatewayClassObject>(kube, GATEWAY_API, 'GatewayClass'),
    'GatewayClass',
    (c) => (c as GatewayClassObject).spec?.parametersRef,
    { kind: 'TunnelGatewayClassConfig', namespace, name },
  );
  if (notes.length) Object.assign(view, { classNotes: notes });
  if (!classes.size) return view;
  const ofClass = (await listIn<GatewayObject>(kube, GATEWAY_API, 'Gateway', spec.watchNamespaces)).filter((g) =>
    classes.has(g.spec?.gatewayClassName ?? ''),
  );
  for (const g of ofClass)
    await releaseOriginalFinalizers(kube, refOf(GATEWAY_API, 'Gateway', g), g, (f) => f === ORIGINAL_GATEWAY_FINALIZER);
  const gateways: GatewayFacts[] = ofClass
    .filter((g) => !g.metadata?.deletionTimestamp)
    .map((g) => ({
      namespace: g.metadata!.namespace!,
      name: g.metadata!.name!,
      listeners: (g.spec?.listeners ?? []).map((l) => ({
        name: l.name,
        ...(l.hostname ? { hostname: l.hostname } : {}),
        ...(l.port !== undefined ? { port: l.port } : {}),
        ...(l.protocol ? { protocol: l.protocol } : {}),
        ...(l.allowedRoutes ? { allowedRoutes: l.allowedRoutes } : {}),
      })),
    }))
    .sort(byName);
  if (!gateways.length) return view;
  const names = new Set(gateways.map((g) => `${g.namespace}/${g.name}`));
  const routes: HTTPRouteFacts[] = (await listIn<HTTPRouteObject>(kube, GATEWAY_API, 'HTTPRoute', spec.watchNamespaces))
    .filter(
      (r) =>
        !r.metadata?.deletionTimestamp &&
        (r.spec?.parentRefs ?? []).some((p) => names.has(`${p.namespace ?? r.metadata!.namespace}/${p.name}`)),
    )
    .map((r) => ({
      namespace: r.metadata!.namespace!,
      name: r.metadata!.name!,
      createdAt: createdAtOf(r),
      ...(r.metadata?.uid ? { uid: r.metadata.uid } : {}),
      ...(r.spec?.hostnames ? { hostnames: r.spec.hostnames } : {}),
      parentRefs: r.spec?.parentRefs ?? [],
      rules: (r.spec?.rules ?? []).map((rule) => ({
        ...(rule.matches ? { matches: rule.matches.map((m) => ({ ...(m.path ? { path: m.path } : {}) })) } : {}),
        ...(rule.backendRefs ? { backendRefs: rule.backendRefs } : {}),
      })),
    }))
    .sort(byName);
  // A listener choosing namespaces by label: the labels of the routes' namespaces (a GET each).
  const namespaceLabels: Record<string, Record<string, string>> = {};
  if (gateways.some((g) => g.listeners.some((l) => l.allowedRoutes?.namespaces?.from === 'Selector')))
    for (const ns of new Set(routes.map((r) => r.namespace))) {
      const namespace = await getObject<KubernetesObject>(kube, { apiVersion: 'v1', kind: 'Namespace', name: ns });
      namespaceLabels[ns] = namespace?.metadata?.labels ?? {};
    }
  return {
    ...view,
    gateways,
    routes,
    ...(Object.keys(namespaceLabels).length ? { namespaceLabels } : {}),
    services: await servicesIn(
      kube,
      routes.map((r) => r.namespace),
    ),
  };
}

/** Whether the kind's view depends on other objects (and so may change without a new generation). */
export function isExpanded(kind: SourceKind): boolean {
  return kind === 'TunnelBinding' || kind === 'TunnelIngressClassConfig' || kind === 'TunnelGatewayClassConfig';
}

/** The source's spec with what it refers to (the spec itself for most kinds). */
export async function expandSource(
  kube: KubeClient,
  kind: SourceKind,
  obj: KubernetesObject & { spec?: SourceSpec },
): Promise<SourceSpec> {
  if (kind === 'TunnelBinding') return bindingView(kube, obj as RawSource);
  if (kind === 'TunnelIngressClassConfig') return ingressClassConfigView(kube, obj as RawSource);
  if (kind === 'TunnelGatewayClassConfig') return gatewayClassConfigView(kube, obj as RawSource);
  return obj.spec ?? {};
}

/** A digest of a view: a referred object changing changes it, so the source registers again. */
export function viewDigest(spec: SourceSpec): string {
  return createHash('sha256').update(canonical(spec)).digest('hex').slice(0, 16);
}

/**
 * The view with no secret value in it (an identity provider's refused inline secrets): what a
 * digest or a workflow may see.
 */
export function withoutSecrets(kind: SourceKind, spec: SourceSpec): SourceSpec {
  return kind === 'AccessIdentityProvider'
    ? (withoutInlineSecrets(spec as unknown as AccessIdentityProviderSpec) as unknown as SourceSpec)
    : spec;
}

/**
 * What the source's workflow keeps of a view: no secret value; the Ingresses, routes and Services
 * of a class config are only needed by the sync (which expands afresh), so they stay out of the
 * workflow's history — their counts and what its status says of them (./../../domain/cloudflare/
 * kinds/tunnels.ts ingressSkips, routeSkips) stay.
 */
export function workflowView(kind: SourceKind, view: SourceSpec): SourceSpec {
  const spec = withoutSecrets(kind, view);
  if (kind === 'TunnelIngressClassConfig') {
    const {
      ingresses,
      services: _services,
      classNotes: _classNotes,
      ...rest
    } = spec as SourceSpec & { ingresses: unknown[] };
    // What its Ingresses lose (shown on its status) is known only here, with the Ingresses.
    const ingressNotes = ingressSkips(spec as unknown as ExpandedIngressClassConfig);
    return { ...rest, ingresses: [], ingressCount: ingresses.length, services: {}, ingressNotes };
  }
  if (kind === 'TunnelGatewayClassConfig') {
    const expanded = spec as unknown as ExpandedGatewayClassConfig;
    const routeNotes = routeSkips(expanded);
    const routeCount = attachedRoutes(expanded);
    const {
      gateways,
      routes: _routes,
      services: _services,
      namespaceLabels: _labels,
      classNotes: _classNotes,
      ...rest
    } = spec as SourceSpec & { gateways: GatewayFacts[] };
    return {
      ...rest,
      gateways: [],
      routes: [],
      services: {},
      gatewayCount: gateways.length,
      routeCount,
      routeNotes,
    };
  }
  return spec;
}
