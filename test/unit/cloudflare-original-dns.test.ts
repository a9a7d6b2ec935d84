/**
 * The original operator's tunnel CNAMEs (comment "Managed by cloudflare-operator", a
 * `_managed.<fqdn>` TXT naming the tunnel), from the migrating user's side: the CNAME of this
 * tunnel is taken over without `adoptExisting` and its TXT removed in the same write; one of
 * another tunnel, or a lookalike without the original's comment, stays as it is. The real SDK
 * against the emulator, the sync's own steps (read, complete, merge plan, write).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cloudflareClient } from '../../src/activities/cloudflare/credentials.js';
import { tunnelDnsAdapter } from '../../src/activities/cloudflare/targets/tunnel-dns.js';
import type { RegisteredSource } from '../../src/domain/cloudflare/aggregate.js';
import { ownershipOf } from '../../src/domain/cloudflare/markers.js';
import { planWrite } from '../../src/domain/cloudflare/merge.js';
import { EmulatorAdmin, startCloudflareEmulator, type RunningEmulator } from '../emulators/cloudflare/index.js';

const ACCOUNT = 'a'.repeat(32);
const CLUSTER = 'c1';
const OURS = '11111111-1111-1111-1111-111111111111';
const OTHER = '22222222-2222-2222-2222-222222222222';
let emulator: RunningEmulator;
let admin: EmulatorAdmin;

beforeAll(async () => {
  emulator = await startCloudflareEmulator({ tokens: [{ token: 'tok' }] });
  admin = new EmulatorAdmin(emulator.url, emulator.adminToken);
});
afterAll(() => emulator?.close());

const original = (host: string, tunnelId: string, comment = 'Managed by cloudflare-operator') => [
  { name: host, type: 'CNAME', content: `${tunnelId}.cfargotunnel.com`, ttl: 1, proxied: true, comment },
  {
    name: `_managed.${host}`,
    type: 'TXT',
    content: JSON.stringify({ DnsId: 'x', TunnelName: 't', TunnelId: tunnelId }),
    ttl: 1,
    comment: 'Managed by cloudflare-operator',
  },
];

it("takes over the original's CNAME of this tunnel and removes its _managed. TXT; leaves the others", async () => {
  const { zones } = await admin.seed({
    accounts: [{ id: ACCOUNT }],
    zones: [{ name: 'ex.test', account_id: ACCOUNT }],
  });
  const zoneId = zones[0]!.id;
  const cf = cloudflareClient({ apiToken: 'tok' }, emulator.baseURL, undefined);
  for (const r of [
    ...original('app.ex.test', OURS),
    ...original('api.ex.test', OTHER), // the original's, for another tunnel
    ...original('web.ex.test', OURS, 'by hand'), // not the original's comment
  ])
    await cf.dns.records.create({ zone_id: zoneId, ...r } as never);

  const target = { resourceType: 'TunnelDNS' as const, accountId: ACCOUNT, zoneId, zone: 'ex.test' };
  const want = (name: string) => ({
    name,
    type: 'CNAME',
    content: `${OURS}.cfargotunnel.com`,
    ttl: 1,
    proxied: true,
  });
  const source = {
    ref: { kind: 'TunnelIngressClassConfig', namespace: 'apps', name: 'cls' },
    priority: 100,
    createdAt: '',
    config: { entries: [want('app.ex.test'), want('api.ex.test'), want('web.ex.test')] },
  } as unknown as RegisteredSource;

  const sync = async () => {
    const { items: live } = await tunnelDnsAdapter.read(cf, target, {} as never);
    const asked = tunnelDnsAdapter.desired([source], CLUSTER);
    const desired = (await tunnelDnsAdapter.complete?.(asked, {} as never, live)) ?? asked;
    const plan = planWrite(live, desired, tunnelDnsAdapter.codec, {
      clusterId: CLUSTER,
      adoptLegacy: false,
      ownedKinds: new Set(tunnelDnsAdapter.ownedKinds),
    });
    if (plan.write) await tunnelDnsAdapter.write(cf, target, plan, live, {} as never);
    return plan;
  };

  const first = await sync();
  expect(first.conflicts.map((c) => c.key).sort()).toEqual(['name api.ex.test', 'name web.ex.test']);
  const after = (await cf.dns.records.list({ zone_id: zoneId, per_page: 5000 })).result;
  const at = (name: string, type: string) => after.filter((r) => r.name === name && r.type === type);
  expect(ownershipOf(at('app.ex.test', 'CNAME')[0]?.comment, CLUSTER)).toMatchObject({ owner: 'ours' });
  expect(at('_managed.app.ex.test', 'TXT')).toEqual([]);
  expect(at('api.ex.test', 'CNAME')[0]).toMatchObject({ content: `${OTHER}.cfargotunnel.com` });
  expect(at('_managed.api.ex.test', 'TXT')).toHaveLength(1);
  expect(at('web.ex.test', 'CNAME')[0]).toMatchObject({ comment: 'by hand' });
  expect(at('_managed.web.ex.test', 'TXT')).toHaveLength(1);

  // Converged: nothing more to write.
  expect((await sync()).write).toBe(false);
});

it('a TXT the takeover left behind (written again, or a failed batch) is removed beside our CNAME', async () => {
  const { zones } = await admin.seed({
    accounts: [{ id: ACCOUNT }],
    zones: [{ name: 'left.test', account_id: ACCOUNT }],
  });
  const zoneId = zones[0]!.id;
  const cf = cloudflareClient({ apiToken: 'tok' }, emulator.baseURL, undefined);
  const [cname, txt] = original('app.left.test', OURS);
  const marker = `[managed-by:${CLUSTER}:TunnelIngressClassConfig/apps/cls]`;
  await cf.dns.records.create({ zone_id: zoneId, ...cname!, comment: marker } as never);
  await cf.dns.records.create({ zone_id: zoneId, ...txt! } as never);
  const target = { resourceType: 'TunnelDNS' as const, accountId: ACCOUNT, zoneId, zone: 'left.test' };
  const source = {
    ref: { kind: 'TunnelIngressClassConfig', namespace: 'apps', name: 'cls' },
    priority: 100,
    createdAt: '',
    config: {
      entries: [{ name: 'app.left.test', type: 'CNAME', content: `${OURS}.cfargotunnel.com`, ttl: 1, proxied: true }],
    },
  } as unknown as RegisteredSource;
  const { items: live } = await tunnelDnsAdapter.read(cf, target, {} as never);
  const asked = tunnelDnsAdapter.desired([source], CLUSTER);
  const desired = (await tunnelDnsAdapter.complete?.(asked, {} as never, live)) ?? asked;
  const plan = planWrite(live, desired, tunnelDnsAdapter.codec, {
    clusterId: CLUSTER,
    adoptLegacy: false,
    ownedKinds: new Set(tunnelDnsAdapter.ownedKinds),
  });
  expect(plan.write).toBe(true);
  await tunnelDnsAdapter.write(cf, target, plan, live, {} as never);
  const after = (await cf.dns.records.list({ zone_id: zoneId, per_page: 5000 })).result;
  expect(after.map((r) => `${r.type} ${r.name}`)).toEqual(['CNAME app.left.test']);
});
