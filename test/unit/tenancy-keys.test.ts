import { describe, expect, it } from 'vitest';
import { classifyKey, keyOf, normalizePrefix, type ConfigKey } from '../../src/tenancy/keys.js';
import { parseTenantId } from '../../src/tenancy/model.js';

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
