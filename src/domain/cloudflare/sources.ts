/**
 * The source kinds, decided purely: is a spec valid (with a message a user can act on), which
 * targets does it feed, and what does it contribute to each, in Cloudflare's wire shape. Each
 * kind's rules live in ./kinds/; these functions dispatch on the kind. The source's workflow uses
 * them to register; the target's sync re-derives the contribution from a fresh read of the
 * source, with the same functions.
 */
import type { Contribution } from './aggregate.js';
import {
  credentialsUseRefusal,
  zoneAllowed,
  type CredentialsUse,
  type CredentialsUsePolicy,
} from './credentials-use.js';
import {
  SOURCE_KIND_RULES,
  type RegistrationHints,
  type ResolvedPlace,
  type SourceKindRules,
  type SourceObjectMeta,
  type ValidationContext,
} from './kinds/index.js';
import type { SyncTarget } from './targets.js';

export type SourceKind = keyof typeof SOURCE_KIND_RULES;
export const SOURCE_KINDS = Object.keys(SOURCE_KIND_RULES) as SourceKind[];

/** A source's spec, as the sync reads it (each kind's module knows its own shape). */
export type SourceSpec = { priority?: number } & Record<string, unknown>;

export function isSourceKind(kind: string): kind is SourceKind {
  return Object.hasOwn(SOURCE_KIND_RULES, kind);
}

function rules(kind: SourceKind): SourceKindRules<SourceSpec> {
  return SOURCE_KIND_RULES[kind] as unknown as SourceKindRules<SourceSpec>;
}

/** The kind's definition (apiVersion, plural, scope) for reads and writes of its objects. */
export function kindDefinition(kind: SourceKind) {
  return rules(kind).definition;
}

/** Whether a sync with many sources of this kind may list the kind instead of a GET each. */
export function listedWhenMany(kind: SourceKind): boolean {
  return !rules(kind).oneSourcePerTarget && !rules(kind).getEach;
}

export function isClusterScoped(kind: SourceKind): boolean {
  return rules(kind).clusterScoped;
}

/** The source's priority (lower wins; the kind's default when the spec has none). */
export function priorityOf(kind: SourceKind, spec: SourceSpec): number {
  return rules(kind).priority(spec);
}

/** The CloudflareCredentials the spec names; undefined = the default credentials. */
export function credentialsRefOf(kind: SourceKind, spec: SourceSpec): string | undefined {
  return rules(kind).credentialsRef(spec);
}

/** The kind writes with the credentials of a tunnel it names (TunnelBinding, the class configs). */
export function usesTunnelCredentials(kind: SourceKind): boolean {
  return rules(kind).credentialsOfTunnel ?? false;
}

/**
 * What a source asks of the credentials it writes with, for ./credentials-use.ts to decide:
 * `defaultDomain` is the credentials' (the zone of kinds that take it from there).
 */
export function credentialsUseOf(
  kind: SourceKind,
  spec: SourceSpec,
  namespace: string | undefined,
  defaultDomain?: string,
): CredentialsUse {
  const policyZone = rules(kind).policyZone?.(spec);
  const zone = zoneOf(kind, spec) ?? policyZone?.zone ?? (zoneFromCredentials(kind) ? defaultDomain : undefined);
  const zoneField =
    policyZone?.field ?? (usesTunnelCredentials(kind) ? "its tunnel's spec.cloudflare.domain" : undefined);
  const adopts = rules(kind).adopts?.(spec);
  return {
    kind,
    namespace: isClusterScoped(kind) ? '' : (namespace ?? ''),
    named: credentialsRefOf(kind, spec) !== undefined,
    ...(zone !== undefined ? { zone, ...(zoneField ? { zoneField } : {}) } : {}),
    priority: priorityOf(kind, spec),
    defaultPriority: priorityOf(kind, {}),
    ...(usesTunnelCredentials(kind) ? { throughTunnel: true } : {}),
    ...(adopts ? { adopts } : {}),
  };
}

/**
 * Why a target must not write a source's items with the credentials it registered with, judged on
 * the spec the target just read (issue 33, N3): the same rules as at admission and in the source's
 * workflow, and the zone of the target itself (a tunnel hostname's CNAME zone, which the rules of
 * the spec alone cannot name). Undefined: it may.
 */
export function targetUseRefusal(
  kind: SourceKind,
  spec: SourceSpec,
  namespace: string | undefined,
  credentials: { policy: CredentialsUsePolicy; defaultDomain?: string },
  target: SyncTarget,
): { reason: string; message: string } | undefined {
  const refused = credentialsUseRefusal(
    credentials.policy,
    credentialsUseOf(kind, spec, namespace, credentials.defaultDomain),
  );
  if (refused) return refused;
  if (target.resourceType === 'TunnelDNS' && !zoneAllowed(credentials.policy, target.zone))
    return credentialsUseRefusal(credentials.policy, {
      kind,
      namespace: '',
      named: true,
      zone: target.zone,
      zoneField: 'a hostname of its CNAMEs',
      priority: 0,
      defaultPriority: 0,
    });
  return undefined;
}

/** The zone name a zone-scoped source writes to (undefined for account-scoped kinds). */
export function zoneOf(kind: SourceKind, spec: SourceSpec): string | undefined {
  return rules(kind).zone(spec);
}

/** The hostnames whose CNAMEs the source manages, each in its own zone (undefined: none). */
export function dnsHostnamesOf(kind: SourceKind, spec: SourceSpec): string[] | undefined {
  return rules(kind).dnsHostnames?.(spec);
}

/** What the registration with `target` tells its sync besides the spec (empty for most targets). */
export function registrationHints(target: SyncTarget, place: ResolvedPlace): RegistrationHints {
  if (target.resourceType !== 'TunnelDNS') return {};
  const subzones = place.dnsZones?.find((z) => z.zoneId === target.zoneId)?.subzones;
  return subzones?.length ? { subzones } : {};
}

/**
 * The zone's ID when the spec gives it with its zone (`cloudflare.zoneId`, the original's field;
 * a binding's or class config's from its Tunnel): used instead of a lookup, as the original does.
 */
export function zoneIdOf(spec: SourceSpec): string | undefined {
  const s = spec as { cloudflare?: { zoneId?: string }; tunnel?: { zoneId?: string } | null };
  return s.cloudflare?.zoneId || s.tunnel?.zoneId || undefined;
}

/** The source's `status.state` for its Ready condition (`Ready`, the kind's syncing state, or `Error`). */
export function stateOf(kind: SourceKind, ready: { status: string; reason: string }): string {
  const own = rules(kind).states;
  if (own) {
    if (ready.status === 'True') return own.ready;
    if (ready.reason === 'Deleting') return own.deleting ?? own.syncing;
    return ready.reason === 'Syncing' ? own.syncing : own.error;
  }
  if (ready.status === 'True') return 'Ready';
  if (ready.reason === 'Syncing' || ready.reason === 'Deleting') return rules(kind).syncingState ?? 'Syncing';
  return 'Error';
}

/** The status field showing the Cloudflare object's ID (undefined when the kind has none). */
export function statusIdFieldOf(kind: SourceKind): string | undefined {
  return rules(kind).statusIdField;
}

/** Whether the kind writes to a zone even when its spec names none (then: the credentials' default domain). */
export function zoneFromCredentials(kind: SourceKind): boolean {
  return rules(kind).zoneFromCredentials ?? false;
}

/**
 * What places the source on its targets, as the spec says it: the zone name for zone-scoped
 * kinds, the credentials name (`''` = default) for account-scoped ones. A fresh read with another
 * anchor means the source moved and must register again before it counts.
 */
export function anchorOf(kind: SourceKind, spec: SourceSpec): string {
  const own = rules(kind).anchor?.(spec);
  if (own !== undefined) return own;
  const zone = zoneOf(kind, spec);
  return zone !== undefined ? `zone:${zone}` : `credentials:${credentialsRefOf(kind, spec) ?? ''}`;
}

/** Whether the kind owns a Cloudflare object made before it registers (a Tunnel's tunnel). */
export function lifecycleOf(kind: SourceKind): 'tunnel' | undefined {
  return rules(kind).lifecycle;
}

/** What a valid source waits for before it can register (undefined: nothing). */
export function waitingFor(kind: SourceKind, spec: SourceSpec): { reason: string; message: string } | undefined {
  return rules(kind).waitingFor?.(spec);
}

/** The kind's own status fields for this spec (empty for most kinds). */
export function statusFieldsOf(kind: SourceKind, spec: SourceSpec): Record<string, unknown> {
  return rules(kind).statusFields?.(spec) ?? {};
}

/** Every problem of the spec, each naming the field (empty = valid). */
export function validateSource(
  kind: SourceKind,
  spec: SourceSpec,
  object: SourceObjectMeta,
  context?: ValidationContext,
): string[] {
  return rules(kind).validate(spec, object, context);
}

/** Where the source's items go, once its account (and zone) are known. */
export function targetsOf(
  kind: SourceKind,
  spec: SourceSpec,
  place: ResolvedPlace,
  object: SourceObjectMeta,
): SyncTarget[] {
  return rules(kind).targets(spec, place, object);
}

/** What the source contributes to one target (empty when it does not feed that target). */
export function contributionFor(
  kind: SourceKind,
  spec: SourceSpec,
  target: SyncTarget,
  object: SourceObjectMeta,
  hints?: RegistrationHints,
): Contribution {
  return rules(kind).contribution(spec, target, object, hints);
}
