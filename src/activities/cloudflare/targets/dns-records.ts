/**
 * DNS record sets: the target is (zone, name, type); its items are the records of that name and
 * type. Read: one filtered list (`name.exact` + `type`). Write: object by object
 * (./per-object.ts), PATCH by id so an adopted or changed record keeps its id.
 */
import type Cloudflare from 'cloudflare';
import { desiredRecords } from '../../../domain/cloudflare/aggregate.js';
import { dnsRecordCodec, type DnsRecordItem } from '../../../domain/cloudflare/items.js';
import type { SyncTarget } from '../../../domain/cloudflare/targets.js';
import type { TargetAdapter } from './adapter.js';
import { writeObjects } from './per-object.js';

type RecordTarget = Extract<SyncTarget, { resourceType: 'DNSRecord' }>;

/** Cloudflare's largest page of DNS records. */
const DNS_PER_PAGE_MAX = 5000;

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
  filter: { zone_id: string; name?: { exact: string }; type?: never },
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

export const dnsRecordAdapter: TargetAdapter<DnsRecordItem> = {
  codec: dnsRecordCodec,
  ownedKinds: ['DNSRecord'],
  desired: desiredRecords,
  async read(cf, target) {
    const t = target as RecordTarget;
    const items = await readRecords(cf, { zone_id: t.zoneId, name: { exact: t.name }, type: t.type as never });
    const ours = items.length === 1 ? items[0]!.id : undefined;
    return { items, ...(ours ? { cloudflareId: ours } : {}) };
  },
  async write(cf, target, plan, live) {
    const t = target as RecordTarget;
    const api = cf.dns.records;
    const cloudflareId = await writeObjects(plan, live, dnsRecordCodec, {
      // Every record in the set has this name and type: any of ours being removed can be reused.
      reuses: () => true,
      remove: async (id) => void (await api.delete(id, { zone_id: t.zoneId })),
      update: async (id, item) => void (await api.edit(id, { zone_id: t.zoneId, ...recordBody(item) } as never)),
      create: async (item) => (await api.create({ zone_id: t.zoneId, ...recordBody(item) } as never)).id,
    });
    return cloudflareId ? { cloudflareId } : {};
  },
};
