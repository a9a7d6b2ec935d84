/**
 * DNS records of a zone: create, list (page pagination up to 5000 per page, the `name`/`type`/
 * `content`/`comment`/`tag`/`proxied` filters with `match` and `tag_match`, `order`/`direction`),
 * get, PUT (replace), PATCH (merge), delete, and `batch` (deletes → patches → puts → posts on a
 * copy, committed only when every operation succeeds).
 *
 * Checks the real API makes: an identical record (type, name, content) → 81058; a CNAME beside any
 * other record on the same name → 81053; unknown id → 81044; A/AAAA content, TTL, proxied on a
 * non-proxiable type, a comment with a newline, and the limits of the zone's plan (comment length,
 * tags, lowest TTL, batch size: DNS_PLAN_LIMITS; codes in `CfErrors.dnsInvalid`).
 */
import { isIPv4, isIPv6 } from 'node:net';
import { Type } from '@sinclair/typebox';
import { CfErrors } from '../envelope.js';
import { paginatePage } from '../pagination.js';
import type { Route, RouteContext } from '../router.js';
import { planOf, type ZonePlan } from '../ruleset-limits.js';
import { buildDnsRecord, cfId, fqdn, type DnsRecord, type Zone } from '../store.js';
import { checkBody } from '../validate.js';
import { zoneFor } from './zones.js';

export const DNS_PAGE_LIMITS = { defaultPerPage: 100, minPerPage: 5, maxPerPage: 5000 };

/**
 * What a zone's plan allows in its records: comment length and tags
 * (developers.cloudflare.com/dns/manage-dns-records/reference/record-attributes/), the lowest
 * TTL (developers.cloudflare.com/dns/manage-dns-records/reference/ttl/) and operations per batch
 * (developers.cloudflare.com/dns/manage-dns-records/how-to/batch-record-changes/).
 */
export const DNS_PLAN_LIMITS: Readonly<
  Record<ZonePlan, { commentMax: number; tags: boolean; ttlMin: number; batchMax: number }>
> = {
  free: { commentMax: 100, tags: false, ttlMin: 60, batchMax: 200 },
  pro: { commentMax: 500, tags: true, ttlMin: 60, batchMax: 3500 },
  business: { commentMax: 500, tags: true, ttlMin: 60, batchMax: 3500 },
  enterprise: { commentMax: 500, tags: true, ttlMin: 30, batchMax: 3500 },
};

const RecordFields = {
  name: Type.String({ minLength: 1 }),
  type: Type.String({ minLength: 1 }),
  content: Type.Optional(Type.String()),
  ttl: Type.Optional(Type.Number()),
  proxied: Type.Optional(Type.Boolean()),
  comment: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  tags: Type.Optional(Type.Array(Type.String())),
  priority: Type.Optional(Type.Number()),
  data: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  settings: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
};

const CreateBody = Type.Object(RecordFields, { additionalProperties: true });
const PatchBody = Type.Partial(Type.Object(RecordFields, { additionalProperties: true }));
const BatchBody = Type.Object({
  deletes: Type.Optional(Type.Array(Type.Object({ id: Type.String({ minLength: 1 }) }))),
  patches: Type.Optional(
    Type.Array(Type.Object({ id: Type.String({ minLength: 1 }) }, { additionalProperties: true })),
  ),
  puts: Type.Optional(Type.Array(Type.Object({ id: Type.String({ minLength: 1 }) }, { additionalProperties: true }))),
  posts: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }))),
});

const TYPES: ReadonlySet<string> = new Set([
  'A',
  'AAAA',
  'CAA',
  'CERT',
  'CNAME',
  'DNSKEY',
  'DS',
  'HTTPS',
  'LOC',
  'MX',
  'NAPTR',
  'NS',
  'OPENPGPKEY',
  'PTR',
  'SMIMEA',
  'SRV',
  'SSHFP',
  'SVCB',
  'TLSA',
  'TXT',
  'URI',
]);
/** Types whose value is structured (`data`) rather than `content`. */
const DATA_TYPES: ReadonlySet<string> = new Set([
  'CAA',
  'CERT',
  'DNSKEY',
  'DS',
  'HTTPS',
  'LOC',
  'NAPTR',
  'SMIMEA',
  'SRV',
  'SSHFP',
  'SVCB',
  'TLSA',
  'URI',
]);

/** The field checks of one record (after defaults) in a zone of `plan`, as the API answers them. */
export function validateRecord(r: DnsRecord, plan: ZonePlan = 'free'): void {
  const limits = DNS_PLAN_LIMITS[plan];
  if (!TYPES.has(r.type)) throw CfErrors.invalidBody([`/type: unsupported DNS record type ${JSON.stringify(r.type)}`]);
  if (!DATA_TYPES.has(r.type) && (typeof r.content !== 'string' || r.content === '')) {
    throw CfErrors.invalidBody([`/content: content is required for ${r.type} records`]);
  }
  if (r.type === 'A' && !isIPv4(r.content ?? '')) {
    throw CfErrors.dnsInvalid(9005, 'Content for A record must be a valid IPv4 address.');
  }
  if (r.type === 'AAAA' && !isIPv6(r.content ?? '')) {
    throw CfErrors.dnsInvalid(9006, 'Content for AAAA record must be a valid IPv6 address.');
  }
  if (r.ttl !== 1 && (!Number.isInteger(r.ttl) || r.ttl < limits.ttlMin || r.ttl > 86400)) {
    throw CfErrors.dnsInvalid(
      9021,
      `Invalid TTL. Must be between ${limits.ttlMin} and 86400 seconds, or 1 for automatic.`,
    );
  }
  if (r.proxied && !r.proxiable) throw CfErrors.dnsInvalid(9004, 'This record type cannot be proxied.');
  if (r.comment !== null && /[\r\n]/.test(r.comment)) {
    throw CfErrors.dnsInvalid(9100, 'DNS record comment cannot contain newline characters.');
  }
  if (r.comment !== null && r.comment.length > limits.commentMax) {
    throw CfErrors.dnsInvalid(9101, `DNS record comment cannot be longer than ${limits.commentMax} characters.`);
  }
  if (r.tags.length && !limits.tags) {
    throw CfErrors.dnsInvalid(9104, "DNS record tags are not available on the zone's plan.");
  }
}

function valueKey(r: DnsRecord): string {
  return JSON.stringify([r.content ?? null, r.priority ?? null, r.data ?? null]);
}

/** Duplicate rules against the other records of the zone (the record itself excluded by id). */
export function checkConflicts(records: readonly DnsRecord[], r: DnsRecord): void {
  const sameName = records.filter((o) => o.id !== r.id && o.name === r.name);
  if (sameName.some((o) => o.type === r.type && valueKey(o).toLowerCase() === valueKey(r).toLowerCase())) {
    throw CfErrors.dnsIdentical();
  }
  if (r.type === 'CNAME' ? sameName.length > 0 : sameName.some((o) => o.type === 'CNAME')) {
    throw CfErrors.dnsCnameConflict();
  }
}

/** Create, replace or merge one record into `records` (mutated); returns the stored record. */
export function applyCreate(records: DnsRecord[], zone: Zone, input: Record<string, unknown>, at: string): DnsRecord {
  const record = buildDnsRecord(zone.name, input, at, cfId());
  validateRecord(record, planOf(zone.plan));
  checkConflicts(records, record);
  records.push(record);
  return record;
}

function indexOf(records: readonly DnsRecord[], id: string): number {
  const i = records.findIndex((r) => r.id === id);
  if (i < 0) throw CfErrors.dnsNotFound();
  return i;
}

export function applyUpdate(
  records: DnsRecord[],
  zone: Zone,
  id: string,
  input: Record<string, unknown>,
  mode: 'put' | 'patch',
  at: string,
): DnsRecord {
  const i = indexOf(records, id);
  const old = records[i]!;
  const { id: _id, created_on: _c, modified_on: _m, proxiable: _p, meta: _meta, ...oldFields } = old;
  const merged = mode === 'patch' ? { ...oldFields, ...input } : input;
  const record = buildDnsRecord(zone.name, merged, at, old.id);
  record.created_on = old.created_on;
  record.comment_modified_on = record.comment === old.comment ? old.comment_modified_on : at;
  if (record.comment_modified_on === undefined) delete record.comment_modified_on;
  const sameTags = JSON.stringify(record.tags) === JSON.stringify(old.tags);
  record.tags_modified_on = sameTags ? old.tags_modified_on : at;
  if (record.tags_modified_on === undefined) delete record.tags_modified_on;
  validateRecord(record, planOf(zone.plan));
  checkConflicts(records, record);
  records[i] = record;
  return record;
}

export function applyDelete(records: DnsRecord[], id: string): DnsRecord {
  const i = indexOf(records, id);
  const [removed] = records.splice(i, 1);
  return removed!;
}

type Matcher = (value: string) => boolean;

/** `field`, `field.exact|contains|startswith|endswith` (and `present`/`absent`) → predicates, case-insensitive. */
function textMatchers(query: URLSearchParams, field: string, plainIsExact = true): Matcher[] {
  const out: Matcher[] = [];
  const get = (k: string) => query.get(k);
  const lower = (v: string) => v.toLowerCase();
  const plain = get(field);
  if (plain !== null && plainIsExact) out.push((v) => lower(v) === lower(plain));
  const exact = get(`${field}.exact`);
  if (exact !== null) out.push((v) => lower(v) === lower(exact));
  const contains = get(`${field}.contains`);
  if (contains !== null) out.push((v) => lower(v).includes(lower(contains)));
  const starts = get(`${field}.startswith`);
  if (starts !== null) out.push((v) => lower(v).startsWith(lower(starts)));
  const ends = get(`${field}.endswith`);
  if (ends !== null) out.push((v) => lower(v).endsWith(lower(ends)));
  return out;
}

type Predicate = (r: DnsRecord) => boolean;

function tagPredicates(query: URLSearchParams): Predicate[] {
  const split = (t: string): [string, string] => {
    const i = t.indexOf(':');
    return i < 0 ? [t.toLowerCase(), ''] : [t.slice(0, i).toLowerCase(), t.slice(i + 1).toLowerCase()];
  };
  const out: Predicate[] = [];
  const withValue = (k: string, test: (value: string, wanted: string) => boolean) => {
    for (const raw of query.getAll(k)) {
      const [name, wanted] = split(raw);
      out.push((r) => r.tags.some((t) => split(t)[0] === name && test(split(t)[1], wanted)));
    }
  };
  withValue('tag', (v, w) => v === w);
  withValue('tag.exact', (v, w) => v === w);
  withValue('tag.contains', (v, w) => v.includes(w));
  withValue('tag.startswith', (v, w) => v.startsWith(w));
  withValue('tag.endswith', (v, w) => v.endsWith(w));
  for (const raw of query.getAll('tag.present')) {
    const name = raw.toLowerCase();
    out.push((r) => r.tags.some((t) => split(t)[0] === name));
  }
  for (const raw of query.getAll('tag.absent')) {
    const name = raw.toLowerCase();
    out.push((r) => !r.tags.some((t) => split(t)[0] === name));
  }
  return out;
}

/** The list filters: each given filter is a predicate; `match` combines them (tags by `tag_match`). */
export function filterRecords(records: readonly DnsRecord[], query: URLSearchParams, zoneName: string): DnsRecord[] {
  const predicates: Predicate[] = [];
  const nameQuery = new URLSearchParams();
  for (const [k, v] of query) {
    // `name` and `name.exact` take relative names too; the API compares FQDNs
    if (k === 'name' || k === 'name.exact') nameQuery.append(k, fqdn(zoneName, v));
    else if (k.startsWith('name.')) nameQuery.append(k, v);
  }
  for (const m of textMatchers(nameQuery, 'name')) predicates.push((r) => m(r.name));
  const type = query.get('type');
  if (type !== null) predicates.push((r) => r.type === type.toUpperCase());
  for (const m of textMatchers(query, 'content')) predicates.push((r) => m(r.content ?? ''));
  for (const m of textMatchers(query, 'comment')) predicates.push((r) => r.comment !== null && m(r.comment));
  if (query.has('comment.present')) predicates.push((r) => r.comment !== null);
  if (query.has('comment.absent')) predicates.push((r) => r.comment === null);
  const proxied = query.get('proxied');
  if (proxied !== null) predicates.push((r) => r.proxied === (proxied === 'true'));
  const tags = tagPredicates(query);
  if (tags.length) {
    const tagMatch = query.get('tag_match') ?? 'all';
    if (tagMatch !== 'all' && tagMatch !== 'any') throw CfErrors.invalidBody(['tag_match must be all or any']);
    predicates.push(tagMatch === 'any' ? (r) => tags.some((p) => p(r)) : (r) => tags.every((p) => p(r)));
  }
  const match = query.get('match') ?? 'all';
  if (match !== 'all' && match !== 'any') throw CfErrors.invalidBody(['match must be all or any']);
  if (!predicates.length) return [...records];
  return records.filter((r) => (match === 'any' ? predicates.some((p) => p(r)) : predicates.every((p) => p(r))));
}

const ORDERS = ['type', 'name', 'content', 'ttl', 'proxied'] as const;

/** Default order: type, then name, then creation; `order` + `direction` as asked. */
export function orderRecords(records: DnsRecord[], query: URLSearchParams): DnsRecord[] {
  const order = query.get('order');
  if (order !== null && !(ORDERS as readonly string[]).includes(order)) {
    throw CfErrors.invalidBody([`order must be one of ${ORDERS.join(', ')}`]);
  }
  const dir = query.get('direction') === 'desc' ? -1 : 1;
  const cmp = (a: unknown, b: unknown) =>
    typeof a === 'number' && typeof b === 'number' ? a - b : String(a ?? '').localeCompare(String(b ?? ''));
  const keys: string[] = order ? [order] : ['type', 'name'];
  return records
    .map((r, i) => ({ r, i }))
    .sort((x, y) => {
      for (const k of keys) {
        const c = cmp(x.r[k], y.r[k]);
        if (c) return c * dir;
      }
      return x.i - y.i;
    })
    .map(({ r }) => r);
}

function records(ctx: RouteContext): { zone: Zone; list: DnsRecord[] } {
  const zone = zoneFor(ctx);
  return { zone, list: ctx.store.dnsRecordsOf(zone.id) };
}

/** Runs a batch on a copy and commits it only when every operation succeeded. */
export function applyBatch(
  current: readonly DnsRecord[],
  zone: Zone,
  body: {
    deletes?: Array<{ id: string }>;
    patches?: Array<Record<string, unknown> & { id: string }>;
    puts?: Array<Record<string, unknown> & { id: string }>;
    posts?: Array<Record<string, unknown>>;
  },
  at: string,
): { next: DnsRecord[]; result: Record<'deletes' | 'patches' | 'puts' | 'posts', DnsRecord[]> } {
  const next = [...current];
  const deletes = (body.deletes ?? []).map((d) => applyDelete(next, d.id));
  const patches = (body.patches ?? []).map(({ id, ...p }) => applyUpdate(next, zone, id, p, 'patch', at));
  const puts = (body.puts ?? []).map(({ id, ...p }) => {
    checkBody(CreateBody, p);
    return applyUpdate(next, zone, id, p, 'put', at);
  });
  const posts = (body.posts ?? []).map((p) => {
    checkBody(CreateBody, p);
    return applyCreate(next, zone, p, at);
  });
  return { next, result: { deletes, patches, puts, posts } };
}

export const dnsRoutes: Route[] = [
  {
    method: 'GET',
    pattern: '/zones/:zone_id/dns_records',
    handler: (ctx) => {
      const { zone, list } = records(ctx);
      const filtered = orderRecords(filterRecords(list, ctx.query, zone.name), ctx.query);
      return paginatePage(filtered, ctx.query, DNS_PAGE_LIMITS);
    },
  },
  {
    method: 'POST',
    pattern: '/zones/:zone_id/dns_records',
    handler: (ctx) => {
      const { zone, list } = records(ctx);
      const body = checkBody(CreateBody, ctx.body ?? {});
      return { result: applyCreate(list, zone, body, ctx.store.timestamp()) };
    },
  },
  {
    method: 'POST',
    pattern: '/zones/:zone_id/dns_records/batch',
    handler: (ctx) => {
      const { zone, list } = records(ctx);
      const body = checkBody(BatchBody, ctx.body ?? {});
      // Operations per batch by plan (DNS_PLAN_LIMITS); code 9102 guessed.
      const ops = ['deletes', 'patches', 'puts', 'posts'] as const;
      const count = ops.reduce((n, k) => n + (body[k]?.length ?? 0), 0);
      const max = DNS_PLAN_LIMITS[planOf(zone.plan)].batchMax;
      if (count > max) throw CfErrors.dnsInvalid(9102, `A batch may hold at most ${max} operations, got ${count}`);
      const { next, result } = applyBatch(list, zone, body, ctx.store.timestamp());
      list.splice(0, list.length, ...next);
      return { result };
    },
  },
  {
    method: 'GET',
    pattern: '/zones/:zone_id/dns_records/:dns_record_id',
    handler: (ctx) => {
      const { list } = records(ctx);
      return { result: list[indexOf(list, ctx.params.dns_record_id ?? '')] };
    },
  },
  {
    method: 'PUT',
    pattern: '/zones/:zone_id/dns_records/:dns_record_id',
    handler: (ctx) => {
      const { zone, list } = records(ctx);
      indexOf(list, ctx.params.dns_record_id ?? '');
      const body = checkBody(CreateBody, ctx.body ?? {});
      return {
        result: applyUpdate(list, zone, ctx.params.dns_record_id ?? '', body, 'put', ctx.store.timestamp()),
      };
    },
  },
  {
    method: 'PATCH',
    pattern: '/zones/:zone_id/dns_records/:dns_record_id',
    handler: (ctx) => {
      const { zone, list } = records(ctx);
      indexOf(list, ctx.params.dns_record_id ?? '');
      const body = checkBody(PatchBody, ctx.body ?? {});
      return {
        result: applyUpdate(list, zone, ctx.params.dns_record_id ?? '', body, 'patch', ctx.store.timestamp()),
      };
    },
  },
  {
    method: 'DELETE',
    pattern: '/zones/:zone_id/dns_records/:dns_record_id',
    handler: (ctx) => {
      const { list } = records(ctx);
      return { result: { id: applyDelete(list, ctx.params.dns_record_id ?? '').id } };
    },
  },
];
