/**
 * The kinds that configure a tunnel: Tunnel and ClusterTunnel (their own settings, priority 10,
 * and the tunnel itself, created or adopted by their workflow before they register),
 * TunnelBinding (its Services' rules, 100), TunnelIngressClassConfig (the rules of every
 * Ingress of its class, 100) and TunnelGatewayClassConfig (every HTTPRoute of its class's
 * Gateways, 100). All meet in one target per tunnel, `TunnelConfiguration`; the
 * hostnames of the rules get their CNAMEs in the `TunnelDNS` target of the zone that holds each
 * (the most specific zone the credentials see: one tunnel's hostnames may span zones).
 *
 * A binding or a class config names its tunnel; the activity that reads it (src/activities/
 * cloudflare/expand.ts) adds what it refers to — the Tunnel's ID, credentials and zone, the
 * Services' ports, the class's Ingresses — so these rules stay pure. TunnelGatewayClassConfig
 * (100) does the same for the HTTPRoutes attached to the Gateways of its GatewayClass.
 */
import {
  ClusterTunnelKind,
  TunnelBindingKind,
  TunnelGatewayClassConfigKind,
  TunnelIngressClassConfigKind,
  TunnelKind,
  TUNNEL_BINDING_PRIORITY,
  type TunnelBindingSpec,
  type TunnelBindingTunnelRef,
  type TunnelGatewayClassConfigSpec,
  type TunnelIngressClassConfigSpec,
  type TunnelSpec,
} from '../../../api/cloudflare-tunnels.js';
import {
  DEFAULT_FALLBACK_TARGET,
  bindingRules,
  caPoolPath,
  hostnamesOf,
  httpRouteRules,
  ingressRules,
  tunnelDnsRecords,
  type BindingSubject,
  type GatewayFacts,
  type HTTPRouteFacts,
  type IngressFacts,
  type ServiceFacts,
  type TunnelFacts,
  type RuleClaim,
  type TunnelIngressRule,
} from '../tunnels.js';
import type { SyncTarget } from '../targets.js';
import { connectorDeployment } from '../connector.js';
import type { RegistrationHints, ResolvedPlace, SourceKindRules } from './types.js';

/**
 * The priority of every source that claims tunnel hostnames (TunnelBinding by default, the class
 * configs always): the seed's default. The original put bindings at 50, ahead of every Ingress
 * whatever its age, so any team's binding took any Ingress's hostname; 50 (the seed's
 * administrators' level) is now a grant (`priorityNamespaces`).
 */
export const HOSTNAME_CLAIM_PRIORITY = TUNNEL_BINDING_PRIORITY;

/** A catch-all cloudflared accepts: an http(s) URL, `http_status:NNN`, `hello_world`. */
const FALLBACK = /^(https?:\/\/\S+|http_status:[1-5]\d\d|hello_world)$/;

function validateTunnel(spec: TunnelSpec): string[] {
  const problems: string[] = [];
  const n = spec.newTunnel;
  const e = spec.existingTunnel;
  if (!!n === !!e) problems.push('spec: set exactly one of newTunnel and existingTunnel');
  if (n && !n.name.trim()) problems.push('spec.newTunnel.name: must not be empty');
  if (e && !e.id && !e.name) problems.push('spec.existingTunnel: set id or name');
  // The connector's patch, tried on the Deployment the operator builds (a list item without its
  // merge key is refused there too).
  const connector = connectorDeployment(
    { apiVersion: TunnelKind.apiVersion, kind: 'Tunnel', name: 'tunnel', uid: '', spec },
    { namespace: 'default', secretName: 'tunnel', defaultImage: 'cloudflared' },
  );
  if ('problem' in connector) problems.push(connector.problem);
  if (spec.fallbackTarget !== undefined && !FALLBACK.test(spec.fallbackTarget))
    problems.push(
      `spec.fallbackTarget: ${JSON.stringify(spec.fallbackTarget)} is not a catch-all cloudflared accepts (http_status:404, https://…)`,
    );
  return problems;
}

function tunnelKindRules(definition: typeof TunnelKind, clusterScoped: boolean): SourceKindRules<TunnelSpec> {
  return {
    definition,
    clusterScoped,
    oneSourcePerTarget: true,
    lifecycle: 'tunnel',
    // The original's tunnel states; `creating` is written by ensureTunnel before the create.
    states: { ready: 'active', syncing: 'active', error: 'error', deleting: 'deleting' },
    priority: (spec) => spec.priority ?? 10,
    credentialsRef: (spec) => spec.cloudflare?.credentialsRef?.name,
    zone: () => undefined,
    policyZone: (spec) =>
      spec.cloudflare?.domain ? { zone: spec.cloudflare.domain, field: 'spec.cloudflare.domain' } : undefined,
    adopts: (spec) => (spec.existingTunnel ? 'spec.existingTunnel' : undefined),
    validate: validateTunnel,
    targets: (_spec, place) =>
      place.tunnelId
        ? [{ resourceType: 'TunnelConfiguration', accountId: place.accountId, tunnelId: place.tunnelId }]
        : [],
    contribution(spec, target) {
      if (target.resourceType !== 'TunnelConfiguration') return { rules: [] };
      const originRequest = {
        ...(spec.noTlsVerify ? { noTLSVerify: true } : {}),
        ...(spec.originCaPool ? { caPool: caPoolPath('tls.crt') } : {}),
      };
      return {
        rules: [],
        settings: {
          fallbackTarget: spec.fallbackTarget || DEFAULT_FALLBACK_TARGET,
          ...(Object.keys(originRequest).length ? { originRequest } : {}),
        },
      };
    },
  };
}

export const tunnelRules = tunnelKindRules(TunnelKind, false);
export const clusterTunnelRules = tunnelKindRules(ClusterTunnelKind, true);

// ---------------------------------------------------------------------------------------------
// Sources that name a tunnel
// ---------------------------------------------------------------------------------------------

/** What every source naming a tunnel carries after expansion. */
interface NamesTunnel {
  /** The source's namespace (its Services and Ingresses are looked up there). */
  namespace: string;
  /** The Tunnel/ClusterTunnel named, as found (null: it does not exist). */
  tunnel: TunnelFacts | null;
}

/** A TunnelBinding as the sync reads it: its top-level fields, its optional spec, and what they refer to. */
export interface ExpandedTunnelBinding extends NamesTunnel {
  priority?: TunnelBindingSpec['priority'];
  subjects: BindingSubject[];
  tunnelRef: TunnelBindingTunnelRef;
  /** The subjects' Services by name (null: not found). */
  services: Record<string, ServiceFacts>;
}

/** A TunnelIngressClassConfig as the sync reads it: its spec, and the Ingresses of its class. */
export type ExpandedIngressClassConfig = TunnelIngressClassConfigSpec &
  NamesTunnel & {
    /** The Ingresses whose IngressClass names this config (in `watchNamespaces` when set). */
    ingresses: IngressFacts[];
    /** Their backends' Services by `namespace/name` (null: not found). */
    services: Record<string, ServiceFacts>;
    /** How many Ingresses there are, in the source workflow's slim view (which leaves them out). */
    ingressCount?: number;
    /** What of them is skipped or unread, and why, in the slim view (ingressSkips). */
    ingressNotes?: string[];
    /** Classes naming a config of this name that mean another one (./../tunnels.ts classParametersNamespace). */
    classNotes?: string[];
  };

function tunnelLabel(t: { kind: string; name: string; namespace?: string }): string {
  return `${t.kind} ${t.namespace ? `${t.namespace}/` : ''}${t.name}`;
}

function waitingForTunnel(spec: NamesTunnel): { reason: string; message: string } | undefined {
  if (spec.tunnel && !spec.tunnel.tunnelId)
    return {
      reason: 'TunnelNotReady',
      message: `${tunnelLabel(spec.tunnel)} has no tunnel ID yet (see its status)`,
    };
  return undefined;
}

/** The configuration of the named tunnel, and the CNAMEs of each zone its hostnames are in when the source manages DNS. */
function tunnelTargets(spec: NamesTunnel, place: ResolvedPlace): SyncTarget[] {
  const tunnelId = spec.tunnel?.tunnelId;
  if (!tunnelId) return [];
  // No dnsZones (a place resolved before hostnames were placed per zone): the Tunnel's zone alone.
  const zones =
    place.dnsZones ?? (place.zoneId && place.zoneName ? [{ zoneId: place.zoneId, zoneName: place.zoneName }] : []);
  return [
    { resourceType: 'TunnelConfiguration', accountId: place.accountId, tunnelId },
    ...zones.map((z) => ({
      resourceType: 'TunnelDNS' as const,
      accountId: place.accountId,
      zoneId: z.zoneId,
      zone: z.zoneName,
    })),
  ];
}

function tunnelContribution(
  spec: NamesTunnel,
  target: SyncTarget,
  { rules, claims }: { rules: TunnelIngressRule[]; claims?: RuleClaim[] },
  proxied: boolean,
  hints: RegistrationHints | undefined,
) {
  const tunnelId = spec.tunnel?.tunnelId;
  if (target.resourceType === 'TunnelConfiguration' && target.tunnelId === tunnelId)
    return { rules, ...(claims?.length ? { claims } : {}) };
  if (target.resourceType === 'TunnelDNS' && tunnelId)
    return { entries: tunnelDnsRecords(hostnamesOf(rules), target.zone, tunnelId, proxied, hints?.subzones) };
  return { rules: [] };
}

function missingTunnel(field: string, spec: NamesTunnel, ref: { kind: string; name: string; namespace?: string }) {
  return spec.tunnel ? [] : [`${field}: ${tunnelLabel(ref)} not found`];
}

function bindingRulesOf(spec: ExpandedTunnelBinding) {
  return bindingRules(spec.namespace, spec.subjects ?? [], spec.services ?? {}, spec.tunnel?.domain);
}

export const tunnelBindingRules: SourceKindRules<ExpandedTunnelBinding> = {
  definition: TunnelBindingKind,
  clusterScoped: false,
  getEach: true,
  // The default of every kind that claims hostnames: between teams, the older claim keeps a
  // hostname (src/domain/cloudflare/tunnels.ts claimOrder); going ahead needs priorityNamespaces.
  priority: (spec) => spec.priority ?? HOSTNAME_CLAIM_PRIORITY,
  credentialsRef: (spec) => spec.tunnel?.credentialsRef,
  credentialsOfTunnel: true,
  zone: (spec) => (spec.tunnelRef?.disableDNSUpdates ? undefined : spec.tunnel?.domain),
  dnsHostnames: (spec) => (spec.tunnelRef?.disableDNSUpdates ? undefined : hostnamesOf(bindingRulesOf(spec).rules)),
  anchor: (spec) => `tunnel:${spec.tunnel?.tunnelId ?? ''}`,
  validate(spec) {
    const ref = spec.tunnelRef;
    const named = { kind: ref.kind, name: ref.name, ...(ref.kind === 'Tunnel' ? { namespace: spec.namespace } : {}) };
    const missing = missingTunnel('tunnelRef', spec, named);
    if (missing.length) return missing;
    if (!(spec.subjects ?? []).length) return ['subjects: at least one Service'];
    return bindingRulesOf(spec).problems;
  },
  waitingFor: waitingForTunnel,
  statusFields(spec) {
    const rules = bindingRulesOf(spec).rules;
    return {
      hostnames: hostnamesOf(rules).join(','),
      services: rules.map((r) => ({ hostname: r.hostname ?? '', target: r.service })),
    };
  },
  targets: tunnelTargets,
  contribution: (spec, target, _object, hints) => tunnelContribution(spec, target, bindingRulesOf(spec), true, hints),
};

function ingressRulesOf(spec: ExpandedIngressClassConfig) {
  return ingressRules(spec.ingresses ?? [], spec.services ?? {}, {
    protocol: spec.defaultProtocol ?? 'http',
    originRequest: spec.defaultOriginRequest as Record<string, unknown> | undefined,
  });
}

/** How many skipped rules and unread annotations a class config's status names. */
const MAX_SKIPPED_SHOWN = 10;

const firstSkips = (notes: string[]) =>
  notes.length > MAX_SKIPPED_SHOWN
    ? [...notes.slice(0, MAX_SKIPPED_SHOWN), `and ${notes.length - MAX_SKIPPED_SHOWN} more`]
    : notes;

/**
 * What of a class's Ingresses is not turned into rules or read, and why (the first few, for its
 * status) — an IngressClass whose parameters mean another config first.
 */
export function ingressSkips(spec: ExpandedIngressClassConfig): string[] {
  return firstSkips([...(spec.classNotes ?? []), ...ingressRulesOf(spec).notes]);
}

export const tunnelIngressClassConfigRules: SourceKindRules<ExpandedIngressClassConfig> = {
  definition: TunnelIngressClassConfigKind,
  clusterScoped: false,
  getEach: true,
  states: { ready: 'active', syncing: 'pending', error: 'error' },
  priority: () => HOSTNAME_CLAIM_PRIORITY,
  credentialsRef: (spec) => spec.tunnel?.credentialsRef,
  credentialsOfTunnel: true,
  zone: (spec) => ((spec.dnsManagement ?? 'Automatic') === 'Automatic' ? spec.tunnel?.domain : undefined),
  dnsHostnames: (spec) =>
    (spec.dnsManagement ?? 'Automatic') === 'Automatic' ? ingressDnsHostnames(ingressRulesOf(spec)) : undefined,
  anchor: (spec) => `tunnel:${spec.tunnel?.tunnelId ?? ''}`,
  validate(spec) {
    const ref = spec.tunnelRef;
    const problems: string[] = [];
    if (ref.kind === 'ClusterTunnel' && ref.namespace)
      problems.push('spec.tunnelRef.namespace: a ClusterTunnel has no namespace (remove it)');
    const named = {
      kind: ref.kind,
      name: ref.name,
      ...(ref.kind === 'Tunnel' ? { namespace: ref.namespace || spec.namespace } : {}),
    };
    return [...problems, ...missingTunnel('spec.tunnelRef', spec, named)];
  },
  waitingFor: waitingForTunnel,
  statusFields(spec) {
    const skipped = spec.ingressNotes ?? ingressSkips(spec);
    return {
      ingressCount: spec.ingressCount ?? (spec.ingresses ?? []).length,
      skipped: skipped.length ? skipped : null,
      ...(spec.tunnel?.tunnelId ? { tunnelId: spec.tunnel.tunnelId } : {}),
    };
  },
  targets: tunnelTargets,
  contribution(spec, target, _object, hints) {
    const of = ingressRulesOf(spec);
    const tunnelId = spec.tunnel?.tunnelId;
    if (target.resourceType !== 'TunnelDNS' || !tunnelId)
      return tunnelContribution(spec, target, of, spec.dnsProxied ?? true, hints);
    // An Ingress's `cloudflare.com/disable-dns` and `dns-proxied` (the original's annotations).
    const hosts = ingressDnsHostnames(of);
    const proxiedOf = (h: string) => of.dns.proxied[h] ?? spec.dnsProxied ?? true;
    return {
      entries: [true, false].flatMap((proxied) =>
        tunnelDnsRecords(
          hosts.filter((h) => proxiedOf(h) === proxied),
          target.zone,
          tunnelId,
          proxied,
          hints?.subzones,
        ),
      ),
    };
  },
};

/** The hostnames of a class's Ingresses that get a CNAME (not those whose Ingress says `cloudflare.com/disable-dns`). */
function ingressDnsHostnames(of: ReturnType<typeof ingressRulesOf>): string[] {
  return hostnamesOf(of.rules).filter((h) => !of.dns.disabled.includes(h));
}

/** A TunnelGatewayClassConfig as the sync reads it: its spec, the Gateways of its class, their HTTPRoutes. */
export type ExpandedGatewayClassConfig = TunnelGatewayClassConfigSpec &
  NamesTunnel & {
    /** The Gateways whose GatewayClass's parametersRef names this config (in `watchNamespaces` when set). */
    gateways: GatewayFacts[];
    /** The HTTPRoutes that may attach to them. */
    routes: HTTPRouteFacts[];
    /** Their backends' Services by `namespace/name`. */
    services: Record<string, ServiceFacts>;
    /** The labels of the routes' namespaces, when a listener selects namespaces by label. */
    namespaceLabels?: Record<string, Record<string, string>>;
    /** Counts kept in the source workflow's slim view (which leaves the objects out). */
    gatewayCount?: number;
    routeCount?: number;
    /** Classes naming a config of this name that mean another one (./../tunnels.ts classParametersNamespace). */
    classNotes?: string[];
    /** What of the routes is not routed and why (a route attached to no listener…), in the slim view (routeSkips). */
    routeNotes?: string[];
  };

function routeRulesOf(spec: ExpandedGatewayClassConfig) {
  return httpRouteRules(
    spec.routes ?? [],
    spec.gateways ?? [],
    spec.services ?? {},
    { originRequest: spec.defaultOriginRequest as Record<string, unknown> | undefined },
    spec.namespaceLabels ?? {},
  );
}

/**
 * What of the HTTPRoutes of a class is not turned into rules, and why (the first few, for its
 * status): a route attached to no listener, a rule without a Service backend…
 */
export function routeSkips(spec: ExpandedGatewayClassConfig): string[] {
  return firstSkips([...(spec.classNotes ?? []), ...routeRulesOf(spec).notes]);
}

/** How many HTTPRoutes attach to a listener of the class's Gateways. */
export function attachedRoutes(spec: ExpandedGatewayClassConfig): number {
  return routeRulesOf(spec).attached;
}

export const tunnelGatewayClassConfigRules: SourceKindRules<ExpandedGatewayClassConfig> = {
  ...(tunnelIngressClassConfigRules as unknown as SourceKindRules<ExpandedGatewayClassConfig>),
  definition: TunnelGatewayClassConfigKind,
  statusFields(spec) {
    const skipped = spec.routeNotes ?? routeSkips(spec);
    return {
      gatewayCount: spec.gatewayCount ?? (spec.gateways ?? []).length,
      routeCount: spec.routeCount ?? attachedRoutes(spec),
      skipped: skipped.length ? skipped : null,
      ...(spec.tunnel?.tunnelId ? { tunnelId: spec.tunnel.tunnelId } : {}),
    };
  },
  dnsHostnames: (spec) =>
    (spec.dnsManagement ?? 'Automatic') === 'Automatic' ? hostnamesOf(routeRulesOf(spec).rules) : undefined,
  contribution: (spec, target, _object, hints) =>
    tunnelContribution(spec, target, routeRulesOf(spec), spec.dnsProxied ?? true, hints),
};
