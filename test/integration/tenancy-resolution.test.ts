/**
 * Tenant resolution end to end: an operator publishes tenants and a resolver config with the
 * publisher, a real HTTP server resolves requests through the middleware on a live provider, and
 * switching the resolver config in etcd switches the server's behaviour without a restart.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEtcdClient } from '../../src/tenancy/etcd.js';
import { tenantIdOf, tenantMiddleware } from '../../src/tenancy/middleware.js';
import type { ResolverConfig } from '../../src/tenancy/model.js';
import { TenantProvider } from '../../src/tenancy/provider.js';
import { TenantPublisher } from '../../src/tenancy/publisher.js';
import { quietLogger, startTestEtcd, type TestEtcd } from '../support/tenancy.js';

let env: TestEtcd;
let client: Etcd3;
let publisher: TenantPublisher;
let provider: TenantProvider;
let server: http.Server;
let port: number;

beforeAll(async () => {
  env = await startTestEtcd('tenancy-resolution');
  client = createEtcdClient(env.etcd.endpoint);
  publisher = new TenantPublisher(client);
  await publisher.putTenant({
    id: 7,
    code: 'acme',
    name: 'Acme',
    status: 'active',
    domain: { primary: 'acme.example.com', aliases: ['shop.acme.io'] },
    ftp: [{ username: 'acme-ftp' }],
  });
  await publisher.putTenant({
    id: 8,
    code: 'globex',
    name: 'Globex',
    status: 'suspended',
    domain: { primary: 'globex.example.com' },
    ftp: [{ username: 'globex-ftp' }],
  });
  provider = await TenantProvider.start({ endpoints: env.etcd.endpoint, logger: quietLogger });
  const middleware = tenantMiddleware(provider);
  server = http.createServer((req, res) =>
    middleware(req, res, () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ tenantId: tenantIdOf(req) }));
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await provider?.stop();
  client?.close();
  await env?.dispose();
});

/** Raw HTTP so the Host header can be anything. */
function request(
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: { tenantId?: number; error?: string } }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, headers, setHost: !('host' in headers) }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as { tenantId?: number; error?: string } }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

async function useResolver(config: Partial<ResolverConfig>): Promise<void> {
  const { revision } = await publisher.setResolverConfig(config);
  await provider.waitForRevision(revision);
}

type Case = [
  what: string,
  path: string,
  headers: Record<string, string>,
  expected: number | 'no_tenant_identifier' | 'unknown_tenant' | 'tenant_not_active',
];

async function expectCases(cases: Case[]): Promise<void> {
  const statusOf = { no_tenant_identifier: 400, unknown_tenant: 404, tenant_not_active: 403 } as const;
  for (const [what, path, headers, expected] of cases) {
    const res = await request(path, headers);
    if (typeof expected === 'number') expect(res, what).toEqual({ status: 200, body: { tenantId: expected } });
    else expect(res, what).toEqual({ status: statusOf[expected], body: expect.objectContaining({ error: expected }) });
  }
}

describe('every resolver mode, switched live through etcd', () => {
  it('header (the default while none is published)', async () => {
    expect(provider.getResolverConfig()).toBeNull();
    await expectCases([
      ['good', '/', { 'X-Tenant-ID': '7' }, 7],
      ['missing', '/', {}, 'no_tenant_identifier'],
      ['unknown', '/', { 'X-Tenant-ID': '9' }, 'unknown_tenant'],
      ['garbage', '/', { 'X-Tenant-ID': 'acme' }, 'unknown_tenant'],
      ['suspended', '/', { 'X-Tenant-ID': '8' }, 'tenant_not_active'],
    ]);
    await useResolver({ httpType: 'header', httpHeaderName: 'X-Org-ID' });
    await expectCases([
      ['good', '/', { 'X-Org-ID': '7' }, 7],
      ['old header', '/', { 'X-Tenant-ID': '7' }, 'no_tenant_identifier'],
    ]);
  });

  it('query', async () => {
    await useResolver({ httpType: 'query', httpQueryParam: 'tenant' });
    await expectCases([
      ['good', '/items?tenant=7', {}, 7],
      ['missing', '/items?page=2', {}, 'no_tenant_identifier'],
      ['unknown', '/items?tenant=99', {}, 'unknown_tenant'],
      ['suspended', '/items?tenant=8', {}, 'tenant_not_active'],
    ]);
  });

  it('path', async () => {
    await useResolver({ httpType: 'path', httpPathIndex: 1 });
    await expectCases([
      ['good', '/api/7/items', {}, 7],
      ['too short', '/api', {}, 'no_tenant_identifier'],
      ['unknown', '/api/99/items', {}, 'unknown_tenant'],
      ['suspended', '/api/8/items', {}, 'tenant_not_active'],
    ]);
  });

  it('host, numeric', async () => {
    await useResolver({ httpType: 'host', httpHostMode: 'numeric' });
    await expectCases([
      ['good', '/', { host: '7.tenants.example:8080' }, 7],
      ['bare host', '/', { host: 'localhost' }, 'no_tenant_identifier'],
      ['not numeric', '/', { host: 'acme.tenants.example' }, 'unknown_tenant'],
      ['suspended', '/', { host: '8.tenants.example' }, 'tenant_not_active'],
    ]);
  });

  it('host, domain', async () => {
    await useResolver({ httpType: 'host', httpHostMode: 'domain' });
    await expectCases([
      ['primary', '/', { host: 'acme.example.com' }, 7],
      ['alias', '/', { host: 'Shop.Acme.io:443' }, 7],
      ['unknown', '/', { host: 'evil.example.com' }, 'unknown_tenant'],
      ['suspended', '/', { host: 'globex.example.com' }, 'tenant_not_active'],
    ]);
    // A domain moved by the publisher moves with it.
    const { revision } = await publisher.putTenant({
      id: 7,
      code: 'acme',
      name: 'Acme',
      status: 'active',
      domain: { primary: 'acme.example.org' },
      ftp: [{ username: 'acme-ftp' }],
    });
    await provider.waitForRevision(revision);
    await expectCases([
      ['new primary', '/', { host: 'acme.example.org' }, 7],
      ['old alias is gone', '/', { host: 'shop.acme.io' }, 'unknown_tenant'],
    ]);
  });

  it('host, code', async () => {
    await useResolver({ httpType: 'host', httpHostMode: 'code' });
    await expectCases([
      ['good', '/', { host: 'acme.platform.example' }, 7],
      ['www', '/', { host: 'www.platform.example' }, 'no_tenant_identifier'],
      ['unknown', '/', { host: 'initech.platform.example' }, 'unknown_tenant'],
      ['suspended', '/', { host: 'GLOBEX.platform.example' }, 'tenant_not_active'],
    ]);
  });

  it('FTP username', () => {
    expect(provider.resolveFtp('acme-ftp')).toEqual({ ok: true, tenantId: 7 });
    expect(provider.resolveFtp('')).toMatchObject({ ok: false, error: { code: 'no_tenant_identifier' } });
    expect(provider.resolveFtp('nobody')).toMatchObject({ ok: false, error: { code: 'unknown_tenant' } });
    expect(provider.resolveFtp('globex-ftp')).toMatchObject({ ok: false, error: { code: 'tenant_not_active' } });
  });

  async function writeBehindPublisher(value: unknown): Promise<void> {
    const res = await client.put('jxt/common/resolver').value(JSON.stringify(value)).exec();
    await provider.waitForRevision(Number(res.header.revision));
  }

  it('a malformed resolver written behind the publisher’s back leaves the last valid mode in force', async () => {
    await useResolver({ httpType: 'query', httpQueryParam: 'tenant' });
    await writeBehindPublisher({ httpType: 'header', httpHeaderName: 42 }); // Go's Unmarshal refuses it too
    await expectCases([['still query', '/?tenant=7', {}, 7]]);
  });

  it('a resolver the original takes but cannot resolve HTTP with is in force, as there (400)', async () => {
    await useResolver({ httpType: 'query', httpQueryParam: 'tenant' });
    for (const config of [
      { httpType: 'header', httpHeaderName: '' },
      { httpType: '', ftpType: 'username' },
    ]) {
      await writeBehindPublisher(config);
      await expectCases([['no identifier', '/?tenant=7', { 'X-Tenant-ID': '7' }, 'no_tenant_identifier']]);
      expect(provider.resolveFtp('acme-ftp')).toEqual({ ok: true, tenantId: 7 });
    }
  });
});
