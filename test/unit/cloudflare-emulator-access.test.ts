import { describe, expect, it } from 'vitest';
import type { AccessGroup, IdentityProvider } from '../emulators/cloudflare/store.js';
import { emulatorUnit, errorOf } from '../support/emulator-unit.js';

const emu = emulatorUnit({
  accounts: [{ id: 'acc' }],
  zones: [{ id: 'z', name: 'example.com', account_id: 'acc' }],
});
const call = emu.call;

describe('access groups', () => {
  const G = '/accounts/acc/access/groups';
  const include = [{ email_domain: { domain: 'example.com' } }];

  it('create / list / get / put / delete, account and zone scopes apart', () => {
    const g = call<AccessGroup>('POST', G, { name: 'eng', include });
    expect(g).toMatchObject({ name: 'eng', include, exclude: [], require: [], is_default: false });
    expect(g.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(call<AccessGroup[]>('GET', G).map((x) => x.id)).toEqual([g.id]);
    expect(call<AccessGroup[]>('GET', '/zones/z/access/groups')).toEqual([]);
    call('POST', '/zones/z/access/groups', { name: 'eng', include }); // same name in another scope is fine
    const put = call<AccessGroup>('PUT', `${G}/${g.id}`, {
      name: 'eng2',
      include,
      require: [{ everyone: {} }],
      is_default: true,
    });
    expect(put).toMatchObject({ id: g.id, name: 'eng2', require: [{ everyone: {} }], is_default: true });
    expect(put.created_at).toBe(g.created_at);
    expect(call('GET', `${G}/${g.id}`)).toEqual(put);
    expect(call('DELETE', `${G}/${g.id}`)).toEqual({ id: g.id });
    expect(errorOf(() => call('GET', `${G}/${g.id}`))).toEqual({ status: 404, code: 12119 });
    expect(errorOf(() => call('DELETE', `${G}/${g.id}`)).code).toBe(12119);
  });

  it('validates bodies and names; lists page and filter', () => {
    expect(errorOf(() => call('POST', G, { name: 'x', include: [] })).code).toBe(9207);
    expect(errorOf(() => call('POST', G, { include })).code).toBe(9207);
    for (let i = 0; i < 7; i++) call('POST', G, { name: `g${i}`, include });
    expect(errorOf(() => call('POST', G, { name: 'g1', include }))).toEqual({ status: 400, code: 12130 });
    const page = emu.dispatch('GET', `${G}?per_page=3&page=3`);
    expect((page.result as AccessGroup[]).map((x) => x.name)).toEqual(['g6']);
    expect(emu.dispatch('GET', `${G}?per_page=3&page=4`).result).toEqual([]);
    expect(call<AccessGroup[]>('GET', `${G}?name=g3`).map((x) => x.name)).toEqual(['g3']);
    expect(call<AccessGroup[]>('GET', `${G}?search=G`)).toHaveLength(7);
    expect(errorOf(() => call('GET', '/zones/nope/access/groups')).code).toBe(7003);
  });
});

describe('access identity providers', () => {
  const I = '/accounts/acc/access/identity_providers';
  const body = {
    name: 'GitHub',
    type: 'github',
    config: { client_id: 'cid', client_secret: 'hunter2' },
  };

  it('never answers client_secret, keeps it across a PUT that leaves it out', () => {
    const idp = call<IdentityProvider>('POST', I, body);
    expect(idp).toMatchObject({ name: 'GitHub', type: 'github', config: { client_id: 'cid' } });
    expect(idp.config).not.toHaveProperty('client_secret');
    expect(idp.scim_config).toMatchObject({ enabled: false });
    expect(call<IdentityProvider>('GET', `${I}/${idp.id}`).config).toEqual({ client_id: 'cid' });
    expect(call<IdentityProvider[]>('GET', I).map((x) => x.config)).toEqual([{ client_id: 'cid' }]);
    const put = call<IdentityProvider>('PUT', `${I}/${idp.id}`, { ...body, config: { client_id: 'cid2' } });
    expect(put.config).toEqual({ client_id: 'cid2' });
    const stored = emu.store.identityProviders.get('accounts/acc')![0]!;
    expect(stored.config).toEqual({ client_id: 'cid2', client_secret: 'hunter2' });
    call('PUT', `${I}/${idp.id}`, { ...body, config: { client_id: 'cid2', client_secret: 'new' } });
    expect(emu.store.identityProviders.get('accounts/acc')![0]!.config.client_secret).toBe('new');
  });

  it('the SCIM secret is answered once, when SCIM is first enabled', () => {
    const idp = call<IdentityProvider>('POST', I, { ...body, scim_config: { enabled: true } });
    expect(typeof idp.scim_config.secret).toBe('string');
    expect(call<IdentityProvider>('GET', `${I}/${idp.id}`).scim_config).not.toHaveProperty('secret');
    const put = call<IdentityProvider>('PUT', `${I}/${idp.id}`, { ...body, scim_config: { enabled: true } });
    expect(put.scim_config).not.toHaveProperty('secret');
  });

  it('validates type, unique names, 404 and delete; zone scope apart', () => {
    expect(errorOf(() => call('POST', I, { ...body, type: 'myspace' })).code).toBe(9207);
    expect(errorOf(() => call('POST', I, { name: 'x', type: 'onetimepin' })).code).toBe(9207);
    const idp = call<IdentityProvider>('POST', I, body);
    expect(errorOf(() => call('POST', I, body))).toEqual({ status: 400, code: 12130 });
    expect(call('POST', '/zones/z/access/identity_providers', body)).toMatchObject({ name: 'GitHub' });
    expect(call('DELETE', `${I}/${idp.id}`)).toEqual({ id: idp.id });
    expect(errorOf(() => call('GET', `${I}/${idp.id}`))).toEqual({ status: 404, code: 12119 });
    expect(call<IdentityProvider[]>('GET', '/zones/z/access/identity_providers')).toHaveLength(1);
  });
});
