/**
 * The settings targets on the aggregation's one mechanism. CloudflareDomain: every
 * CloudflareDomain of a zone feeds the target `CloudflareDomain/<zoneId>`, merged per setting by
 * priority; each setting is written under its own Cloudflare name. GatewayConfiguration: every
 * one of an account feeds `GatewayConfiguration/<accountId>`, merged per top-level key and
 * written with a PATCH of the changed keys. The SyncState remembers who holds which setting and
 * the value it had before. Real Temporal, kube-apiserver and etcd; Cloudflare is the emulator,
 * read and set only through the official SDK.
 */
import { describe, expect, it } from 'vitest';
import { CLOUDFLARE_API_VERSION, CloudflareSyncStateKind, type CloudflareSyncState } from '../../src/api/cloudflare.js';
import { syncStateName } from '../../src/domain/cloudflare/targets.js';
import { eventually, uniq } from '../support/env.js';
import { clearStatus, cloudflareSuite, hexId, sourceObject } from '../support/cloudflare.js';

const account = hexId();
const creds = uniq('cf-set-acct');
const zoneName = `${uniq('dom')}.example`;
const suite = cloudflareSuite({
  taskQueue: 'cf-set',
  namespace: 'cf-set',
  account: { id: account, name: 'domains' },
  zone: zoneName,
  credentials: { name: creds },
  configOverrides: { debounceMs: 200 },
});
const { k } = suite;

const setting = async (id: string) =>
  ((await suite.fx.cf.zones.settings.get(id as never, { zone_id: suite.zoneId })) as { value?: unknown }).value;
const domain = (name: string, spec: Record<string, unknown>) =>
  sourceObject('CloudflareDomain', name, { domain: zoneName, credentialsRef: { name: creds }, ...spec });
const ref = (name: string) => ({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'CloudflareDomain', name });
const ready = (name: string) => suite.readyOf('CloudflareDomain', name);
const syncState = () =>
  k.get<CloudflareSyncState>({
    apiVersion: CLOUDFLARE_API_VERSION,
    kind: 'CloudflareSyncState',
    name: syncStateName({ resourceType: 'CloudflareDomain', accountId: account, zoneId: suite.zoneId }),
  });

describe('CloudflareDomain', () => {
  it('per setting the lower priority wins; deleting the winner gives the other its value; restoreOnDelete puts back what was there', async () => {
    // Set by hand before the operator: the value to restore, and a setting nobody manages.
    await suite.fx.cf.zones.settings.edit('min_tls_version', { zone_id: suite.zoneId, value: '1.1' } as never);
    await suite.fx.cf.zones.settings.edit('rocket_loader', { zone_id: suite.zoneId, value: 'on' } as never);

    const security = uniq('security');
    const web = uniq('web');
    await k.apply(
      domain(web, { priority: 50, restoreOnDelete: true, ssl: { minTLSVersion: '1.2', alwaysUseHttps: true } }),
    );
    await k.apply(domain(security, { priority: 10, ssl: { minTLSVersion: '1.3' }, security: { level: 'high' } }));

    await eventually('the winners per setting in Cloudflare', async () => {
      const [tls, https, level] = await Promise.all([
        setting('min_tls_version'),
        setting('always_use_https'),
        setting('security_level'),
      ]);
      return tls === '1.3' && https === 'on' && level === 'high';
    });
    const st = await eventually('the SyncState remembers the holders and previous values', async () => {
      const s = await syncState();
      return s?.status?.managedSettings?.length === 3 ? s : undefined;
    });
    expect(st.status!.managedSettings).toEqual(
      expect.arrayContaining([
        { setting: 'min_tls_version', previous: '"1.1"', heldBy: `CloudflareDomain/${security}` },
        { setting: 'security_level', previous: '"medium"', heldBy: `CloudflareDomain/${security}` },
        { setting: 'always_use_https', previous: '"off"', heldBy: `CloudflareDomain/${web}`, restoreOnDelete: true },
      ]),
    );
    const loser = await eventually('the lower-priority resource told who holds min_tls_version', async () => {
      const r = await ready(web);
      return r?.reason === 'SyncedWithConflicts' ? r : undefined;
    });
    expect(loser.message).toContain(`setting min_tls_version is already held by CloudflareDomain/${security}`);
    await eventually('the winner Synced', async () => (await ready(security))?.reason === 'Synced');

    // The winner goes: its settings pass to the next source that sets them, or stay as they are.
    await k.delete(ref(security));
    await eventually(
      'min_tls_version is the other resource’s value',
      async () => (await setting('min_tls_version')) === '1.2',
    );
    await eventually('the winner gone', async () => !(await k.get(ref(security))));
    expect(await setting('security_level')).toBe('high'); // released without restoreOnDelete: left as is
    await eventually('the survivor Synced', async () => (await ready(web))?.reason === 'Synced');

    // The last one goes with restoreOnDelete: what was there before the operator comes back.
    await k.delete(ref(web));
    await eventually(
      'restored',
      async () => (await setting('min_tls_version')) === '1.1' && (await setting('always_use_https')) === 'off',
    );
    await eventually('the SyncState deleted', async () => !(await syncState()));
    expect(await setting('rocket_loader')).toBe('on'); // never ours
  });

  it('restoreOnDelete survives a lost SyncState status (a restore without status): the value from before the operator is written back', async () => {
    await suite.fx.cf.zones.settings.edit('browser_check', { zone_id: suite.zoneId, value: 'off' } as never);
    const checker = uniq('checker');
    await k.apply(domain(checker, { restoreOnDelete: true, security: { browserCheck: true } }));
    await eventually('taken', async () => (await setting('browser_check')) === 'on');
    const st = await eventually('the value before recorded', async () => {
      const s = await syncState();
      return s?.status?.managedSettings?.some((m) => m.setting === 'browser_check') ? s : undefined;
    });
    await eventually('Synced', async () => (await ready(checker))?.reason === 'Synced');

    await clearStatus(k, {
      apiVersion: CLOUDFLARE_API_VERSION,
      kind: 'CloudflareSyncState',
      plural: CloudflareSyncStateKind.plural,
      name: st.metadata!.name!,
    });
    expect((await syncState())?.status?.managedSettings).toBeUndefined();
    await k.delete(ref(checker));
    await eventually('restored', async () => (await setting('browser_check')) === 'off');
  });

  it('a value Cloudflare refuses is the resource’s status with Cloudflare’s message; fixing it recovers', async () => {
    const cache = uniq('cache');
    // 7 s passes the schema (0–31536000) but is not one of Cloudflare's browser cache TTLs.
    await k.apply(domain(cache, { cache: { browserTTL: 7 } }));
    const refused = await eventually('refused', async () => {
      const r = await ready(cache);
      return r?.status === 'False' && r.reason !== 'Syncing' ? r : undefined;
    });
    expect(refused.message).toContain('browser_cache_ttl');
    await k.apply(domain(cache, { cache: { browserTTL: 7200 } }));
    await eventually('written', async () => (await setting('browser_cache_ttl')) === 7200);
    await eventually('Synced', async () => (await ready(cache))?.reason === 'Synced');
    await k.delete(ref(cache));
    await eventually('gone', async () => !(await k.get(ref(cache))));
  });

  it('a setting the zone’s plan lacks is named on the resource with Cloudflare’s reason; the other settings are written (E9)', async () => {
    const fast = uniq('fast');
    const wanted = { cache: { alwaysOnline: true }, performance: { polish: 'lossless', earlyHints: true } };
    await k.apply(domain(fast, wanted)); // the suite's zone is Free: no Polish
    const refused = await eventually('refused', async () => {
      const r = await ready(fast);
      return r?.status === 'False' && r.reason !== 'Syncing' ? r : undefined;
    });
    expect(refused.message).toContain(
      'setting polish: Cloudflare answered 400: [1015] Not allowed to edit setting for polish',
    );
    expect(refused.message).toContain('written: always_online, early_hints');
    expect([await setting('always_online'), await setting('early_hints'), await setting('polish')]).toEqual([
      'on',
      'on',
      'off',
    ]);

    await k.apply(domain(fast, { ...wanted, performance: { earlyHints: true } }));
    await eventually('Synced without Polish', async () => (await ready(fast))?.reason === 'Synced');
    await k.delete(ref(fast));
    await eventually('gone', async () => !(await k.get(ref(fast))));
  });

  it('a zone Cloudflare does not have is ZoneNotFound on the resource', async () => {
    const missing = uniq('missing');
    await k.apply(
      sourceObject('CloudflareDomain', missing, { domain: 'no-such-zone.example', credentialsRef: { name: creds } }),
    );
    const r = await eventually('ZoneNotFound', async () => {
      const c = await ready(missing);
      return c?.reason === 'ZoneNotFound' ? c : undefined;
    });
    expect(r.message).toContain('no-such-zone.example');
    await k.delete(ref(missing));
  });
});

describe('GatewayConfiguration', () => {
  const gateway = (name: string, spec: Record<string, unknown>) =>
    sourceObject('GatewayConfiguration', name, { cloudflare: { credentialsRef: { name: creds } }, ...spec });
  const gwRef = (name: string) => ({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'GatewayConfiguration', name });
  const settings = async () =>
    ((await suite.fx.cf.zeroTrust.gateway.configurations.get({ account_id: account })).settings ?? {}) as Record<
      string,
      unknown
    >;

  it('merges per key by priority and PATCHes only the changed keys; a key set by hand stays; deleting the winner gives the other its value', async () => {
    await suite.fx.cf.zeroTrust.gateway.configurations.edit({
      account_id: account,
      settings: { activity_log: { enabled: true } } as never, // an admin's, before the operator
    });
    const base = uniq('gw-base');
    const strict = uniq('gw-strict');
    await k.apply(
      gateway(base, {
        priority: 100,
        settings: { tlsDecrypt: { enabled: false }, blockPage: { enabled: true, name: 'Blocked', footerText: 'IT' } },
      }),
    );
    await k.apply(
      gateway(strict, {
        priority: 10,
        settings: { tlsDecrypt: { enabled: true }, antiVirus: { enabled: true, failClosed: true } },
      }),
    );
    await eventually('the winners per key', async () => {
      const s = await settings();
      return (s.tls_decrypt as { enabled?: boolean } | undefined)?.enabled === true && s.antivirus !== undefined;
    });
    expect(await settings()).toEqual({
      activity_log: { enabled: true },
      tls_decrypt: { enabled: true },
      antivirus: { enabled: true, fail_closed: true },
      block_page: { enabled: true, name: 'Blocked', footer_text: 'IT' },
    });
    const loser = await eventually('the lower priority told who holds tls_decrypt', async () => {
      const r = await suite.readyOf('GatewayConfiguration', base);
      return r?.reason === 'SyncedWithConflicts' ? r : undefined;
    });
    expect(loser.message).toContain(`setting tls_decrypt is already held by GatewayConfiguration/${strict}`);

    await k.delete(gwRef(strict));
    await eventually('tls_decrypt is the other one’s value', async () => {
      const s = await settings();
      return (s.tls_decrypt as { enabled?: boolean } | undefined)?.enabled === false;
    });
    await k.delete(gwRef(base));
    await eventually('both gone', async () => !(await k.get(gwRef(base))) && !(await k.get(gwRef(strict))));
    expect((await settings()).activity_log).toEqual({ enabled: true }); // never ours
  });

  it('bad input names the field', async () => {
    const bad = uniq('gw-bad');
    await k.apply(gateway(bad, { settings: { bodyScanning: { inspectionMode: 'thorough' } } }));
    const r = await eventually('InvalidSpec', async () => {
      const c = await suite.readyOf('GatewayConfiguration', bad);
      return c?.reason === 'InvalidSpec' ? c : undefined;
    });
    expect(r.message).toBe('spec.settings.bodyScanning.inspectionMode: "thorough" is not deep or shallow');
    await k.delete(gwRef(bad));
  });
});
