/**
 * The `tenants` commands and the demo seed against a real etcd: the exact keys written, the
 * validation, and that what they publish is what a provider resolves.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Command } from '@commander-js/extra-typings';
import type { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DEMO_TENANT, registerTenantCommands, seedDemoTenant } from '../../src/cli/tenants.js';
import { getFreePort } from '../../src/infra/process.js';
import { apiKeyHash } from '../../src/tenancy/api-keys.js';
import { createEtcdClient } from '../../src/tenancy/etcd.js';
import { TenantProvider } from '../../src/tenancy/provider.js';
import { quietLogger, startTestEtcd, type TestEtcd } from '../support/tenancy.js';

let env: TestEtcd;
let client: Etcd3;
let dir: string;

beforeAll(async () => {
  env = await startTestEtcd('tenancy-cli');
  client = createEtcdClient(env.etcd.endpoint);
  dir = await mkdtemp(path.join(os.tmpdir(), 'tenancy-cli-'));
});

afterAll(async () => {
  client?.close();
  await env?.dispose();
  await rm(dir, { recursive: true, force: true });
});

/** Runs `durable-operators <args>` in-process; returns what it printed. */
async function cli(...args: string[]): Promise<{ out: string; err: string }> {
  const program = new Command()
    .exitOverride()
    .configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
  registerTenantCommands(program);
  const out: string[] = [];
  const err: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void out.push(a.join(' ')));
  const error = vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void err.push(a.join(' ')));
  try {
    await program.parseAsync(args, { from: 'user' });
  } finally {
    log.mockRestore();
    error.mockRestore();
  }
  return { out: out.join('\n'), err: err.join('\n') };
}

const etcd = () => ['--etcd', env.etcd.endpoint];

async function keys(prefix = 'jxt/'): Promise<Record<string, string>> {
  return client.getAll().prefix(prefix).strings();
}

async function documentFile(name: string, doc: unknown): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, JSON.stringify(doc));
  return file;
}

const ACME = {
  id: 42,
  code: 'acme',
  name: 'Acme Corp',
  status: 'active',
  databases: { 'evidence-command': { driver: 'postgres', host: 'db', port: 5432, database: 'ev', password: 's3cret' } },
  ftp: [
    { username: 'acme-ftp', passwordHash: '$2a$10$hash' },
    { username: 'acme-old', status: 'inactive' },
  ],
  domain: { primary: 'acme.example.com', aliases: ['shop.acme.io'] },
};

describe('tenants put / get / list / delete', () => {
  it('put writes exactly the documented keys', async () => {
    const { out } = await cli('tenants', 'put', await documentFile('acme.json', ACME), ...etcd());
    expect(out).toMatch(/^tenant 42 written at revision \d+: 6 key\(s\) written, 0 deleted/);
    const stored = await keys('jxt/tenants/42/');
    expect(Object.keys(stored).sort()).toEqual([
      'jxt/tenants/42/database/evidence-command',
      'jxt/tenants/42/domain/aliases',
      'jxt/tenants/42/domain/primary',
      'jxt/tenants/42/ftp/acme-ftp',
      'jxt/tenants/42/ftp/acme-old',
      'jxt/tenants/42/meta',
    ]);
    expect(JSON.parse(stored['jxt/tenants/42/meta']!)).toEqual({
      id: 42,
      code: 'acme',
      name: 'Acme Corp',
      status: 'active',
      billingPlan: '',
    });
    expect(JSON.parse(stored['jxt/tenants/42/database/evidence-command']!)).toMatchObject({
      tenantId: 42,
      serviceCode: 'evidence-command',
      port: 5432,
      password: 's3cret',
    });
    expect(stored['jxt/tenants/42/domain/primary']).toBe('acme.example.com');
    expect(JSON.parse(stored['jxt/tenants/42/domain/aliases']!)).toEqual(['shop.acme.io']);
  });

  it('put refuses an invalid document, says why, and writes nothing', async () => {
    const file = await documentFile('bad.json', {
      id: 43,
      code: 'bad code',
      name: '',
      status: 'deleted',
      domain: { primary: 'http://x' },
    });
    await expect(cli('tenants', 'put', file, ...etcd())).rejects.toThrow(
      /invalid tenant:[\s\S]*tenant\.code[\s\S]*tenant\.name[\s\S]*tenant\.status[\s\S]*tenant\.domain\.primary/,
    );
    expect(await keys('jxt/tenants/43/')).toEqual({});
    await writeFile(path.join(dir, 'notjson.json'), '{');
    await expect(cli('tenants', 'put', path.join(dir, 'notjson.json'), ...etcd())).rejects.toThrow(/is not JSON/);
  });

  it('put replaces: keys the document dropped are deleted, foreign keys stay', async () => {
    await client.put('jxt/tenants/42/custom/flag').value('kept');
    const { out } = await cli(
      'tenants',
      'put',
      await documentFile('acme2.json', { ...ACME, ftp: [ACME.ftp[0]], domain: undefined }),
      ...etcd(),
    );
    expect(out).toMatch(/delete\s+jxt\/tenants\/42\/ftp\/acme-old/);
    const stored = await keys('jxt/tenants/42/');
    expect(Object.keys(stored).sort()).toEqual([
      'jxt/tenants/42/custom/flag',
      'jxt/tenants/42/database/evidence-command',
      'jxt/tenants/42/ftp/acme-ftp',
      'jxt/tenants/42/meta',
    ]);
  });

  it('get shows the tenant as readers see it, secrets redacted unless asked', async () => {
    const { out } = await cli('tenants', 'get', '42', ...etcd());
    const shown = JSON.parse(out) as typeof ACME;
    expect(shown).toMatchObject({ id: 42, code: 'acme', status: 'active' });
    expect(shown.databases['evidence-command'].password).toBe('***');
    expect(shown.ftp[0]!.passwordHash).toBe('***');
    const secret = JSON.parse((await cli('tenants', 'get', '42', '--show-secrets', ...etcd())).out) as typeof ACME;
    expect(secret.databases['evidence-command'].password).toBe('s3cret');
    await expect(cli('tenants', 'get', '404', ...etcd())).rejects.toThrow(/tenant 404 not found/);
    await expect(cli('tenants', 'get', 'abc', ...etcd())).rejects.toThrow(/positive integer/);
  });

  it('get warns about values readers would skip', async () => {
    await client.put('jxt/tenants/42/storage').value('{"quotaBytes":"lots"}');
    const { err } = await cli('tenants', 'get', '42', ...etcd());
    expect(err).toMatch(/jxt\/tenants\/42\/storage is malformed/);
    await client.delete().key('jxt/tenants/42/storage');
    await client.put('jxt/tenants/42/domain/aliases').value('["ok.example.com", "not a host"]');
    const partly = await cli('tenants', 'get', '42', ...etcd());
    expect(JSON.parse(partly.out)).toMatchObject({ domain: { aliases: ['ok.example.com'] } });
    expect(partly.err).toMatch(/jxt\/tenants\/42\/domain\/aliases: \[1\] is invalid and skipped by readers/);
    await client.delete().key('jxt/tenants/42/domain/aliases');
  });

  it('list shows every tenant', async () => {
    await cli(
      'tenants',
      'put',
      await documentFile('globex.json', {
        id: 7,
        code: 'globex',
        name: 'Globex',
        status: 'suspended',
        domain: { primary: 'globex.com' },
      }),
      ...etcd(),
    );
    const { out } = await cli('tenants', 'list', ...etcd());
    const lines = out.split('\n');
    expect(lines[0]).toMatch(/^ID\s+CODE\s+STATUS\s+PRIMARY DOMAIN\s+NAME$/);
    expect(lines[1]).toMatch(/^7\s+globex\s+suspended\s+globex\.com\s+Globex$/);
    expect(lines[2]).toMatch(/^42\s+acme\s+active\s+-\s+Acme Corp$/);
    const json = JSON.parse((await cli('tenants', 'list', '--json', ...etcd())).out) as Array<{ id: number }>;
    expect(json.map((t) => t.id)).toEqual([7, 42]);
  });

  it('delete removes every key of the tenant, and only of that tenant', async () => {
    await client.put('jxt/tenants/420/meta').value('{"code":"other"}');
    const { out } = await cli('tenants', 'delete', '42', ...etcd());
    expect(out).toMatch(/tenant 42 deleted at revision \d+ \(4 key\(s\)\)/); // meta, database, ftp, and the foreign custom/flag
    expect(await keys('jxt/tenants/42/')).toEqual({});
    expect(await keys('jxt/tenants/420/')).not.toEqual({});
    await expect(cli('tenants', 'delete', '42', ...etcd())).rejects.toThrow(/tenant 42 not found/);
  });

  it('honours --prefix and DO_TENANT_ETCD', async () => {
    vi.stubEnv('DO_TENANT_ETCD', env.etcd.endpoint);
    try {
      await cli(
        'tenants',
        'put',
        await documentFile('ns.json', { id: 1, code: 'ns', name: 'NS', status: 'active' }),
        '--prefix',
        'other',
      );
    } finally {
      vi.unstubAllEnvs();
    }
    expect(Object.keys(await keys('other/'))).toEqual(['other/tenants/1/meta']);
  });

  it('explains an unreachable etcd', async () => {
    await expect(cli('tenants', 'list', '--etcd', `http://127.0.0.1:${await getFreePort()}`)).rejects.toThrow(
      /cannot reach etcd at http:\/\/127\.0\.0\.1:\d+/,
    );
  });
});

describe('tenants api-key add / remove', () => {
  it('add prints a new key once and stores only its hash; remove takes it away; get masks the hashes', async () => {
    await cli(
      'tenants',
      'put',
      await documentFile('keys.json', { id: 77, code: 'keys', name: 'K', status: 'active' }),
      ...etcd(),
    );
    const first = (await cli('tenants', 'api-key', 'add', '77', '--name', 'ci', ...etcd())).out.trim();
    const second = (await cli('tenants', 'api-key', 'add', '77', '--name', 'ops', ...etcd())).out.trim();
    expect(first).toMatch(/^dosk_[A-Za-z0-9_-]{43}$/);
    expect(second).not.toBe(first);
    const stored = (await keys('jxt/tenants/77/'))['jxt/tenants/77/sandbox']!;
    expect(JSON.parse(stored)).toEqual({
      apiKeys: [
        { id: 'ci', sha256: apiKeyHash(first) },
        { id: 'ops', sha256: apiKeyHash(second) },
      ],
    });
    expect(stored).not.toContain(first);
    expect((await cli('tenants', 'get', '77', ...etcd())).out).toContain('"sha256": "***"');
    await expect(cli('tenants', 'api-key', 'add', '77', '--name', 'ci', ...etcd())).rejects.toThrow(
      'tenant 77 already has an API key named ci',
    );
    await cli('tenants', 'api-key', 'remove', '77', 'ci', ...etcd());
    expect(JSON.parse((await keys('jxt/tenants/77/'))['jxt/tenants/77/sandbox']!)).toEqual({
      apiKeys: [{ id: 'ops', sha256: apiKeyHash(second) }],
    });
  });
});

describe('tenants client-cert add / remove', () => {
  it('stores the names a client certificate authenticates the tenant with; a bad name is refused', async () => {
    await cli(
      'tenants',
      'put',
      await documentFile('certs.json', { id: 78, code: 'certs', name: 'C', status: 'active' }),
      ...etcd(),
    );
    await cli('tenants', 'client-cert', 'add', '78', 'ci.team-c.example', ...etcd());
    await cli('tenants', 'client-cert', 'add', '78', 'spiffe://cluster/ns/c/sa/ci', ...etcd());
    expect(JSON.parse((await keys('jxt/tenants/78/'))['jxt/tenants/78/sandbox']!)).toEqual({
      clientCertificateNames: ['ci.team-c.example', 'spiffe://cluster/ns/c/sa/ci'],
    });
    await expect(cli('tenants', 'client-cert', 'add', '78', 'two words', ...etcd())).rejects.toThrow(
      'must be a name without spaces',
    );
    await cli('tenants', 'client-cert', 'remove', '78', 'ci.team-c.example', ...etcd());
    expect(JSON.parse((await keys('jxt/tenants/78/'))['jxt/tenants/78/sandbox']!)).toEqual({
      clientCertificateNames: ['spiffe://cluster/ns/c/sa/ci'],
    });
  });
});

describe('tenants resolver set / get', () => {
  it('shows the default while unset', async () => {
    const { out } = await cli('tenants', 'resolver', 'get', ...etcd());
    expect(out).toMatch(/common\/resolver is not set; readers use the default/);
    expect(out).toContain('"httpHeaderName": "X-Tenant-ID"');
  });

  it('publishes a validated config and keeps createdAt across updates', async () => {
    const first = JSON.parse(
      (await cli('tenants', 'resolver', 'set', '--http-type', 'query', '--query-param', 'tenant', ...etcd())).out,
    ) as Record<string, unknown>;
    expect(first).toMatchObject({
      httpType: 'query',
      httpQueryParam: 'tenant',
      httpHostMode: 'numeric',
      ftpType: 'username',
    });
    const stored = JSON.parse((await client.get('jxt/common/resolver').string())!) as Record<string, unknown>;
    expect(stored).toMatchObject({ httpType: 'query', httpQueryParam: 'tenant', createdAt: first.createdAt });
    await new Promise((r) => setTimeout(r, 5));
    await cli('tenants', 'resolver', 'set', '--http-type', 'host', '--host-mode', 'code', ...etcd());
    const second = JSON.parse((await cli('tenants', 'resolver', 'get', ...etcd())).out) as Record<string, unknown>;
    expect(second).toMatchObject({ httpType: 'host', httpHostMode: 'code', createdAt: first.createdAt });
    expect(second.updatedAt).not.toBe(first.updatedAt);
  });

  it('refuses an invalid config and leaves the stored one alone', async () => {
    const before = await client.get('jxt/common/resolver').string();
    await expect(cli('tenants', 'resolver', 'set', '--http-type', 'header', ...etcd())).rejects.toThrow(
      /httpHeaderName: required/,
    );
    await expect(
      cli('tenants', 'resolver', 'set', '--http-type', 'path', '--path-index', '-1', ...etcd()),
    ).rejects.toThrow(/httpPathIndex/);
    await expect(cli('tenants', 'resolver', 'set', '--http-type', 'cookie', ...etcd())).rejects.toThrow(
      /Allowed choices/,
    );
    expect(await client.get('jxt/common/resolver').string()).toBe(before);
  });

  it('reports a stored config readers reject', async () => {
    await client.put('jxt/common/resolver').value('{"httpType":7}');
    await expect(cli('tenants', 'resolver', 'get', ...etcd())).rejects.toThrow(/is invalid .*httpType/);
    await client.delete().key('jxt/common/resolver');
  });

  it('shows a stored config readers take in part, and warns about the part they skip', async () => {
    await client.put('jxt/common/resolver').value('{"HttpType":"nope","ftpType":"username"}');
    const { out, err } = await cli('tenants', 'resolver', 'get', ...etcd());
    expect(JSON.parse(out)).toMatchObject({ httpType: '', ftpType: 'username' });
    expect(err).toMatch(/common\/resolver: httpType is invalid and skipped by readers: "nope" is not one of/);
    await client.delete().key('jxt/common/resolver');
  });
});

describe('seedDemoTenant', () => {
  it('publishes a tenant a provider resolves with the request the hint shows', async () => {
    const hint = await seedDemoTenant(env.etcd.endpoint);
    expect(hint).toBe(
      `demo tenant ${DEMO_TENANT.id} (demo): curl -H 'X-Tenant-ID: ${DEMO_TENANT.id}' http://127.0.0.1:<port>/`,
    );
    const provider = await TenantProvider.start({ endpoints: env.etcd.endpoint, logger: quietLogger });
    try {
      expect(provider.resolveHttp({ headers: { 'x-tenant-id': String(DEMO_TENANT.id) } })).toEqual({
        ok: true,
        tenantId: DEMO_TENANT.id,
      });
      expect(provider.getTenantIdByDomain('demo.localhost')).toBe(DEMO_TENANT.id);
    } finally {
      await provider.stop();
    }
  });

  it('keeps a resolver config the developer chose, and tells how to use it', async () => {
    await cli('tenants', 'resolver', 'set', '--http-type', 'host', '--host-mode', 'domain', ...etcd());
    const hint = await seedDemoTenant(env.etcd.endpoint, { baseUrl: 'http://127.0.0.1:8080' });
    expect(hint).toBe(
      `demo tenant ${DEMO_TENANT.id} (demo): curl -H 'Host: demo.localhost:8080' http://127.0.0.1:8080/`,
    );
    expect(JSON.parse((await client.get('jxt/common/resolver').string())!)).toMatchObject({
      httpType: 'host',
      httpHostMode: 'domain',
    });
  });
});
