/**
 * DNS record sets: the target is (zone, name, type); its items are the records of that name and
 * type. Read: one filtered list (`name.exact` + `type`). Write: the plan's deletes, patches (by
 * id, so an adopted or changed record keeps its id) and creates (./per-object.ts) in
 * `dns_records/batch` calls.
 */
import type Cloudflare from 'cloudflare';
import { desiredRecords } from '../../../domain/cloudflare/aggregate.js';
import { dnsRecordCodec, type DnsRecordItem } from '../../../domain/cloudflare/items.js';
import type { SyncTarget } from '../../../domain/cloudflare/targets.js';
import type { TargetAdapter } from './adapter.js';
import { objectChanges, type ObjectChanges } from './per-object.js';

type RecordTarget = Extract<SyncTarget, { resourceType: 'DNSRecord' }>;

/** The SDK's record types, and the body of a batch (built from our items' fields). */
type RecordType = NonNullable<Parameters<Cloudflare['dns']['records']['list']>[0]['type']>;
type BatchParams = Parameters<Cloudflare['dns']['records']['batch']>[0];

/** Cloudflare's largest page of DNS records. */
const DNS_PER_PAGE_MAX = 5000;

/**
 * Operations per `dns_records/batch` call: Cloudflare's limit on the Free plan (3,500 on Pro and
 * above), https://developers.cloudflare.com/dns/manage-dns-records/how-to/batch-record-changes/.
 */
export const DNS_BATCH_MAX = 200;

/** The fields a record is written with (the SDK's create/edit body, without the zone). */
export function recordBody(r: DnsRecordItem): Record<string, unknown> {
  return {
    type: r.type,
    name: r.name,
    ttl: r.ttl ?? 1,
    proxied: r.proxied ?? false,
    comment: r.comment ?? '',
    tags: r.tags ?? [],
    ...(r.content !== undefined ? { content: r.content } : {}),
    ...(r.priority !== undefined ? { priority: r.priority } : {}),
    ...(r.data !== undefined ? { data: r.data } : {}),
  };
}

/**
 * A zone's records matching `filter`. One page holds any real record set (up to Cloudflare's
 * 5,000 per page); the next pages are fetched only when result_info says there are some (the
 * SDK's iterator would always ask for one more, empty page: a second GET on every sync).
 */
export async function readRecords(
  cf: Cloudflare,
  filter: { zone_id: string; name?: { exact: string }; type?: RecordType },
): Promise<DnsRecordItem[]> {
  let page = await cf.dns.records.list({ ...filter, per_page: DNS_PER_PAGE_MAX });
  const records = [...page.result];
  const more = (info: unknown) => {
    const i = (info ?? {}) as { page?: number; total_pages?: number };
    return (i.total_pages ?? 1) > (i.page ?? 1);
  };
  while (more(page.result_info)) {
    page = await page.getNextPage();
    records.push(...page.result);
  }
  return records.map((r) => {
    const rec = r as unknown as DnsRecordItem & { data?: Record<string, unknown> };
    return {
      id: rec.id,
      name: rec.name,
      type: rec.type,
      content: rec.content,
      ttl: rec.ttl,
      proxied: rec.proxied,
      comment: rec.comment ?? null,
      tags: rec.tags ?? [],
      ...(rec.priority !== undefined ? { priority: rec.priority } : {}),
      ...(rec.data !== undefined ? { data: rec.data } : {}),
    };
  });
}

/**
 * Writes a zone's record changes with `dns_records/batch` (issue 23, D7): one call per
 * DNS_BATCH_MAX changes instead of one per record — 1,500 tunnel hostnames are 8 calls, not
 * 1,500. Deletes, then patches, then creates, as Cloudflare orders a batch; chunks keep that order
 * (the deletes free the names the creates need). Each batch is one transaction at Cloudflare: one
 * it refuses changes nothing, and the retry reads and plans again. Returns the id of the last
 * record of ours written or kept.
 */
export async function writeRecordBatches(
  cf: Cloudflare,
  zoneId: string,
  changes: ObjectChanges<DnsRecordItem>,
): Promise<string | undefined> {
  type Op = { deletes: { id: string } } | { patches: Record<string, unknown> } | { posts: Record<string, unknown> };
  const ops: Op[] = [
    ...changes.removes.map((id): Op => ({ deletes: { id } })),
    ...changes.updates.map(({ id, item }): Op => ({ patches: { id, ...recordBody(item) } })),
    ...changes.creates.map((item): Op => ({ posts: recordBody(item) })),
  ];
  let lastId = changes.lastKept;
  for (let i = 0; i < ops.length; i += DNS_BATCH_MAX) {
    const body: Record<string, unknown[]> = {};
    for (const op of ops.slice(i, i + DNS_BATCH_MAX))
      for (const [kind, value] of Object.entries(op)) (body[kind] ??= []).push(value);
    const done = await cf.dns.records.batch({ zone_id: zoneId, ...body } as BatchParams);
    const posted = done.posts ?? [];
    if (posted.length) lastId = posted[posted.length - 1]!.id;
  }
  return lastId;
}

export const dnsRecordAdapter: TargetAdapter<DnsRecordItem> = {
  codec: dnsRecordCodec,
  ownedKinds: ['DNSRecord'],
  desired: desiredRecords,
  async read(cf, target) {
    const t = target as RecordTarget;
    const items = await readRecords(cf, { zone_id: t.zoneId, name: { exact: t.name }, type: t.type as RecordType });
    const ours = items.length === 1 ? items[0]!.id : undefined;
    return { items, ...(ours ? { cloudflareId: ours } : {}) };
  },
  async write(cf, target, plan, live) {
    const t = target as RecordTarget;
    // Every record in the set has this name and type: any of ours being removed can be reused.
    const changes = objectChanges(plan, live, dnsRecordCodec, () => true);
    const cloudflareId = await writeRecordBatches(cf, t.zoneId, changes);
    return cloudflareId ? { cloudflareId } : {};
  },
};
