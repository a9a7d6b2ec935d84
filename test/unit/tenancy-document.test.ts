import { describe, expect, it } from 'vitest';
import {
  documentEntries,
  documentFromEntry,
  validateTenantDocument,
  type TenantDocument,
} from '../../src/tenancy/document.js';
import { buildSnapshot } from '../../src/tenancy/snapshot.js';

const FULL: TenantDocument = {
  id: 42,
  code: 'acme',
  name: 'Acme Corp',
  status: 'active',
  billingPlan: 'enterprise',
  databases: {
    'evidence-command': {
      driver: 'postgres',
      host: 'db',
      port: 5432,
      database: 'ev',
      username: 'u',
      password: 'c2VjcmV0',
      sslMode: 'require',
      maxOpenConns: 20,
      maxIdleConns: 5,
      passwordEncrypted: true,
    },
  },
  ftp: [
    {
      username: 'acme-ftp',
      passwordHash: '$2a$10$x',
      description: 'uploads',
      status: 'active',
      homeDirectory: '/acme',
      writePermission: true,
    },
  ],
  storage: { quotaBytes: 10_000, maxFileSizeBytes: 100, maxConcurrentUploads: 3 },
  wvp: { apiUrl: 'http://wvp:18080', realm: '3402000000' },
  domain: { primary: 'acme.example.com', internal: 'acme.internal', aliases: ['www.acme.example.com'] },
};

describe('validateTenantDocument', () => {
  it('accepts a full document and a minimal one', () => {
    expect(validateTenantDocument(FULL)).toEqual({ ok: true, value: FULL });
    expect(validateTenantDocument({ id: 1, code: 'a', name: 'A', status: 'inactive' }).ok).toBe(true);
  });

  it('reports every problem with its path', () => {
    const result = validateTenantDocument({
      id: 0,
      code: 'a b',
      status: 'deleted',
      colour: 'red',
      databases: { 'bad/svc': { driver: 'pg', host: 'h', port: 70000, database: 'd' }, ok: { host: 'h' } },
      ftp: [{ username: 'x' }, { username: 'x', status: 'paused' }],
      storage: { quotaBytes: -1 },
      wvp: { apiUrl: 'wvp', realm: '' },
      domain: { primary: 'not a host', aliases: ['ok.com', 3] },
    });
    expect(result.ok).toBe(false);
    const errors = result.ok ? [] : result.errors;
    for (const expected of [
      /^tenant\.colour: unknown field/,
      /^tenant\.id: must be >= 1/,
      /^tenant\.code: .* invalid format/,
      /^tenant\.name: required/,
      /^tenant\.status: must be one of active, inactive, suspended/,
      /^tenant\.databases\.bad\/svc: service code/,
      /^tenant\.databases\.bad\/svc\.port: must be <= 65535/,
      /^tenant\.databases\.ok\.driver: required/,
      /^tenant\.databases\.ok\.port: required/,
      /^tenant\.ftp\[1\]\.username: duplicate/,
      /^tenant\.ftp\[1\]\.status: must be one of active, inactive/,
      /^tenant\.storage\.quotaBytes: must be >= 0/,
      /^tenant\.storage\.maxFileSizeBytes: required/,
      /^tenant\.wvp\.apiUrl: expected an http\(s\) URL/,
      /^tenant\.wvp\.realm: must not be empty/,
      /^tenant\.domain\.primary: .* is not a hostname/,
      /^tenant\.domain\.aliases\[1\]: 3 is not a hostname/,
    ]) {
      expect(
        errors.some((e) => expected.test(e)),
        `${expected} in ${JSON.stringify(errors, null, 1)}`,
      ).toBe(true);
    }
  });

  it('rejects what is not an object', () => {
    expect(validateTenantDocument([])).toEqual({ ok: false, errors: ['tenant: expected an object'] });
  });
});

describe('documentEntries', () => {
  it('writes exactly the key layout readers parse, and reads back as the same document', () => {
    const entries = documentEntries(FULL);
    expect(entries.map(([k]) => k)).toEqual([
      'tenants/42/meta',
      'tenants/42/database/evidence-command',
      'tenants/42/ftp/acme-ftp',
      'tenants/42/storage',
      'tenants/42/platform/wvp',
      'tenants/42/domain/primary',
      'tenants/42/domain/internal',
      'tenants/42/domain/aliases',
    ]);
    expect(new Map(entries).get('tenants/42/domain/primary')).toBe('acme.example.com'); // plain, as the original writes it
    const { snapshot, rejected } = buildSnapshot(entries, { revision: 1 });
    expect(rejected).toEqual([]);
    expect(documentFromEntry(snapshot.tenant(42)!)).toEqual(FULL);
  });

  it('fills defaults for optional settings', () => {
    const entries = new Map(
      documentEntries({ id: 1, code: 'a', name: 'A', status: 'active', ftp: [{ username: 'f' }] }),
    );
    expect(JSON.parse(entries.get('tenants/1/meta')!)).toEqual({
      id: 1,
      code: 'a',
      name: 'A',
      status: 'active',
      billingPlan: '',
    });
    expect(JSON.parse(entries.get('tenants/1/ftp/f')!)).toMatchObject({
      status: 'active',
      writePermission: false,
      passwordHash: '',
    });
  });
});

describe('sandbox API keys in the tenant document', () => {
  const key = { id: 'ci', sha256: 'a'.repeat(64) };
  const doc = (apiKeys: unknown): unknown => ({ id: 7, code: 'k', name: 'K', status: 'active', sandbox: { apiKeys } });

  it('are stored hashed, named, and read back as written (the provider sees them)', () => {
    expect(validateTenantDocument(doc([key])).ok).toBe(true);
    const { snapshot, rejected } = buildSnapshot(documentEntries(doc([key]) as TenantDocument), {
      revision: 1,
    });
    expect(rejected).toEqual([]);
    expect(snapshot.getSandboxConfig(7)?.apiKeys).toEqual([key]);
  });

  it('a key that is not a SHA-256, or two keys with one name, are refused with the path', () => {
    const bad = validateTenantDocument(doc([{ id: 'ci', sha256: 'my-plain-key' }, key]));
    expect(bad.ok === false && bad.errors).toEqual([
      'tenant.sandbox.apiKeys[0].sha256: must be a SHA-256 in hex (64 digits)',
      'tenant.sandbox.apiKeys: duplicate id "ci"',
    ]);
  });
});
