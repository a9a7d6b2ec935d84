/**
 * Tunnel configuration, decided purely. Many objects feed one tunnel's remote configuration —
 * the Tunnel's (or ClusterTunnel's) own settings at priority 10, TunnelBindings, the Ingresses
 * of a TunnelIngressClassConfig and the HTTPRoutes of a TunnelGatewayClassConfig at 100 — and it
 * is written whole, with one PUT of
 * `cfd_tunnel/{id}/configurations`: ingress rules have no field for a marker, so the whole
 * configuration of a managed tunnel belongs to the operator.
 *
 * Rules are deduplicated on (hostname, path) by `claimOrder`: the lowest priority keeps a key,
 * and between equal priorities the oldest claim — the creation time of the object that asked for
 * the rule (the binding, the Ingress, the HTTPRoute), not of the source that gathered it — so a
 * newcomer never takes a hostname by being gathered by an older class config or by its kind
 * alone. A later claim wanting something else there is a conflict, reported with both objects
 * named. Rules are ordered most specific first
 * (a path before none, a longer path first, an exact hostname before a wildcard) so cloudflared,
 * which takes the first match, sends each request where the most specific rule says; the
 * catch-all (`fallbackTarget`, default `http_status:404`) is last.
 *
 * The facts a source refers to (the Tunnel it names, the Services behind its rules, the
 * Ingresses of a class) are gathered by an activity (src/activities/cloudflare/expand.ts) into
 * the source's expanded spec; from there on everything here is pure.
 */
import type { Conflict } from './merge.js';
import type { DnsRecordItem } from './items.js';
import { type RegisteredSource, orderSources } from './aggregate.js';
import { parseRefString, refString } from './markers.js';
import { zoneAllowed } from './credentials-use.js';
import { parseGoDuration } from '../duration.js';
import type { EventSpec } from '../events.js';
import { DEFAULT_CREDENTIALS_NAMESPACE } from '../../api/cloudflare.js';

/** One rule of cloudflared's `ingress` list, in Cloudflare's wire shape. */
export interface TunnelIngressRule {
  hostname?: string;
  path?: string;
  service: string;
  originRequest?: Record<string, unknown>;
}

/**
 * What a Tunnel's own spec sets for its whole configuration. Not WARP routing: Cloudflare routes
 * WARP traffic to a tunnel once a private network route targets it, and its configuration no
 * longer has a `warp-routing` field (gone from the API schema; cloudflared ignores it since 2023.9).
 */
export interface TunnelSettings {
  fallbackTarget: string;
  originRequest?: Record<string, unknown>;
}

/**
 * The object that asked for a run of a source's rules and when it was created: an Ingress of a
 * class config, an HTTPRoute of a Gateway class config. `count` rules in order, from where the
 * previous run ended; rules no run covers are claimed by the source itself at its creation time.
 */
export interface RuleClaim {
  kind: string;
  namespace: string;
  name: string;
  /** Its UID: the Events about it are found by it (`kubectl describe`). */
  uid?: string;
  /** Its creationTimestamp (RFC 3339, UTC). */
  since: string;
  count: number;
}

/** What one source contributes to a tunnel configuration. */
export interface TunnelContribution {
  rules: TunnelIngressRule[];
  settings?: TunnelSettings;
  /** Who asked for the rules, when not the source itself (class configs gather other teams' objects). */
  claims?: RuleClaim[];
}

/** The Tunnel or ClusterTunnel a source names, as the expansion found it. */
export interface TunnelFacts {
  kind: 'Tunnel' | 'ClusterTunnel';
  name: string;
  namespace?: string;
  /** Set once the Tunnel's workflow has created or adopted it (its `status.tunnelId`). */
  tunnelId?: string;
  /** The Tunnel's credentials (its `spec.cloudflare.credentialsRef`), which its dependents write with. */
  credentialsRef?: string;
  /** The Tunnel's zone (`spec.cloudflare.domain`): where the hostnames' CNAMEs go. */
  domain?: string;
  /** That zone's ID when the Tunnel gives it (`spec.cloudflare.zoneId`): no lookup. */
  zoneId?: string;
}

export interface ServicePortFacts {
  name?: string;
  port: number;
  protocol?: string;
  appProtocol?: string;
}

/** A Service's ports (null: the Service does not exist). */
export type ServiceFacts = { ports: ServicePortFacts[] } | null;

export const DEFAULT_FALLBACK_TARGET = 'http_status:404';
/** Where a tunnel's hostnames point: `<tunnelId>.cfargotunnel.com`. */
export const tunnelCname = (tunnelId: string) => `${tunnelId}.cfargotunnel.com`;

/** `rule <hostname> <path>`: the (hostname, path) key rules are deduplicated on. */
export function ruleKey(rule: Pick<TunnelIngressRule, 'hostname' | 'path'>): string {
  return `rule ${rule.hostname ?? '*'} ${rule.path ?? ''}`.trimEnd();
}

const isCatchAll = (r: TunnelIngressRule) => !r.hostname && !r.path;

/** Most specific first: a path before none, a longer path first, an exact host before a wildcard, then by name. */
export function compareRules(a: TunnelIngressRule, b: TunnelIngressRule): number {
  const pa = a.path ?? '';
  const pb = b.path ?? '';
  if (!!pa !== !!pb) return pa ? -1 : 1;
  if (pa.length !== pb.length) return pb.length - pa.length;
  const wa = (a.hostname ?? '').startsWith('*') || !a.hostname;
  const wb = (b.hostname ?? '').startsWith('*') || !b.hostname;
  if (wa !== wb) return wa ? 1 : -1;
  const ha = a.hostname ?? '';
  const hb = b.hostname ?? '';
  if (ha !== hb) return ha < hb ? -1 : 1;
  return pa < pb ? -1 : pa > pb ? 1 : 0;
}

/** The configuration as Cloudflare stores it (`config` of the PUT and GET). */
export interface TunnelConfig {
  ingress: TunnelIngressRule[];
  originRequest?: Record<string, unknown>;
}

/** An object that asks for a tunnel rule: a source, or an Ingress or HTTPRoute a class config gathered. */
export interface Claimant {
  kind: string;
  namespace?: string;
  name: string;
  uid?: string;
}

/** `Ingress team-a/app`, `TunnelBinding team-b/web`: how a status or an Event names a claimant. */
export const claimantLabel = (c: Claimant) => `${c.kind} ${c.namespace ? `${c.namespace}/` : ''}${c.name}`;

/** A (hostname, path) two objects want differently: `claimant` (of source `owner`) lost it to `holder`. */
export interface HostnameConflict extends Conflict {
  /** The (hostname, path) key (`rule <hostname> <path>`). */
  rule: string;
  claimant: Claimant;
  holder: Claimant;
  /** The source that gathered the holder's rule. */
  holderOwner: string;
}

export interface AggregatedTunnel {
  config: TunnelConfig;
  /** Which source each rule came from (`rule …` key → source ref), for status and the Web UI. */
  owners: Map<string, string>;
  conflicts: Array<Conflict | HostnameConflict>;
}

/** One rule as a claim: who asked for it, at which priority, since when. */
export interface RuleClaimEntry {
  rule: TunnelIngressRule;
  /** The source's ref string. */
  owner: string;
  claimant: Claimant;
  priority: number;
  since: string;
}

/**
 * The order in which claims on one (hostname, path) are served, first wins: the lower priority
 * (a priority below a kind's default needs the credentials' `priorityNamespaces`), then the
 * older claim, then the source and the claimant by name (identical inputs, identical output).
 * Every kind that claims hostnames defaults to the same priority (100), so a default alone never
 * decides between two teams: age does.
 */
export function claimOrder(a: RuleClaimEntry, b: RuleClaimEntry): number {
  if (a.priority !== b.priority) return a.priority - b.priority;
  if (a.since !== b.since) return a.since < b.since ? -1 : 1;
  if (a.owner !== b.owner) return a.owner < b.owner ? -1 : 1;
  const ca = claimantLabel(a.claimant);
  const cb = claimantLabel(b.claimant);
  return ca < cb ? -1 : ca > cb ? 1 : 0;
}

/** Every rule of a source as a claim, each with the object that asked for it. */
export function claimsOf(source: RegisteredSource<TunnelContribution>): RuleClaimEntry[] {
  const owner = refString(source.ref);
  const rules = source.config.rules ?? [];
  const out: RuleClaimEntry[] = [];
  let i = 0;
  for (const run of source.config.claims ?? []) {
    const claimant = { kind: run.kind, namespace: run.namespace, name: run.name, ...(run.uid ? { uid: run.uid } : {}) };
    for (const rule of rules.slice(i, i + run.count))
      out.push({ rule, owner, claimant, priority: source.priority, since: run.since || source.createdAt });
    i += run.count;
  }
  for (const rule of rules.slice(i))
    out.push({
      rule,
      owner,
      claimant: { ...source.ref, uid: source.uid },
      priority: source.priority,
      since: source.createdAt,
    });
  return out;
}

/** The contribution with only the rules `keep` keeps, each still claimed by the object that asked for it. */
export function keepRules(
  contribution: TunnelContribution,
  keep: (rule: TunnelIngressRule) => boolean,
): TunnelContribution {
  const rules = contribution.rules ?? [];
  const claims: RuleClaim[] = [];
  let i = 0;
  for (const run of contribution.claims ?? []) {
    const count = rules.slice(i, i + run.count).filter(keep).length;
    if (count) claims.push({ ...run, count });
    i += run.count;
  }
  // Rules past the runs are the source's own: they stay past them.
  return {
    ...contribution,
    rules: rules.filter(keep),
    ...(contribution.claims ? { claims } : {}),
  };
}

const sameClaimant = (a: Claimant, b: Claimant) => claimantLabel(a) === claimantLabel(b);

/**
 * The one configuration the sources add up to. With no source left it is the catch-all alone
 * (what the original leaves behind when a tunnel's last source goes).
 */
export function aggregateTunnelConfig(sources: RegisteredSource[]): AggregatedTunnel {
  const ordered = orderSources(sources as RegisteredSource<TunnelContribution>[]);
  const settings = ordered.find((s) => s.config.settings)?.config.settings;
  const kept = new Map<string, RuleClaimEntry>();
  const conflicts: AggregatedTunnel['conflicts'] = [];
  const claims = ordered.flatMap(claimsOf);
  for (const c of claims.filter((c) => isCatchAll(c.rule)))
    conflicts.push({ owner: c.owner, key: 'the catch-all rule', heldBy: "the tunnel's fallbackTarget" });
  for (const c of claims.filter((c) => !isCatchAll(c.rule)).sort(claimOrder)) {
    const key = ruleKey(c.rule);
    const held = kept.get(key);
    if (!held) kept.set(key, c);
    // One object wanting one key twice is its own affair; two objects wanting it the same way agree.
    else if (!sameClaimant(held.claimant, c.claimant) && JSON.stringify(held.rule) !== JSON.stringify(c.rule)) {
      const own = (x: RuleClaimEntry) => claimantLabel(x.claimant) === claimantLabel(parseOwner(x.owner));
      conflicts.push({
        owner: c.owner,
        key: own(c) ? key : `${key} (${claimantLabel(c.claimant)})`,
        heldBy: own(held) ? held.owner : `${claimantLabel(held.claimant)} (${held.owner})`,
        rule: key,
        claimant: c.claimant,
        holder: held.claimant,
        holderOwner: held.owner,
      });
    }
  }
  const rules = [...kept.values()].map((k) => k.rule).sort(compareRules);
  const config: TunnelConfig = {
    ingress: [...rules, { service: settings?.fallbackTarget || DEFAULT_FALLBACK_TARGET }],
    ...(settings?.originRequest && Object.keys(settings.originRequest).length
      ? { originRequest: settings.originRequest }
      : {}),
  };
  return { config, owners: new Map([...kept].map(([k, v]) => [k, v.owner])), conflicts };
}

const parseOwner = (owner: string): Claimant => parseRefString(owner) ?? { kind: owner, name: '' };

/** The API version of a claimant's kind, for an Event about it (undefined: a kind we do not know). */
function claimantApiVersion(kind: string, sourceApiVersion: (kind: string) => string | undefined) {
  if (kind === 'Ingress') return 'networking.k8s.io/v1';
  if (kind === 'HTTPRoute') return `${GATEWAY_API_GROUP}/v1`;
  return sourceApiVersion(kind);
}

/** An Event about one object of a conflict: the object the Event is about, and the Event. */
export interface ConflictEvent {
  regarding: { apiVersion: string; kind: string; namespace?: string; name: string };
  event: EventSpec;
}

/** How a HostnameConflict is remembered between syncs (the SyncState's `aggregatedConfig.conflicts`). */
export const conflictLine = (c: Conflict) => `${c.owner}: ${c.key} held by ${c.heldBy}`;

/**
 * The `HostnameConflict` Events of a tunnel's conflicts that were not there at the last sync (a
 * resync adds none): a Warning on the object that lost, naming the holder, and a Normal one on
 * the holder, naming who else wants its hostname — both sides see it with `kubectl describe`.
 */
export function hostnameConflictEvents(
  conflicts: ReadonlyArray<Conflict | HostnameConflict>,
  reportedBefore: readonly string[],
  sourceApiVersion: (kind: string) => string | undefined,
): ConflictEvent[] {
  const before = new Set(reportedBefore);
  const out: ConflictEvent[] = [];
  const regarding = (c: Claimant) => {
    const apiVersion = claimantApiVersion(c.kind, sourceApiVersion);
    return apiVersion ? { apiVersion, ...c } : undefined;
  };
  for (const c of conflicts) {
    if (!('claimant' in c) || before.has(conflictLine(c))) continue;
    const key = c.rule;
    const loser = regarding(c.claimant);
    const winner = regarding(c.holder);
    if (loser)
      out.push({
        regarding: loser,
        event: {
          type: 'Warning',
          reason: 'HostnameConflict',
          action: 'Route',
          note: `${key} is held by ${claimantLabel(c.holder)} (${c.holderOwner}), which claimed it first or at a lower priority; this ${c.claimant.kind}'s rule for it is not in the tunnel`,
        },
      });
    if (winner)
      out.push({
        regarding: winner,
        event: {
          type: 'Normal',
          reason: 'HostnameConflict',
          action: 'Route',
          note: `${claimantLabel(c.claimant)} (${c.owner}) also wants ${key}; it stays with this ${c.holder.kind}`,
        },
      });
  }
  return out;
}

/** The hostnames of a source's rules, lower case, each once. */
export function hostnamesOf(rules: readonly TunnelIngressRule[]): string[] {
  return [...new Set(rules.map((r) => r.hostname?.toLowerCase()).filter((h): h is string => !!h))];
}

/** Whether `host` is the zone or under it (the zone's DNS can hold its record). */
export function inZone(host: string, zone: string): boolean {
  const h = host.toLowerCase();
  const z = zone.toLowerCase().replace(/\.$/, '');
  return h === z || h.endsWith(`.${z}`);
}

/**
 * The CNAMEs a tunnel source wants in one zone: each hostname of it → `<tunnelId>.cfargotunnel.com`,
 * except those under one of `subzones` (zones inside this one the credentials see: a hostname's
 * CNAME goes to the most specific zone that holds it).
 */
export function tunnelDnsRecords(
  hostnames: readonly string[],
  zone: string,
  tunnelId: string,
  proxied: boolean,
  subzones: readonly string[] = [],
): DnsRecordItem[] {
  return hostnames
    .filter((h) => inZone(h, zone) && !h.startsWith('*') && !subzones.some((s) => inZone(h, s)))
    .map((name) => ({ name, type: 'CNAME', content: tunnelCname(tunnelId), ttl: 1, proxied }));
}

/** The zone that holds `host`: the longest of `zones` it is in (undefined: none). */
export function zoneOfHostname(host: string, zones: readonly string[]): string | undefined {
  let best: string | undefined;
  for (const z of zones) if (inZone(host, z) && (!best || z.length > best.length)) best = z;
  return best;
}

/** A zone the hostnames of a tunnel source have CNAMEs in, and the zones inside it that hold others. */
export interface HostnameZone {
  zoneId: string;
  zoneName: string;
  /** Zones under this one holding some of the hostnames (their CNAMEs go there, not here). */
  subzones?: string[];
}

/** A hostname that gets no CNAME, and why (shown on the source's status). */
export interface UnplacedHostname {
  hostname: string;
  reason: string;
}

/**
 * Where each hostname's CNAME goes: the most specific zone the credentials see that holds it
 * (adyanth/cloudflare-operator#60: a tunnel's hostnames may span zones). A hostname no visible
 * zone holds, a wildcard, or one in a zone outside the credentials' `allowedZones` gets none, with
 * the reason — the tunnel's own zone included: a Tunnel's domain is no grant (issue 33, N2).
 */
export function placeHostnames(
  hostnames: readonly string[],
  zones: ReadonlyArray<{ id: string; name: string }>,
  rules: { credentials: string; allowedZones?: string[] },
): { zones: HostnameZone[]; unplaced: UnplacedHostname[] } {
  const names = zones.map((z) => z.name.toLowerCase());
  const used = new Map<string, HostnameZone>();
  const unplaced: UnplacedHostname[] = [];
  const allowed = (zone: string) => zoneAllowed(rules, zone);
  for (const hostname of hostnames) {
    if (hostname.startsWith('*')) {
      unplaced.push({ hostname, reason: 'a wildcard hostname gets no CNAME (make it with a DNSRecord)' });
      continue;
    }
    const zone = zoneOfHostname(hostname, names);
    if (!zone) {
      unplaced.push({
        hostname,
        reason: `no zone CloudflareCredentials ${rules.credentials} can see holds it`,
      });
      continue;
    }
    if (!allowed(zone)) {
      unplaced.push({
        hostname,
        reason: `zone ${zone} is not in spec.allowedZones of CloudflareCredentials ${rules.credentials}`,
      });
      continue;
    }
    if (!used.has(zone)) used.set(zone, { zoneId: zones[names.indexOf(zone)]!.id, zoneName: zone });
  }
  const placed = [...used.values()].sort((a, b) => (a.zoneName < b.zoneName ? -1 : a.zoneName > b.zoneName ? 1 : 0));
  for (const z of placed) {
    const inside = placed
      .filter((other) => other !== z && inZone(other.zoneName, z.zoneName))
      .map((other) => other.zoneName);
    if (inside.length) z.subzones = inside;
  }
  return { zones: placed, unplaced };
}

/**
 * What to look zones up by for `hostnames` (Cloudflare's `name=ends_with:` filter): each one's last
 * two labels, once. Every zone that can hold a hostname ends with them (a zone is at least a
 * registrable name; one under a public suffix such as `co.uk` is found by that suffix, filtered
 * after), so a placement costs a query per distinct suffix instead of a listing of the account.
 */
export function zoneSuffixes(hostnames: readonly string[]): string[] {
  const out = new Set<string>();
  for (const h of hostnames) {
    const labels = h.toLowerCase().replace(/\.$/, '').split('.');
    if (labels.length >= 2) out.add(labels.slice(-2).join('.'));
  }
  return [...out].sort();
}

/** How many hostnames without a CNAME a status names (the others are counted). */
export const MAX_UNPLACED_SHOWN = 10;

/** The status words for hostnames that get no CNAME (empty when every one gets its CNAME). */
export function unplacedMessage(unplaced: readonly UnplacedHostname[], count = unplaced.length): string {
  if (!count) return '';
  const shown = unplaced.slice(0, MAX_UNPLACED_SHOWN).map((u) => `${u.hostname} (${u.reason})`);
  const more = count > shown.length ? `, and ${count - shown.length} more` : '';
  return `no CNAME for ${shown.join(', ')}${more}`;
}

// ---------------------------------------------------------------------------------------------
// Rules from a TunnelBinding's subjects
// ---------------------------------------------------------------------------------------------

export interface BindingSubject {
  kind?: string;
  name: string;
  spec?: {
    fqdn?: string;
    protocol?: string;
    path?: string;
    target?: string;
    caPool?: string;
    noTlsVerify?: boolean;
    http2Origin?: boolean;
    proxyAddress?: string;
    proxyPort?: number;
    proxyType?: string;
  };
}

const BINDING_PROTOCOLS = new Set(['http', 'https', 'tcp', 'udp', 'ssh', 'smb', 'rdp']);

/** The original's default protocol for a Service port: 443 https, 139/445 smb, 3389 rdp, 22 ssh, UDP udp, else http. */
export function protocolForPort(p: ServicePortFacts): string {
  if (p.protocol === 'UDP') return 'udp';
  if (p.port === 443) return 'https';
  if (p.port === 139 || p.port === 445) return 'smb';
  if (p.port === 3389) return 'rdp';
  if (p.port === 22) return 'ssh';
  return 'http';
}

/** Where cloudflared finds a CA bundle of the tunnel's `originCaPool` Secret (mounted as the original mounts it). */
export const caPoolPath = (key: string) => `/etc/cloudflared/certs/${key}`;

/**
 * The rules of a TunnelBinding, and the problems of its subjects (each naming the field): a
 * subject needs its Service (for the default target) unless it sets `spec.target`, and a
 * hostname, its own `fqdn` or `<service>.<the tunnel's domain>`.
 */
export function bindingRules(
  namespace: string,
  subjects: readonly BindingSubject[],
  services: Readonly<Record<string, ServiceFacts>>,
  tunnelDomain: string | undefined,
): { rules: TunnelIngressRule[]; problems: string[] } {
  const rules: TunnelIngressRule[] = [];
  const problems: string[] = [];
  subjects.forEach((subject, i) => {
    const field = `subjects[${i}]`;
    const s = subject.spec ?? {};
    if ((subject.kind ?? 'Service') !== 'Service') {
      problems.push(`${field}.kind: only Service subjects are supported (got ${JSON.stringify(subject.kind)})`);
      return;
    }
    const hostname = (s.fqdn || (tunnelDomain ? `${subject.name}.${tunnelDomain}` : '')).toLowerCase();
    if (!hostname) {
      problems.push(`${field}.spec.fqdn: not set and the tunnel has no spec.cloudflare.domain to default it from`);
      return;
    }
    if (s.protocol && !BINDING_PROTOCOLS.has(s.protocol)) {
      problems.push(`${field}.spec.protocol: ${JSON.stringify(s.protocol)} is not one of ${[...BINDING_PROTOCOLS]}`);
      return;
    }
    let service = s.target;
    if (!service) {
      const svc = services[subject.name];
      if (!svc) {
        problems.push(`${field}: Service ${namespace}/${subject.name} not found (create it or set spec.target)`);
        return;
      }
      const port = svc.ports[0];
      if (!port) {
        problems.push(`${field}: Service ${namespace}/${subject.name} has no ports (add one or set spec.target)`);
        return;
      }
      service = `${s.protocol || protocolForPort(port)}://${subject.name}.${namespace}.svc:${port.port}`;
    }
    const originRequest: Record<string, unknown> = {
      ...(s.noTlsVerify ? { noTLSVerify: true } : {}),
      ...(s.http2Origin ? { http2Origin: true } : {}),
      ...(s.caPool ? { caPool: caPoolPath(s.caPool) } : {}),
      ...(s.proxyPort ? { proxyAddress: s.proxyAddress || '127.0.0.1', proxyPort: s.proxyPort } : {}),
      ...(s.proxyType ? { proxyType: s.proxyType } : {}),
    };
    rules.push({
      hostname,
      ...(s.path ? { path: s.path } : {}),
      service,
      ...(Object.keys(originRequest).length ? { originRequest } : {}),
    });
  });
  return { rules, problems };
}

// ---------------------------------------------------------------------------------------------
// Rules from Ingresses (through a TunnelIngressClassConfig)
// ---------------------------------------------------------------------------------------------

export interface IngressFacts {
  namespace: string;
  name: string;
  /** Its creationTimestamp (RFC 3339, UTC): the older Ingress keeps a hostname two of a class want. */
  createdAt?: string;
  uid?: string;
  annotations?: Record<string, string>;
  rules: Array<{
    host?: string;
    http?: {
      paths: Array<{
        path?: string;
        pathType?: string;
        backend: { service?: { name: string; port?: { number?: number; name?: string } } };
      }>;
    };
  }>;
}

/**
 * The namespace of the config a class's parameters name (a class config is namespaced), or why
 * they name none. An IngressClass's `parameters` with a `namespace` (scope Namespace) name that
 * namespace; without one (scope Cluster, the default) the original looked in its own namespace
 * (`--cluster-resource-namespace`, default cloudflare-operator-system), where only administrators
 * write, so they name the config there — never one of that name in whatever namespace asks. A
 * GatewayClass's `parametersRef` must name the namespace of a namespaced kind (the Gateway API's
 * rule, and the original refused one without).
 */
export function classParametersNamespace(
  classKind: 'IngressClass' | 'GatewayClass',
  ref: { namespace?: string; scope?: string },
): { namespace: string } | { problem: string } {
  // A namespace named is unambiguous (the apiserver checks it against `scope`; the original's
  // sample sets it without one).
  if (ref.namespace) return { namespace: ref.namespace };
  if (classKind === 'GatewayClass')
    return {
      problem: 'spec.parametersRef.namespace is not set (a TunnelGatewayClassConfig is namespaced: name its namespace)',
    };
  if (ref.scope === 'Namespace') return { problem: 'spec.parameters.scope is Namespace but no namespace is set' };
  return { namespace: DEFAULT_CREDENTIALS_NAMESPACE };
}

/** Annotation on an Ingress choosing the backend protocol (http, https, …) for all its rules. */
export const BACKEND_PROTOCOL_ANNOTATION = 'cloudflare-operator.io/backend-protocol';

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * An Ingress path as cloudflared's path regex: Exact `^/p$`, Prefix `^/p(/|$)` (and `/` no path at
 * all), ImplementationSpecific the path as written (cloudflared reads it as a regex).
 */
export function ingressPath(path: string | undefined, pathType: string | undefined): string | undefined {
  const p = path || '/';
  if (pathType === 'Exact') return `^${escapeRegex(p)}$`;
  if (pathType === 'ImplementationSpecific') return p === '/' ? undefined : p;
  const trimmed = p.replace(/\/+$/, '');
  return trimmed ? `^${escapeRegex(trimmed)}(/|$)` : undefined;
}

/** The `originRequest` durations: a Go duration in the CRD (`30s`), seconds on the wire. */
const DURATION_FIELDS = new Set(['connectTimeout', 'tlsTimeout', 'keepAliveTimeout', 'tcpKeepAlive']);

/** A Go duration (`30s`, `1m30s`, `500ms`) in seconds, as Cloudflare's schema types it; undefined if not one. */
export function durationSeconds(text: string): number | undefined {
  try {
    return parseGoDuration(text.trim()) / 1000;
  } catch {
    return undefined;
  }
}

/**
 * cloudflared's names and types for an `originRequest` of the CRDs (`defaultOriginRequest`): the
 * CRD spells `noTlsVerify`, names a CA Secret key, and writes durations as `30s`; Cloudflare's
 * schema has `noTLSVerify`, a path and seconds (numbers: what it answers back, so no rewrite).
 * A duration that is not one is left out (the CRD's pattern refuses it at admission).
 */
export function wireOriginRequest(request: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (!request) return undefined;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(request)) {
    if (v === undefined) continue;
    if (k === 'noTlsVerify') out.noTLSVerify = v;
    else if (k === 'caPool') out.caPool = caPoolPath(String(v));
    else if (DURATION_FIELDS.has(k) && typeof v === 'string') {
      const seconds = durationSeconds(v);
      if (seconds !== undefined) out[k] = seconds;
    } else out[k] = v;
  }
  return Object.keys(out).length ? out : undefined;
}

/** The original operator's Ingress annotations (`cloudflare.com/*`), read as it reads them. */
export const ORIGINAL_ANNOTATION_PREFIX = 'cloudflare.com/';
const A = (name: string) => `${ORIGINAL_ANNOTATION_PREFIX}${name}`;

/** The original's per-Ingress `originRequest` annotations: annotation → field and how it is read. */
const ORIGIN_ANNOTATIONS: ReadonlyArray<[string, string, 'bool' | 'string' | 'duration' | 'int' | 'port' | 'caPool']> =
  [
    [A('no-tls-verify'), 'noTLSVerify', 'bool'],
    [A('http2-origin'), 'http2Origin', 'bool'],
    [A('ca-pool'), 'caPool', 'caPool'],
    [A('proxy-address'), 'proxyAddress', 'string'],
    [A('proxy-port'), 'proxyPort', 'port'],
    [A('proxy-type'), 'proxyType', 'string'],
    [A('connect-timeout'), 'connectTimeout', 'duration'],
    [A('tls-timeout'), 'tlsTimeout', 'duration'],
    [A('keep-alive-timeout'), 'keepAliveTimeout', 'duration'],
    [A('keep-alive-connections'), 'keepAliveConnections', 'int'],
    [A('origin-server-name'), 'originServerName', 'string'],
    [A('http-host-header'), 'httpHostHeader', 'string'],
    [A('disable-chunked-encoding'), 'disableChunkedEncoding', 'bool'],
    [A('bastion-mode'), 'bastionMode', 'bool'],
  ];

/** Go's strconv.ParseBool. */
function parseBool(v: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  return undefined;
}

/** What an Ingress's `cloudflare.com/*` annotations say, and the ones whose value cannot be read (named). */
export interface IngressAnnotations {
  /** `cloudflare.com/protocol`, or `cloudflare.com/protocol-<port>` for that port. */
  protocolFor(port: number): string | undefined;
  /** Its `originRequest` overrides (over the class's `defaultOriginRequest`). */
  originRequest: Record<string, unknown>;
  /** `cloudflare.com/disable-dns: "true"`: its hostnames get no CNAME. */
  disableDns: boolean;
  /** `cloudflare.com/dns-proxied`: its CNAMEs' `proxied`, over the class's `dnsProxied`. */
  dnsProxied?: boolean;
  problems: string[];
}

/**
 * The original's Ingress annotations, as its ingress controller reads them
 * (internal/controller/ingress/annotations.go, converters.go, dns.go): the protocol (the Ingress's
 * `protocol`, then `protocol-<port>`), the origin settings over the class's defaults, and DNS. A
 * value the original could not parse it ignored in silence; here it is named in a problem.
 */
export function readIngressAnnotations(annotations: Readonly<Record<string, string>> | undefined): IngressAnnotations {
  const a = annotations ?? {};
  const problems: string[] = [];
  const bad = (key: string, what: string) =>
    problems.push(`annotation ${key}: ${JSON.stringify(a[key])} is not ${what} (ignored)`);
  const protocol = (key: string) => {
    const v = a[key];
    if (!v) return undefined;
    if (!(INGRESS_PROTOCOLS as readonly string[]).includes(v)) {
      bad(key, `one of ${INGRESS_PROTOCOLS.join(', ')}`);
      return undefined;
    }
    return v;
  };
  const all = protocol(A('protocol'));
  const perPort = new Map<number, string>();
  for (const key of Object.keys(a)) {
    const port = /^cloudflare\.com\/protocol-(\d+)$/.exec(key)?.[1];
    const p = port ? protocol(key) : undefined;
    if (port && p) perPort.set(Number(port), p);
  }
  const originRequest: Record<string, unknown> = {};
  for (const [key, field, type] of ORIGIN_ANNOTATIONS) {
    const v = a[key];
    if (v === undefined) continue;
    if (type === 'bool') {
      const b = parseBool(v);
      if (b === undefined) bad(key, 'true or false');
      else originRequest[field] = b;
    } else if (type === 'duration') {
      const s = durationSeconds(v);
      if (s === undefined) bad(key, 'a duration (30s, 1m30s)');
      else originRequest[field] = s;
    } else if (type === 'int' || type === 'port') {
      const n = /^\d+$/.test(v) ? Number(v) : NaN;
      if (!Number.isSafeInteger(n) || (type === 'port' && n > 65535)) bad(key, type === 'port' ? 'a port' : 'a number');
      else originRequest[field] = n;
    } else if (type === 'caPool') originRequest[field] = caPoolPath(v);
    else originRequest[field] = v;
  }
  const flag = (key: string) => {
    const v = a[key];
    if (v === undefined) return undefined;
    const b = parseBool(v);
    if (b === undefined) bad(key, 'true or false');
    return b;
  };
  const disableDns = flag(A('disable-dns')) === true;
  const dnsProxied = flag(A('dns-proxied'));
  return {
    protocolFor: (port) => all ?? perPort.get(port),
    originRequest,
    disableDns,
    ...(dnsProxied !== undefined ? { dnsProxied } : {}),
    problems,
  };
}

/** The protocols an Ingress annotation may name (cloudflared's service schemes, and the original's `h2mux`). */
export const INGRESS_PROTOCOLS = ['http', 'https', 'tcp', 'udp', 'ssh', 'rdp', 'smb', 'ws', 'wss', 'h2mux'] as const;

/** What the Ingresses of a class ask of their hostnames' CNAMEs (the `cloudflare.com/` DNS annotations). */
export interface IngressDns {
  /** Hostnames whose Ingress says `disable-dns`. */
  disabled: string[];
  /** Hostnames whose Ingress sets `dns-proxied`, and to what. */
  proxied: Record<string, boolean>;
}

/**
 * The rules of the Ingresses of a class, each run claimed by its Ingress (so two Ingresses of one
 * class wanting one hostname are decided like any two claimants: the older keeps it). A rule
 * without a host is skipped (its hostname would be the tunnel's catch-all, which belongs to the
 * Tunnel), and so is a backend whose Service or named port does not exist; each skip is a note
 * for the class config's status.
 */
export function ingressRules(
  ingresses: readonly IngressFacts[],
  services: Readonly<Record<string, ServiceFacts>>,
  defaults: { protocol: string; originRequest?: Record<string, unknown> },
): { rules: TunnelIngressRule[]; notes: string[]; dns: IngressDns; claims: RuleClaim[] } {
  const rules: TunnelIngressRule[] = [];
  const notes: string[] = [];
  const dns: IngressDns = { disabled: [], proxied: {} };
  const claims: RuleClaim[] = [];
  const classOriginRequest = wireOriginRequest(defaults.originRequest);
  for (const ing of ingresses) {
    const start = rules.length;
    const where = `Ingress ${ing.namespace}/${ing.name}`;
    const annotated = ing.annotations?.[BACKEND_PROTOCOL_ANNOTATION];
    const original = readIngressAnnotations(ing.annotations);
    for (const p of original.problems) notes.push(`${where}: ${p}`);
    const overrides = Object.keys(original.originRequest).length ? original.originRequest : undefined;
    const originRequest = overrides ? { ...classOriginRequest, ...overrides } : classOriginRequest;
    ing.rules.forEach((r, i) => {
      if (!r.host) {
        notes.push(`${where} rules[${i}]: no host (skipped)`);
        return;
      }
      const host = r.host.toLowerCase();
      if (original.disableDns) dns.disabled.push(host);
      else if (original.dnsProxied !== undefined) dns.proxied[host] = original.dnsProxied;
      for (const [j, p] of (r.http?.paths ?? []).entries()) {
        const backend = p.backend.service;
        if (!backend) {
          notes.push(`${where} rules[${i}].http.paths[${j}]: not a Service backend (skipped)`);
          continue;
        }
        const svc = services[`${ing.namespace}/${backend.name}`];
        const named = backend.port?.name;
        const port = named ? svc?.ports.find((x) => x.name === named) : undefined;
        const number = backend.port?.number ?? port?.port;
        if (number === undefined) {
          notes.push(
            `${where} rules[${i}].http.paths[${j}]: ${named ? `port ${named} of ` : ''}Service ${ing.namespace}/${backend.name} not found (skipped)`,
          );
          continue;
        }
        const known = port ?? svc?.ports.find((x) => x.port === number);
        const protocol =
          annotated ||
          original.protocolFor(number) ||
          known?.appProtocol ||
          (known?.name && ['http', 'https', 'h2c', 'ws', 'wss'].includes(known.name) ? known.name : undefined) ||
          defaults.protocol;
        const path = ingressPath(p.path, p.pathType);
        const scheme = protocol === 'h2c' || protocol === 'h2mux' ? 'http' : protocol;
        rules.push({
          hostname: host,
          ...(path ? { path } : {}),
          service: `${scheme}://${backend.name}.${ing.namespace}.svc:${number}`,
          ...(originRequest ? { originRequest } : {}),
        });
      }
    });
    if (rules.length > start)
      claims.push({
        kind: 'Ingress',
        namespace: ing.namespace,
        name: ing.name,
        ...(ing.uid ? { uid: ing.uid } : {}),
        since: ing.createdAt ?? '',
        count: rules.length - start,
      });
  }
  return { rules, notes, dns, claims };
}

// ---------------------------------------------------------------------------------------------
// Rules from Gateway API HTTPRoutes (through a TunnelGatewayClassConfig)
// ---------------------------------------------------------------------------------------------

export const GATEWAY_API_GROUP = 'gateway.networking.k8s.io';

/** A Kubernetes label selector (`matchLabels`, `matchExpressions`). */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>;
}

/** Whether `labels` match `selector` as the apiserver decides (an empty selector matches everything). */
export function matchesSelector(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.prototype.hasOwnProperty.call(labels, e.key);
    const inValues = has && (e.values ?? []).includes(labels[e.key]!);
    if (e.operator === 'In' && !inValues) return false;
    if (e.operator === 'NotIn' && inValues) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
    if (!['In', 'NotIn', 'Exists', 'DoesNotExist'].includes(e.operator)) return false;
  }
  return true;
}

/** A Gateway listener, as far as route attachment reads it. */
export interface ListenerFacts {
  name: string;
  hostname?: string;
  port?: number;
  protocol?: string;
  allowedRoutes?: {
    namespaces?: { from?: string; selector?: LabelSelector };
    kinds?: Array<{ group?: string; kind: string }>;
  };
}

export interface GatewayFacts {
  namespace: string;
  name: string;
  listeners: ListenerFacts[];
}

export interface HTTPRouteFacts {
  namespace: string;
  name: string;
  /** Its creationTimestamp (RFC 3339, UTC): the older route keeps a hostname two want. */
  createdAt?: string;
  uid?: string;
  hostnames?: string[];
  parentRefs: Array<{
    group?: string;
    kind?: string;
    namespace?: string;
    name: string;
    sectionName?: string;
    port?: number;
  }>;
  rules: Array<{
    matches?: Array<{ path?: { type?: string; value?: string } }>;
    backendRefs?: Array<{ group?: string; kind?: string; name: string; namespace?: string; port?: number }>;
  }>;
}

/**
 * The hostname a route hostname and a listener hostname have in common (undefined: none), as
 * the Gateway API defines it: equal names; a wildcard listener `*.example.com` takes any name
 * under example.com (one label or more: `a.example.com`, `a.b.example.com`, `*.a.example.com`);
 * a wildcard route `*.example.com` on a listener under example.com becomes the listener's name.
 * A listener without a hostname takes every name.
 */
export function intersectHostname(listener: string | undefined, route: string): string | undefined {
  const r = route.toLowerCase();
  if (!listener) return r;
  const l = listener.toLowerCase();
  if (l === r) return r;
  if (l.startsWith('*.') && r.endsWith(l.slice(1))) return r;
  if (r.startsWith('*.') && l.endsWith(r.slice(1))) return l;
  return undefined;
}

/** Whether the listener accepts HTTPRoutes: its `allowedRoutes.kinds`, else its protocol (HTTP, HTTPS). */
function acceptsHTTPRoute(l: ListenerFacts): boolean {
  const kinds = l.allowedRoutes?.kinds;
  if (kinds?.length)
    return kinds.some((k) => (k.group ?? GATEWAY_API_GROUP) === GATEWAY_API_GROUP && k.kind === 'HTTPRoute');
  return !l.protocol || l.protocol === 'HTTP' || l.protocol === 'HTTPS';
}

/** Why the listener does not take routes of `namespace` (undefined: it does). `from` defaults to Same. */
function namespaceRefusal(
  l: ListenerFacts,
  gateway: GatewayFacts,
  namespace: string,
  labels: Readonly<Record<string, Record<string, string>>>,
): string | undefined {
  const from = l.allowedRoutes?.namespaces?.from ?? 'Same';
  if (from === 'All') return undefined;
  if (from === 'Same')
    return namespace === gateway.namespace ? undefined : `allowedRoutes.namespaces.from is Same (${gateway.namespace})`;
  if (from === 'Selector') {
    const selector = l.allowedRoutes?.namespaces?.selector;
    return selector && matchesSelector(selector, labels[namespace] ?? {})
      ? undefined
      : `namespace ${namespace} does not match allowedRoutes.namespaces.selector`;
  }
  return `allowedRoutes.namespaces.from ${JSON.stringify(from)} is not All, Same or Selector`;
}

/**
 * Where a route attaches among the class's Gateways, as the Gateway API specifies: each
 * parentRef naming one of them (its `sectionName` and `port` narrow the listeners) attaches to
 * the listeners that accept HTTPRoutes from the route's namespace (`allowedRoutes`) and share a
 * hostname with it; its hostnames are then the intersections. `refusals` say why a listener of a
 * Gateway it names did not take it; a route naming none of the Gateways is not ours (`ours` false).
 */
export function routeAttachment(
  route: HTTPRouteFacts,
  gateways: ReadonlyMap<string, GatewayFacts>,
  namespaceLabels: Readonly<Record<string, Record<string, string>>> = {},
): { ours: boolean; attached: boolean; hostnames: string[]; refusals: string[] } {
  const hostnames = new Set<string>();
  const refusals: string[] = [];
  let ours = false;
  let attached = false;
  for (const p of route.parentRefs) {
    if ((p.group ?? GATEWAY_API_GROUP) !== GATEWAY_API_GROUP || (p.kind ?? 'Gateway') !== 'Gateway') continue;
    const gateway = gateways.get(`${p.namespace ?? route.namespace}/${p.name}`);
    if (!gateway) continue;
    ours = true;
    const where = `Gateway ${gateway.namespace}/${gateway.name}`;
    const listeners = gateway.listeners.filter(
      (l) => (!p.sectionName || l.name === p.sectionName) && (p.port === undefined || l.port === p.port),
    );
    if (!listeners.length)
      refusals.push(
        `${where} has no listener${p.sectionName ? ` named ${p.sectionName}` : ''}${p.port !== undefined ? ` on port ${p.port}` : ''}`,
      );
    for (const l of listeners) {
      const listener = `listener ${l.name} of ${where}`;
      if (!acceptsHTTPRoute(l)) {
        refusals.push(`${listener} does not allow HTTPRoutes (allowedRoutes.kinds or protocol ${l.protocol})`);
        continue;
      }
      const refused = namespaceRefusal(l, gateway, route.namespace, namespaceLabels);
      if (refused) {
        refusals.push(`${listener} does not allow routes from namespace ${route.namespace}: ${refused}`);
        continue;
      }
      if (!route.hostnames?.length) {
        attached = true;
        if (l.hostname) hostnames.add(l.hostname.toLowerCase());
        continue;
      }
      const common = route.hostnames.map((h) => intersectHostname(l.hostname, h)).filter((h): h is string => !!h);
      if (!common.length) {
        refusals.push(`no hostname of the route is within ${listener}'s hostname ${l.hostname}`);
        continue;
      }
      attached = true;
      for (const h of common) hostnames.add(h);
    }
  }
  return { ours, attached, hostnames: [...hostnames], refusals };
}

/** A path match as cloudflared's path regex: PathPrefix `^/p(/|$)` (and `/` no path), Exact `^/p$`, RegularExpression as written. */
export function gatewayPath(match: { type?: string; value?: string } | undefined): string | undefined {
  const type = match?.type ?? 'PathPrefix';
  const value = match?.value ?? '/';
  if (type === 'Exact') return `^${escapeRegex(value)}$`;
  if (type === 'RegularExpression') return value;
  const trimmed = value.replace(/\/+$/, '');
  return trimmed ? `^${escapeRegex(trimmed)}(/|$)` : undefined;
}

/**
 * The rules of the HTTPRoutes attached to a class's Gateways (`routeAttachment`): each hostname
 * the route shares with the listeners it attaches to (or, without any of its own, theirs) × each
 * match → its first Service backend, each run claimed by its route. A route that names a Gateway
 * of the class but attaches to none of its listeners gets no rule, with a note saying why; so do
 * a route or rule that cannot be served (no hostname, no Service backend, a backend in another
 * namespace, which needs a ReferenceGrant).
 */
export function httpRouteRules(
  routes: readonly HTTPRouteFacts[],
  gateways: readonly GatewayFacts[],
  services: Readonly<Record<string, ServiceFacts>>,
  defaults: { originRequest?: Record<string, unknown> },
  namespaceLabels: Readonly<Record<string, Record<string, string>>> = {},
): { rules: TunnelIngressRule[]; notes: string[]; attached: number; claims: RuleClaim[] } {
  const byName = new Map(gateways.map((g) => [`${g.namespace}/${g.name}`, g]));
  const originRequest = wireOriginRequest(defaults.originRequest);
  const rules: TunnelIngressRule[] = [];
  const notes: string[] = [];
  const claims: RuleClaim[] = [];
  let attached = 0;
  for (const route of routes) {
    const where = `HTTPRoute ${route.namespace}/${route.name}`;
    const attachment = routeAttachment(route, byName, namespaceLabels);
    if (!attachment.ours) continue;
    if (!attachment.attached) {
      notes.push(`${where}: not attached (${attachment.refusals.join('; ')})`);
      continue;
    }
    attached++;
    const hostnames = attachment.hostnames;
    if (!hostnames.length) {
      notes.push(`${where}: no hostname (neither the route nor its listeners name one; skipped)`);
      continue;
    }
    const start = rules.length;
    route.rules.forEach((rule, i) => {
      const backend = (rule.backendRefs ?? []).find(
        (b) => (b.group ?? '') === '' && (b.kind ?? 'Service') === 'Service',
      );
      if (!backend) {
        notes.push(`${where} rules[${i}]: no Service backend (skipped)`);
        return;
      }
      const ns = backend.namespace ?? route.namespace;
      if (ns !== route.namespace) {
        notes.push(
          `${where} rules[${i}]: a backend in namespace ${ns} needs a ReferenceGrant, not supported (skipped)`,
        );
        return;
      }
      if (backend.port === undefined) {
        notes.push(`${where} rules[${i}]: backend ${backend.name} has no port (skipped)`);
        return;
      }
      const svc = services[`${ns}/${backend.name}`];
      const known = svc?.ports.find((p) => p.port === backend.port);
      const protocol = known?.appProtocol === 'https' || known?.name === 'https' ? 'https' : 'http';
      const service = `${protocol}://${backend.name}.${ns}.svc:${backend.port}`;
      for (const match of rule.matches?.length ? rule.matches : [undefined]) {
        const path = gatewayPath(match?.path);
        for (const hostname of hostnames)
          rules.push({ hostname, ...(path ? { path } : {}), service, ...(originRequest ? { originRequest } : {}) });
      }
    });
    if (rules.length > start)
      claims.push({
        kind: 'HTTPRoute',
        namespace: route.namespace,
        name: route.name,
        ...(route.uid ? { uid: route.uid } : {}),
        since: route.createdAt ?? '',
        count: rules.length - start,
      });
  }
  return { rules, notes, attached, claims };
}
