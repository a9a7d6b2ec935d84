import { describe, expect, it } from 'vitest';
import type { TokenRecord } from '../emulators/cloudflare/auth.js';
import type { DnsRecord } from '../emulators/cloudflare/store.js';
import { TOKEN, emulatorUnit, errorOf } from '../support/emulator-unit.js';

const ZONE = 'zone1';

// A Pro zone: its records take tags and 500-character comments (a Free zone's limits: cloudflare-emulator-plans).
const emu = emulatorUnit({ zones: [{ id: ZONE, name: 'example.com', account_id: 'acc', plan: 'pro' }] });

function call(method: string, path: string, body?: unknown) {
  return emu.dispatch(method, `/zones/${ZONE}/dns_records${path}`, body);
}
function create(body: Record<string, unknown>): DnsRecord {
  return call('POST', '', body).result as DnsRecord;
}
function list(query = ''): DnsRecord[] {
  return call('GET', query).result as DnsRecord[];
}

describe('DNS records', () => {
  it('creates with defaults, FQDN names and the real fields', () => {
    const r = create({ type: 'A', name: 'www', content: '192.0.2.1' });
    expect(r).toMatchObject({
      name: 'www.example.com',
      type: 'A',
      content: '192.0.2.1',
      proxied: false,
      proxiable: true,
      ttl: 1,
      comment: null,
      tags: [],
      meta: {},
    });
    expect(r.id).toMatch(/^[0-9a-f]{32}$/);
    expect(create({ type: 'TXT', name: '@', content: 'v=spf1 -all' }).name).toBe('example.com');
    expect(create({ type: 'TXT', name: 'Mail.Example.com.', content: 'x', proxied: false }).name).toBe(
      'mail.example.com',
    );
    expect(create({ type: 'TXT', name: 'n', content: 'y', proxiable: false }).proxiable).toBe(false);
  });

  it('refuses identical records (81058), CNAME clashes (81053), bad fields', () => {
    create({ type: 'A', name: 'a', content: '192.0.2.1' });
    expect(errorOf(() => create({ type: 'A', name: 'a.example.com', content: '192.0.2.1' }))).toEqual({
      status: 400,
      code: 81058,
    });
    create({ type: 'A', name: 'a', content: '192.0.2.2' }); // a second value on the same name is fine
    expect(errorOf(() => create({ type: 'CNAME', name: 'a', content: 'x.example.net' }))).toEqual({
      status: 400,
      code: 81053,
    });
    create({ type: 'CNAME', name: 'c', content: 'x.example.net' });
    expect(errorOf(() => create({ type: 'TXT', name: 'c', content: 'hi' })).code).toBe(81053);
    expect(errorOf(() => create({ type: 'CNAME', name: 'c', content: 'y.example.net' })).code).toBe(81053);
    expect(errorOf(() => create({ type: 'A', name: 'b', content: 'nope' })).code).toBe(9005);
    expect(errorOf(() => create({ type: 'AAAA', name: 'b', content: '192.0.2.1' })).code).toBe(9006);
    expect(errorOf(() => create({ type: 'TXT', name: 'b', content: 'x', proxied: true })).code).toBe(9004);
    expect(errorOf(() => create({ type: 'A', name: 'b', content: '192.0.2.1', ttl: 30 })).code).toBe(9021);
    expect(errorOf(() => create({ type: 'A', name: 'b', content: '192.0.2.1', comment: 'x'.repeat(501) })).code).toBe(
      9101,
    );
    expect(errorOf(() => create({ type: 'A', name: 'b', content: '192.0.2.1', comment: 'a\nb' }))).toEqual({
      status: 400,
      code: 9100,
    });
    expect(errorOf(() => create({ type: 'A', name: 'b' })).code).toBe(9207);
    expect(errorOf(() => create({ type: 'BOGUS', name: 'b', content: 'x' })).code).toBe(9207);
    expect(list()).toHaveLength(3);
  });

  it('get, put (replace), patch (merge), delete; unknown id is 404/81044', () => {
    const r = create({ type: 'A', name: 'a', content: '192.0.2.1', comment: 'c1', tags: ['owner:me'], ttl: 300 });
    expect(call('GET', `/${r.id}`).result).toEqual(r);
    const patched = call('PATCH', `/${r.id}`, { content: '192.0.2.9' }).result as DnsRecord;
    expect(patched).toMatchObject({ id: r.id, content: '192.0.2.9', comment: 'c1', tags: ['owner:me'], ttl: 300 });
    expect(patched.created_on).toBe(r.created_on);
    const put = call('PUT', `/${r.id}`, { type: 'A', name: 'a', content: '192.0.2.10' }).result as DnsRecord;
    expect(put).toMatchObject({ id: r.id, content: '192.0.2.10', comment: null, tags: [], ttl: 1 });
    expect(call('DELETE', `/${r.id}`).result).toEqual({ id: r.id });
    for (const m of ['GET', 'PATCH', 'DELETE']) {
      expect(errorOf(() => call(m, `/${r.id}`, {}))).toEqual({ status: 404, code: 81044 });
    }
    expect(errorOf(() => call('PUT', `/${r.id}`, { type: 'A', name: 'a', content: '192.0.2.1' })).code).toBe(81044);
  });

  it('a patch into a duplicate is refused, a patch to itself is not', () => {
    create({ type: 'A', name: 'a', content: '192.0.2.1' });
    const b = create({ type: 'A', name: 'a', content: '192.0.2.2' });
    expect(errorOf(() => call('PATCH', `/${b.id}`, { content: '192.0.2.1' })).code).toBe(81058);
    expect((call('PATCH', `/${b.id}`, { content: '192.0.2.2' }).result as DnsRecord).id).toBe(b.id);
  });

  it('filters: name / name.exact, type, content, comment.*, tag.*, proxied, match=any', () => {
    create({ type: 'A', name: 'a', content: '192.0.2.1', comment: 'managed-by:c1 [x]', tags: ['owner:c1'] });
    create({ type: 'AAAA', name: 'a', content: '2001:db8::1', comment: 'Manual', tags: ['owner:admin', 'env:prod'] });
    create({ type: 'CNAME', name: 'b', content: 'a.example.com', proxied: true });
    create({ type: 'TXT', name: 'b2', content: 'Hello', comment: 'MANAGED-BY:c2' });
    const names = (q: string) => list(q).map((r) => `${r.type} ${r.name}`);

    expect(names('?name=a.example.com')).toEqual(['A a.example.com', 'AAAA a.example.com']);
    expect(names('?name.exact=a')).toEqual(['A a.example.com', 'AAAA a.example.com']);
    expect(names('?name.startswith=b')).toEqual(['CNAME b.example.com', 'TXT b2.example.com']);
    expect(names('?type=CNAME')).toEqual(['CNAME b.example.com']);
    expect(names('?content=hello')).toEqual(['TXT b2.example.com']);
    expect(names('?content.contains=2001')).toEqual(['AAAA a.example.com']);
    expect(names('?comment=manual')).toEqual(['AAAA a.example.com']);
    expect(names('?comment.exact=Manual&type=A')).toEqual([]);
    expect(names('?comment.contains=managed-by:')).toEqual(['A a.example.com', 'TXT b2.example.com']);
    expect(names('?comment.startswith=managed-by:c1')).toEqual(['A a.example.com']);
    expect(names('?comment.absent=')).toEqual(['CNAME b.example.com']);
    expect(names('?comment.present=')).toHaveLength(3);
    expect(names('?tag=owner:c1')).toEqual(['A a.example.com']);
    expect(names('?tag.exact=OWNER:ADMIN')).toEqual(['AAAA a.example.com']);
    expect(names('?tag.present=env')).toEqual(['AAAA a.example.com']);
    expect(names('?tag.absent=owner')).toEqual(['CNAME b.example.com', 'TXT b2.example.com']);
    expect(names('?tag.exact=owner:c1&tag.exact=env:prod')).toEqual([]);
    expect(names('?tag.exact=owner:c1&tag.exact=env:prod&tag_match=any')).toEqual([
      'A a.example.com',
      'AAAA a.example.com',
    ]);
    expect(names('?proxied=true')).toEqual(['CNAME b.example.com']);
    expect(names('?type=TXT&name.exact=a.example.com&match=any')).toEqual([
      'A a.example.com',
      'AAAA a.example.com',
      'TXT b2.example.com',
    ]);
    expect(names('?type=TXT&name.exact=a.example.com')).toEqual([]);
    expect(errorOf(() => list('?match=some')).code).toBe(9207);
  });

  it('pages up to 5000 per page; a page past the end is empty', () => {
    for (let i = 0; i < 12; i++) create({ type: 'TXT', name: `r${i}`, content: 'x' });
    const page = call('GET', '?per_page=5&page=3');
    expect((page.result as DnsRecord[]).length).toBe(2);
    expect(page.result_info).toMatchObject({ page: 3, per_page: 5, count: 2, total_count: 12, total_pages: 3 });
    expect(call('GET', '?per_page=5&page=4').result).toEqual([]);
    expect(call('GET', '?per_page=10000').result_info?.per_page).toBe(5000);
    expect(call('GET', '').result_info?.per_page).toBe(100);
  });

  it('batch applies deletes, patches, puts, posts in that order', () => {
    const a = create({ type: 'A', name: 'a', content: '192.0.2.1' });
    const b = create({ type: 'A', name: 'b', content: '192.0.2.2' });
    const c = create({ type: 'CNAME', name: 'c', content: 'x.example.net' });
    const out = call('POST', '/batch', {
      // the post of an A on `c` only works because the CNAME is deleted first; the post
      // identical to a's new content only works because the patch moves a away first
      posts: [
        { type: 'A', name: 'c', content: '192.0.2.3' },
        { type: 'A', name: 'a', content: '192.0.2.1' },
      ],
      puts: [{ id: b.id, type: 'A', name: 'b', content: '192.0.2.20', comment: 'put' }],
      patches: [{ id: a.id, content: '192.0.2.11' }],
      deletes: [{ id: c.id }],
    }).result as Record<string, DnsRecord[]>;
    expect(out.deletes!.map((r) => r.id)).toEqual([c.id]);
    expect(out.patches!.map((r) => r.content)).toEqual(['192.0.2.11']);
    expect(out.puts!.map((r) => [r.id, r.comment])).toEqual([[b.id, 'put']]);
    expect(out.posts!.map((r) => `${r.name} ${r.content}`)).toEqual([
      'c.example.com 192.0.2.3',
      'a.example.com 192.0.2.1',
    ]);
    expect(
      list()
        .map((r) => r.content)
        .sort(),
    ).toEqual(['192.0.2.1', '192.0.2.11', '192.0.2.20', '192.0.2.3']);
  });

  it('batch is all-or-nothing', () => {
    const a = create({ type: 'A', name: 'a', content: '192.0.2.1' });
    const before = JSON.stringify(list());
    const failures = [
      { deletes: [{ id: a.id }], posts: [{ type: 'A', name: 'x', content: 'bad' }] },
      { deletes: [{ id: a.id }, { id: 'missing' }] },
      { patches: [{ id: a.id, content: '192.0.2.5' }], posts: [{ type: 'CNAME', name: 'a', content: 'x.net' }] },
      {
        posts: [
          { type: 'A', name: 'n', content: '192.0.2.7' },
          { type: 'A', name: 'n', content: '192.0.2.7' },
        ],
      },
      { puts: [{ id: a.id, name: 'a', content: '192.0.2.1' }] },
    ];
    const codes = failures.map((body) => errorOf(() => call('POST', '/batch', body)).code);
    expect(codes).toEqual([9005, 81044, 81053, 81058, 9207]);
    expect(JSON.stringify(list())).toBe(before);
  });

  it('seeded records are stored as given and reset clears them', () => {
    const { dns_records } = emu.store.seed({
      dns_records: [{ zone_id: ZONE, name: 'manual', type: 'A', content: '192.0.2.50', comment: 'by hand' }],
    });
    expect(dns_records[0]).toMatchObject({ name: 'manual.example.com', comment: 'by hand' });
    expect(list('?comment=by hand')).toHaveLength(1);
    emu.store.reset();
    expect(emu.store.dnsRecords.size).toBe(0);
  });

  it('an unknown zone is 404/7003, and a token of another account is refused', () => {
    expect(errorOf(() => emu.dispatch('GET', '/zones/nope/dns_records'))).toEqual({
      status: 404,
      code: 7003,
    });
    const scoped: TokenRecord = { ...TOKEN, accounts: new Set(['other']) };
    expect(errorOf(() => emu.dispatch('GET', `/zones/${ZONE}/dns_records`, undefined, scoped))).toEqual({
      status: 403,
      code: 10000,
    });
  });
});
