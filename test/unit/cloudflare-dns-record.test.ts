/** The DNSRecord kind, decided purely: names, validation, contribution, and the merge's adoption opt-in. */
import { describe, expect, it } from 'vitest';
import { desiredRecords, type RegisteredSource } from '../../src/domain/cloudflare/aggregate.js';
import { dnsRecordCodec, type DnsRecordItem } from '../../src/domain/cloudflare/items.js';
import { dnsRecordRules, fqdnOf } from '../../src/domain/cloudflare/kinds/dns-record.js';
import { planWrite } from '../../src/domain/cloudflare/merge.js';
import { targetKey } from '../../src/domain/cloudflare/targets.js';

const CLUSTER = 'cluster-a';
const opts = { clusterId: CLUSTER, adoptLegacy: false };
const account = '0123456789abcdef0123456789abcdef';
const zoneId = 'fedcba9876543210fedcba9876543210';
const place = { accountId: account, zoneId, zoneName: 'example.com' };

function source(name: string, spec: Record<string, unknown>, createdAt = '2026-01-01T00:00:00Z'): RegisteredSource {
  const ref = { kind: 'DNSRecord', namespace: 'web', name };
  const target = dnsRecordRules.targets(spec as never, place, ref)[0]!;
  return {
    ref,
    priority: 100,
    createdAt,
    generation: 1,
    uid: `uid-${name}`,
    config: dnsRecordRules.contribution(spec as never, target, ref),
  };
}

const mark = (name: string) => `[managed-by:${CLUSTER}:DNSRecord/web/${name}]`;

describe('DNSRecord names and targets', () => {
  it('makes relative names fully qualified; @ is the apex; an FQDN in the zone stays', () => {
    expect(fqdnOf('www', 'example.com')).toBe('www.example.com');
    expect(fqdnOf('@', 'example.com')).toBe('example.com');
    expect(fqdnOf('WWW.Example.com.', 'example.com')).toBe('www.example.com');
    expect(fqdnOf('example.com', 'example.com')).toBe('example.com');
    expect(fqdnOf('_dmarc', 'example.com')).toBe('_dmarc.example.com');
  });

  it('targets the record set (zone, name, type) and needs a zone', () => {
    const [t] = dnsRecordRules.targets({ name: 'www', type: 'A', content: '192.0.2.1' } as never, place, {
      name: 'x',
    });
    expect(targetKey(t!)).toBe(`DNSRecord/${zoneId}/www.example.com/A`);
    expect(dnsRecordRules.targets({ name: 'www', type: 'A' } as never, { accountId: account }, { name: 'x' })).toEqual(
      [],
    );
    expect(dnsRecordRules.zoneFromCredentials).toBe(true);
    expect(dnsRecordRules.zone({ cloudflare: { domain: 'example.com' } } as never)).toBe('example.com');
  });

  it('contributes nothing to a set it no longer names (renamed or retyped)', () => {
    const [t] = dnsRecordRules.targets({ name: 'www', type: 'A', content: '192.0.2.1' } as never, place, {
      name: 'x',
    });
    const c = (spec: Record<string, unknown>) => dnsRecordRules.contribution(spec as never, t!, { name: 'x' });
    expect(c({ name: 'api', type: 'A', content: '192.0.2.1' })).toEqual({ entries: [] });
    expect(c({ name: 'www', type: 'AAAA', content: '2001:db8::1' })).toEqual({ entries: [] });
    expect(c({ name: 'www', type: 'A', content: '192.0.2.1', ttl: 300, adoptExisting: true })).toEqual({
      entries: [{ name: 'www.example.com', type: 'A', content: '192.0.2.1', ttl: 300, proxied: false }],
      adoptExisting: true,
    });
  });

  it('writes type-specific data with Cloudflare field names', () => {
    const spec = {
      name: '_sip._tcp',
      type: 'SRV',
      content: '',
      data: { weight: 5, port: 5060, target: 'sip.example.com' },
      priority: 10,
    };
    const [t] = dnsRecordRules.targets(spec as never, place, { name: 'x' });
    const tlsa = {
      name: '_443._tcp',
      type: 'TLSA',
      content: '',
      data: { usage: 3, selector: 1, matchingType: 1, certificate: 'ab' },
    };
    const [t2] = dnsRecordRules.targets(tlsa as never, place, { name: 'y' });
    expect(dnsRecordRules.contribution(spec as never, t!, { name: 'x' })).toMatchObject({
      entries: [
        { name: '_sip._tcp.example.com', data: { weight: 5, port: 5060, target: 'sip.example.com' }, priority: 10 },
      ],
    });
    expect(dnsRecordRules.contribution(tlsa as never, t2!, { name: 'y' })).toMatchObject({
      entries: [{ data: { usage: 3, selector: 1, matching_type: 1, certificate: 'ab' } }],
    });
  });
});

describe('DNSRecord validation', () => {
  const problems = (spec: Record<string, unknown>) => dnsRecordRules.validate(spec as never, { name: 'x' });

  it('accepts well-formed records', () => {
    expect(problems({ name: 'www', type: 'A', content: '192.0.2.1', proxied: true })).toEqual([]);
    expect(problems({ name: '@', type: 'MX', content: 'mx.example.com', priority: 10 })).toEqual([]);
    expect(problems({ name: '*.apps', type: 'CNAME', content: 'lb.example.net.' })).toEqual([]);
    expect(problems({ name: '_dmarc', type: 'TXT', content: 'v=DMARC1; p=none' })).toEqual([]);
  });

  it('names the field and says what is wrong', () => {
    expect(problems({ name: 'www', type: 'A', content: '2001:db8::1' })).toEqual([
      'spec.content: "2001:db8::1" is not an IPv4 address (an A record needs one)',
    ]);
    expect(problems({ name: 'www', type: 'AAAA', content: '192.0.2.1' })[0]).toContain('not an IPv6 address');
    expect(problems({ name: 'www', type: 'CNAME', content: 'not a host' })[0]).toContain('is not a hostname');
    expect(problems({ name: 'bad name', type: 'TXT', content: 'x' })[0]).toContain(
      'spec.name: "bad name" is not a DNS name',
    );
    expect(problems({ name: '@', type: 'MX', content: 'mx.example.com' })).toEqual([
      'spec.priority: a MX record needs a priority',
    ]);
    expect(problems({ name: 'www', type: 'TXT', content: 'x', proxied: true })).toEqual([
      'spec.proxied: a TXT record cannot be proxied (only A, AAAA and CNAME)',
    ]);
    expect(problems({ name: 'www', type: 'A', content: '192.0.2.1', proxied: true, ttl: 300 })).toEqual([
      "spec.ttl: a proxied record's TTL is automatic; set ttl: 1 or proxied: false",
    ]);
    expect(problems({ name: 'www', type: 'A', content: '192.0.2.1', ttl: 5 })[0]).toContain('outside 30–86400');
    expect(problems({ name: 'www', type: 'TXT', content: 'x', comment: 'a\nb' })[0]).toContain('single line');
    expect(problems({ name: 'www', type: 'TXT', content: 'x', tags: ['nocolon'] })[0]).toContain('"name:value"');
    expect(problems({ name: 'www', type: 'TXT', content: '' })).toEqual(['spec.content: must not be empty']);
  });
});

describe('DNS record sets: merge with markers and the adoption opt-in', () => {
  const www = (content: string, extra: Partial<DnsRecordItem> = {}): DnsRecordItem => ({
    id: `id-${content}`,
    name: 'www.example.com',
    type: 'A',
    content,
    ttl: 1,
    proxied: false,
    comment: null,
    tags: [],
    ...extra,
  });

  it('an unmarked A record of the name is never adopted: ours is left out as a conflict, nothing is written', () => {
    const live = [www('198.51.100.7', { comment: 'made by hand' })];
    const desired = desiredRecords([source('site', { name: 'www', type: 'A', content: '192.0.2.1' })], CLUSTER);
    const p = planWrite(live, desired, dnsRecordCodec, opts);
    expect(p.write).toBe(false);
    expect(p.items).toEqual(live);
    expect(p.conflicts).toEqual([{ owner: 'DNSRecord/web/site', key: 'A record www.example.com', heldBy: 'external' }]);
  });

  it('with adoptExisting the record is taken over in place: same id, our content and marker', () => {
    const live = [www('198.51.100.7', { comment: 'made by hand' })];
    const desired = desiredRecords(
      [source('site', { name: 'www', type: 'A', content: '192.0.2.1', adoptExisting: true })],
      CLUSTER,
    );
    const p = planWrite(live, desired, dnsRecordCodec, opts);
    expect(p.write).toBe(true);
    expect(p.conflicts).toEqual([]);
    expect(p.counts.adopted).toBe(1);
    expect(p.items).toEqual([
      {
        name: 'www.example.com',
        type: 'A',
        content: '192.0.2.1',
        ttl: 1,
        proxied: false,
        comment: mark('site'),
        id: 'id-198.51.100.7',
      },
    ]);
  });

  it("another cluster's record is never adopted, even with the opt-in", () => {
    const live = [www('198.51.100.7', { comment: '[managed-by:cluster-b:DNSRecord/web/site]' })];
    const desired = desiredRecords(
      [source('site', { name: 'www', type: 'A', content: '192.0.2.1', adoptExisting: true })],
      CLUSTER,
    );
    const p = planWrite(live, desired, dnsRecordCodec, opts);
    expect(p.write).toBe(false);
    expect(p.conflicts[0]?.heldBy).toBe('cluster cluster-b');
  });

  it('TXT values are independent: a hand-made TXT of the name stays next to ours; only an identical one is in the way', () => {
    const txt = (content: string, comment: string | null = null): DnsRecordItem => ({
      id: `id-${content}`,
      name: 'example.com',
      type: 'TXT',
      content,
      ttl: 1,
      proxied: false,
      comment,
      tags: [],
    });
    const live = [txt('v=spf1 -all', 'by hand')];
    const ours = desiredRecords([source('verify', { name: '@', type: 'TXT', content: 'token=abc' })], CLUSTER);
    const p = planWrite(live, ours, dnsRecordCodec, opts);
    expect(p.write).toBe(true);
    expect(p.items.map((r) => r.content)).toEqual(['v=spf1 -all', 'token=abc']);
    const same = desiredRecords([source('spf', { name: '@', type: 'TXT', content: 'v=spf1 -all' })], CLUSTER);
    expect(planWrite(live, same, dnsRecordCodec, opts).conflicts).toHaveLength(1);
  });

  it('a second DNSRecord for the same A name is a conflict held by the first; the set does not change', () => {
    const desired = desiredRecords(
      [
        source('first', { name: 'www', type: 'A', content: '192.0.2.1' }, '2026-01-01T00:00:00Z'),
        source('second', { name: 'www', type: 'A', content: '192.0.2.2' }, '2026-01-02T00:00:00Z'),
      ],
      CLUSTER,
    );
    const live = [www('192.0.2.1', { comment: mark('first') })];
    const p = planWrite(live, desired, dnsRecordCodec, opts);
    expect(p.write).toBe(false);
    expect(p.conflicts).toEqual([
      { owner: 'DNSRecord/web/second', key: 'A record www.example.com', heldBy: 'DNSRecord/web/first' },
    ]);
  });

  it('a proxied record read back with ttl 1 equals what we asked: no write', () => {
    const desired = desiredRecords(
      [source('site', { name: 'www', type: 'A', content: '192.0.2.1', proxied: true })],
      CLUSTER,
    );
    const live = [www('192.0.2.1', { proxied: true, comment: mark('site') })];
    expect(planWrite(live, desired, dnsRecordCodec, opts).write).toBe(false);
  });
});
