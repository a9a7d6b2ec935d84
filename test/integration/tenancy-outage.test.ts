/**
 * The provider when etcd goes away: killed and restarted, compacted past the watch's revision,
 * down when the provider starts. Each test gets a fresh etcd of its own.
 *
 * "Written while it was down" needs writes the provider cannot see: the provider reaches etcd
 * through a TCP gate the test closes, while the test writes to etcd directly.
 */
import path from 'node:path';
import type { Etcd3 } from 'etcd3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createEtcdClient } from '../../src/tenancy/etcd.js';
import { TenantProvider, type WatchState } from '../../src/tenancy/provider.js';
import { resolveHttpTenant } from '../../src/tenancy/resolve.js';
import { quietLogger, startTestEtcd, TcpGate, type TestEtcd } from '../support/tenancy.js';

/** vi.waitFor retries an assertion until it passes: how long a watch state may take to change. */
const UNTIL_PASSES = { timeout: 30_000, interval: 20 };

const P = 'jxt/';
const meta = (id: number, code: string, name = `Tenant ${id}`) => JSON.stringify({ id, code, name, status: 'active' });

let cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.reverse()) await c();
  cleanups = [];
});

async function setup(name: string) {
  const env: TestEtcd = await startTestEtcd(name);
  cleanups.push(() => env.dispose());
  const client: Etcd3 = createEtcdClient(env.etcd.endpoint);
  cleanups.push(() => client.close());
  const put = async (key: string, value: string) =>
    Number(
      (
        await client
          .put(P + key)
          .value(value)
          .exec()
      ).header.revision,
    );
  const del = async (key: string) =>
    Number(
      (
        await client
          .delete()
          .key(P + key)
          .exec()
      ).header.revision,
    );
  return { env, client, put, del };
}

async function startProvider(
  endpoints: string,
  cacheFile?: string,
): Promise<{ provider: TenantProvider; states: WatchState[] }> {
  const provider = new TenantProvider({ endpoints, prefix: P, cacheFile, logger: quietLogger, requestTimeoutMs: 2000 });
  const states: WatchState[] = [];
  provider.on('state', (s) => states.push(s));
  cleanups.push(() => provider.stop());
  await provider.start();
  return { provider, states };
}

describe('etcd killed and restarted', () => {
  it('reconnects by itself, and replays changes written while it was away from the revision after its last', async () => {
    const { env, put, del } = await setup('tenancy-kill');
    await put('tenants/1/meta', meta(1, 'acme', 'v1'));
    await put('tenants/1/domain/primary', 'acme.example.com');
    await put('tenants/3/meta', meta(3, 'doomed'));
    const gate = await TcpGate.start(env.etcd.endpoint);
    cleanups.push(() => gate.close());
    const { provider, states } = await startProvider(gate.endpoint);
    await vi.waitFor(() => expect(provider.watchState).toBe('live'), UNTIL_PASSES);

    // 1. A crash the provider sees: SIGKILL, restart, and it comes back on its own.
    await env.etcd.process.kill();
    await vi.waitFor(() => expect(provider.watchState).toBe('reconnecting'), UNTIL_PASSES);
    await env.etcd.restart();
    await provider.waitForRevision(await put('tenants/2/meta', meta(2, 'globex')), 60_000);
    expect(provider.getTenantMeta(2)?.code).toBe('globex');
    expect(provider.watchState).toBe('live');

    // 2. Cut off, etcd crashes and restarts, and changes are made before the provider is back.
    await gate.close();
    await vi.waitFor(() => expect(provider.watchState).toBe('reconnecting'), UNTIL_PASSES);
    await env.etcd.restart({ kill: true });
    await put('tenants/1/meta', meta(1, 'acme', 'v2'));
    await put('tenants/1/domain/primary', 'acme-v2.example.com');
    await put('tenants/4/meta', meta(4, 'initech'));
    // The resolver config too: the mode requests are resolved by changes while the provider is away.
    await put('common/resolver', JSON.stringify({ httpType: 'header', httpHeaderName: 'X-Tenant-Code' }));
    const last = await del('tenants/3/meta');
    expect(provider.getTenantMeta(1)?.name).toBe('v1'); // really unseen so far
    expect(provider.getResolverConfig()?.httpType).not.toBe('header');
    await gate.open();

    await provider.waitForRevision(last, 90_000);
    expect(provider.getTenantMeta(1)?.name).toBe('v2');
    expect(provider.getTenantIdByDomain('acme-v2.example.com')).toBe(1);
    expect(provider.getTenantIdByDomain('acme.example.com')).toBeUndefined();
    expect(provider.getTenantMeta(4)?.code).toBe('initech');
    expect(provider.getTenantMeta(3)).toBeUndefined();
    expect(provider.getResolverConfig()).toMatchObject({ httpType: 'header', httpHeaderName: 'X-Tenant-Code' });
    await vi.waitFor(() => expect(provider.watchState).toBe('live'), UNTIL_PASSES);
    // And it keeps following the resolver config after the reconnect.
    await provider.waitForRevision(
      await put('common/resolver', JSON.stringify({ httpType: 'host', httpHostMode: 'domain' })),
      30_000,
    );
    expect(provider.getResolverConfig()).toMatchObject({ httpType: 'host', httpHostMode: 'domain' });
    // Replayed by the watch resuming at the next revision, not by reading everything again.
    expect(provider.reloadCount()).toBe(1);
    expect(states).toEqual(['live', 'reconnecting', 'live', 'reconnecting', 'live']);
  });
});

describe('compaction past the watch revision', () => {
  it('reads everything again and watches from the new revision', async () => {
    const { env, client, put, del } = await setup('tenancy-compact');
    await put('tenants/1/meta', meta(1, 'acme'));
    await put('tenants/1/storage', JSON.stringify({ quotaBytes: 1 }));
    await put('tenants/2/meta', meta(2, 'globex'));
    const gate = await TcpGate.start(env.etcd.endpoint);
    cleanups.push(() => gate.close());
    const { provider } = await startProvider(gate.endpoint);
    await vi.waitFor(() => expect(provider.watchState).toBe('live'), UNTIL_PASSES);
    const loadedAt = provider.revision;

    await gate.close();
    await put('tenants/1/meta', meta(1, 'acme', 'renamed'));
    await del('tenants/1/storage');
    await del('tenants/2/meta');
    await put('tenants/5/meta', meta(5, 'hooli'));
    const head = await put('tenants/5/domain/primary', 'hooli.com');
    await client.kv.compact({ revision: head, physical: true });
    await gate.open();

    await vi.waitFor(() => expect(provider.reloadCount('watch-canceled')).toBe(1), { timeout: 90_000, interval: 20 });
    expect(provider.revision).toBeGreaterThanOrEqual(head);
    expect(provider.revision).toBeGreaterThan(loadedAt);
    expect(provider.getTenantMeta(1)?.name).toBe('renamed');
    expect(provider.getStorageConfig(1)).toBeUndefined(); // deletions are seen too: a full replace, not a merge
    expect(provider.getTenantMeta(2)).toBeUndefined();
    expect(provider.getTenantIdByDomain('hooli.com')).toBe(5);

    // And it keeps watching from there.
    await provider.waitForRevision(await put('tenants/6/meta', meta(6, 'stark')), 30_000);
    expect(provider.getTenantIdByCode('stark')).toBe(6);
    await vi.waitFor(() => expect(provider.watchState).toBe('live'), UNTIL_PASSES);
  });
});

describe('etcd down at start', () => {
  it('serves the file cache with working domain and code lookups, then switches to live data', async () => {
    const { env, put } = await setup('tenancy-cache');
    const cacheFile = path.join(env.dir, 'cache', 'tenants.json');
    await put('tenants/1/meta', meta(1, 'acme'));
    await put('tenants/1/domain/primary', 'acme.example.com');
    await put('tenants/1/domain/aliases', '["shop.acme.io"]');
    await put('tenants/2/meta', meta(2, 'globex'));
    await put('common/resolver', JSON.stringify({ httpType: 'host', httpHostMode: 'domain' }));

    // A first run writes the cache.
    const first = await startProvider(env.etcd.endpoint, cacheFile);
    await first.provider.stop();

    await env.etcd.stop();
    const { provider, states } = await startProvider(env.etcd.endpoint, cacheFile);
    expect(provider.watchState).toBe('cache');
    expect(provider.snapshot.source).toBe('cache');
    expect(provider.getTenantIdByDomain('shop.acme.io')).toBe(1); // indexes rebuilt from the cache
    expect(provider.getTenantIdByCode('GLOBEX')).toBe(2);
    expect(provider.getResolverConfig()).toMatchObject({ httpType: 'host', httpHostMode: 'domain' });
    expect(resolveHttpTenant({ headers: { host: 'acme.example.com' } }, provider.snapshot)).toEqual({
      ok: true,
      tenantId: 1,
    });

    await env.etcd.restart();
    const revision = await put('tenants/3/meta', meta(3, 'initech'));
    await provider.waitForRevision(revision, 90_000);
    expect(provider.getTenantIdByCode('initech')).toBe(3);
    expect(provider.snapshot.source).toBe('etcd');
    expect(provider.reloadCount('recover')).toBe(1);
    await vi.waitFor(() => expect(provider.watchState).toBe('live'), UNTIL_PASSES);
    expect(states).toEqual(['cache', 'live']);
  });

  it('refuses to start without etcd and without a usable cache', async () => {
    const { env } = await setup('tenancy-nocache');
    await env.etcd.stop();
    const provider = new TenantProvider({
      endpoints: env.etcd.endpoint,
      prefix: P,
      cacheFile: path.join(env.dir, 'absent.json'),
      logger: quietLogger,
    });
    await expect(provider.start()).rejects.toThrow(/etcd unreachable .* no usable cache/);
    expect(provider.watchState).toBe('stopped');
  });
});
