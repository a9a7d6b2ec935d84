import { describe, expect, it } from 'vitest';
import { DEFAULT_RESOLVER_CONFIG } from '../../src/tenancy/model.js';
import {
  EMPTY_SNAPSHOT,
  applyChanges,
  buildSnapshot,
  snapshotEntries,
  type KeyChange,
  type SnapshotUpdate,
  type TenantSnapshot,
} from '../../src/tenancy/snapshot.js';

const meta = (id: number, code: string, status = 'active', name = `Tenant ${id}`) =>
  JSON.stringify({ id, code, name, status, billingPlan: 'pro' });
const db = (host: string) =>
  JSON.stringify({
    driver: 'postgres',
    host,
    port: 5432,
    database: 'd',
    username: 'u',
    password: 'p',
    sslMode: 'disable',
    maxOpenConns: 10,
    maxIdleConns: 2,
    passwordEncrypted: false,
  });
const ftp = (status = 'active') =>
  JSON.stringify({ passwordHash: 'h', description: '', status, homeDirectory: '/home', writePermission: true });

/** Every key type for one tenant. */
function tenantEntries(id: number, code: string, domain: string): Array<[string, string]> {
  return [
    [`tenants/${id}/meta`, meta(id, code)],
    [`tenants/${id}/database/evidence-command`, db(`db-${id}`)],
    [`tenants/${id}/database/file-storage`, db(`fs-${id}`)],
    [`tenants/${id}/ftp/${code}-ftp`, ftp()],
    [`tenants/${id}/ftp/${code}-old`, ftp('inactive')],
    [`tenants/${id}/storage`, JSON.stringify({ quotaBytes: 1000, maxFileSizeBytes: 100, maxConcurrentUploads: 2 })],
    [`tenants/${id}/platform/wvp`, JSON.stringify({ apiUrl: 'http://wvp', realm: 'r' })],
    [`tenants/${id}/domain/primary`, domain],
    [`tenants/${id}/domain/internal`, `"${code}.internal"`],
    [`tenants/${id}/domain/aliases`, JSON.stringify([`www.${domain}`, `${code}.alias.com`])],
  ];
}

const RESOLVER = JSON.stringify({ id: 1, httpType: 'host', httpHostMode: 'domain', ftpType: 'username' });

function build(entries: Array<[string, string]>, revision = 10): SnapshotUpdate {
  return buildSnapshot(entries, { revision, now: 1000 });
}

function apply(base: TenantSnapshot, changes: KeyChange[], revision = base.revision + 1): SnapshotUpdate {
  return applyChanges(base, changes, { revision, now: 2000 });
}

const put = (key: string, value: string): KeyChange => ({ key, value });
const del = (key: string): KeyChange => ({ key, value: null });

/** Everything a reader can observe of tenant `id`, for before/after comparisons. */
function observe(s: TenantSnapshot, id: number) {
  return {
    meta: s.getTenantMeta(id),
    databases: [...s.getAllDatabaseConfigs(id).entries()],
    ftp: s.getFtpConfigs(id),
    storage: s.getStorageConfig(id),
    wvp: s.getWvpConfig(id),
    domain: s.getDomainConfig(id),
    resolver: s.getResolverConfig(),
  };
}

describe('buildSnapshot (a full load)', () => {
  const { snapshot: s, rejected } = build([
    ...tenantEntries(1, 'acme', 'acme.example.com'),
    ...tenantEntries(2, 'globex', 'globex.example.com'),
    ['common/resolver', RESOLVER],
  ]);

  it('parses every key type', () => {
    expect(rejected).toEqual([]);
    expect(s.revision).toBe(10);
    expect(s.getAllTenantIds()).toEqual([1, 2]);
    expect(s.getTenantMeta(1)).toEqual({ id: 1, code: 'acme', name: 'Tenant 1', status: 'active', billingPlan: 'pro' });
    expect(s.isTenantEnabled(1)).toBe(true);
    expect(s.getDatabaseConfig(1, 'evidence-command')?.host).toBe('db-1');
    expect([...s.getAllDatabaseConfigs(2).keys()]).toEqual(['evidence-command', 'file-storage']);
    expect(s.getFtpConfigs(1).map((f) => f.username)).toEqual(['acme-ftp', 'acme-old']);
    expect(s.getActiveFtpConfigs(1).map((f) => f.username)).toEqual(['acme-ftp']);
    expect(s.getFtpConfigByUsername('globex-ftp')).toMatchObject({ tenantId: 2, username: 'globex-ftp' });
    expect(s.getStorageConfig(1)).toEqual({
      tenantId: 1,
      code: 'acme',
      name: 'Tenant 1',
      quotaBytes: 1000,
      maxFileSizeBytes: 100,
      maxConcurrentUploads: 2,
    });
    expect(s.getWvpConfig(2)).toEqual({ tenantId: 2, apiUrl: 'http://wvp', realm: 'r' });
    expect(s.getDomainConfig(1)).toEqual({
      tenantId: 1,
      code: 'acme',
      name: 'Tenant 1',
      primary: 'acme.example.com',
      internal: 'acme.internal',
      aliases: ['www.acme.example.com', 'acme.alias.com'],
    });
    expect(s.getResolverConfig()).toMatchObject({ httpType: 'host', httpHostMode: 'domain' });
  });

  it('indexes primary, internal and alias domains, codes and FTP usernames', () => {
    expect(s.getTenantIdByDomain('acme.example.com')).toBe(1);
    expect(s.getTenantIdByDomain('acme.internal')).toBe(1);
    expect(s.getTenantIdByDomain('www.globex.example.com')).toBe(2);
    expect(s.getTenantIdByDomain('globex.alias.com')).toBe(2);
    expect(s.getTenantIdByDomain('nobody.example.com')).toBeUndefined();
    expect(s.getTenantIdByCode('globex')).toBe(2);
    expect(s.getTenantIdByFtpUsername('acme-old')).toBe(1);
  });

  it('looks domains and codes up case-insensitively', () => {
    expect(s.getTenantIdByDomain('ACME.Example.COM')).toBe(1);
    expect(s.getTenantIdByCode('GLOBEX')).toBe(2);
    const mixed = build([
      ['tenants/3/meta', meta(3, 'AcmeCorp')],
      ['tenants/3/domain/primary', 'Shop.Example.com'],
    ]).snapshot;
    expect(mixed.getTenantIdByCode('acmecorp')).toBe(3);
    expect(mixed.getTenantIdByDomain('shop.example.com')).toBe(3);
    expect(mixed.getDomainConfig(3)?.primary).toBe('Shop.Example.com'); // kept as published
  });

  it('hands out frozen objects and fresh collections', () => {
    expect(Object.isFrozen(s.getTenantMeta(1))).toBe(true);
    expect(Object.isFrozen(s.getDomainConfig(1)?.aliases)).toBe(true);
    expect(Object.isFrozen(s)).toBe(true);
    s.getAllTenantIds().push(99);
    s.getAllDatabaseConfigs(1).clear();
    s.getFtpConfigs(1).pop();
    expect(s.getAllTenantIds()).toEqual([1, 2]);
    expect(s.getAllDatabaseConfigs(1).size).toBe(2);
    expect(s.getFtpConfigs(1)).toHaveLength(2);
  });

  it('ignores unknown and _index keys', () => {
    const { snapshot, rejected: r } = build([
      ['tenants/_index/by-code/acme', '1'],
      ['tenants/_index/host/acme.example.com', '1'],
      ['common/storage-directory', '{"x":1}'],
      ['tenants/5/unknown', 'x'],
    ]);
    expect(r).toEqual([]);
    expect(snapshot.tenants.size).toBe(0);
    expect(snapshot.revision).toBe(10);
  });

  it('lists only tenants with a meta key as tenants, in ascending order', () => {
    const { snapshot } = build([
      ['tenants/10/meta', meta(10, 'ten')],
      ['tenants/9/meta', meta(9, 'nine')],
      ['tenants/11/storage', JSON.stringify({ quotaBytes: 1 })],
    ]);
    expect(snapshot.getAllTenantIds()).toEqual([9, 10]);
    expect(snapshot.tenantCount).toBe(2);
    expect(snapshot.getStorageConfig(11)).toMatchObject({ code: '', name: '', quotaBytes: 1 });
  });
});

describe('malformed values', () => {
  it('skip the one key, name it, and leave every other key alone', () => {
    const entries = tenantEntries(1, 'acme', 'acme.example.com');
    const good = build(entries).snapshot;
    const bad = build(
      entries.map(
        ([k, v]) =>
          (k === 'tenants/1/database/file-storage' ? [k, '{"host": "db", "port": "oops"'] : [k, v]) as [string, string],
      ),
    );
    expect(bad.rejected).toEqual([
      { key: 'tenants/1/database/file-storage', kind: 'database', reason: expect.any(String) },
    ]);
    expect(bad.snapshot.getDatabaseConfig(1, 'file-storage')).toBeUndefined();
    expect({ ...observe(bad.snapshot, 1), databases: undefined }).toEqual({
      ...observe(good, 1),
      databases: undefined,
    });
    expect(bad.snapshot.getDatabaseConfig(1, 'evidence-command')).toEqual(
      good.getDatabaseConfig(1, 'evidence-command'),
    );
  });

  it('keep the last valid value when a change is malformed', () => {
    const base = build(tenantEntries(1, 'acme', 'acme.example.com')).snapshot;
    const { snapshot, rejected } = apply(base, [
      put('tenants/1/meta', '{"name":'),
      put('tenants/1/storage', '{"quotaBytes":5}'),
    ]);
    expect(rejected.map((r) => r.key)).toEqual(['tenants/1/meta']);
    expect(snapshot.getTenantMeta(1)).toBe(base.getTenantMeta(1));
    expect(snapshot.getStorageConfig(1)?.quotaBytes).toBe(5);
  });

  it('in a full reload, fall back to the previous snapshot (a value that went bad while the watch was down)', () => {
    const previous = build(tenantEntries(1, 'acme', 'acme.example.com'), 10).snapshot;
    const entries = tenantEntries(1, 'acme', 'acme.example.com').map(
      ([k, v]) => (k === 'tenants/1/ftp/acme-ftp' ? [k, 'garbage'] : [k, v]) as [string, string],
    );
    const without = buildSnapshot(entries, { revision: 20 }).snapshot;
    const withFallback = buildSnapshot(entries, { revision: 20, fallback: previous }).snapshot;
    expect(without.getFtpConfigByUsername('acme-ftp')).toBeUndefined();
    expect(withFallback.getFtpConfigByUsername('acme-ftp')).toBe(previous.getFtpConfigByUsername('acme-ftp'));
    expect(withFallback.getTenantIdByFtpUsername('acme-ftp')).toBe(1);
  });
});

describe('applyChanges (copy-on-write)', () => {
  const base = build([
    ...tenantEntries(1, 'acme', 'acme.example.com'),
    ...tenantEntries(2, 'globex', 'globex.example.com'),
    ['common/resolver', RESOLVER],
  ]).snapshot;

  it.each<[string, KeyChange, (s: TenantSnapshot) => unknown, unknown]>([
    ['meta update', put('tenants/1/meta', meta(1, 'acme', 'suspended')), (s) => s.isTenantEnabled(1), false],
    ['meta delete', del('tenants/1/meta'), (s) => s.getTenantMeta(1), undefined],
    [
      'database put',
      put('tenants/1/database/new-svc', db('new')),
      (s) => s.getDatabaseConfig(1, 'new-svc')?.host,
      'new',
    ],
    [
      'database update',
      put('tenants/1/database/file-storage', db('moved')),
      (s) => s.getDatabaseConfig(1, 'file-storage')?.host,
      'moved',
    ],
    [
      'database delete',
      del('tenants/1/database/file-storage'),
      (s) => s.getDatabaseConfig(1, 'file-storage'),
      undefined,
    ],
    ['ftp put', put('tenants/1/ftp/carol', ftp()), (s) => s.getTenantIdByFtpUsername('carol'), 1],
    ['ftp update', put('tenants/1/ftp/acme-old', ftp('active')), (s) => s.getActiveFtpConfigs(1).length, 2],
    ['ftp delete', del('tenants/1/ftp/acme-ftp'), (s) => s.getFtpConfigByUsername('acme-ftp'), undefined],
    [
      'storage update',
      put('tenants/1/storage', JSON.stringify({ quotaBytes: 7 })),
      (s) => s.getStorageConfig(1)?.quotaBytes,
      7,
    ],
    ['storage delete', del('tenants/1/storage'), (s) => s.getStorageConfig(1), undefined],
    [
      'wvp update',
      put('tenants/1/platform/wvp', JSON.stringify({ apiUrl: 'http://other', realm: 'r2' })),
      (s) => s.getWvpConfig(1)?.realm,
      'r2',
    ],
    ['wvp delete', del('tenants/1/platform/wvp'), (s) => s.getWvpConfig(1), undefined],
    [
      'primary domain update',
      put('tenants/1/domain/primary', 'new.example.com'),
      (s) => [s.getTenantIdByDomain('new.example.com'), s.getTenantIdByDomain('acme.example.com')],
      [1, undefined],
    ],
    [
      'primary domain delete',
      del('tenants/1/domain/primary'),
      (s) => [s.getDomainConfig(1)?.primary, s.getTenantIdByDomain('acme.example.com')],
      ['', undefined],
    ],
    [
      'internal domain update',
      put('tenants/1/domain/internal', 'x.internal'),
      (s) => s.getTenantIdByDomain('x.internal'),
      1,
    ],
    [
      'internal domain delete',
      del('tenants/1/domain/internal'),
      (s) => s.getTenantIdByDomain('acme.internal'),
      undefined,
    ],
    [
      'aliases update',
      put('tenants/1/domain/aliases', '["z.example.com"]'),
      (s) => [s.getTenantIdByDomain('z.example.com'), s.getTenantIdByDomain('acme.alias.com')],
      [1, undefined],
    ],
    ['aliases delete', del('tenants/1/domain/aliases'), (s) => s.getDomainConfig(1)?.aliases, []],
    [
      'code change',
      put('tenants/1/meta', meta(1, 'acme2')),
      (s) => [s.getTenantIdByCode('acme2'), s.getTenantIdByCode('acme')],
      [1, undefined],
    ],
    [
      'resolver update',
      put('common/resolver', JSON.stringify({ httpType: 'query', httpQueryParam: 't' })),
      (s) => s.getResolverConfig()?.httpType,
      'query',
    ],
    [
      'resolver delete',
      del('common/resolver'),
      (s) => [s.getResolverConfig(), s.effectiveResolverConfig],
      [null, DEFAULT_RESOLVER_CONFIG],
    ],
  ])('%s is applied without touching the base snapshot', (_what, change, read, expected) => {
    const before = { t1: observe(base, 1), t2: observe(base, 2), revision: base.revision };
    const { snapshot, changed } = apply(base, [change], 11);
    expect(changed).toBe(true);
    expect(read(snapshot)).toEqual(expected);
    expect(snapshot.revision).toBe(11);
    expect(snapshot.updatedAt).toBe(2000);
    // The base is untouched: a reader still holding it sees exactly what it saw.
    expect({ t1: observe(base, 1), t2: observe(base, 2), revision: base.revision }).toEqual(before);
    // The other tenant is shared, not copied.
    if (change.key.startsWith('tenants/')) expect(snapshot.tenant(2)).toBe(base.tenant(2));
  });

  it('returns the base itself for a batch of unknown keys (no copy)', () => {
    const update = apply(base, [
      put('tenants/_index/by-code/acme', '1'),
      put('common/storage-directory', '{}'),
      del('tenants/1/other'),
    ]);
    expect(update.changed).toBe(false);
    expect(update.snapshot).toBe(base);
  });

  it('shares tenants and indexes when only the resolver changes', () => {
    const { snapshot } = apply(base, [put('common/resolver', JSON.stringify({ httpType: 'path', httpPathIndex: 1 }))]);
    expect(snapshot.tenants).toBe(base.tenants);
    expect(snapshot.indexes).toBe(base.indexes);
  });

  it('applies a whole batch as one step (meta and domain of one transaction)', () => {
    const { snapshot } = apply(base, [
      put('tenants/1/meta', meta(1, 'acme', 'active', 'v2')),
      put('tenants/1/domain/primary', 'v2.example.com'),
    ]);
    expect(snapshot.getTenantMeta(1)?.name).toBe('v2');
    expect(snapshot.getDomainConfig(1)).toMatchObject({ name: 'v2', primary: 'v2.example.com' });
    expect(snapshot.getTenantIdByDomain('v2.example.com')).toBe(1);
  });

  it('copies meta code and name into storage and domain when meta changes', () => {
    const { snapshot } = apply(base, [put('tenants/1/meta', meta(1, 'acme', 'active', 'Renamed'))]);
    expect(snapshot.getStorageConfig(1)?.name).toBe('Renamed');
    expect(snapshot.getDomainConfig(1)?.name).toBe('Renamed');
    expect(base.getStorageConfig(1)?.name).toBe('Tenant 1');
  });

  it('adds and removes tenants', () => {
    const added = apply(base, [
      put('tenants/3/meta', meta(3, 'initech')),
      put('tenants/3/domain/primary', 'initech.com'),
    ]).snapshot;
    expect(added.getAllTenantIds()).toEqual([1, 2, 3]);
    expect(added.getTenantIdByDomain('initech.com')).toBe(3);
    const keys = tenantEntries(2, 'globex', 'globex.example.com').map(([k]) => del(k));
    const removed = apply(added, keys).snapshot;
    expect(removed.getAllTenantIds()).toEqual([1, 3]);
    expect(removed.tenant(2)).toBeUndefined();
    expect(removed.getTenantIdByCode('globex')).toBeUndefined();
    expect(removed.getTenantIdByDomain('globex.alias.com')).toBeUndefined();
    expect(removed.getTenantIdByFtpUsername('globex-ftp')).toBeUndefined();
  });

  // Malformed as the original sees it too: Go's Unmarshal fails on a string for an int.
  it('keeps the previous valid resolver when a new one is malformed', () => {
    const { snapshot, rejected } = apply(base, [
      put('common/resolver', JSON.stringify({ httpType: 'path', httpPathIndex: '1' })),
    ]);
    expect(rejected).toEqual([
      { key: 'common/resolver', kind: 'resolver', reason: expect.stringMatching(/httpPathIndex/) },
    ]);
    expect(snapshot.getResolverConfig()).toBe(base.getResolverConfig());
  });

  it('takes a config the original takes, with its meaning: no header name, a negative path index', () => {
    const noHeader = apply(base, [put('common/resolver', JSON.stringify({ httpType: 'header' }))]);
    expect(noHeader.rejected).toEqual([]);
    expect(noHeader.snapshot.getResolverConfig()).toMatchObject({ httpType: 'header', httpHeaderName: '' });
    const negative = apply(base, [put('common/resolver', JSON.stringify({ httpType: 'path', httpPathIndex: -1 }))]);
    expect(negative.snapshot.getResolverConfig()).toMatchObject({ httpType: 'path', httpPathIndex: -1 });
  });

  it('keeps the default when the first resolver ever published is malformed', () => {
    const { snapshot } = apply(EMPTY_SNAPSHOT, [put('common/resolver', JSON.stringify({ httpType: 7 }))], 1);
    expect(snapshot.getResolverConfig()).toBeNull();
    expect(snapshot.getResolverConfigOrDefault()).toEqual(DEFAULT_RESOLVER_CONFIG);
  });
});

describe('index conflicts', () => {
  it('let the later (higher ID) tenant win, and are reported once', () => {
    const first = build([
      ['tenants/5/meta', meta(5, 'same')],
      ['tenants/5/domain/primary', 'shared.example.com'],
      ['tenants/8/meta', meta(8, 'SAME')],
      ['tenants/8/domain/aliases', '["Shared.example.com"]'],
    ]);
    expect(first.snapshot.getTenantIdByDomain('shared.example.com')).toBe(8);
    expect(first.snapshot.getTenantIdByCode('same')).toBe(8);
    expect(first.newConflicts).toEqual(
      expect.arrayContaining([
        { index: 'domain', value: 'shared.example.com', winner: 8, loser: 5 },
        { index: 'code', value: 'same', winner: 8, loser: 5 },
      ]),
    );
    const next = apply(first.snapshot, [put('tenants/5/storage', '{"quotaBytes":1}')]);
    expect(next.newConflicts).toEqual([]);
    expect(next.snapshot.getTenantIdByDomain('shared.example.com')).toBe(8);
    // The winner goes away: the loser owns the domain again.
    const after = apply(next.snapshot, [del('tenants/8/domain/aliases')]);
    expect(after.snapshot.getTenantIdByDomain('shared.example.com')).toBe(5);
  });

  it('does not count a tenant repeating its own domain as a conflict', () => {
    const { newConflicts, snapshot } = build([
      ['tenants/5/domain/primary', 'a.example.com'],
      ['tenants/5/domain/aliases', '["A.example.com"]'],
    ]);
    expect(newConflicts).toEqual([]);
    expect(snapshot.conflicts).toEqual([]);
  });
});

describe('resolver defaults', () => {
  it('returns a private copy from getResolverConfigOrDefault', () => {
    const s = build([]).snapshot;
    const copy = s.getResolverConfigOrDefault() as { httpHeaderName: string };
    copy.httpHeaderName = 'X-Evil';
    expect(s.getResolverConfigOrDefault().httpHeaderName).toBe('X-Tenant-ID');
    expect(DEFAULT_RESOLVER_CONFIG.httpHeaderName).toBe('X-Tenant-ID');
    expect(s.getResolverConfig()).toBeNull();
  });
});

describe('snapshotEntries (the cache format)', () => {
  it('round-trips through buildSnapshot, indexes included', () => {
    const original = build([
      ...tenantEntries(1, 'acme', 'acme.example.com'),
      ...tenantEntries(2, 'globex', 'globex.example.com'),
      ['common/resolver', RESOLVER],
    ]).snapshot;
    const { snapshot: copy, rejected } = buildSnapshot(snapshotEntries(original), {
      revision: original.revision,
      source: 'cache',
    });
    expect(rejected).toEqual([]);
    expect(copy.source).toBe('cache');
    for (const id of [1, 2]) expect(observe(copy, id)).toEqual(observe(original, id));
    expect(copy.getTenantIdByDomain('globex.alias.com')).toBe(2);
    expect(copy.getTenantIdByCode('acme')).toBe(1);
    expect(copy.getTenantIdByFtpUsername('acme-old')).toBe(1);
  });

  it('saves the value in force, not a rejected one', () => {
    const base = build([['common/resolver', RESOLVER]]).snapshot;
    const bad = apply(base, [put('common/resolver', '{"httpType":["nope"]}')]).snapshot;
    const restored = buildSnapshot(snapshotEntries(bad), { revision: 1 }).snapshot;
    expect(restored.getResolverConfig()).toEqual(base.getResolverConfig());
  });
});

describe('incremental indexes', () => {
  /** The index a full rebuild would give: each value → the highest tenant ID claiming it. */
  function reference(s: TenantSnapshot) {
    const byDomain = new Map<string, number>();
    const byCode = new Map<string, number>();
    const byFtp = new Map<string, number>();
    for (const id of s.entryIds) {
      const d = s.getDomainConfig(id);
      for (const v of d ? [d.primary, d.internal, ...d.aliases].filter(Boolean) : []) byDomain.set(v.toLowerCase(), id);
      const code = s.getTenantMeta(id)?.code;
      if (code) byCode.set(code.toLowerCase(), id);
      for (const f of s.getFtpConfigs(id)) byFtp.set(f.username, id);
    }
    return { byDomain, byCode, byFtp };
  }

  // 2,000 batches checked against a full rebuild: seconds on a quiet core, more on this shared machine.
  it('match a full rebuild after any sequence of changes (randomized, seeded)', { timeout: 30_000 }, () => {
    let seed = 42;
    const rand = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 16) % n;
    };
    const domains = ['a.com', 'B.com', 'c.com', 'd.com', 'E.com'];
    const codes = ['acme', 'ACME', 'globex', 'initech'];
    const users = ['u1', 'u2', 'u3'];
    let s = EMPTY_SNAPSHOT;
    let contested = 0;
    for (let step = 0; step < 2000; step++) {
      const id = 1 + rand(6);
      const batch: KeyChange[] = [];
      for (let k = 0, n = 1 + rand(3); k < n; k++) {
        const choice = rand(6);
        const remove = rand(4) === 0;
        const status = rand(3) === 0 ? 'suspended' : 'active';
        if (choice === 0)
          batch.push(
            remove
              ? del(`tenants/${id}/meta`)
              : put(`tenants/${id}/meta`, meta(id, codes[rand(codes.length)]!, status)),
          );
        else if (choice === 1)
          batch.push(
            remove
              ? del(`tenants/${id}/domain/primary`)
              : put(`tenants/${id}/domain/primary`, domains[rand(domains.length)]!),
          );
        else if (choice === 2)
          batch.push(
            remove
              ? del(`tenants/${id}/domain/internal`)
              : put(`tenants/${id}/domain/internal`, domains[rand(domains.length)]!),
          );
        else if (choice === 3) {
          const aliases = domains.filter(() => rand(3) === 0);
          batch.push(
            remove ? del(`tenants/${id}/domain/aliases`) : put(`tenants/${id}/domain/aliases`, JSON.stringify(aliases)),
          );
        } else
          batch.push(
            remove
              ? del(`tenants/${id}/ftp/${users[rand(users.length)]}`)
              : put(`tenants/${id}/ftp/${users[rand(users.length)]}`, ftp()),
          );
        if (choice === 5) batch.push(del(`tenants/${1 + rand(6)}/storage`));
      }
      s = apply(s, batch, step + 1).snapshot;
      const ref = reference(s);
      for (const d of domains)
        expect(s.getTenantIdByDomain(d), `step ${step}: domain ${d}`).toBe(ref.byDomain.get(d.toLowerCase()));
      for (const c of codes)
        expect(s.getTenantIdByCode(c), `step ${step}: code ${c}`).toBe(ref.byCode.get(c.toLowerCase()));
      for (const u of users) expect(s.getTenantIdByFtpUsername(u), `step ${step}: ftp ${u}`).toBe(ref.byFtp.get(u));
      expect(s.indexes.domain.owners.size).toBe(ref.byDomain.size);
      expect(s.indexes.code.owners.size).toBe(ref.byCode.size);
      expect(s.getAllTenantIds()).toEqual(s.entryIds.filter((id) => s.getTenantMeta(id)));
      for (let t = 1; t <= 6; t++) {
        expect(s.isTenantEnabled(t), `step ${step}: tenant ${t} enabled`).toBe(s.getTenantMeta(t)?.status === 'active');
      }
      expect([...s.entryIds]).toEqual([...s.tenants.keys()].sort((a, b) => a - b));
      contested += s.conflicts.length > 0 ? 1 : 0;
    }
    expect(contested).toBeGreaterThan(500); // the sequence really exercised conflicts
  });

  it('list current conflicts with who wins', () => {
    const { snapshot } = build([
      ['tenants/2/domain/primary', 'x.com'],
      ['tenants/9/domain/primary', 'x.com'],
      ['tenants/5/domain/aliases', '["x.com"]'],
    ]);
    expect(snapshot.conflicts).toEqual([
      { index: 'domain', value: 'x.com', winner: 9, loser: 2 },
      { index: 'domain', value: 'x.com', winner: 9, loser: 5 },
    ]);
  });
});
