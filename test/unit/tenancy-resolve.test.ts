import { describe, expect, it } from 'vitest';
import type { ResolverConfig } from '../../src/tenancy/model.js';
import {
  NoTenantIdentifierError,
  TenantNotActiveError,
  UnknownTenantError,
  normalizeHost,
  pathSegment,
  queryParameter,
  resolveFtpTenant,
  resolveHttpTenant,
  type HttpRequestLike,
  type TenantResolution,
} from '../../src/tenancy/resolve.js';
import { buildSnapshot, type TenantSnapshot } from '../../src/tenancy/snapshot.js';

const meta = (id: number, code: string, status: string) =>
  JSON.stringify({ id, code, name: code, status, billingPlan: '' });
const BASE: Array<[string, string]> = [
  ['tenants/7/meta', meta(7, 'acme', 'active')],
  ['tenants/7/domain/primary', 'acme.example.com'],
  ['tenants/7/domain/aliases', '["shop.acme.io"]'],
  ['tenants/7/ftp/acme-ftp', '{"status":"active"}'],
  ['tenants/8/meta', meta(8, 'globex', 'suspended')],
  ['tenants/8/domain/primary', 'globex.example.com'],
  ['tenants/8/ftp/globex-ftp', '{"status":"active"}'],
  ['tenants/9/domain/primary', 'orphan.example.com'], // a domain without meta
  ['tenants/9/ftp/orphan-ftp', '{}'],
];

function directory(resolver?: Partial<ResolverConfig>): TenantSnapshot {
  const entries = [...BASE];
  if (resolver) entries.push(['common/resolver', JSON.stringify(resolver)]);
  const { snapshot, rejected } = buildSnapshot(entries, { revision: 1 });
  expect(rejected).toEqual([]);
  return snapshot;
}

const req = (url: string, headers: HttpRequestLike['headers'] = {}): HttpRequestLike => ({ url, headers });

function tenantOf(r: TenantResolution): number {
  if (!r.ok) throw new Error(`expected a tenant, got ${r.error.name}: ${r.error.message}`);
  return r.tenantId;
}

function errorOf(r: TenantResolution) {
  if (r.ok) throw new Error(`expected an error, got tenant ${r.tenantId}`);
  return r.error;
}

type Case = [
  string,
  HttpRequestLike,
  number | typeof NoTenantIdentifierError | typeof UnknownTenantError | typeof TenantNotActiveError,
];

function check(dir: TenantSnapshot, cases: Case[]) {
  for (const [what, request, expected] of cases) {
    const result = resolveHttpTenant(request, dir);
    if (typeof expected === 'number') expect(tenantOf(result), what).toBe(expected);
    else expect(errorOf(result), what).toBeInstanceOf(expected);
  }
}

describe('header mode', () => {
  it('is the default, with X-Tenant-ID', () => {
    const dir = directory();
    expect(dir.getResolverConfig()).toBeNull();
    check(dir, [
      ['good', req('/', { 'x-tenant-id': '7' }), 7],
      ['surrounding spaces', req('/', { 'x-tenant-id': ' 7 ' }), 7],
      ['repeated header: the first counts', req('/', { 'x-tenant-id': ['7', '8'] }), 7],
      ['missing', req('/', {}), NoTenantIdentifierError],
      ['empty', req('/', { 'x-tenant-id': '' }), NoTenantIdentifierError],
      ['not a tenant ID', req('/', { 'x-tenant-id': 'acme' }), UnknownTenantError],
      ['zero', req('/', { 'x-tenant-id': '0' }), UnknownTenantError],
      ['non-canonical', req('/', { 'x-tenant-id': '07' }), UnknownTenantError],
      ['no such tenant', req('/', { 'x-tenant-id': '404' }), UnknownTenantError],
      ['tenant without meta', req('/', { 'x-tenant-id': '9' }), UnknownTenantError],
      ['suspended', req('/', { 'x-tenant-id': '8' }), TenantNotActiveError],
    ]);
  });

  it('reads the configured header, whatever its case', () => {
    const dir = directory({ httpType: 'header', httpHeaderName: 'X-Org' });
    check(dir, [
      ['good', req('/', { 'x-org': '7' }), 7],
      ['the default header no longer counts', req('/', { 'x-tenant-id': '7' }), NoTenantIdentifierError],
    ]);
  });
});

describe('query mode', () => {
  const dir = directory({ httpType: 'query', httpQueryParam: 'tenant' });
  it('reads the parameter', () => {
    check(dir, [
      ['good', req('/api?tenant=7'), 7],
      ['among others', req('/api?a=1&tenant=7&b=2'), 7],
      ['the first of repeated parameters', req('/api?tenant=7&tenant=8'), 7],
      ['percent-encoded', req('/api?ten%61nt=%37'), 7],
      ['before a fragment', req('/api?tenant=7#x'), 7],
      ['absent', req('/api?other=7'), NoTenantIdentifierError],
      ['no query', req('/api'), NoTenantIdentifierError],
      ['no url at all', { headers: {} }, NoTenantIdentifierError],
      ['empty value', req('/api?tenant='), NoTenantIdentifierError],
      ['name without value', req('/api?tenant'), NoTenantIdentifierError],
      ['a prefix of the name does not count', req('/api?tenant_id=7'), NoTenantIdentifierError],
      ['not an ID', req('/api?tenant=abc'), UnknownTenantError],
      ['unknown', req('/api?tenant=99'), UnknownTenantError],
      ['suspended', req('/api?tenant=8'), TenantNotActiveError],
    ]);
  });
});

describe('path mode', () => {
  it('reads segment 0 (first after the leading slash)', () => {
    check(directory({ httpType: 'path', httpPathIndex: 0 }), [
      ['good', req('/7/users'), 7],
      ['only segment', req('/7'), 7],
      ['with a query', req('/7?x=1'), 7],
      ['absolute-form target', req('http://proxy.example/7/users'), 7],
      ['root', req('/'), NoTenantIdentifierError],
      ['empty segment', req('//users'), NoTenantIdentifierError],
      ['not an ID', req('/tenant-7/users'), UnknownTenantError],
      ['unknown', req('/99/users'), UnknownTenantError],
      ['suspended', req('/8/users'), TenantNotActiveError],
    ]);
  });

  it('reads a deeper segment', () => {
    check(directory({ httpType: 'path', httpPathIndex: 2 }), [
      ['good', req('/api/v1/7/users'), 7],
      ['encoded', req('/api/v1/%37'), 7],
      ['too short', req('/api/v1'), NoTenantIdentifierError],
      ['trailing slash only', req('/api/v1/'), NoTenantIdentifierError],
      ['the segment index is not the ID', req('/7/7/x/users'), UnknownTenantError],
    ]);
  });
});

describe('host mode', () => {
  it('numeric: the first label is the tenant ID', () => {
    check(directory({ httpType: 'host', httpHostMode: 'numeric' }), [
      ['good', req('/', { host: '7.example.com' }), 7],
      ['with a port', req('/', { host: '7.example.com:8443' }), 7],
      ['HTTP/2 authority', req('/', { ':authority': '7.example.com' }), 7],
      ['no Host', req('/', {}), NoTenantIdentifierError],
      ['bare name', req('/', { host: 'localhost:8080' }), NoTenantIdentifierError],
      ['www', req('/', { host: 'www.example.com' }), NoTenantIdentifierError],
      ['IP literal', req('/', { host: '[::1]:8080' }), NoTenantIdentifierError],
      ['not numeric', req('/', { host: 'acme.example.com' }), UnknownTenantError],
      ['unknown', req('/', { host: '99.example.com' }), UnknownTenantError],
      ['suspended', req('/', { host: '8.example.com' }), TenantNotActiveError],
    ]);
  });

  it('numeric is what an empty host mode means', () => {
    check(directory({ httpType: 'host' }), [['good', req('/', { host: '7.example.com' }), 7]]);
  });

  it('domain: the whole host is looked up (primary, alias), case-insensitively', () => {
    check(directory({ httpType: 'host', httpHostMode: 'domain' }), [
      ['primary', req('/', { host: 'acme.example.com' }), 7],
      ['alias with port and odd case', req('/', { host: 'SHOP.Acme.IO:443' }), 7],
      ['trailing dot', req('/', { host: 'acme.example.com.' }), 7],
      ['no Host', req('/', {}), NoTenantIdentifierError],
      ['unknown domain', req('/', { host: 'evil.example.com' }), UnknownTenantError],
      ['numeric subdomain does not count', req('/', { host: '7.example.com' }), UnknownTenantError],
      ['domain of a tenant without meta', req('/', { host: 'orphan.example.com' }), UnknownTenantError],
      ['suspended', req('/', { host: 'globex.example.com' }), TenantNotActiveError],
    ]);
  });

  it('code: the first label is the tenant code', () => {
    check(directory({ httpType: 'host', httpHostMode: 'code' }), [
      ['good', req('/', { host: 'acme.platform.example' }), 7],
      ['case-insensitive', req('/', { host: 'ACME.platform.example:8080' }), 7],
      ['www', req('/', { host: 'www.platform.example' }), NoTenantIdentifierError],
      ['bare name', req('/', { host: 'acme' }), NoTenantIdentifierError],
      ['unknown code', req('/', { host: 'initech.platform.example' }), UnknownTenantError],
      ['suspended', req('/', { host: 'globex.platform.example' }), TenantNotActiveError],
    ]);
  });
});

describe('FTP (username)', () => {
  const dir = directory();
  it('maps an FTP login to its tenant', () => {
    expect(tenantOf(resolveFtpTenant('acme-ftp', dir))).toBe(7);
    expect(errorOf(resolveFtpTenant('', dir))).toBeInstanceOf(NoTenantIdentifierError);
    expect(errorOf(resolveFtpTenant('nobody', dir))).toBeInstanceOf(UnknownTenantError);
    expect(errorOf(resolveFtpTenant('ACME-FTP', dir))).toBeInstanceOf(UnknownTenantError); // usernames are case-sensitive
    expect(errorOf(resolveFtpTenant('orphan-ftp', dir))).toBeInstanceOf(UnknownTenantError);
    expect(errorOf(resolveFtpTenant('globex-ftp', dir))).toBeInstanceOf(TenantNotActiveError);
  });
});

describe('errors', () => {
  it('carry a code, an HTTP status and where the identifier was looked for', () => {
    const dir = directory({ httpType: 'header', httpHeaderName: 'X-Org' });
    const missing = errorOf(resolveHttpTenant(req('/'), dir));
    expect(missing).toMatchObject({ code: 'no_tenant_identifier', httpStatus: 400, source: 'header X-Org' });
    const unknown = errorOf(resolveHttpTenant(req('/', { 'x-org': '99' }), dir));
    expect(unknown).toMatchObject({ code: 'unknown_tenant', httpStatus: 404, identifier: '99' });
    const inactive = errorOf(resolveHttpTenant(req('/', { 'x-org': '8' }), dir));
    expect(inactive).toMatchObject({ code: 'tenant_not_active', httpStatus: 403, tenantId: 8, status: 'suspended' });
    expect(inactive.message).toBe('tenant 8 is suspended');
  });

  it('follow a config change between calls (no stale memo)', () => {
    const a = directory({ httpType: 'header', httpHeaderName: 'X-A' });
    const b = directory({ httpType: 'header', httpHeaderName: 'X-B' });
    expect(tenantOf(resolveHttpTenant(req('/', { 'x-a': '7' }), a))).toBe(7);
    expect(tenantOf(resolveHttpTenant(req('/', { 'x-b': '7' }), b))).toBe(7);
    expect(errorOf(resolveHttpTenant(req('/', { 'x-b': '7' }), a)).source).toBe('header X-A');
  });
});

describe('request parsing helpers', () => {
  it('normalizeHost', () => {
    expect(normalizeHost('Example.COM:8080')).toBe('example.com');
    expect(normalizeHost('example.com.')).toBe('example.com');
    expect(normalizeHost('[::1]:80')).toBe('[::1]');
    expect(normalizeHost('')).toBe('');
  });

  it('queryParameter decodes form encoding', () => {
    expect(queryParameter('/?q=a+b%2Bc', 'q')).toBe('a b+c');
    expect(queryParameter('/?q=%E0%A4%A', 'q')).toBe('%E0%A4%A'); // malformed escape: as written
    expect(queryParameter('/?a=1', 'q')).toBeUndefined();
  });

  it('pathSegment keeps + literal', () => {
    expect(pathSegment('/a+b/c', 0)).toBe('a+b');
    expect(pathSegment('/a/b', 5)).toBeUndefined();
    expect(pathSegment('relative/path', 0)).toBeUndefined();
  });
});
