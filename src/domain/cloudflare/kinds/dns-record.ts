/**
 * DNSRecord (namespaced): one record of a zone. Its target is the record set (zone, name, type),
 * so DNSRecords of one name and type meet in one place. The ownership marker goes in the record's
 * `comment`; an unmarked record already there is never taken over unless the DNSRecord says
 * `adoptExisting: true` (the original adopted any record of the same name and type).
 *
 * `spec.priority` is the MX/SRV/URI priority of the record, not a source priority: every
 * DNSRecord aggregates with the original's default source priority, 100.
 */
import { DNSRecordKind, type DNSRecordSpec } from '../../../api/cloudflare-zones.js';
import type { DnsRecordItem } from '../items.js';
import type { SourceKindRules } from './types.js';
import { HOSTNAME, validIp } from './validation.js';

/** A DNS owner name: hostname labels, also `_service` labels and a leading `*`. */
const RECORD_NAME =
  /^(?=.{1,253}$)(\*|[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$/i;
/** Cloudflare's TTL bounds (1 = automatic). */
const TTL_MIN = 30;
const TTL_MAX = 86400;
const PROXIABLE = new Set(['A', 'AAAA', 'CNAME']);
/** Types whose answer is in `data` when content alone does not say it. */
const DATA_TYPES = new Set(['SRV', 'CAA', 'CERT', 'DNSKEY', 'DS', 'LOC', 'NAPTR', 'SMIMEA', 'SSHFP', 'TLSA', 'URI']);

/** The record's fully qualified name in `zone`: `@` is the apex; a relative name gets the zone appended. */
export function fqdnOf(name: string, zone: string): string {
  const n = name.trim().replace(/\.$/, '').toLowerCase();
  const z = zone.trim().replace(/\.$/, '').toLowerCase();
  if (n === '@' || n === z || n.endsWith(`.${z}`)) return n === '@' ? z : n;
  return `${n}.${z}`;
}

const snake = (k: string) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** The spec's `data` in Cloudflare's snake_case field names (`keyTag` → `key_tag`). */
function wireData(data: DNSRecordSpec['data']): Record<string, unknown> | undefined {
  if (!data) return undefined;
  const out = Object.fromEntries(
    Object.entries(data)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => [snake(k), v]),
  );
  return Object.keys(out).length ? out : undefined;
}

function validate(spec: DNSRecordSpec): string[] {
  const problems: string[] = [];
  const name = spec.name?.trim() ?? '';
  if (name !== '@' && !RECORD_NAME.test(name.replace(/\.$/, '')))
    problems.push(`spec.name: ${JSON.stringify(spec.name)} is not a DNS name (use "@" for the zone apex)`);
  const content = spec.content?.trim() ?? '';
  const hasData = wireData(spec.data) !== undefined;
  if (spec.type === 'A' && !(validIp(content) && !content.includes(':')))
    problems.push(`spec.content: ${JSON.stringify(spec.content)} is not an IPv4 address (an A record needs one)`);
  else if (spec.type === 'AAAA' && !(validIp(content) && content.includes(':')))
    problems.push(`spec.content: ${JSON.stringify(spec.content)} is not an IPv6 address (an AAAA record needs one)`);
  else if (
    (spec.type === 'CNAME' || spec.type === 'NS' || spec.type === 'MX') &&
    !HOSTNAME.test(content.replace(/\.$/, ''))
  )
    problems.push(
      `spec.content: ${JSON.stringify(spec.content)} is not a hostname (a ${spec.type} record points at one)`,
    );
  else if (!content && !(DATA_TYPES.has(spec.type) && hasData))
    problems.push(
      `spec.content: must not be empty${DATA_TYPES.has(spec.type) ? ` (or give spec.data for a ${spec.type} record)` : ''}`,
    );
  if ((spec.type === 'MX' || spec.type === 'URI') && spec.priority === undefined)
    problems.push(`spec.priority: a ${spec.type} record needs a priority`);
  if (spec.ttl !== undefined && spec.ttl !== 1 && (spec.ttl < TTL_MIN || spec.ttl > TTL_MAX))
    problems.push(`spec.ttl: ${spec.ttl} is outside ${TTL_MIN}–${TTL_MAX} seconds (1 means automatic)`);
  if (spec.proxied && !PROXIABLE.has(spec.type))
    problems.push(`spec.proxied: a ${spec.type} record cannot be proxied (only A, AAAA and CNAME)`);
  if (spec.proxied && spec.ttl !== undefined && spec.ttl !== 1)
    problems.push(`spec.ttl: a proxied record's TTL is automatic; set ttl: 1 or proxied: false`);
  if (spec.comment && /[\r\n]/.test(spec.comment))
    problems.push('spec.comment: must be a single line (it contains a line break)');
  (spec.tags ?? []).forEach((t, i) => {
    if (!/^[^:\s]+:.+$/.test(t)) problems.push(`spec.tags[${i}]: ${JSON.stringify(t)} is not "name:value"`);
  });
  return problems;
}

export const dnsRecordRules: SourceKindRules<DNSRecordSpec> = {
  definition: DNSRecordKind,
  clusterScoped: false,
  oneSourcePerTarget: true,
  statusIdField: 'recordId',
  priority: () => 100,
  credentialsRef: (spec) => spec.cloudflare?.credentialsRef?.name,
  zone: (spec) => spec.cloudflare?.domain || undefined,
  adopts: (spec) => (spec.adoptExisting ? 'spec.adoptExisting' : undefined),
  zoneFromCredentials: true,
  validate,
  targets(spec, place) {
    if (!place.zoneId || !place.zoneName) return [];
    return [
      {
        resourceType: 'DNSRecord',
        accountId: place.accountId,
        zoneId: place.zoneId,
        zone: place.zoneName,
        name: fqdnOf(spec.name, place.zoneName),
        type: spec.type,
      },
    ];
  },
  contribution(spec, target) {
    if (target.resourceType !== 'DNSRecord' || target.type !== spec.type) return { entries: [] };
    if (fqdnOf(spec.name, target.zone) !== target.name) return { entries: [] };
    const data = wireData(spec.data);
    const record: DnsRecordItem = {
      name: target.name,
      type: spec.type,
      ttl: spec.ttl ?? 1,
      proxied: PROXIABLE.has(spec.type) ? (spec.proxied ?? false) : false,
      ...(spec.content ? { content: spec.type === 'CNAME' ? spec.content.replace(/\.$/, '') : spec.content } : {}),
      ...(spec.priority !== undefined ? { priority: spec.priority } : {}),
      ...(spec.comment ? { comment: spec.comment } : {}),
      ...(spec.tags?.length ? { tags: spec.tags } : {}),
      ...(data ? { data } : {}),
    };
    return { entries: [record], ...(spec.adoptExisting ? { adoptExisting: true } : {}) };
  },
};
