import { describe, expect, it } from 'vitest';
import { ingressError } from '../emulators/cloudflare/routes/tunnels.js';
import type { Tunnel, VirtualNetwork } from '../emulators/cloudflare/store.js';
import { emulatorUnit, errorOf } from '../support/emulator-unit.js';

const emu = emulatorUnit({ accounts: [{ id: 'acc' }, { id: 'other' }] }, '/accounts/acc');
const call = emu.call;

describe('virtual networks', () => {
  const VN = '/teamnet/virtual_networks';
  const create = (body: Record<string, unknown>) => call<VirtualNetwork>('POST', VN, body);
  const defaults = () => call<VirtualNetwork[]>('GET', `${VN}?is_default=true`).map((v) => v.name);

  it('the first network is the default; exactly one default; making one default un-defaults the other', () => {
    const a = create({ name: 'a', comment: 'first' });
    expect(a).toMatchObject({ name: 'a', comment: 'first', is_default_network: true, deleted_at: null });
    expect(a.id).toMatch(/^[0-9a-f-]{36}$/);
    const b = create({ name: 'b' });
    expect(b).toMatchObject({ comment: '', is_default_network: false });
    expect(defaults()).toEqual(['a']);
    create({ name: 'c', is_default: true });
    expect(defaults()).toEqual(['c']);
    call('PATCH', `${VN}/${b.id}`, { is_default_network: true });
    expect(defaults()).toEqual(['b']);
    expect(errorOf(() => call('PATCH', `${VN}/${b.id}`, { is_default_network: false }))).toEqual({
      status: 400,
      code: 1011,
    });
    expect(errorOf(() => call('DELETE', `${VN}/${b.id}`)).code).toBe(1011);
    expect(call<VirtualNetwork[]>('GET', VN).map((v) => v.name)).toEqual(['a', 'b', 'c']);
  });

  it('filters, names unique among live networks, soft delete, 404', () => {
    const a = create({ name: 'a' });
    const b = create({ name: 'b', comment: 'x' });
    expect(errorOf(() => create({ name: 'b' }))).toEqual({ status: 400, code: 1010 });
    expect(errorOf(() => call('PATCH', `${VN}/${a.id}`, { name: 'b' })).code).toBe(1010);
    const patched = call<VirtualNetwork>('PATCH', `${VN}/${b.id}`, { name: 'b2', comment: 'y' });
    expect(patched).toMatchObject({ name: 'b2', comment: 'y' });
    const deleted = call<VirtualNetwork>('DELETE', `${VN}/${b.id}`);
    expect(typeof deleted.deleted_at).toBe('string');
    expect(call<VirtualNetwork[]>('GET', `${VN}?is_deleted=false`).map((v) => v.name)).toEqual(['a']);
    expect(call<VirtualNetwork[]>('GET', `${VN}?is_deleted=true`).map((v) => v.name)).toEqual(['b2']);
    expect(call<VirtualNetwork[]>('GET', VN)).toHaveLength(2);
    expect(call<VirtualNetwork[]>('GET', `${VN}?name=a`).map((v) => v.id)).toEqual([a.id]);
    expect(call<VirtualNetwork[]>('GET', `${VN}?id=${b.id}`).map((v) => v.name)).toEqual(['b2']);
    expect(create({ name: 'b2' }).name).toBe('b2'); // the name is free again
    expect(call<VirtualNetwork>('GET', `${VN}/${a.id}`).id).toBe(a.id);
    expect(errorOf(() => call('GET', `${VN}/nope`))).toEqual({ status: 404, code: 1002 });
    expect(errorOf(() => call('PATCH', `${VN}/${b.id}`, { comment: 'z' })).code).toBe(1002);
    expect(errorOf(() => create({ name: '' })).code).toBe(9207);
    // another account has its own networks and default; its only (default) network can be deleted
    expect(emu.dispatch('GET', `/accounts/other${VN}`).result).toEqual([]);
    const only = emu.dispatch('POST', `/accounts/other${VN}`, { name: 'a' }).result as VirtualNetwork;
    expect(only.is_default_network).toBe(true);
    const gone = emu.dispatch('DELETE', `/accounts/other${VN}/${only.id}`).result as VirtualNetwork;
    expect(gone).toMatchObject({ is_default_network: false });
    expect(defaults()).toEqual(['a']);
  });
});

describe('tunnels', () => {
  const T = '/cfd_tunnel';
  const create = (body: Record<string, unknown>) => call<Tunnel>('POST', T, body);

  it('create, list filters with pagination, get, patch, soft delete', () => {
    const t = create({ name: 'edge', config_src: 'cloudflare' });
    expect(t).toMatchObject({
      name: 'edge',
      account_tag: 'acc',
      config_src: 'cloudflare',
      remote_config: true,
      tun_type: 'cfd_tunnel',
      status: 'inactive',
      connections: [],
      deleted_at: null,
    });
    expect(create({ name: 'local' }).remote_config).toBe(false);
    expect(errorOf(() => create({ name: 'edge' }))).toEqual({ status: 409, code: 1013 });
    expect(errorOf(() => create({ name: 'x', tunnel_secret: 'c2hvcnQ=' })).code).toBe(1005);
    for (let i = 0; i < 5; i++) create({ name: `bulk-${i}` });
    const page = emu.dispatch('GET', `/accounts/acc${T}?per_page=3&page=3`);
    expect((page.result as Tunnel[]).map((x) => x.name)).toEqual(['bulk-4']);
    expect(page.result_info).toMatchObject({ total_count: 7, total_pages: 3 });
    expect(emu.dispatch('GET', `/accounts/acc${T}?per_page=3&page=4`).result).toEqual([]);
    expect(call<Tunnel[]>('GET', `${T}?name=edge`).map((x) => x.id)).toEqual([t.id]);
    expect(call<Tunnel[]>('GET', `${T}?include_prefix=bulk&exclude_prefix=bulk-1`)).toHaveLength(4);

    expect(call<Tunnel>('PATCH', `${T}/${t.id}`, { name: 'edge2' }).name).toBe('edge2');
    const deleted = call<Tunnel>('DELETE', `${T}/${t.id}`);
    expect(typeof deleted.deleted_at).toBe('string');
    expect(call<Tunnel>('GET', `${T}/${t.id}`).deleted_at).toBe(deleted.deleted_at);
    expect(call<Tunnel[]>('GET', `${T}?is_deleted=true`).map((x) => x.id)).toEqual([t.id]);
    expect(call<Tunnel[]>('GET', `${T}?is_deleted=false`)).toHaveLength(6);
    expect(create({ name: 'edge2' }).name).toBe('edge2');
    expect(errorOf(() => call('PATCH', `${T}/${t.id}`, { name: 'x' }))).toEqual({ status: 404, code: 1003 });
    expect(errorOf(() => call('GET', `${T}/nope/token`)).code).toBe(1003);
  });

  it('the token carries account, tunnel and secret; connections can be cleaned up', () => {
    const secret = Buffer.alloc(32, 7).toString('base64');
    const t = create({ name: 'x', tunnel_secret: secret });
    const token = call<string>('GET', `${T}/${t.id}/token`);
    expect(JSON.parse(Buffer.from(token, 'base64').toString())).toEqual({ a: 'acc', t: t.id, s: secret });
    expect(call('DELETE', `${T}/${t.id}/connections`)).toBeNull();
    const generated = create({ name: 'y' });
    const s = JSON.parse(Buffer.from(call<string>('GET', `${T}/${generated.id}/token`), 'base64').toString()) as {
      s: string;
    };
    expect(Buffer.from(s.s, 'base64')).toHaveLength(32);
  });

  it('configurations: version 0 before the first PUT, +1 per PUT, ingress validated', () => {
    const t = create({ name: 'x', config_src: 'cloudflare' });
    expect(call('GET', `${T}/${t.id}/configurations`)).toMatchObject({ tunnel_id: t.id, version: 0, config: null });
    const config = {
      ingress: [
        { hostname: 'app.example.com', service: 'http://app.default.svc:80', originRequest: { noTLSVerify: true } },
        { service: 'http_status:404' },
      ],
    };
    const v1 = call('PUT', `${T}/${t.id}/configurations`, { config });
    expect(v1).toMatchObject({ tunnel_id: t.id, account_id: 'acc', version: 1, config, source: 'cloudflare' });
    expect(call('PUT', `${T}/${t.id}/configurations`, { config }).version).toBe(2);
    expect(call('GET', `${T}/${t.id}/configurations`)).toMatchObject({ version: 2, config });
    const bad = { ingress: [{ hostname: 'a.example.com', service: 'http://a' }] };
    expect(errorOf(() => call('PUT', `${T}/${t.id}/configurations`, { config: bad }))).toEqual({
      status: 400,
      code: 1056,
    });
    expect(errorOf(() => call('PUT', `${T}/${t.id}/configurations`, {})).code).toBe(9207);
    expect(call('GET', `${T}/${t.id}/configurations`).version).toBe(2);
  });

  it('ingressError follows cloudflared', () => {
    expect(ingressError([])).toBeUndefined();
    expect(ingressError([{ service: 'http_status:404' }])).toBeUndefined();
    expect(ingressError([{ hostname: 'a', service: 'https://x:8443' }, { service: 'hello_world' }])).toBeUndefined();
    expect(ingressError([{ hostname: 'a', service: 'http://x' }])).toMatch(/last ingress rule must match all/);
    expect(ingressError([{ path: '/x', service: 'http://x' }])).toMatch(/last ingress rule/);
    expect(ingressError([{ service: 'http://x' }, { service: 'http_status:404' }])).toMatch(/not the last rule/);
    expect(ingressError([{ service: 'localhost:80' }])).toMatch(/not a valid service/);
    expect(ingressError([{ service: 'http_status:999' }])).toMatch(/not a valid service/);
  });
});

describe('private network routes', () => {
  const R = '/teamnet/routes';
  const tunnel = (name: string) => call<Tunnel>('POST', '/cfd_tunnel', { name });

  it('create on a live tunnel, one live route per (network, virtual network), filters, soft delete', () => {
    const t = tunnel('routes-a');
    const other = tunnel('routes-b');
    const r = call<{ id: string; network: string; tunnel_id: string; deleted_at: string | null }>('POST', R, {
      network: '10.0.0.0/16',
      tunnel_id: t.id,
      comment: 'office',
    });
    expect(r).toMatchObject({ network: '10.0.0.0/16', tunnel_id: t.id, tunnel_name: 'routes-a', deleted_at: null });
    expect(errorOf(() => call('POST', R, { network: '10.0.0.0/16', tunnel_id: other.id }))).toEqual({
      status: 400,
      code: 1014,
    });
    expect(errorOf(() => call('POST', R, { network: 'ten', tunnel_id: t.id })).code).toBe(1001);
    expect(errorOf(() => call('POST', R, { network: '10.1.0.0/16', tunnel_id: 'nope' })).code).toBe(1003);
    call('POST', R, { network: '10.2.0.0/16', tunnel_id: other.id });
    expect(call<Array<{ id: string }>>('GET', `${R}?tunnel_id=${t.id}`).map((x) => x.id)).toEqual([r.id]);
    call('DELETE', `${R}/${r.id}`);
    expect(call<unknown[]>('GET', `${R}?tunnel_id=${t.id}`)).toEqual([]);
    expect(call<Array<{ id: string }>>('GET', `${R}?tunnel_id=${t.id}&is_deleted=true`).map((x) => x.id)).toEqual([
      r.id,
    ]);
    expect(errorOf(() => call('DELETE', `${R}/${r.id}`))).toEqual({ status: 404, code: 1002 });
  });
});
