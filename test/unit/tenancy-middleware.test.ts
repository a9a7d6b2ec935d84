/**
 * The middleware on a real Node HTTP server (no etcd: the snapshot source is built in memory).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tenantIdOf, tenantMiddleware, type HoldsTenantSnapshot } from '../../src/tenancy/middleware.js';
import { buildSnapshot, type TenantSnapshot } from '../../src/tenancy/snapshot.js';

const meta = (id: number, status: string) => JSON.stringify({ id, code: `t${id}`, name: `T${id}`, status });

function snapshotWith(resolver: object): TenantSnapshot {
  return buildSnapshot(
    [
      ['tenants/7/meta', meta(7, 'active')],
      ['tenants/8/meta', meta(8, 'inactive')],
      ['common/resolver', JSON.stringify(resolver)],
    ],
    { revision: 1 },
  ).snapshot;
}

const source: { snapshot: TenantSnapshot } & HoldsTenantSnapshot = {
  snapshot: snapshotWith({ httpType: 'header', httpHeaderName: 'X-Tenant-ID' }),
};
let server: http.Server;
let optionalServer: http.Server;

function serve(optional: boolean): Promise<http.Server> {
  const mw = tenantMiddleware(source, { optional });
  const srv = http.createServer((req, res) => {
    mw(req, res, () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ tenantId: tenantIdOf(req) ?? null }));
    });
  });
  return new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve(srv)));
}

async function call(srv: http.Server, path: string, headers: Record<string, string> = {}) {
  const { port } = srv.address() as AddressInfo;
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers });
  return {
    status: res.status,
    type: res.headers.get('content-type'),
    body: (await res.json()) as Record<string, unknown>,
  };
}

beforeAll(async () => {
  server = await serve(false);
  optionalServer = await serve(true);
});

afterAll(async () => {
  await Promise.all([server, optionalServer].map((s) => new Promise((resolve) => s.close(resolve))));
});

describe('tenantMiddleware', () => {
  it('attaches the tenant and calls next', async () => {
    expect(await call(server, '/x', { 'X-Tenant-ID': '7' })).toMatchObject({ status: 200, body: { tenantId: 7 } });
  });

  it('answers 400 with a JSON error when the identifier is missing', async () => {
    const r = await call(server, '/x');
    expect(r.status).toBe(400);
    expect(r.type).toMatch(/^application\/json/);
    expect(r.body).toEqual({
      error: 'no_tenant_identifier',
      message: 'no tenant identifier in header X-Tenant-ID',
      source: 'header X-Tenant-ID',
    });
  });

  it('answers 404 for an unknown tenant and 403 for an inactive one', async () => {
    expect(await call(server, '/x', { 'X-Tenant-ID': '99' })).toMatchObject({
      status: 404,
      body: { error: 'unknown_tenant' },
    });
    expect(await call(server, '/x', { 'X-Tenant-ID': '8' })).toMatchObject({
      status: 403,
      body: { error: 'tenant_not_active', message: 'tenant 8 is inactive' },
    });
  });

  it('follows a resolver change without being recreated', async () => {
    source.snapshot = snapshotWith({ httpType: 'path', httpPathIndex: 1 });
    try {
      expect(await call(server, '/api/7/things')).toMatchObject({ status: 200, body: { tenantId: 7 } });
      expect(await call(server, '/api', { 'X-Tenant-ID': '7' })).toMatchObject({ status: 400 });
    } finally {
      source.snapshot = snapshotWith({ httpType: 'header', httpHeaderName: 'X-Tenant-ID' });
    }
  });

  it('in optional mode lets requests without identifier through, but still refuses bad ones', async () => {
    expect(await call(optionalServer, '/x')).toMatchObject({ status: 200, body: { tenantId: null } });
    expect(await call(optionalServer, '/x', { 'X-Tenant-ID': '7' })).toMatchObject({
      status: 200,
      body: { tenantId: 7 },
    });
    expect(await call(optionalServer, '/x', { 'X-Tenant-ID': '99' })).toMatchObject({ status: 404 });
    expect(await call(optionalServer, '/x', { 'X-Tenant-ID': '8' })).toMatchObject({ status: 403 });
  });
});
