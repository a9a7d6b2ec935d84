/**
 * The Cloudflare API emulator driven only through the official `cloudflare` SDK: a contract test
 * of every endpoint the sync uses (the shapes the SDK returns), auth failures as the SDK's error
 * classes with the real codes, pagination as `for await` iterates it, 429 + Retry-After retried
 * by the SDK, ruleset entrypoints and whole-list device PUTs. The hooks are used only to seed,
 * inject faults and read the request log.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Cloudflare, { type APIError } from 'cloudflare';
import type { PhaseUpdateResponse } from 'cloudflare/resources/rulesets/phases/phases';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/env.js';
import { EmulatorAdmin, startCloudflareEmulator, type RunningEmulator } from '../emulators/cloudflare/index.js';
import { SETTING_MIN_PLAN } from '../emulators/cloudflare/routes/settings.js';

/** The SDK types an entrypoint as `Ruleset | unknown`; the emulator always answers a Ruleset. */
type EntrypointRuleset = PhaseUpdateResponse.Ruleset;

const TOKEN = 'emulator-test-token';
const ACCOUNT = '01a7362d577a6c3019a474fd6f485823';
const OTHER_ACCOUNT = '9a7806061c88ada191ed06f989cc3dac';
const ZONE = '023e105f4ecef8ad9ca31a8372d0c353';

let emulator: RunningEmulator;
let admin: EmulatorAdmin;
let cf: Cloudflare;

function client(apiToken = TOKEN, maxRetries = 2): Cloudflare {
  return new Cloudflare({ apiToken, baseURL: emulator.baseURL, maxRetries });
}

beforeAll(async () => {
  emulator = await startCloudflareEmulator({
    tokens: [
      { token: TOKEN },
      { token: 'scoped-token', accounts: [OTHER_ACCOUNT] },
      { token: 'off', status: 'disabled' },
    ],
  });
  admin = new EmulatorAdmin(emulator.url, emulator.adminToken);
  cf = client();
});

afterAll(async () => {
  await emulator?.close();
});

beforeEach(async () => {
  await admin.reset();
  await admin.seed({
    accounts: [
      { id: ACCOUNT, name: 'Team account' },
      { id: OTHER_ACCOUNT, name: 'Other account' },
    ],
    zones: [{ id: ZONE, name: 'example.com', account_id: ACCOUNT }],
  });
});

describe('contract: the SDK calls the sync uses', () => {
  it('user.tokens.verify returns the token id and status', async () => {
    const v = await cf.user.tokens.verify();
    expect(v.status).toBe('active');
    expect(v.id).toMatch(/^[0-9a-f]{32}$/);
  });

  it('zones.list and zones.get resolve a zone', async () => {
    const zones = [];
    for await (const z of cf.zones.list({ name: 'example.com' })) zones.push(z);
    expect(zones.map((z) => [z.id, z.name, z.account.id, z.status])).toEqual([
      [ZONE, 'example.com', ACCOUNT, 'active'],
    ]);
    const zone = await cf.zones.get({ zone_id: ZONE });
    expect(zone).toMatchObject({ id: ZONE, name: 'example.com', account: { id: ACCOUNT, name: 'Team account' } });
    expect(zone.name_servers.length).toBeGreaterThan(0);
  });

  it('an unknown zone is a NotFoundError with codes 7003 and 7000', async () => {
    const err = await cf.zones.get({ zone_id: 'ffffffffffffffffffffffffffffffff' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Cloudflare.NotFoundError);
    expect((err as APIError).errors.map((e) => e.code)).toEqual([7003, 7000]);
  });

  it('ruleset entrypoint: 404 (10003) → PUT creates with rule ids → GET → PUT replaces and bumps version', async () => {
    const phase = 'http_request_firewall_custom';
    const missing = await cf.rulesets.phases.get(phase, { zone_id: ZONE }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(Cloudflare.NotFoundError);
    expect((missing as APIError).status).toBe(404);
    expect((missing as APIError).errors[0]?.code).toBe(10003);

    const created = (await cf.rulesets.phases.update(phase, {
      zone_id: ZONE,
      rules: [
        { action: 'block', expression: 'ip.src eq 192.0.2.1', description: 'Manual rule by admin' },
        { action: 'block', expression: 'http.host eq "a.example.com"', description: '[managed-by:c1:ZoneRuleset/a/r]' },
      ],
    })) as EntrypointRuleset;
    expect(created).toMatchObject({ kind: 'zone', phase, version: '1' });
    expect(created.rules).toHaveLength(2);
    for (const r of created.rules) {
      expect(r.id).toMatch(/^[0-9a-f]{32}$/);
      expect(r.ref).toBe(r.id);
      expect(r.enabled).toBe(true);
      expect(r.version).toBe('1');
    }

    const got = await cf.rulesets.phases.get(phase, { zone_id: ZONE });
    expect(got).toEqual(created);

    const manual = created.rules[0]!;
    const replaced = (await cf.rulesets.phases.update(phase, {
      zone_id: ZONE,
      rules: [
        { id: manual.id, action: 'block', expression: manual.expression!, description: manual.description! },
        {
          action: 'challenge',
          expression: 'http.host eq "b.example.com"',
          description: '[managed-by:c1:ZoneRuleset/b/r]',
        },
      ],
    })) as EntrypointRuleset;
    expect(replaced.id).toBe(created.id);
    expect(replaced.version).toBe('2');
    expect(replaced.rules.map((r) => r.description)).toEqual([
      'Manual rule by admin',
      '[managed-by:c1:ZoneRuleset/b/r]',
    ]);
    expect(replaced.rules[0]).toMatchObject({ id: manual.id, version: '1' });
    expect(replaced.rules[1]!.id).not.toBe(created.rules[1]!.id);

    const listed = [];
    for await (const rs of cf.rulesets.list({ zone_id: ZONE })) listed.push(rs);
    expect(listed).toEqual([expect.objectContaining({ id: created.id, phase, version: '2' })]);
  });

  it('account entrypoints are separate from zone entrypoints', async () => {
    const phase = 'http_request_firewall_custom';
    const acc = (await cf.rulesets.phases.update(phase, {
      account_id: ACCOUNT,
      rules: [{ action: 'block', expression: 'true' }],
    })) as EntrypointRuleset;
    expect(acc.kind).toBe('root');
    await expect(cf.rulesets.phases.get(phase, { zone_id: ZONE })).rejects.toBeInstanceOf(Cloudflare.NotFoundError);
    expect(((await cf.rulesets.phases.get(phase, { account_id: ACCOUNT })) as EntrypointRuleset).rules).toHaveLength(1);
  });

  it('an invalid ruleset body is a BadRequestError', async () => {
    const err = await cf.rulesets.phases
      .update('http_request_firewall_custom', { zone_id: ZONE, rules: [{ action: 'block' } as never] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Cloudflare.BadRequestError);
    expect((err as APIError).errors[0]?.code).toBe(9207);
  });

  it('default device policy include/exclude/fallback_domains: whole-list PUT replaces', async () => {
    const includes = cf.zeroTrust.devices.policies.default.includes;
    expect((await includes.get({ account_id: ACCOUNT })).result).toEqual([]);

    const first = [];
    for await (const e of includes.update({
      account_id: ACCOUNT,
      body: [
        { address: '10.0.0.0/8', description: 'AWS VPC' },
        { address: '192.168.1.0/24', description: 'Office Network' },
      ],
    })) {
      first.push(e);
    }
    expect(first).toHaveLength(2);

    await includes.update({ account_id: ACCOUNT, body: [{ address: '10.0.0.0/8', description: 'AWS VPC' }] });
    const after = [];
    for await (const e of includes.get({ account_id: ACCOUNT })) after.push(e);
    expect(after).toEqual([{ address: '10.0.0.0/8', description: 'AWS VPC' }]);

    const excludes = cf.zeroTrust.devices.policies.default.excludes;
    await excludes.update({ account_id: ACCOUNT, body: [{ host: 'internal.example.com', description: 'x' }] });
    expect((await excludes.get({ account_id: ACCOUNT })).result).toEqual([
      { host: 'internal.example.com', description: 'x' },
    ]);

    const fallback = cf.zeroTrust.devices.policies.default.fallbackDomains;
    const domains = [{ suffix: 'corp.example', description: 'corp', dns_server: ['10.0.0.53'] }];
    expect((await fallback.update({ account_id: ACCOUNT, domains })).result).toEqual(domains);
    expect((await fallback.get({ account_id: ACCOUNT })).result).toEqual(domains);
    // the include list was not touched by the other lists
    expect((await includes.get({ account_id: ACCOUNT })).result).toHaveLength(1);
  });

  it('custom policy lists are separate from the default profile', async () => {
    const policy = 'f174e90a-fafe-4643-bbbc-4a0ed4fc8415';
    const custom = cf.zeroTrust.devices.policies.custom;
    await custom.includes.update(policy, { account_id: ACCOUNT, body: [{ address: '10.1.0.0/16', description: 'c' }] });
    await custom.excludes.update(policy, { account_id: ACCOUNT, body: [{ address: '10.2.0.0/16', description: 'e' }] });
    await custom.fallbackDomains.update(policy, { account_id: ACCOUNT, domains: [{ suffix: 'c.example' }] });
    expect((await custom.includes.get(policy, { account_id: ACCOUNT })).result).toEqual([
      { address: '10.1.0.0/16', description: 'c' },
    ]);
    expect((await custom.excludes.get(policy, { account_id: ACCOUNT })).result).toHaveLength(1);
    expect((await custom.fallbackDomains.get(policy, { account_id: ACCOUNT })).result).toEqual([
      { suffix: 'c.example' },
    ]);
    expect((await cf.zeroTrust.devices.policies.default.includes.get({ account_id: ACCOUNT })).result).toEqual([]);
  });

  it('an invalid split-tunnel entry is a BadRequestError', async () => {
    const err = await cf.zeroTrust.devices.policies.default.includes
      .update({ account_id: ACCOUNT, body: [{ description: 'no address' } as never] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Cloudflare.BadRequestError);
  });

  it('a split-tunnel or fallback description over 100 characters is a BadRequestError; 100 is accepted', async () => {
    const policies = cf.zeroTrust.devices.policies.default;
    const at = (n: number) => 'd'.repeat(n);
    const include = await policies.includes
      .update({ account_id: ACCOUNT, body: [{ address: '10.9.0.0/16', description: at(101) }] })
      .catch((e: unknown) => e);
    expect(include).toBeInstanceOf(Cloudflare.BadRequestError);
    const fallback = await policies.fallbackDomains
      .update({ account_id: ACCOUNT, domains: [{ suffix: 'long.example', description: at(101) }] })
      .catch((e: unknown) => e);
    expect(fallback).toBeInstanceOf(Cloudflare.BadRequestError);
    const ok = [{ address: '10.9.0.0/16', description: at(100) }];
    expect((await policies.includes.update({ account_id: ACCOUNT, body: ok })).result).toEqual(ok);
  });
});

describe('contract: DNS records', () => {
  it('create / list with filters / get / update / edit / delete through the SDK', async () => {
    // Tags are not available on a Free zone: this one is Pro.
    const PRO = 'b'.repeat(32);
    await admin.seed({ zones: [{ id: PRO, name: 'pro.example', account_id: ACCOUNT, plan: 'pro' }] });
    const a = await cf.dns.records.create({
      zone_id: PRO,
      type: 'A',
      name: 'app',
      content: '192.0.2.1',
      ttl: 1,
      proxied: true,
      comment: 'managed-by:c1',
      tags: ['owner:c1'],
    });
    expect(a).toMatchObject({
      name: 'app.pro.example',
      type: 'A',
      content: '192.0.2.1',
      proxied: true,
      proxiable: true,
      ttl: 1,
      comment: 'managed-by:c1',
      tags: ['owner:c1'],
    });
    expect(a.id).toMatch(/^[0-9a-f]{32}$/);
    expect(typeof a.created_on).toBe('string');
    expect(a.meta).toEqual({});
    await admin.seed({ dns_records: [{ zone_id: PRO, name: 'manual', type: 'TXT', content: 'by hand' }] });

    const managed = [];
    for await (const r of cf.dns.records.list({ zone_id: PRO, comment: { startswith: 'managed-by:' } })) {
      managed.push(r);
    }
    expect(managed.map((r) => r.id)).toEqual([a.id]);
    const byName = await cf.dns.records.list({ zone_id: PRO, name: { exact: 'manual.pro.example' }, type: 'TXT' });
    expect(byName.result.map((r) => r.content)).toEqual(['by hand']);
    const byTag = await cf.dns.records.list({ zone_id: PRO, tag: { exact: 'owner:c1' }, match: 'all' });
    expect(byTag.result).toHaveLength(1);

    expect(await cf.dns.records.get(a.id, { zone_id: PRO })).toEqual(a);
    const edited = await cf.dns.records.edit(a.id, {
      zone_id: PRO,
      type: 'A',
      name: 'app',
      content: '192.0.2.2',
      ttl: 1,
    });
    expect(edited).toMatchObject({ id: a.id, content: '192.0.2.2', comment: 'managed-by:c1', proxied: true });
    const updated = await cf.dns.records.update(a.id, {
      zone_id: PRO,
      type: 'A',
      name: 'app.pro.example',
      content: '192.0.2.3',
      ttl: 300,
    });
    expect(updated).toMatchObject({ id: a.id, content: '192.0.2.3', proxied: false, ttl: 300, comment: null });
    expect(await cf.dns.records.delete(a.id, { zone_id: PRO })).toEqual({ id: a.id });
    const gone = await cf.dns.records.get(a.id, { zone_id: PRO }).catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(Cloudflare.NotFoundError);
    expect((gone as APIError).errors).toEqual([{ code: 81044, message: 'Record does not exist.' }]);
  });

  it('duplicates are BadRequestErrors with 81058 and 81053', async () => {
    await cf.dns.records.create({ zone_id: ZONE, type: 'A', name: 'x', content: '192.0.2.1', ttl: 1 });
    const same = await cf.dns.records
      .create({ zone_id: ZONE, type: 'A', name: 'x.example.com', content: '192.0.2.1', ttl: 1 })
      .catch((e: unknown) => e);
    expect(same).toBeInstanceOf(Cloudflare.BadRequestError);
    expect((same as APIError).errors).toEqual([{ code: 81058, message: 'An identical record already exists.' }]);
    const cname = await cf.dns.records
      .create({ zone_id: ZONE, type: 'CNAME', name: 'x', content: 'target.example.net', ttl: 1 })
      .catch((e: unknown) => e);
    expect((cname as APIError).errors[0]?.code).toBe(81053);
    const newline = await cf.dns.records
      .create({ zone_id: ZONE, type: 'A', name: 'y', content: '192.0.2.1', ttl: 1, comment: 'a\nb' })
      .catch((e: unknown) => e);
    expect(newline).toBeInstanceOf(Cloudflare.BadRequestError);
  });

  it('for await pages through every record; batch applies in order and is atomic', async () => {
    const posts = Array.from({ length: 12 }, (_, i) => ({
      type: 'TXT' as const,
      name: `t${String(i).padStart(2, '0')}`,
      content: 'v',
      ttl: 1,
    }));
    const created = await cf.dns.records.batch({ zone_id: ZONE, posts });
    expect(created.posts).toHaveLength(12);
    await admin.clearRequests();
    const seen: string[] = [];
    for await (const r of cf.dns.records.list({ zone_id: ZONE, per_page: 5 })) seen.push(r.name);
    expect(seen).toHaveLength(12);
    expect(new Set(seen).size).toBe(12);
    expect((await admin.requests({ method: 'GET', path: '/dns_records$' })).length).toBe(4);

    const [first, second] = created.posts!;
    const out = await cf.dns.records.batch({
      zone_id: ZONE,
      deletes: [{ id: first!.id }],
      patches: [{ id: second!.id, comment: 'patched' } as never],
      posts: [{ type: 'CNAME', name: first!.name, content: 'elsewhere.example.net', ttl: 1 }],
    });
    expect(out.deletes?.map((r) => r.id)).toEqual([first!.id]);
    expect(out.patches?.[0]).toMatchObject({ id: second!.id, comment: 'patched' });
    expect(out.posts?.[0]).toMatchObject({ type: 'CNAME', name: first!.name });

    const failed = await cf.dns.records
      .batch({ zone_id: ZONE, deletes: [{ id: second!.id }, { id: first!.id }] })
      .catch((e: unknown) => e);
    expect((failed as APIError).errors[0]?.code).toBe(81044);
    expect((await cf.dns.records.get(second!.id, { zone_id: ZONE })).id).toBe(second!.id);
  });

  it("a batch holds at most 200 operations on a Free zone (Cloudflare's limit), all kinds together", async () => {
    const posts = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ type: 'TXT' as const, name: `b${i}`, content: 'v', ttl: 1 as const }));
    const over = await cf.dns.records
      .batch({ zone_id: ZONE, posts: posts(200), deletes: [{ id: 'x' }] })
      .catch((e: unknown) => e);
    expect(over).toBeInstanceOf(Cloudflare.BadRequestError);
    expect((await cf.dns.records.batch({ zone_id: ZONE, posts: posts(200) })).posts).toHaveLength(200);
  });
});

describe('contract: zone settings and gateway configuration', () => {
  it('zones.settings.get / edit answer {id, value, editable, modified_on}; bad values and ids are refused', async () => {
    const ssl = await cf.zones.settings.get('ssl', { zone_id: ZONE });
    expect(ssl).toEqual({ id: 'ssl', value: 'full', editable: true, modified_on: null });
    const edited = await cf.zones.settings.edit('min_tls_version', { zone_id: ZONE, value: '1.2' });
    expect(edited).toMatchObject({ id: 'min_tls_version', value: '1.2', editable: true });
    expect(typeof (edited as { modified_on?: unknown }).modified_on).toBe('string');
    expect(await cf.zones.settings.get('min_tls_version', { zone_id: ZONE })).toEqual(edited);
    const ttl = await cf.zones.settings.edit('browser_cache_ttl', { zone_id: ZONE, value: 3600 });
    expect(ttl).toMatchObject({ id: 'browser_cache_ttl', value: 3600 });

    const bad = await cf.zones.settings.edit('ssl', { zone_id: ZONE, value: 'bogus' }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(Cloudflare.BadRequestError);
    expect((bad as APIError).errors[0]?.code).toBe(1007);
    const unknown = await cf.zones.settings.get('no_such_setting', { zone_id: ZONE }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(Cloudflare.NotFoundError);
  });

  it('GET /zones/{id}/settings (the SDK has no typed call: its generic get) lists every setting with its value', async () => {
    await cf.zones.settings.edit('always_use_https', { zone_id: ZONE, value: 'on' });
    const all = (await cf.get(`/zones/${ZONE}/settings`)) as {
      success: boolean;
      result: { id: string; value: unknown; editable: boolean }[];
    };
    expect(all.success).toBe(true);
    const byId = new Map(all.result.map((s) => [s.id, s.value]));
    expect(byId.get('always_use_https')).toBe('on');
    expect(byId.get('minify')).toEqual({ css: 'off', html: 'off', js: 'off' });
    // A Free zone: the settings its plan lacks are read as not editable.
    expect(
      all.result
        .filter((s) => !s.editable)
        .map((s) => s.id)
        .sort(),
    ).toEqual(Object.keys(SETTING_MIN_PLAN).sort());
    const missing = await cf.get('/zones/0000000000000000000000000000dead/settings').catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(Cloudflare.APIError);
  });

  it('zeroTrust.gateway.configurations get / update (replace) / edit (merge)', async () => {
    const gateway = cf.zeroTrust.gateway.configurations;
    expect((await gateway.get({ account_id: ACCOUNT })).settings).toEqual({});
    const put = await gateway.update({
      account_id: ACCOUNT,
      settings: { activity_log: { enabled: true }, tls_decrypt: { enabled: false } },
    });
    expect(put.settings).toEqual({ activity_log: { enabled: true }, tls_decrypt: { enabled: false } });
    expect(typeof put.created_at).toBe('string');
    const merged = await gateway.edit({ account_id: ACCOUNT, settings: { tls_decrypt: { enabled: true } } });
    expect(merged.settings).toEqual({ activity_log: { enabled: true }, tls_decrypt: { enabled: true } });
    expect(await gateway.get({ account_id: ACCOUNT })).toEqual(merged);
    await expect(
      client('scoped-token').zeroTrust.gateway.configurations.get({ account_id: ACCOUNT }),
    ).rejects.toBeInstanceOf(Cloudflare.PermissionDeniedError);
  });
});

describe('contract: virtual networks and tunnels', () => {
  it('zeroTrust.networks.virtualNetworks create / list / get / edit / delete, one default', async () => {
    const vnets = cf.zeroTrust.networks.virtualNetworks;
    const first = await vnets.create({ account_id: ACCOUNT, name: 'default-net', comment: 'made first' });
    expect(first).toMatchObject({ name: 'default-net', comment: 'made first', is_default_network: true });
    expect(first.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(typeof first.created_at).toBe('string');
    const second = await vnets.create({ account_id: ACCOUNT, name: 'cluster-net', is_default_network: true });
    expect(second.is_default_network).toBe(true);
    expect((await vnets.get(first.id, { account_id: ACCOUNT })).is_default_network).toBe(false);

    const all = [];
    for await (const v of vnets.list({ account_id: ACCOUNT })) all.push(v.name);
    expect(all).toEqual(['default-net', 'cluster-net']);
    expect((await vnets.list({ account_id: ACCOUNT, is_default: true })).result.map((v) => v.id)).toEqual([second.id]);
    expect((await vnets.list({ account_id: ACCOUNT, name: 'default-net' })).result).toHaveLength(1);

    const edited = await vnets.edit(first.id, { account_id: ACCOUNT, comment: 'edited', is_default_network: true });
    expect(edited).toMatchObject({ comment: 'edited', is_default_network: true });
    const deleted = await vnets.delete(second.id, { account_id: ACCOUNT });
    expect(typeof deleted.deleted_at).toBe('string');
    expect((await vnets.list({ account_id: ACCOUNT, is_deleted: false })).result.map((v) => v.id)).toEqual([first.id]);
    const missing = await vnets
      .get('00000000-0000-0000-0000-000000000000', { account_id: ACCOUNT })
      .catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(Cloudflare.NotFoundError);
  });

  it('zeroTrust.tunnels.cloudflared create / list / get / edit / token / connections / delete', async () => {
    const tunnels = cf.zeroTrust.tunnels.cloudflared;
    const t = await tunnels.create({ account_id: ACCOUNT, name: 'cluster-a', config_src: 'cloudflare' });
    expect(t).toMatchObject({
      name: 'cluster-a',
      account_tag: ACCOUNT,
      config_src: 'cloudflare',
      remote_config: true,
      tun_type: 'cfd_tunnel',
      status: 'inactive',
      connections: [],
    });
    const dup = await tunnels.create({ account_id: ACCOUNT, name: 'cluster-a' }).catch((e: unknown) => e);
    expect(dup).toBeInstanceOf(Cloudflare.ConflictError); // 409, as cloudflared's client expects
    expect((dup as APIError).errors[0]?.code).toBe(1013);
    for (let i = 0; i < 4; i++) await tunnels.create({ account_id: ACCOUNT, name: `extra-${i}` });

    const names = [];
    for await (const x of tunnels.list({ account_id: ACCOUNT, per_page: 2 })) names.push(x.name);
    expect(names).toHaveLength(5);
    const byName = await tunnels.list({ account_id: ACCOUNT, name: 'cluster-a', is_deleted: false });
    expect(byName.result.map((x) => x.id)).toEqual([t.id]);

    expect(await tunnels.get(t.id!, { account_id: ACCOUNT })).toEqual(t);
    expect((await tunnels.edit(t.id!, { account_id: ACCOUNT, name: 'cluster-a2' })).name).toBe('cluster-a2');
    const token = await tunnels.token.get(t.id!, { account_id: ACCOUNT });
    expect(JSON.parse(Buffer.from(token, 'base64').toString())).toMatchObject({ a: ACCOUNT, t: t.id });
    expect(await tunnels.connections.delete(t.id!, { account_id: ACCOUNT })).toBeNull();
    const deleted = await tunnels.delete(t.id!, { account_id: ACCOUNT });
    expect(typeof deleted.deleted_at).toBe('string');
    expect((await tunnels.list({ account_id: ACCOUNT, is_deleted: true })).result.map((x) => x.id)).toEqual([t.id]);
  });

  it('zeroTrust.networks.routes create / list (by tunnel, paged) / delete', async () => {
    const t = await cf.zeroTrust.tunnels.cloudflared.create({ account_id: ACCOUNT, name: 'routed' });
    const routes = cf.zeroTrust.networks.routes;
    const made = [];
    for (let i = 0; i < 3; i++)
      made.push(
        await routes.create({ account_id: ACCOUNT, network: `10.${i}.0.0/16`, tunnel_id: t.id!, comment: 'c' }),
      );
    const listed = [];
    for await (const r of routes.list({ account_id: ACCOUNT, tunnel_id: t.id!, per_page: 2 })) listed.push(r.id);
    expect(listed).toEqual(made.map((r) => r.id));
    const dup = await routes
      .create({ account_id: ACCOUNT, network: '10.0.0.0/16', tunnel_id: t.id! })
      .catch((e: unknown) => e);
    expect(dup).toBeInstanceOf(Cloudflare.BadRequestError);
    expect(typeof (await routes.delete(made[0]!.id!, { account_id: ACCOUNT })).deleted_at).toBe('string');
    expect((await routes.list({ account_id: ACCOUNT, tunnel_id: t.id! })).result).toHaveLength(2);
  });

  it('tunnel configurations: PUT replaces the config and bumps version; a bad ingress is a BadRequestError', async () => {
    const tunnels = cf.zeroTrust.tunnels.cloudflared;
    const t = await tunnels.create({ account_id: ACCOUNT, name: 'cfg', config_src: 'cloudflare' });
    const config = {
      ingress: [
        { hostname: 'app.example.com', service: 'http://app.default.svc:8080', originRequest: { noTLSVerify: true } },
        { hostname: '', service: 'http_status:404' },
      ],
    };
    const v1 = await tunnels.configurations.update(t.id!, { account_id: ACCOUNT, config });
    expect(v1).toMatchObject({ tunnel_id: t.id, version: 1, config, source: 'cloudflare' });
    expect(typeof v1.created_at).toBe('string');
    const v2 = await tunnels.configurations.update(t.id!, {
      account_id: ACCOUNT,
      config: { ingress: [{ hostname: '', service: 'http_status:503' }] },
    });
    expect(v2.version).toBe(2);
    expect(await tunnels.configurations.get(t.id!, { account_id: ACCOUNT })).toEqual(v2);
    const bad = await tunnels.configurations
      .update(t.id!, { account_id: ACCOUNT, config: { ingress: [{ hostname: 'a.example.com', service: 'http://a' }] } })
      .catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(Cloudflare.BadRequestError);
    expect((bad as APIError).errors[0]?.code).toBe(1056);
    expect((await tunnels.configurations.get(t.id!, { account_id: ACCOUNT })).version).toBe(2);
  });
});

describe('contract: Access groups and identity providers', () => {
  it('zeroTrust.access.groups create / list / get / update / delete (account and zone scope)', async () => {
    const groups = cf.zeroTrust.access.groups;
    const include = [{ email_domain: { domain: 'example.com' } }];
    const g = await groups.create({ account_id: ACCOUNT, name: 'engineers', include });
    expect(g).toMatchObject({ name: 'engineers', include, exclude: [], require: [] });
    expect(g.id).toMatch(/^[0-9a-f-]{36}$/);
    const zoneGroup = await groups.create({ zone_id: ZONE, name: 'zone-group', include });

    const names = [];
    for await (const x of groups.list({ account_id: ACCOUNT })) names.push(x.name);
    expect(names).toEqual(['engineers']);
    expect((await groups.list({ zone_id: ZONE })).result.map((x) => x.id)).toEqual([zoneGroup.id]);
    expect(await groups.get(g.id!, { account_id: ACCOUNT })).toEqual(g);

    const updated = await groups.update(g.id!, {
      account_id: ACCOUNT,
      name: 'engineers',
      include,
      require: [{ everyone: {} }],
    });
    expect(updated).toMatchObject({ id: g.id, require: [{ everyone: {} }] });
    expect(await groups.delete(g.id!, { account_id: ACCOUNT })).toEqual({ id: g.id });
    await expect(groups.get(g.id!, { account_id: ACCOUNT })).rejects.toBeInstanceOf(Cloudflare.NotFoundError);
    const dup = await groups.create({ zone_id: ZONE, name: 'zone-group', include }).catch((e: unknown) => e);
    expect(dup).toBeInstanceOf(Cloudflare.BadRequestError);
  });

  it('zeroTrust.identityProviders create / list / get / update / delete never answer the client secret', async () => {
    const idps = cf.zeroTrust.identityProviders;
    const created = await idps.create({
      account_id: ACCOUNT,
      name: 'GitHub',
      type: 'github',
      config: { client_id: 'cid', client_secret: 'hunter2' },
    });
    expect(created).toMatchObject({ name: 'GitHub', type: 'github', config: { client_id: 'cid' } });
    expect(created.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.stringify(created)).not.toContain('hunter2');
    const got = await idps.get(created.id!, { account_id: ACCOUNT });
    expect(JSON.stringify(got)).not.toContain('hunter2');
    const listed = [];
    for await (const x of idps.list({ account_id: ACCOUNT })) listed.push(x);
    expect(listed.map((x) => x.id)).toEqual([created.id]);
    expect(JSON.stringify(listed)).not.toContain('hunter2');

    const updated = await idps.update(created.id!, {
      account_id: ACCOUNT,
      name: 'GitHub SSO',
      type: 'github',
      config: { client_id: 'cid2' },
    });
    expect(updated).toMatchObject({ id: created.id, name: 'GitHub SSO', config: { client_id: 'cid2' } });
    expect((await idps.list({ zone_id: ZONE })).result).toEqual([]);
    expect(await idps.delete(created.id!, { account_id: ACCOUNT })).toEqual({ id: created.id });
    await expect(idps.get(created.id!, { account_id: ACCOUNT })).rejects.toBeInstanceOf(Cloudflare.NotFoundError);
  });
});

describe('auth', () => {
  it('a wrong token is a PermissionDeniedError with code 10000', async () => {
    const err = await client('wrong-token')
      .zones.list()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Cloudflare.PermissionDeniedError);
    expect((err as APIError).status).toBe(403);
    expect((err as APIError).errors).toEqual([{ code: 10000, message: 'Authentication error' }]);
  });

  it('a disabled token is refused, and verify answers AuthenticationError with code 1000', async () => {
    await expect(client('off').zones.get({ zone_id: ZONE })).rejects.toBeInstanceOf(Cloudflare.PermissionDeniedError);
    const err = await client('wrong-token')
      .user.tokens.verify()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Cloudflare.AuthenticationError);
    expect((err as APIError).errors[0]?.code).toBe(1000);
  });

  it("a token limited to another account cannot touch this account's objects", async () => {
    const scoped = client('scoped-token');
    await expect(
      scoped.zeroTrust.devices.policies.default.includes.get({ account_id: ACCOUNT }),
    ).rejects.toBeInstanceOf(Cloudflare.PermissionDeniedError);
    await expect(scoped.rulesets.phases.get('http_request_firewall_custom', { zone_id: ZONE })).rejects.toBeInstanceOf(
      Cloudflare.PermissionDeniedError,
    );
    expect(
      (await scoped.zeroTrust.devices.policies.default.includes.get({ account_id: OTHER_ACCOUNT })).result,
    ).toEqual([]);
  });
});

describe('pagination', () => {
  it('for await over zones.list returns every zone exactly once across pages', async () => {
    const names = Array.from({ length: 23 }, (_, i) => `z${String(i).padStart(2, '0')}.example.org`);
    await admin.seed({ zones: names.map((name) => ({ name, account_id: OTHER_ACCOUNT })) });
    await admin.clearRequests();
    const seen: string[] = [];
    for await (const z of cf.zones.list({ account: { id: OTHER_ACCOUNT }, per_page: 5 })) seen.push(z.name);
    expect(seen).toEqual(names);
    // 5 pages of items, then the empty page past the end that stops the SDK
    const gets = await admin.requests({ method: 'GET', path: '^/zones$' });
    expect(gets.map((g) => new URLSearchParams(g.query).get('page') ?? '1')).toEqual(['1', '2', '3', '4', '5', '6']);

    const page = await cf.zones.list({ account: { id: OTHER_ACCOUNT }, per_page: 5, page: 9 });
    expect(page.result).toEqual([]);
    expect(page.result_info).toMatchObject({ page: 9, per_page: 5, count: 0, total_count: 23, total_pages: 5 });
  });

  it('for await over rulesets.list follows the cursor', async () => {
    const phases = ['http_request_firewall_custom', 'http_request_transform', 'http_request_dynamic_redirect'] as const;
    for (const phase of phases) await cf.rulesets.phases.update(phase, { zone_id: ZONE, rules: [] });
    await admin.clearRequests();
    const seen: string[] = [];
    for await (const rs of cf.rulesets.list({ zone_id: ZONE, per_page: 1 })) seen.push(rs.phase);
    expect(seen.sort()).toEqual([...phases].sort());
    expect(await admin.requests({ method: 'GET', path: '/rulesets$' })).toHaveLength(3);
  });
});

describe('rate limits and faults', () => {
  it('the SDK retries a 429 after its Retry-After, and the request log counts the attempts', async () => {
    await admin.addFault({ method: 'GET', path: '^/zones/', status: 429, retryAfter: 1, times: 1 });
    await admin.clearRequests();
    const started = Date.now();
    const zone = await cf.zones.get({ zone_id: ZONE });
    expect(zone.id).toBe(ZONE);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    const attempts = await admin.requests({ method: 'GET', path: `^/zones/${ZONE}$` });
    expect(attempts.map((a) => a.status)).toEqual([429, 200]);
  });

  it('a persistent 429 surfaces as RateLimitError with code 971 and Retry-After', async () => {
    await admin.addFault({ path: '/devices/policy/include$', status: 429, retryAfterMs: 10 });
    const err = await cf.zeroTrust.devices.policies.default.includes
      .get({ account_id: ACCOUNT })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Cloudflare.RateLimitError);
    expect((err as APIError).errors[0]?.code).toBe(971);
    expect((await admin.requests({ path: '/devices/policy/include$' })).length).toBe(3); // 1 + maxRetries 2
  });

  it('the budget answers 429 with Retry-After and rate-limit headers', async () => {
    await admin.setRateLimit({ requests: 2, windowSeconds: 60 });
    const noRetry = client(TOKEN, 0);
    await noRetry.user.tokens.verify();
    const { response } = await noRetry.user.tokens.verify().withResponse();
    expect(response.headers.get('ratelimit')).toMatch(/^"default";r=0;t=\d+$/);
    const err = await noRetry.user.tokens.verify().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Cloudflare.RateLimitError);
    expect(Number((err as APIError).headers?.get('retry-after'))).toBeGreaterThan(0);
    // the budget is the user's: another user's token is not throttled
    await expect(client('scoped-token', 0).user.tokens.verify()).resolves.toMatchObject({ status: 'active' });
    await admin.setRateLimit({ requests: 1200, windowSeconds: 300 });
  });

  it("the budget is the user's across their tokens, and a breach blocks all of them for the window (issue 23, E5)", async () => {
    await admin.addToken({ token: 'alice-1', user: 'alice' });
    await admin.addToken({ token: 'alice-2', user: 'alice' });
    await admin.setRateLimit({ requests: 3, windowSeconds: 60 });
    await client('alice-1', 0).user.tokens.verify();
    await client('alice-2', 0).user.tokens.verify();
    await client('alice-1', 0).user.tokens.verify();
    const breach = await client('alice-2', 0)
      .user.tokens.verify()
      .catch((e: unknown) => e);
    expect(breach).toBeInstanceOf(Cloudflare.RateLimitError);
    // blocked for a whole window from the breach, whichever token asks
    const blocked = await client('alice-1', 0)
      .zones.get({ zone_id: ZONE })
      .catch((e: unknown) => e);
    expect(blocked).toBeInstanceOf(Cloudflare.RateLimitError);
    expect(Number((blocked as APIError).headers?.get('retry-after'))).toBeGreaterThan(55);
    await expect(client(TOKEN, 0).user.tokens.verify()).resolves.toMatchObject({ status: 'active' });
    await admin.setRateLimit({ requests: 1200, windowSeconds: 300 });
  });

  it('a 5xx is retried, x-should-retry:false is not, and latency delays the answer', async () => {
    await admin.addFault({ method: 'PUT', status: 503, times: 1 });
    await cf.zeroTrust.devices.policies.default.excludes.update({ account_id: ACCOUNT, body: [] });
    expect((await admin.requests({ method: 'PUT' })).map((r) => r.status)).toEqual([503, 200]);

    await admin.addFault({ method: 'GET', path: '/exclude$', status: 500, shouldRetry: false, times: 1 });
    await expect(cf.zeroTrust.devices.policies.default.excludes.get({ account_id: ACCOUNT })).rejects.toBeInstanceOf(
      Cloudflare.InternalServerError,
    );

    await admin.addFault({ path: '^/user/tokens/verify$', latencyMs: 300, times: 1 });
    const started = Date.now();
    await cf.user.tokens.verify();
    expect(Date.now() - started).toBeGreaterThanOrEqual(280);
  });

  it('faults, the request log and token scopes apply to the new endpoints too', async () => {
    await admin.addFault({ method: 'POST', path: '/dns_records$', status: 503, times: 1 });
    await admin.clearRequests();
    await cf.dns.records.create({ zone_id: ZONE, type: 'A', name: 'f', content: '192.0.2.1', ttl: 1 });
    const posts = await admin.requests({ method: 'POST', path: '/dns_records$' });
    expect(posts.map((r) => r.status)).toEqual([503, 200]);
    expect(posts[1]?.body).toMatchObject({ name: 'f', content: '192.0.2.1' });
    expect((await cf.dns.records.list({ zone_id: ZONE })).result).toHaveLength(1);
    const scoped = client('scoped-token', 0);
    await expect(scoped.dns.records.list({ zone_id: ZONE })).rejects.toBeInstanceOf(Cloudflare.PermissionDeniedError);
    await expect(
      scoped.zeroTrust.tunnels.cloudflared.create({ account_id: ACCOUNT, name: 'nope' }),
    ).rejects.toBeInstanceOf(Cloudflare.PermissionDeniedError);
    await expect(client('wrong-token', 0).zones.settings.get('ssl', { zone_id: ZONE })).rejects.toBeInstanceOf(
      Cloudflare.PermissionDeniedError,
    );
  });

  it('the hooks refuse a request without the admin token', async () => {
    const res = await fetch(`${emulator.url}/__emulator/requests`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(401);
  });
});

describe('the emulator as a process (npm run cloudflare-emulator)', () => {
  it('serves the tokens file and seed it was given, and stops on SIGTERM', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'cf-emulator-'));
    try {
      await writeFile(path.join(dir, 'tokens.json'), JSON.stringify({ tokens: [{ token: 'cli-token' }] }));
      await writeFile(
        path.join(dir, 'seed.json'),
        JSON.stringify({ zones: [{ id: ZONE, name: 'cli.example', account_id: ACCOUNT }] }),
      );
      const child = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          path.join(REPO_ROOT, 'test/emulators/cloudflare/main.ts'),
          '--port',
          '0',
          '--tokens-file',
          path.join(dir, 'tokens.json'),
          '--seed',
          path.join(dir, 'seed.json'),
        ],
        { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'ignore'] },
      );
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      try {
        const baseURL = await new Promise<string>((resolve, reject) => {
          let out = '';
          child.stdout.on('data', (chunk: Buffer) => {
            out += chunk.toString();
            const m = /^CLOUDFLARE_BASE_URL=(\S+)$/m.exec(out);
            if (m?.[1]) resolve(m[1]);
          });
          void exited.then((code) => reject(new Error(`emulator exited (${code}) before listening: ${out}`)));
        });
        const sdk = new Cloudflare({ apiToken: 'cli-token', baseURL });
        expect(await sdk.user.tokens.verify()).toMatchObject({ status: 'active' });
        expect((await sdk.zones.get({ zone_id: ZONE })).name).toBe('cli.example');
        await expect(
          new Cloudflare({ apiToken: 'nope', baseURL, maxRetries: 0 }).zones.get({ zone_id: ZONE }),
        ).rejects.toBeInstanceOf(Cloudflare.PermissionDeniedError);
      } finally {
        if (child.exitCode === null) child.kill('SIGTERM');
        expect(await exited).toBe(0);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
