/**
 * What the sync needs to know about one source kind, decided purely. Each kind (or family of
 * kinds) has one module in this folder; ./index.ts is the table of them. The source's workflow
 * uses these rules to register; the target's sync re-derives the contribution from a fresh read.
 */
import type { KindDefinition } from '../../../api/kind.js';
import type { Contribution } from '../aggregate.js';
import type { SyncTarget } from '../targets.js';
import type { HostnameZone } from '../tunnels.js';

/** What a source resolves before it knows its targets. */
export interface ResolvedPlace {
  accountId: string;
  /** Set when the kind names a zone (`zoneOf`, or the credentials' default domain). */
  zoneId?: string;
  /** The zone's name, set with `zoneId`. */
  zoneName?: string;
  /** The tunnel the source configures: created or adopted by a Tunnel's own workflow (`lifecycle`). */
  tunnelId?: string;
  /**
   * The zones its hostnames' CNAMEs go to (`dnsHostnames`), each the most specific zone the
   * credentials see that holds them; unset for runs recorded before (one zone: `zoneId`).
   */
  dnsZones?: HostnameZone[];
}

/** What a source's registration with one target says besides its spec (read with it by the sync). */
export interface RegistrationHints {
  /** TunnelDNS: zones inside the target's zone that hold some of the source's hostnames. */
  subzones?: string[];
}

/** What validation may know besides the spec: the cluster id every marker carries. */
export interface ValidationContext {
  clusterId?: string;
}

/** The source object itself, beyond its spec (a kind may default a field to the object's name). */
export interface SourceObjectMeta {
  name: string;
}

export interface SourceKindRules<Spec = unknown> {
  definition: KindDefinition & { apiVersion: string };
  clusterScoped: boolean;
  /**
   * A target of this kind is fed by one source (two only when they want the same thing, and then
   * one of them is a conflict): its sync reads the sources one GET each, never by listing the
   * kind, so the worker needs no `list` on it (deploy/rbac/worker.yaml).
   */
  oneSourcePerTarget?: boolean;
  /**
   * A target has few sources of this kind (a tunnel's bindings and class configs), each read with
   * what it refers to anyway: the sync GETs each and never lists the kind (no `list` in RBAC).
   */
  getEach?: boolean;
  /**
   * `status.state` while the source is being synced, when the kind's enum has no `Syncing`
   * (CloudflareDomain: `Pending`). Ready and failed sources show `Ready` and `Error`.
   */
  syncingState?: string;
  /** The kind's own `status.state` names, when it has neither `Ready` nor `Error` (a Tunnel's `active`/`error`). */
  states?: { ready: string; syncing: string; error: string; deleting?: string };
  /**
   * The status field that shows the Cloudflare object's ID once synced (`groupId`, `recordId`, …),
   * for kinds whose target is one object of their own.
   */
  statusIdField?: string;
  /** Lower first; the kind's default when the spec has none. */
  priority(spec: Spec): number;
  /** The CloudflareCredentials the spec names; undefined = the default credentials. */
  credentialsRef(spec: Spec): string | undefined;
  /** The credentials are those of a tunnel the source names (`get` on the tunnel authorises their use). */
  credentialsOfTunnel?: boolean;
  /** The zone name the source writes to, when the kind is zone-scoped (looked up to a zone id). */
  zone(spec: Spec): string | undefined;
  /**
   * The zone the credentials' `allowedZones` must list although the source writes to no zone
   * itself, and the field naming it (a Tunnel's `spec.cloudflare.domain`, where its hostnames live).
   */
  policyZone?(spec: Spec): { zone: string; field: string } | undefined;
  /**
   * The hostnames whose CNAMEs the source manages, each in the zone that holds it (a tunnel
   * source with DNS management on); undefined: it manages none.
   */
  dnsHostnames?(spec: Spec): string[] | undefined;
  /**
   * The field by which the source takes over a Cloudflare object the operator did not create
   * (undefined: it takes over nothing); a namespaced source needs the credentials'
   * `adoptNamespaces` for it.
   */
  adopts?(spec: Spec): string | undefined;
  /**
   * The kind always writes to a zone: when `zone(spec)` names none, the credentials'
   * `defaultDomain` is the zone (and without one the source cannot be placed).
   */
  zoneFromCredentials?: boolean;
  /**
   * Every problem of the spec, each naming the field (empty = valid). With `context.clusterId`
   * (the sync knows it) also what only the ownership marker's length decides.
   */
  validate(spec: Spec, object: SourceObjectMeta, context?: ValidationContext): string[];
  /**
   * What places the source, when it is not its zone or credentials (`anchorOf` in ../sources.ts):
   * a TunnelBinding is placed by the tunnel it names.
   */
  anchor?(spec: Spec): string;
  /**
   * The Cloudflare object the source itself owns, created (or adopted) before it registers: a
   * Tunnel's tunnel, whose ID places its configuration (src/activities/cloudflare/tunnels.ts).
   */
  lifecycle?: 'tunnel';
  /** Something the valid source waits for before it can register (its tunnel has no ID yet). */
  waitingFor?(spec: Spec): { reason: string; message: string } | undefined;
  /** Fields the kind shows on its status beyond the common ones (`ingressCount`, the tunnel it uses). */
  statusFields?(spec: Spec): Record<string, unknown>;
  /** Where the source's items go, once its account (and zone) are known. */
  targets(spec: Spec, place: ResolvedPlace, object: SourceObjectMeta): SyncTarget[];
  /** What the source contributes to one target (empty when it does not feed that target). */
  contribution(spec: Spec, target: SyncTarget, object: SourceObjectMeta, hints?: RegistrationHints): Contribution;
}
