/**
 * What a zone's plan allows, through the real SDK (issue 33, E9 and E10): a Free zone reads the
 * settings its plan lacks as not editable and refuses their change ("Not allowed to edit setting
 * for …", 1015), and its DNS records take comments of 100 characters, no tags and TTLs of 60 s and
 * more; paid plans take 500-character comments and tags, Enterprise TTLs of 30 s.
 */
import Cloudflare from 'cloudflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCloudflareEmulator, type RunningEmulator } from '../emulators/cloudflare/index.js';

const account = 'a'.repeat(32);
const free = 'f'.repeat(32);
const pro = 'b'.repeat(32);
const enterprise = 'e'.repeat(32);
let emulator: RunningEmulator;
let cf: Cloudflare;

beforeAll(async () => {
  emulator = await startCloudflareEmulator({
    tokens: [{ token: 'good' }],
    seed: {
      zones: [
        { id: free, name: 'free.example', account_id: account },
        { id: pro, name: 'pro.example', account_id: account, plan: 'pro' },
        { id: enterprise, name: 'ent.example', account_id: account, plan: 'enterprise' },
      ],
    },
  });
  cf = new Cloudflare({ apiToken: 'good', baseURL: emulator.baseURL, maxRetries: 0 });
});
afterAll(() => emulator?.close());

const edit = (zone: string, id: string, value: unknown) =>
  cf.zones.settings.edit(id as never, { zone_id: zone, value } as never) as Promise<{ value: unknown }>;
const get = (zone: string, id: string) =>
  cf.zones.settings.get(id as never, { zone_id: zone }) as Promise<{ value: unknown; editable: boolean }>;

describe('plan-gated zone settings (E9)', () => {
  it('a Free zone reads Polish, WebP, Mirage, the legacy WAF and HTTP/2 as not editable, and refuses their change with 1015', async () => {
    for (const [id, value] of [
      ['polish', 'lossless'],
      ['webp', 'on'],
      ['mirage', 'on'],
      ['waf', 'on'],
      ['http2', 'off'],
      ['prefetch_preload', 'on'],
      ['sort_query_string_for_cache', 'on'],
      ['cache_by_device_type', 'on'],
    ] as const) {
      expect((await get(free, id)).editable).toBe(false);
      const before = (await get(free, id)).value;
      await expect(edit(free, id, value)).rejects.toMatchObject({
        status: 400,
        errors: [{ code: 1015, message: `Not allowed to edit setting for ${id}` }],
      });
      expect((await get(free, id)).value).toBe(before);
    }
  });

  it("the settings of every plan stay editable on Free; Pro takes Polish but not Enterprise's; Enterprise takes all", async () => {
    expect((await get(free, 'min_tls_version')).editable).toBe(true);
    expect((await edit(free, 'min_tls_version', '1.2')).value).toBe('1.2');
    expect((await edit(pro, 'polish', 'lossy')).value).toBe('lossy');
    await expect(edit(pro, 'sort_query_string_for_cache', 'on')).rejects.toMatchObject({ status: 400 });
    expect((await edit(enterprise, 'sort_query_string_for_cache', 'on')).value).toBe('on');
    const all = (await cf.get(`/zones/${free}/settings`)) as { result: { id: string; editable: boolean }[] };
    expect(all.result.filter((s) => !s.editable).map((s) => s.id)).toEqual(
      expect.arrayContaining(['polish', 'webp', 'mirage', 'waf', 'http2']),
    );
  });
});

describe('DNS limits per plan (E10)', () => {
  const record = (zone: string, extra: Record<string, unknown>) =>
    cf.dns.records.create({
      zone_id: zone,
      type: 'A',
      name: `r${Math.random().toString(36).slice(2, 8)}`,
      content: '192.0.2.1',
      ttl: 1,
      ...extra,
    } as never);

  it('comments: 100 characters on Free, 500 on paid plans', async () => {
    await expect(record(free, { comment: 'x'.repeat(100) })).resolves.toMatchObject({ comment: 'x'.repeat(100) });
    await expect(record(free, { comment: 'x'.repeat(101) })).rejects.toMatchObject({
      status: 400,
      errors: [{ code: 9101, message: 'DNS record comment cannot be longer than 100 characters.' }],
    });
    await expect(record(pro, { comment: 'x'.repeat(500) })).resolves.toMatchObject({ comment: 'x'.repeat(500) });
    await expect(record(pro, { comment: 'x'.repeat(501) })).rejects.toMatchObject({ status: 400 });
  });

  it('tags: none on Free (a create or an edit with tags is refused), kept on paid plans', async () => {
    await expect(record(free, { tags: ['team:web'] })).rejects.toMatchObject({
      status: 400,
      errors: [{ code: 9104 }],
    });
    const plain = await record(free, {});
    await expect(cf.dns.records.edit(plain.id, { zone_id: free, tags: ['team:web'] } as never)).rejects.toMatchObject({
      status: 400,
    });
    await expect(record(pro, { tags: ['team:web'] })).resolves.toMatchObject({ tags: ['team:web'] });
  });

  it('TTL: 60 s at least below Enterprise, 30 s on Enterprise', async () => {
    for (const zone of [free, pro])
      await expect(record(zone, { ttl: 30 })).rejects.toMatchObject({ status: 400, errors: [{ code: 9021 }] });
    await expect(record(free, { ttl: 60 })).resolves.toMatchObject({ ttl: 60 });
    await expect(record(enterprise, { ttl: 30 })).resolves.toMatchObject({ ttl: 30 });
    await expect(record(enterprise, { ttl: 29 })).rejects.toMatchObject({ status: 400 });
  });

  it('batch: 200 operations on Free, more on paid plans', async () => {
    const posts = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ type: 'TXT', name: `b${i}`, content: `v${i}`, ttl: 1 }));
    await expect(cf.dns.records.batch({ zone_id: free, posts: posts(201) } as never)).rejects.toMatchObject({
      status: 400,
    });
    const done = (await cf.dns.records.batch({ zone_id: pro, posts: posts(201) } as never)) as { posts?: unknown[] };
    expect(done.posts).toHaveLength(201);
  });
});
