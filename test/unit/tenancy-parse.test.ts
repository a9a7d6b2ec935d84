import { describe, expect, it } from 'vitest';
import { classifyKey, keyOf, normalizePrefix, parseTenantId, type ConfigKey } from '../../src/tenancy/model.js';
import {
  parseDatabaseConfig,
  parseDomainAliases,
  parseDomainName,
  parseFtpConfig,
  parseResolverConfig,
  parseStorageConfig,
  parseTenantMeta,
  parseWvpConfig,
  validateResolverConfig,
  type Parsed,
} from '../../src/tenancy/parse.js';

function value<T>(p: Parsed<T>): T {
  if (!p.ok) throw new Error(`expected a value, got rejection: ${p.reason}`);
  return p.value;
}

function reason(p: Parsed<unknown>): string {
  if (p.ok) throw new Error(`expected a rejection, got ${JSON.stringify(p.value)}`);
  return p.reason;
}

describe('tenant meta', () => {
  it('parses the published fields; the key decides the ID', () => {
    const meta = value(
      parseTenantMeta(7, '{"id":99,"code":"acme","name":"Acme","status":"active","billingPlan":"pro","extra":1}'),
    );
    expect(meta).toEqual({ id: 7, code: 'acme', name: 'Acme', status: 'active', billingPlan: 'pro' });
    expect(Object.isFrozen(meta)).toBe(true);
  });

  it('gives missing or null fields their zero value, like the Go original', () => {
    expect(value(parseTenantMeta(7, '{"code":"acme","billingPlan":null}'))).toEqual({
      id: 7,
      code: 'acme',
      name: '',
      status: '',
      billingPlan: '',
    });
  });

  it.each([
    ['not JSON', '{"code":'],
    ['an array', '[1]'],
    ['null', 'null'],
    ['a string', '"acme"'],
    ['a field of the wrong type', '{"code":7}'],
  ])('rejects %s', (_what, raw) => {
    expect(reason(parseTenantMeta(7, raw))).toBeTruthy();
  });
});

describe('database config', () => {
  const raw = JSON.stringify({
    serviceCode: 'ignored',
    driver: 'postgres',
    host: 'db',
    port: 5432,
    database: 'evidence',
    username: 'u',
    password: 'c2VjcmV0',
    sslMode: 'disable',
    maxOpenConns: 20,
    maxIdleConns: 5,
    passwordEncrypted: true,
  });

  it('parses every field; tenant and service come from the key', () => {
    expect(value(parseDatabaseConfig(7, 'evidence-command', raw))).toEqual({
      tenantId: 7,
      serviceCode: 'evidence-command',
      driver: 'postgres',
      host: 'db',
      port: 5432,
      database: 'evidence',
      username: 'u',
      password: 'c2VjcmV0',
      sslMode: 'disable',
      maxOpenConns: 20,
      maxIdleConns: 5,
      passwordEncrypted: true,
    });
  });

  it('rejects a port written as a string or a fraction, and a non-boolean flag', () => {
    expect(reason(parseDatabaseConfig(7, 's', '{"port":"5432"}'))).toMatch(/port/);
    expect(reason(parseDatabaseConfig(7, 's', '{"port":54.5}'))).toMatch(/port/);
    expect(reason(parseDatabaseConfig(7, 's', '{"passwordEncrypted":"yes"}'))).toMatch(/passwordEncrypted/);
  });
});

describe('FTP, storage and WVP configs', () => {
  it('parses an FTP account; the username comes from the key', () => {
    const ftp = value(
      parseFtpConfig(
        7,
        'alice',
        '{"username":"bob","passwordHash":"$2a$x","description":"d","status":"active","homeDirectory":"/a","writePermission":true}',
      ),
    );
    expect(ftp).toEqual({
      tenantId: 7,
      username: 'alice',
      passwordHash: '$2a$x',
      description: 'd',
      status: 'active',
      homeDirectory: '/a',
      writePermission: true,
    });
    expect(reason(parseFtpConfig(7, 'alice', '{"writePermission":1}'))).toMatch(/writePermission/);
  });

  it('parses storage limits (code and name are filled from meta later)', () => {
    expect(
      value(parseStorageConfig(7, '{"quotaBytes":1073741824,"maxFileSizeBytes":1048576,"maxConcurrentUploads":3}')),
    ).toEqual({
      tenantId: 7,
      code: '',
      name: '',
      quotaBytes: 1073741824,
      maxFileSizeBytes: 1048576,
      maxConcurrentUploads: 3,
    });
    expect(reason(parseStorageConfig(7, '{"quotaBytes":"1G"}'))).toMatch(/quotaBytes/);
  });

  it('requires both WVP fields, as the original did', () => {
    expect(value(parseWvpConfig(7, '{"apiUrl":"http://wvp:18080","realm":"3402000000"}'))).toEqual({
      tenantId: 7,
      apiUrl: 'http://wvp:18080',
      realm: '3402000000',
    });
    expect(reason(parseWvpConfig(7, '{"apiUrl":"http://wvp:18080"}'))).toMatch(/realm/);
    expect(reason(parseWvpConfig(7, '{"realm":"x","apiUrl":""}'))).toMatch(/apiUrl/);
  });
});

describe('domains', () => {
  it('reads a hostname written plain or as a JSON string', () => {
    expect(value(parseDomainName('app.example.com'))).toBe('app.example.com');
    expect(value(parseDomainName('"App.Example.com"'))).toBe('App.Example.com');
    expect(value(parseDomainName('  app.example.com\n'))).toBe('app.example.com');
    expect(value(parseDomainName(''))).toBe('');
    expect(value(parseDomainName('""'))).toBe('');
  });

  it('rejects what is not a hostname', () => {
    for (const raw of [
      '{"primary":"a.com"}',
      'http://a.com',
      'a.com/path',
      'a b.com',
      '"a.com',
      '*.a.com',
      'a..com',
      '["a.com"]',
    ]) {
      expect(parseDomainName(raw).ok, raw).toBe(false);
    }
  });

  it('reads aliases as a JSON array of hostnames, dropping empty entries', () => {
    expect(value(parseDomainAliases('["a.example.com", "", "B.example.com"]'))).toEqual([
      'a.example.com',
      'B.example.com',
    ]);
    expect(value(parseDomainAliases('[]'))).toEqual([]);
    expect(reason(parseDomainAliases('a.example.com'))).toBeTruthy();
    expect(reason(parseDomainAliases('{"0":"a.com"}'))).toMatch(/array/);
  });

  it('skips an alias that is not a hostname, and keeps the others (issue 9)', () => {
    const parsed = parseDomainAliases('["a.com", 3, "a com", null, "b.com"]');
    expect(value(parsed)).toEqual(['a.com', 'b.com']);
    expect(parsed.ok && parsed.skipped).toEqual([
      { item: '[1]', reason: '3 is not a hostname' },
      { item: '[2]', reason: '"a com" is not a hostname' },
    ]);
  });
});

describe('resolver config validation', () => {
  it('accepts every HTTP type with what it needs, normalizing empty host mode and FTP type', () => {
    expect(value(validateResolverConfig({ httpType: 'header', httpHeaderName: 'X-Tenant-ID' }))).toMatchObject({
      httpType: 'header',
      httpHeaderName: 'X-Tenant-ID',
      httpHostMode: 'numeric',
      ftpType: 'username',
    });
    expect(value(validateResolverConfig({ httpType: 'query', httpQueryParam: 'tenant' })).httpQueryParam).toBe(
      'tenant',
    );
    expect(value(validateResolverConfig({ httpType: 'path', httpPathIndex: 2 })).httpPathIndex).toBe(2);
    for (const mode of ['numeric', 'domain', 'code']) {
      expect(value(validateResolverConfig({ httpType: 'host', httpHostMode: mode })).httpHostMode).toBe(mode);
    }
  });

  it('parses what the tenant-service publishes, timestamps included', () => {
    const raw =
      '{"id":1,"httpType":"host","httpHeaderName":"","httpQueryParam":"","httpPathIndex":0,"httpHostMode":"code","ftpType":"username",' +
      '"createdAt":"2025-01-01T00:00:00Z","updatedAt":"2025-02-01T00:00:00+08:00"}';
    expect(value(parseResolverConfig(raw))).toEqual({
      id: 1,
      httpType: 'host',
      httpHeaderName: '',
      httpQueryParam: '',
      httpPathIndex: 0,
      httpHostMode: 'code',
      ftpType: 'username',
      createdAt: '2025-01-01T00:00:00Z',
      updatedAt: '2025-02-01T00:00:00+08:00',
    });
  });

  it.each<[string, unknown, RegExp]>([
    ['an unknown httpType', { httpType: 'cookie' }, /httpType/],
    ['an empty httpType', { httpType: '' }, /httpType/],
    ['a missing httpType', { httpHeaderName: 'X-Tenant-ID' }, /httpType/],
    ['a negative httpPathIndex', { httpType: 'path', httpPathIndex: -1 }, /httpPathIndex/],
    ['a fractional httpPathIndex', { httpType: 'path', httpPathIndex: 1.5 }, /httpPathIndex/],
    ['header without a header name', { httpType: 'header' }, /httpHeaderName/],
    ['header with a blank header name', { httpType: 'header', httpHeaderName: '  ' }, /httpHeaderName/],
    ['an invalid header name', { httpType: 'header', httpHeaderName: 'X Tenant' }, /httpHeaderName/],
    ['query without a parameter', { httpType: 'query' }, /httpQueryParam/],
    ['an invalid query parameter', { httpType: 'query', httpQueryParam: 'a&b' }, /httpQueryParam/],
    ['an unknown host mode', { httpType: 'host', httpHostMode: 'subdomain' }, /httpHostMode/],
    ['an unknown FTP type', { httpType: 'host', ftpType: 'certificate' }, /ftpType/],
    ['a field of the wrong type', { httpType: 'path', httpPathIndex: '1' }, /httpPathIndex/],
    ['an array', [], /object/],
    ['null', null, /object/],
  ])('rejects %s', (_what, input, pattern) => {
    expect(reason(validateResolverConfig(input))).toMatch(pattern);
  });

  it('rejects malformed JSON', () => {
    expect(parseResolverConfig('{"httpType":').ok).toBe(false);
  });
});

describe('classifyKey', () => {
  it.each<[string, ConfigKey]>([
    ['common/resolver', { kind: 'resolver' }],
    ['tenants/7/meta', { kind: 'meta', tenantId: 7 }],
    ['tenants/7/database/evidence-command', { kind: 'database', tenantId: 7, serviceCode: 'evidence-command' }],
    ['tenants/7/ftp/alice', { kind: 'ftp', tenantId: 7, username: 'alice' }],
    ['tenants/7/storage', { kind: 'storage', tenantId: 7 }],
    ['tenants/7/platform/wvp', { kind: 'wvp', tenantId: 7 }],
    ['tenants/7/domain/primary', { kind: 'domain', tenantId: 7, part: 'primary' }],
    ['tenants/7/domain/internal', { kind: 'domain', tenantId: 7, part: 'internal' }],
    ['tenants/12345/domain/aliases', { kind: 'domain', tenantId: 12345, part: 'aliases' }],
  ])('%s is a known key, and keyOf gives it back', (key, ref) => {
    expect(classifyKey(key)).toEqual(ref);
    expect(keyOf(ref)).toBe(key);
  });

  it.each([
    'tenants/_index/by-code/acme',
    'tenants/_index/host/acme.example.com',
    'common/storage-directory',
    'common/resolver/extra',
    'tenants/abc/meta',
    'tenants/07/meta', // not canonical: would alias tenant 7
    'tenants/0/meta',
    'tenants/-1/meta',
    'tenants/7',
    'tenants/7/',
    'tenants/7/unknown',
    'tenants/7/database',
    'tenants/7/database/',
    'tenants/7/database/svc/extra',
    'tenants/7/platform/other',
    'tenants/7/domain/other',
    'tenants/7/meta/extra',
    '_health/sentinel',
    '',
  ])('%s is ignored', (key) => {
    expect(classifyKey(key)).toBeUndefined();
  });
});

describe('parseTenantId', () => {
  it('accepts canonical positive integers only', () => {
    expect(parseTenantId('1')).toBe(1);
    expect(parseTenantId('9007199254740991')).toBe(9007199254740991);
    for (const bad of ['', '0', '01', '+1', '1.0', '1e3', ' 1', 'x', '99999999999999999'])
      expect(parseTenantId(bad)).toBeUndefined();
  });
});

describe('normalizePrefix', () => {
  it('adds the trailing slash so jxt never matches jxt2/', () => {
    expect(normalizePrefix('jxt')).toBe('jxt/');
    expect(normalizePrefix('jxt/')).toBe('jxt/');
    expect(() => normalizePrefix('')).toThrow(/empty/);
  });
});
