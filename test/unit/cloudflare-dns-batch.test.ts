/**
 * Large DNS changes in `dns_records/batch` calls (issue 23, D7): a tunnel's 450 new hostnames,
 * one changed and one removed record are 3 batch calls of at most 200 operations (Cloudflare's
 * Free-plan limit), not 452 single calls; a record not ours is left alone. The real SDK against
 * the emulator.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cloudflareClient } from '../../src/activities/cloudflare/credentials.js';
import { DNS_BATCH_MAX } from '../../src/activities/cloudflare/targets/dns-records.js';
import { tunnelDnsAdapter } from '../../src/activities/cloudflare/targets/tunnel-dns.js';
import type { DnsRecordItem } from '../../src/domain/cloudflare/items.js';
import type { WritePlan } from '../../src/domain/cloudflare/merge.js';
import { EmulatorAdmin, startCloudflareEmulator, type RunningEmulator } from '../emulators/cloudflare/index.js';

const ACCOUNT = 'a'.repeat(32);
let emulator: RunningEmulator;
let admin: EmulatorAdmin;

beforeAll(async () => {
  emulator = await startCloudflareEmulator({ tokens: [{ token: 'tok' }] });
  admin = new EmulatorAdmin(emulator.url, emulator.adminToken);
});
afterAll(() => emulator?.close());

it('450 new hostnames, one changed and one removed record: 3 batch calls, no single-record call', async () => {
  const { zones } = await admin.seed({
    accounts: [{ id: ACCOUNT }],
    zones: [{ name: 'ex.test', account_id: ACCOUNT }],
  });
  const zoneId = zones[0]!.id;
  const cf = cloudflareClient({ apiToken: 'tok' }, emulator.baseURL, undefined);
  const mark = '[managed-by:default:Tunnel/ns/t]';
  const cname = (host: string, comment = mark): DnsRecordItem => ({
    name: `${host}.ex.test`,
    type: 'CNAME',
    content: 'tunnel.cfargotunnel.com',
    ttl: 1,
    proxied: true,
    comment,
    tags: [],
  });
  const seeded = [cname('gone'), cname('moved'), cname('theirs', 'by hand')];
  const live: DnsRecordItem[] = [];
  for (const r of seeded) live.push({ ...r, id: (await cf.dns.records.create({ zone_id: zoneId, ...r } as never)).id });
  const [, moved, theirs] = live;
  const plan: WritePlan<DnsRecordItem> = {
    items: [
      theirs!,
      { ...moved!, content: 'other.cfargotunnel.com' },
      ...Array.from({ length: 450 }, (_, i) => cname(`h${i}`)),
    ],
    write: true,
    differences: [],
    conflicts: [],
  } as never;
  await admin.clearRequests();

  await tunnelDnsAdapter.write(
    cf,
    { resourceType: 'TunnelDNS', accountId: ACCOUNT, zoneId, zone: 'ex.test' },
    plan,
    live,
    {} as never,
  );

  const calls = (await admin.requests()).map((r) => `${r.method} ${r.path.replace(zoneId, 'Z')}`);
  expect(calls).toEqual(Array(Math.ceil(452 / DNS_BATCH_MAX)).fill('POST /zones/Z/dns_records/batch'));
  const after = await cf.dns.records.list({ zone_id: zoneId, per_page: 5000 });
  expect(after.result).toHaveLength(452);
  expect(after.result.find((r) => r.name === 'moved.ex.test')).toMatchObject({
    id: moved!.id,
    content: 'other.cfargotunnel.com',
  });
  expect(after.result.find((r) => r.id === theirs!.id)).toMatchObject({ comment: 'by hand' });
  expect(after.result.some((r) => r.name === 'gone.ex.test')).toBe(false);
});
