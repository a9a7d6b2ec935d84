/**
 * The per-tenant `tenants/{id}/sandbox` key: what the publisher refuses, what it writes, and what
 * readers make of it (including values the publisher would refuse but another writer stored).
 */
import { describe, expect, it } from 'vitest';
import { documentEntries, documentFromEntry, validateTenantDocument } from '../../src/tenancy/document.js';
import { classifyKey, keyOf } from '../../src/tenancy/model.js';
import { parseSandboxConfig } from '../../src/tenancy/parse.js';
import { buildSnapshot, snapshotEntries } from '../../src/tenancy/snapshot.js';

const base = { id: 7, code: 'seven', name: 'Seven', status: 'active' as const, billingPlan: '' };

describe('sandbox settings in the tenant document', () => {
  it('accepts a limit, namespaces and pools, and each field alone', () => {
    for (const sandbox of [
      { maxSandboxes: 3, namespaces: ['team-a', 'default'], pools: ['pool-a', 'gpu.pool'] },
      { maxSandboxes: 0 },
      { namespaces: ['team-a'] },
      { pools: ['pool-a'] },
      {},
    ])
      expect(validateTenantDocument({ ...base, sandbox }), JSON.stringify(sandbox)).toMatchObject({ ok: true });
  });

  it('refuses bad values with the path and the reason', () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ maxSandboxes: -1 }, /^tenant\.sandbox\.maxSandboxes: must be >= 0$/],
      [{ maxSandboxes: 2.5 }, /^tenant\.sandbox\.maxSandboxes: expected an integer, got 2.5$/],
      [{ maxSandboxes: '3' }, /^tenant\.sandbox\.maxSandboxes: expected an integer, got "3"$/],
      [{ namespaces: ['Team_A'] }, /^tenant\.sandbox\.namespaces\[0\]: "Team_A" is not a namespace name$/],
      [{ pools: ['pool a'] }, /^tenant\.sandbox\.pools\[0\]: "pool a" is not a SandboxPool name$/],
      [{ namespaces: [] }, /^tenant\.sandbox\.namespaces: must name at least one \(leave it out to allow any\)$/],
      [{ pools: ['p', 'p'] }, /^tenant\.sandbox\.pools: duplicate "p"$/],
      [{ maxSandbox: 3 }, /^tenant\.sandbox\.maxSandbox: unknown field$/],
      [{ namespaces: 'team-a' }, /^tenant\.sandbox\.namespaces: expected an array/],
    ];
    for (const [sandbox, expected] of cases) {
      const r = validateTenantDocument({ ...base, sandbox });
      expect(r.ok, JSON.stringify(sandbox)).toBe(false);
      const errors = r.ok ? [] : r.errors;
      expect(
        errors.some((e) => expected.test(e)),
        `${expected} in ${JSON.stringify(errors)}`,
      ).toBe(true);
    }
  });

  it('is published at tenants/{id}/sandbox and reads back as the same document', () => {
    const doc = { ...base, sandbox: { maxSandboxes: 3, namespaces: ['team-a'], pools: ['pool-a'] } };
    const entries = documentEntries(doc);
    expect(entries.map(([k]) => k)).toEqual(['tenants/7/meta', 'tenants/7/sandbox']);
    expect(JSON.parse(new Map(entries).get('tenants/7/sandbox')!)).toEqual(doc.sandbox);
    const { snapshot, rejected } = buildSnapshot(entries, { revision: 1 });
    expect(rejected).toEqual([]);
    expect(snapshot.getSandboxConfig(7)).toEqual(doc.sandbox);
    expect(documentFromEntry(snapshot.tenant(7)!)).toEqual(doc);
    // The file cache round-trips it.
    const again = buildSnapshot([...snapshotEntries(snapshot)], { revision: 1 }).snapshot;
    expect(again.getSandboxConfig(7)).toEqual(doc.sandbox);
  });

  it('a tenant without the key has no sandbox settings (no limit)', () => {
    const { snapshot } = buildSnapshot(documentEntries(base), { revision: 1 });
    expect(snapshot.getSandboxConfig(7)).toBeUndefined();
    expect(documentFromEntry(snapshot.tenant(7)!).sandbox).toBeUndefined();
  });
});

describe('reading tenants/{id}/sandbox', () => {
  it('classifies the key', () => {
    expect(classifyKey('tenants/7/sandbox')).toEqual({ kind: 'sandbox', tenantId: 7 });
    expect(keyOf({ kind: 'sandbox', tenantId: 7 })).toBe('tenants/7/sandbox');
    expect(classifyKey('tenants/7/sandbox/x')).toBeUndefined();
  });

  it('leaves absent and null fields absent (no limit), and matches field names case-insensitively', () => {
    expect(parseSandboxConfig(7, '{"MaxSandboxes": 2, "pools": null}')).toEqual({
      ok: true,
      value: { maxSandboxes: 2 },
    });
    expect(parseSandboxConfig(7, '{}')).toEqual({ ok: true, value: {} });
  });

  it('rejects a value of the wrong shape; the last valid one stays in force', () => {
    expect(parseSandboxConfig(7, '{"maxSandboxes": -2}')).toMatchObject({ ok: false });
    expect(parseSandboxConfig(7, '{"namespaces": "a"}')).toMatchObject({ ok: false });
    expect(parseSandboxConfig(7, 'nope')).toMatchObject({ ok: false });
    const first = buildSnapshot([['tenants/7/sandbox', '{"maxSandboxes":1}']], { revision: 1 }).snapshot;
    const { snapshot, rejected } = buildSnapshot([['tenants/7/sandbox', '{"maxSandboxes":"x"}']], {
      revision: 2,
      fallback: first,
    });
    expect(rejected).toMatchObject([{ key: 'tenants/7/sandbox', kind: 'sandbox' }]);
    expect(snapshot.getSandboxConfig(7)).toEqual({ maxSandboxes: 1 });
  });
});
