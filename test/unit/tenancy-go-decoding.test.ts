/**
 * Values the original (Go) provider accepts are accepted here with the same meaning (issue 9,
 * item 9): object keys match case-insensitively as in Go's encoding/json, an FTP-only resolver
 * config (empty httpType) is a config, and an invalid alias is skipped on its own. What is
 * invalid is skipped item by item and reported with its key.
 */
import { describe, expect, it } from 'vitest';
import { NoTenantIdentifierError, resolveFtpTenant, resolveHttpTenant } from '../../src/tenancy/resolve.js';
import { EMPTY_SNAPSHOT, applyChanges, buildSnapshot } from '../../src/tenancy/snapshot.js';

const build = (entries: Array<[string, string]>) => buildSnapshot(entries, { revision: 1, now: 1 });

describe('object keys match case-insensitively, as in Go encoding/json', () => {
  it('reads every kind of value whatever the case of its keys', () => {
    const { snapshot: s, rejected } = build([
      ['tenants/7/meta', '{"ID":7,"Code":"acme","NAME":"Acme","Status":"active","billingplan":"pro"}'],
      [
        'tenants/7/database/evidence-command',
        '{"Driver":"postgres","HOST":"db","Port":5432,"DataBase":"ev","UserName":"u","PASSWORD":"p","SSLMode":"require","MaxOpenConns":20,"maxidleconns":5,"PasswordEncrypted":true}',
      ],
      [
        'tenants/7/ftp/acme-ftp',
        '{"PasswordHash":"h","Description":"d","STATUS":"active","HomeDirectory":"/a","WritePermission":true}',
      ],
      ['tenants/7/storage', '{"QuotaBytes":10,"MAXFILESIZEBYTES":5,"MaxConcurrentUploads":2}'],
      ['tenants/7/platform/wvp', '{"ApiUrl":"http://wvp","REALM":"r"}'],
      [
        'common/resolver',
        '{"ID":3,"HttpType":"query","HTTPQUERYPARAM":"tenant","HttpHostMode":"code","FtpType":"username"}',
      ],
    ]);
    expect(rejected).toEqual([]);
    expect(s.getTenantMeta(7)).toEqual({ id: 7, code: 'acme', name: 'Acme', status: 'active', billingPlan: 'pro' });
    expect(s.isTenantEnabled(7)).toBe(true);
    expect(s.getDatabaseConfig(7, 'evidence-command')).toEqual({
      tenantId: 7,
      serviceCode: 'evidence-command',
      driver: 'postgres',
      host: 'db',
      port: 5432,
      database: 'ev',
      username: 'u',
      password: 'p',
      sslMode: 'require',
      maxOpenConns: 20,
      maxIdleConns: 5,
      passwordEncrypted: true,
    });
    expect(s.getFtpConfigByUsername('acme-ftp')).toMatchObject({
      passwordHash: 'h',
      status: 'active',
      homeDirectory: '/a',
      writePermission: true,
    });
    expect(s.getStorageConfig(7)).toMatchObject({ quotaBytes: 10, maxFileSizeBytes: 5, maxConcurrentUploads: 2 });
    expect(s.getWvpConfig(7)).toEqual({ tenantId: 7, apiUrl: 'http://wvp', realm: 'r' });
    expect(s.getResolverConfig()).toMatchObject({
      id: 3,
      httpType: 'query',
      httpQueryParam: 'tenant',
      httpHostMode: 'code',
    });
    expect(resolveHttpTenant({ url: '/?tenant=7', headers: {} }, s)).toEqual({ ok: true, tenantId: 7 });
  });

  it('lets the last matching key win and treats null as absent, like Go', () => {
    const { snapshot: s } = build([
      ['tenants/7/meta', '{"code":"first","Code":"second","name":"Acme","NAME":null,"status":"active"}'],
    ]);
    expect(s.getTenantMeta(7)).toMatchObject({ code: 'second', name: 'Acme' });
    expect(s.getTenantIdByCode('second')).toBe(7);
  });
});

describe('an FTP-only resolver config (empty httpType)', () => {
  const { snapshot: s, rejected } = build([
    ['tenants/7/meta', '{"code":"acme","status":"active"}'],
    ['tenants/7/ftp/acme-ftp', '{"status":"active"}'],
    ['common/resolver', '{"id":4,"httpType":"","ftpType":"username"}'],
  ]);

  it('is accepted as published, not replaced by the default', () => {
    expect(rejected).toEqual([]);
    expect(s.getResolverConfig()).toMatchObject({ id: 4, httpType: '', ftpType: 'username' });
    expect(s.getResolverConfigOrDefault()).toMatchObject({ id: 4, httpType: '' });
  });

  it('resolves FTP sessions, and finds no tenant in HTTP requests (as the original middleware)', () => {
    expect(resolveFtpTenant('acme-ftp', s)).toEqual({ ok: true, tenantId: 7 });
    const http = resolveHttpTenant({ url: '/7', headers: { 'x-tenant-id': '7', host: '7.example.com' } }, s);
    expect(http.ok).toBe(false);
    expect(http.ok ? undefined : http.error).toBeInstanceOf(NoTenantIdentifierError);
  });

  it('also replaces a previous HTTP config in a watch update', () => {
    const base = build([['common/resolver', '{"httpType":"header","httpHeaderName":"X-Org"}']]).snapshot;
    const { snapshot, rejected: r } = applyChanges(
      base,
      [{ key: 'common/resolver', value: '{"httpType":"","ftpType":"username"}' }],
      { revision: 2 },
    );
    expect(r).toEqual([]);
    expect(snapshot.getResolverConfig()?.httpType).toBe('');
  });
});

describe('resolver fields the original accepts with a meaning of their own', () => {
  it('takes an unknown httpType as "no HTTP identifier" (the original middleware answers 400), reported with its key', () => {
    const { snapshot: s, rejected } = build([
      ['tenants/7/meta', '{"code":"acme","status":"active"}'],
      ['tenants/7/ftp/acme-ftp', '{"status":"active"}'],
      ['common/resolver', '{"id":5,"httpType":"cookie","ftpType":"username"}'],
    ]);
    expect(s.getResolverConfig()).toMatchObject({ id: 5, httpType: '' });
    expect(resolveFtpTenant('acme-ftp', s)).toEqual({ ok: true, tenantId: 7 });
    const http = resolveHttpTenant({ url: '/', headers: { 'x-tenant-id': '7' } }, s);
    expect(http.ok ? undefined : http.error).toBeInstanceOf(NoTenantIdentifierError);
    expect(rejected).toEqual([
      { key: 'common/resolver', kind: 'resolver', item: 'httpType', reason: expect.stringMatching(/cookie/) },
    ]);
  });
});

describe('domain aliases are taken one by one', () => {
  it('skips only the invalid aliases, reporting each with its key (null reads as empty, as in Go)', () => {
    const { snapshot: s, rejected } = build([
      ['tenants/7/meta', '{"code":"acme","status":"active"}'],
      ['tenants/7/domain/aliases', '["a.example.com", 3, "not a host", null, "B.example.com"]'],
    ]);
    expect(s.getDomainConfig(7)?.aliases).toEqual(['a.example.com', 'B.example.com']);
    expect(s.getTenantIdByDomain('a.example.com')).toBe(7);
    expect(s.getTenantIdByDomain('b.example.com')).toBe(7);
    expect(rejected).toEqual([
      { key: 'tenants/7/domain/aliases', kind: 'domain', item: '[1]', reason: expect.any(String) },
      { key: 'tenants/7/domain/aliases', kind: 'domain', item: '[2]', reason: expect.stringMatching(/not a host/) },
    ]);
  });

  it('applies the valid aliases of a watch update that has a bad one', () => {
    const base = build([
      ['tenants/7/meta', '{"code":"acme","status":"active"}'],
      ['tenants/7/domain/aliases', '["old.example.com"]'],
    ]).snapshot;
    const { snapshot, rejected } = applyChanges(
      base,
      [{ key: 'tenants/7/domain/aliases', value: '["new.example.com", "bad host"]' }],
      { revision: 2 },
    );
    expect(snapshot.getTenantIdByDomain('new.example.com')).toBe(7);
    expect(snapshot.getTenantIdByDomain('old.example.com')).toBeUndefined();
    expect(rejected.map((r) => [r.key, r.item])).toEqual([['tenants/7/domain/aliases', '[1]']]);
  });

  it('still keeps the last valid aliases when the value is not an array at all', () => {
    const base = applyChanges(EMPTY_SNAPSHOT, [{ key: 'tenants/7/domain/aliases', value: '["a.example.com"]' }], {
      revision: 1,
    }).snapshot;
    const { snapshot, rejected } = applyChanges(base, [{ key: 'tenants/7/domain/aliases', value: 'a.example.com' }], {
      revision: 2,
    });
    expect(snapshot.getDomainConfig(7)?.aliases).toEqual(['a.example.com']);
    expect(rejected).toEqual([{ key: 'tenants/7/domain/aliases', kind: 'domain', reason: expect.any(String) }]);
  });
});
