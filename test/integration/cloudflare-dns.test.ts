/**
 * DNSRecord on the aggregation's one mechanism: the watcher starts the object's source workflow,
 * it resolves the zone and registers with the target `DNSRecord/<zone>/<fqdn>/<type>`, and that
 * target's sync lists the record set (`name.exact` + `type`), merges (the marker is in
 * `comment`) and creates, patches or deletes records one by one. Real Temporal, kube-apiserver
 * and etcd; Cloudflare is the emulator, seeded and read only through the official SDK.
 */
import { describe, expect, it } from 'vitest';
import { eventually, uniq } from '../support/env.js';
import { cloudflareSuite, hexId, sourceObject, zoneRecords } from '../support/cloudflare.js';

const account = hexId();
const creds = uniq('cf-dns-acct');
const zoneName = `${uniq('dns')}.example`;
const suite = cloudflareSuite({
  taskQueue: 'cf-dns',
  namespace: 'cf-dns',
  account: { id: account, name: 'dns' },
  zone: zoneName,
  credentials: { name: creds },
  configOverrides: { debounceMs: 200 },
});
const { k } = suite;

/** The zone's records, through the SDK (every page). */
const records = () => zoneRecords(suite.fx.cf, suite.zoneId);

const dnsRecord = (name: string, spec: Record<string, unknown>) =>
  sourceObject(
    'DNSRecord',
    name,
    { ...spec, cloudflare: { credentialsRef: { name: creds }, domain: zoneName, ...(spec.cloudflare ?? {}) } },
    suite.namespace,
  );
const ref = (name: string) => ({ ...dnsRecord(name, {}), name, namespace: suite.namespace });
const marker = (name: string) => `[managed-by:default:DNSRecord/${suite.namespace}/${name}]`;
const ready = (name: string) => suite.readyOf('DNSRecord', name, suite.namespace);

describe('DNSRecord', () => {
  it('creates, patches in place and deletes its record; a hand-made record elsewhere is untouched', async () => {
    const other = await suite.fx.cf.dns.records.create({
      zone_id: suite.zoneId,
      type: 'A',
      name: `other.${zoneName}`,
      content: '198.51.100.1',
      ttl: 1,
      comment: 'made by hand',
    });
    const app = uniq('app');
    await k.apply(dnsRecord(app, { name: 'app', type: 'A', content: '192.0.2.1', proxied: true, comment: 'web' }));
    const created = await eventually('the record created', async () =>
      (await records()).find((r) => r.name === `app.${zoneName}`),
    );
    expect(created).toMatchObject({
      type: 'A',
      content: '192.0.2.1',
      proxied: true,
      ttl: 1,
      comment: `web ${marker(app)}`,
    });
    await eventually('Ready Synced, status.recordId the record', async () => {
      const obj = (await k.get(ref(app))) as { status?: { recordId?: string } } | undefined;
      return (await ready(app))?.reason === 'Synced' && obj?.status?.recordId === created.id;
    });

    await k.apply(dnsRecord(app, { name: 'app', type: 'A', content: '192.0.2.2', proxied: true, comment: 'web' }));
    const patched = await eventually('the record patched', async () => {
      const r = (await records()).find((x) => x.name === `app.${zoneName}`);
      return r?.content === '192.0.2.2' ? r : undefined;
    });
    expect(patched.id).toBe(created.id); // the same record, not a new one
    expect((await records()).filter((r) => r.name === `app.${zoneName}`)).toHaveLength(1);

    // Renamed: the old name's record goes, the new one comes.
    await k.apply(dnsRecord(app, { name: 'api', type: 'A', content: '192.0.2.2', proxied: true, comment: 'web' }));
    await eventually('moved to the new name', async () => {
      const all = await records();
      return all.some((r) => r.name === `api.${zoneName}`) && !all.some((r) => r.name === `app.${zoneName}`);
    });

    await k.delete(ref(app));
    await eventually('the record deleted and the DNSRecord gone', async () => {
      const all = await records();
      return !all.some((r) => r.name === `api.${zoneName}`) && !(await k.get(ref(app)));
    });
    expect((await records()).find((r) => r.id === other.id)).toMatchObject({
      content: '198.51.100.1',
      comment: 'made by hand',
    });
  });

  it('an unmarked record of the same name is not adopted (Conflict); with adoptExisting it is taken over in place', async () => {
    const hand = await suite.fx.cf.dns.records.create({
      zone_id: suite.zoneId,
      type: 'A',
      name: `legacy.${zoneName}`,
      content: '203.0.113.9',
      ttl: 1,
      comment: 'the old load balancer',
    });
    const site = uniq('site');
    await k.apply(dnsRecord(site, { name: 'legacy', type: 'A', content: '192.0.2.50' }));
    const conflict = await eventually('the conflict on its status', async () => {
      const r = await ready(site);
      return r?.reason === 'Conflict' ? r : undefined;
    });
    expect(conflict.status).toBe('False');
    expect(conflict.message).toContain(
      `A record legacy.${zoneName} is already held by one this operator does not manage`,
    );
    expect(conflict.message).toContain('spec.adoptExisting: true');
    // Nothing written: the hand-made record is as it was and alone.
    expect((await records()).filter((r) => r.name === `legacy.${zoneName}`)).toEqual([
      expect.objectContaining({ id: hand.id, content: '203.0.113.9', comment: 'the old load balancer' }),
    ]);

    await k.apply(dnsRecord(site, { name: 'legacy', type: 'A', content: '192.0.2.50', adoptExisting: true }));
    const adopted = await eventually('adopted in place', async () => {
      const set = (await records()).filter((r) => r.name === `legacy.${zoneName}`);
      return set.length === 1 && set[0]!.content === '192.0.2.50' ? set[0] : undefined;
    });
    expect(adopted).toMatchObject({ id: hand.id, comment: marker(site) });
    await eventually('Ready Synced', async () => (await ready(site))?.reason === 'Synced');

    // Once adopted it is ours: deleting the DNSRecord deletes it.
    await k.delete(ref(site));
    await eventually('the adopted record deleted', async () => !(await records()).some((r) => r.id === hand.id));
  });

  it("Cloudflare's refusal (a CNAME where an A record exists) is the DNSRecord's status; fixing the spec recovers", async () => {
    await suite.fx.cf.dns.records.create({
      zone_id: suite.zoneId,
      type: 'A',
      name: `clash.${zoneName}`,
      content: '198.51.100.3',
      ttl: 1,
    });
    const alias = uniq('alias');
    await k.apply(dnsRecord(alias, { name: 'clash', type: 'CNAME', content: 'lb.example.net' }));
    const failed = await eventually('the refusal on its status', async () => {
      const r = await ready(alias);
      return r?.status === 'False' && r.reason !== 'Syncing' ? r : undefined;
    });
    expect(failed.message).toContain('81053');
    await k.apply(dnsRecord(alias, { name: 'alias', type: 'CNAME', content: 'lb.example.net' }));
    await eventually('the CNAME under a free name', async () =>
      (await records()).some((r) => r.name === `alias.${zoneName}` && r.type === 'CNAME'),
    );
    await eventually('Ready Synced', async () => (await ready(alias))?.reason === 'Synced');
  });

  it('bad input: a field-specific message on the status, nothing in Cloudflare; a DNSRecord without a zone says so', async () => {
    const bad = uniq('bad');
    await k.apply(dnsRecord(bad, { name: 'mail', type: 'MX', content: 'mx.example.net' }));
    const invalid = await eventually('InvalidSpec', async () => {
      const r = await ready(bad);
      return r?.reason === 'InvalidSpec' ? r : undefined;
    });
    expect(invalid.message).toBe('spec.priority: a MX record needs a priority');
    expect((await records()).some((r) => r.name === `mail.${zoneName}`)).toBe(false);

    const nozone = uniq('nozone');
    await k.apply(
      sourceObject(
        'DNSRecord',
        nozone,
        { name: 'x', type: 'TXT', content: 'y', cloudflare: { credentialsRef: { name: creds } } },
        suite.namespace,
      ),
    );
    const r = await eventually('NoZone', async () => {
      const c = await ready(nozone);
      return c?.reason === 'NoZone' ? c : undefined;
    });
    expect(r.message).toContain(`CloudflareCredentials ${creds} has no defaultDomain`);
  });
});
