/**
 * The tenant provider against a real etcd: load, every key type through the watch, ignored
 * keys, malformed values, resolver validation, consistency under concurrent reads, metrics.
 */
import type { Etcd3 } from 'etcd3';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEtcdClient } from '../../src/tenancy/etcd.js';
import { registerTenancyMetrics } from '../../src/tenancy/metrics.js';
import { DEFAULT_RESOLVER_CONFIG } from '../../src/tenancy/model.js';
import { TenantProvider } from '../../src/tenancy/provider.js';
import { TenantPublisher } from '../../src/tenancy/publisher.js';
import { quietLogger, startTestEtcd, type TestEtcd } from '../support/tenancy.js';

const P = 'jxt/';
let env: TestEtcd;
let client: Etcd3;
let provider: TenantProvider;

const meta = (id: number, code: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ id, code, name: `Tenant ${id}`, status: 'active', billingPlan: 'pro', ...extra });
const db = (host: string) =>
  JSON.stringify({
    driver: 'postgres',
    host,
    port: 5432,
    database: 'd',
    username: 'u',
    password: 'p',
    sslMode: 'disable',
  });

async function put(key: string, value: string): Promise<number> {
  const res = await client
    .put(P + key)
    .value(value)
    .exec();
  return Number(res.header.revision);
}

async function del(key: string): Promise<number> {
  const res = await client
    .delete()
    .key(P + key)
    .exec();
  return Number(res.header.revision);
}

/** Writes, then waits until the provider has seen the write's revision. */
async function written(write: Promise<number>): Promise<void> {
  await provider.waitForRevision(await write);
}

beforeAll(async () => {
  env = await startTestEtcd('tenancy-provider');
  client = createEtcdClient(env.etcd.endpoint);
  // Data present before the provider starts: every key type, plus keys readers must ignore and
  // one malformed value.
  await put('tenants/1/meta', meta(1, 'acme'));
  await put('tenants/1/database/evidence-command', db('db-1'));
  await put(
    'tenants/1/ftp/acme-ftp',
    JSON.stringify({ passwordHash: 'h', status: 'active', homeDirectory: '/acme', writePermission: true }),
  );
  await put('tenants/1/storage', JSON.stringify({ quotaBytes: 1000, maxFileSizeBytes: 10, maxConcurrentUploads: 2 }));
  await put('tenants/1/platform/wvp', JSON.stringify({ apiUrl: 'http://wvp', realm: 'r1' }));
  await put('tenants/1/domain/primary', '"acme.example.com"');
  await put('tenants/1/domain/internal', 'acme.internal');
  await put('tenants/1/domain/aliases', '["shop.acme.io"]');
  await put('tenants/2/meta', meta(2, 'globex'));
  await put('tenants/2/database/broken', '{"host": "db", "port": '); // malformed: skipped alone
  await put('tenants/_index/by-code/acme', '1');
  await put('common/storage-directory', '{"root":"/data"}');
  await put(
    'common/resolver',
    JSON.stringify({ id: 1, httpType: 'host', httpHostMode: 'domain', ftpType: 'username' }),
  );
  provider = await TenantProvider.start({ endpoints: env.etcd.endpoint, prefix: P, logger: quietLogger });
});

afterAll(async () => {
  await provider?.stop();
  client?.close();
  await env?.dispose();
});

describe('load', () => {
  it('reads every key type from one prefix read', () => {
    expect(provider.watchState).toMatch(/live|starting/);
    expect(provider.reloadCount('start')).toBe(1);
    expect(provider.getAllTenantIds()).toEqual([1, 2]);
    expect(provider.getTenantMeta(1)).toEqual({
      id: 1,
      code: 'acme',
      name: 'Tenant 1',
      status: 'active',
      billingPlan: 'pro',
    });
    expect(provider.isTenantEnabled(1)).toBe(true);
    expect(provider.getDatabaseConfig(1, 'evidence-command')).toMatchObject({ tenantId: 1, host: 'db-1', port: 5432 });
    expect(provider.getFtpConfigByUsername('acme-ftp')).toMatchObject({
      tenantId: 1,
      homeDirectory: '/acme',
      writePermission: true,
    });
    expect(provider.getStorageConfig(1)).toEqual({
      tenantId: 1,
      code: 'acme',
      name: 'Tenant 1',
      quotaBytes: 1000,
      maxFileSizeBytes: 10,
      maxConcurrentUploads: 2,
    });
    expect(provider.getWvpConfig(1)).toEqual({ tenantId: 1, apiUrl: 'http://wvp', realm: 'r1' });
    expect(provider.getDomainConfig(1)).toMatchObject({
      primary: 'acme.example.com',
      internal: 'acme.internal',
      aliases: ['shop.acme.io'],
    });
    expect(provider.getTenantIdByDomain('SHOP.acme.io')).toBe(1);
    expect(provider.getTenantIdByCode('Globex')).toBe(2);
    expect(provider.getResolverConfig()).toMatchObject({ id: 1, httpType: 'host', httpHostMode: 'domain' });
  });

  it('skips the malformed value only, and counts it', () => {
    expect(provider.getAllDatabaseConfigs(2).size).toBe(0);
    expect(provider.getTenantMeta(2)?.code).toBe('globex');
    expect(provider.rejectedCount('database')).toBe(1);
  });

  it('ignores _index and unknown keys', () => {
    expect(provider.snapshot.tenants.has(Number.NaN)).toBe(false);
    expect([...provider.snapshot.tenants.keys()]).toEqual([1, 2]);
  });
});

describe('watch', () => {
  it.each<[string, string, string, (p: TenantProvider) => unknown, unknown, unknown]>([
    ['meta', 'tenants/3/meta', meta(3, 'initech'), (p) => p.getTenantMeta(3)?.code, 'initech', undefined],
    [
      'database',
      'tenants/3/database/file-storage',
      db('fs-3'),
      (p) => p.getDatabaseConfig(3, 'file-storage')?.host,
      'fs-3',
      undefined,
    ],
    [
      'ftp',
      'tenants/3/ftp/initech-ftp',
      JSON.stringify({ status: 'active' }),
      (p) => p.getFtpConfigByUsername('initech-ftp')?.tenantId,
      3,
      undefined,
    ],
    [
      'storage',
      'tenants/3/storage',
      JSON.stringify({ quotaBytes: 77 }),
      (p) => p.getStorageConfig(3)?.quotaBytes,
      77,
      undefined,
    ],
    [
      'wvp',
      'tenants/3/platform/wvp',
      JSON.stringify({ apiUrl: 'http://w3', realm: 'r3' }),
      (p) => p.getWvpConfig(3)?.apiUrl,
      'http://w3',
      undefined,
    ],
    [
      'primary domain',
      'tenants/3/domain/primary',
      'initech.example.com',
      (p) => p.getTenantIdByDomain('initech.example.com'),
      3,
      undefined,
    ],
    [
      'internal domain',
      'tenants/3/domain/internal',
      '"initech.internal"',
      (p) => p.getTenantIdByDomain('initech.internal'),
      3,
      undefined,
    ],
    [
      'aliases',
      'tenants/3/domain/aliases',
      '["a.initech.com","b.initech.com"]',
      (p) => p.getTenantIdByDomain('b.initech.com'),
      3,
      undefined,
    ],
    [
      'resolver',
      'common/resolver',
      JSON.stringify({ httpType: 'query', httpQueryParam: 'tenant' }),
      (p) => p.getResolverConfig() && p.getResolverConfig()?.httpType,
      'query',
      null,
    ],
  ])('applies put and delete of %s', async (_kind, key, value, read, afterPut, afterDelete) => {
    await written(put(key, value));
    expect(read(provider)).toEqual(afterPut);
    await written(del(key));
    expect(read(provider)).toEqual(afterDelete);
  });

  it.each<[string, string, string, string, (p: TenantProvider) => unknown, unknown]>([
    [
      'meta',
      'tenants/4/meta',
      meta(4, 'umbrella'),
      meta(4, 'umbrella', { status: 'suspended' }),
      (p) => p.isTenantEnabled(4),
      false,
    ],
    ['database', 'tenants/4/database/svc', db('old'), db('new'), (p) => p.getDatabaseConfig(4, 'svc')?.host, 'new'],
    [
      'ftp',
      'tenants/4/ftp/u4',
      JSON.stringify({ status: 'active' }),
      JSON.stringify({ status: 'inactive' }),
      (p) => p.getActiveFtpConfigs(4).length,
      0,
    ],
    [
      'storage',
      'tenants/4/storage',
      JSON.stringify({ quotaBytes: 1 }),
      JSON.stringify({ quotaBytes: 2 }),
      (p) => p.getStorageConfig(4)?.quotaBytes,
      2,
    ],
    [
      'wvp',
      'tenants/4/platform/wvp',
      JSON.stringify({ apiUrl: 'http://a', realm: 'r' }),
      JSON.stringify({ apiUrl: 'http://b', realm: 'r' }),
      (p) => p.getWvpConfig(4)?.apiUrl,
      'http://b',
    ],
    [
      'primary domain',
      'tenants/4/domain/primary',
      'old.umbrella.com',
      'new.umbrella.com',
      (p) => [p.getTenantIdByDomain('old.umbrella.com'), p.getTenantIdByDomain('new.umbrella.com')],
      [undefined, 4],
    ],
    [
      'internal domain',
      'tenants/4/domain/internal',
      'old.internal',
      'new.internal',
      (p) => [p.getTenantIdByDomain('old.internal'), p.getTenantIdByDomain('new.internal')],
      [undefined, 4],
    ],
    [
      'aliases',
      'tenants/4/domain/aliases',
      '["x.umbrella.com"]',
      '["y.umbrella.com"]',
      (p) => [p.getTenantIdByDomain('x.umbrella.com'), p.getTenantIdByDomain('y.umbrella.com')],
      [undefined, 4],
    ],
  ])('applies an update of %s', async (_kind, key, first, second, read, expected) => {
    await written(put(key, first));
    await written(put(key, second));
    expect(read(provider)).toEqual(expected);
  });

  it('ignores _index and unknown keys without copying the snapshot', async () => {
    const before = provider.snapshot;
    await written(put('tenants/_index/by-code/acme', '1'));
    await written(put('tenants/_index/host/acme.example.com', '1'));
    await written(put('common/storage-directory', '{"root":"/elsewhere"}'));
    await written(put('tenants/1/something-new', '{}'));
    await written(del('tenants/_index/by-code/acme'));
    expect(provider.snapshot).toBe(before);
  });

  it('applies a multi-key transaction as one snapshot', async () => {
    const seen: string[] = [];
    const onSnapshot = () => seen.push(`${provider.getTenantMeta(5)?.name}|${provider.getDomainConfig(5)?.primary}`);
    provider.on('snapshot', onSnapshot);
    try {
      const res = await client
        .if(P + 'tenants/5/meta', 'Mod', '==', 0)
        .then(
          client.put(P + 'tenants/5/meta').value(meta(5, 'hooli', { name: 'Hooli' })),
          client.put(P + 'tenants/5/domain/primary').value('hooli.com'),
        )
        .commit();
      await provider.waitForRevision(Number(res.header.revision));
    } finally {
      provider.off('snapshot', onSnapshot);
    }
    expect(seen).toEqual(['Hooli|hooli.com']);
  });
});

describe('malformed values through the watch', () => {
  it('leave other keys alone and keep the last valid value', async () => {
    await written(put('tenants/6/meta', meta(6, 'stark')));
    await written(put('tenants/6/domain/primary', 'stark.com'));
    const rejectedBefore = provider.rejectedCount('meta');
    await written(put('tenants/6/meta', '{"code": "stark", "status": '));
    await written(put('tenants/6/storage', JSON.stringify({ quotaBytes: 9 })));
    expect(provider.getTenantMeta(6)?.code).toBe('stark');
    expect(provider.getTenantIdByDomain('stark.com')).toBe(6);
    expect(provider.getStorageConfig(6)?.quotaBytes).toBe(9);
    expect(provider.getTenantMeta(1)?.code).toBe('acme');
    expect(provider.rejectedCount('meta')).toBe(rejectedBefore + 1);
  });

  it('a malformed resolver keeps the previous valid one; deleting it restores the default', async () => {
    await written(put('common/resolver', JSON.stringify({ httpType: 'path', httpPathIndex: 1 })));
    const valid = provider.getResolverConfig();
    expect(valid).toMatchObject({ httpType: 'path', httpPathIndex: 1 });
    // What Go's Unmarshal refuses too: the wrong JSON type for a field, not an object.
    for (const invalid of [
      { httpType: 7 },
      { httpType: 'path', httpPathIndex: '1' },
      { httpType: 'path', httpPathIndex: 1.5 },
      { httpType: 'header', httpHeaderName: ['X-Org'] },
      ['header'],
    ]) {
      await written(put('common/resolver', JSON.stringify(invalid)));
      expect(provider.getResolverConfig(), JSON.stringify(invalid)).toBe(valid);
    }
    await written(put('common/resolver', 'not json'));
    expect(provider.getResolverConfig()).toBe(valid);
    await written(del('common/resolver'));
    expect(provider.getResolverConfig()).toBeNull();
    expect(provider.getResolverConfigOrDefault()).toEqual(DEFAULT_RESOLVER_CONFIG);
  });

  it('getResolverConfigOrDefault returns a copy that cannot corrupt shared state', async () => {
    await written(put('common/resolver', JSON.stringify({ httpType: 'header', httpHeaderName: 'X-Org' })));
    const copy = provider.getResolverConfigOrDefault() as { httpHeaderName: string };
    copy.httpHeaderName = 'X-Tampered';
    expect(provider.getResolverConfig()?.httpHeaderName).toBe('X-Org');
    expect(() => {
      (provider.getResolverConfig() as { httpHeaderName: string }).httpHeaderName = 'X-Tampered';
    }).toThrow(TypeError);
  });
});

describe('concurrent readers during a burst of writes', () => {
  it('never observe a mixed snapshot', async () => {
    const TENANT = 100;
    const WRITES = 150;
    const publisher = new TenantPublisher(client, P);
    const doc = (v: number) => ({
      id: TENANT,
      code: 'burst',
      name: `v${v}`,
      status: 'active' as const,
      domain: { primary: `v${v}.burst.example` },
    });
    await provider.waitForRevision((await publisher.putTenant(doc(0))).revision);

    let writing = true;
    const mismatches: string[] = [];
    const versionsSeen = new Set<string>();
    const reader = async (n: number) => {
      let last = -1;
      while (writing) {
        // Two getters in a row: the same snapshot by construction, but only if changes are swapped in whole.
        const name = provider.getTenantMeta(TENANT)?.name ?? '';
        const primary = provider.getDomainConfig(TENANT)?.primary ?? '';
        if (`${name}.burst.example` !== primary) mismatches.push(`reader ${n}: meta ${name} with domain ${primary}`);
        // A held snapshot stays consistent and unchanged across awaits, while newer ones are swapped in.
        const held = provider.snapshot;
        const heldName = held.getTenantMeta(TENANT)?.name ?? '';
        await new Promise((r) => setImmediate(r));
        const heldPrimary = held.getDomainConfig(TENANT)?.primary ?? '';
        if (`${heldName}.burst.example` !== heldPrimary || held.getTenantMeta(TENANT)?.name !== heldName) {
          mismatches.push(`reader ${n}: held snapshot changed or mixed: ${heldName} / ${heldPrimary}`);
        }
        if (held.getTenantIdByDomain(heldPrimary) !== TENANT)
          mismatches.push(`reader ${n}: index lags data at ${heldPrimary}`);
        const version = Number(heldName.slice(1));
        if (version < last) mismatches.push(`reader ${n}: went back from v${last} to v${version}`);
        last = version;
        versionsSeen.add(heldName);
      }
    };
    const readers = Array.from({ length: 32 }, (_, n) => reader(n));
    let lastRevision = 0;
    for (let v = 1; v <= WRITES; v++) lastRevision = (await publisher.putTenant(doc(v))).revision;
    await provider.waitForRevision(lastRevision);
    writing = false;
    await Promise.all(readers);

    expect(mismatches).toEqual([]);
    expect(provider.getTenantMeta(TENANT)?.name).toBe(`v${WRITES}`);
    expect(provider.getTenantIdByDomain(`v${WRITES - 1}.burst.example`)).toBeUndefined();
    // The readers really ran alongside the writes.
    expect(versionsSeen.size).toBeGreaterThan(WRITES / 10);
  });
});

describe('metrics', () => {
  it('exposes revision, last update, watch state and reloads', async () => {
    const registry = new Registry();
    registerTenancyMetrics(registry, provider);
    const text = await registry.metrics();
    expect(text).toContain(`durable_operators_tenancy_snapshot_revision ${provider.revision}`);
    expect(text).toMatch(/durable_operators_tenancy_last_update_timestamp_seconds \d+/);
    expect(text).toContain('durable_operators_tenancy_watch_state{state="live"} 1');
    expect(text).toContain('durable_operators_tenancy_watch_state{state="reconnecting"} 0');
    expect(text).toContain('durable_operators_tenancy_reloads_total{reason="start"} 1');
    expect(text).toContain('durable_operators_tenancy_reloads_total{reason="watch-canceled"} 0');
    expect(text).toMatch(/durable_operators_tenancy_rejected_values_total\{kind="database"\} 1/);
    expect(text).toContain(`durable_operators_tenancy_tenants ${provider.snapshot.tenantCount}`);
  });
});

describe('values the original accepts, with parts that mean nothing (issue 9)', () => {
  it('apply the rest; the skipped parts are counted and logged with their key', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const own = await TenantProvider.start({ endpoints: env.etcd.endpoint, prefix: P, logger });
    try {
      await own.waitForRevision(await put('tenants/7/meta', meta(7, 'vandelay')));
      await own.waitForRevision(
        await put('tenants/7/domain/aliases', '["vandelay.com", "not a host", 42, "www.vandelay.com"]'),
      );
      expect(own.getTenantIdByDomain('vandelay.com')).toBe(7);
      expect(own.getTenantIdByDomain('www.vandelay.com')).toBe(7);
      // Key case as Go matches it; an httpType the original's middleware answers 400 for.
      await own.waitForRevision(await put('common/resolver', '{"HttpType":"cookie","FTPTYPE":"username","Id":9}'));
      expect(own.getResolverConfig()).toMatchObject({ id: 9, httpType: '', ftpType: 'username' });
      expect(own.resolveHttp({ headers: { 'x-tenant-id': '7' } })).toMatchObject({
        ok: false,
        error: { code: 'no_tenant_identifier' },
      });

      const registry = new Registry();
      registerTenancyMetrics(registry, own);
      const text = await registry.metrics();
      expect(text).toContain('durable_operators_tenancy_skipped_items_total{kind="domain"} 2');
      expect(text).toContain('durable_operators_tenancy_skipped_items_total{kind="resolver"} 1');
      expect(text).toContain('durable_operators_tenancy_rejected_values_total{kind="resolver"} 0');
      expect(lines).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ level: 40, key: 'jxt/tenants/7/domain/aliases', item: '[1]' }),
          expect.objectContaining({ level: 40, key: 'jxt/tenants/7/domain/aliases', item: '[2]' }),
          expect.objectContaining({ level: 40, key: 'jxt/common/resolver', item: 'httpType' }),
        ]),
      );
    } finally {
      await own.stop();
      await client.delete().prefix(`${P}tenants/7/`).exec();
      await client.delete().key(`${P}common/resolver`).exec();
    }
  });
});
