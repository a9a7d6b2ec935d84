import { describe, expect, it } from 'vitest';
import { FaultInjector } from '../emulators/cloudflare/faults.js';
import { Router } from '../emulators/cloudflare/router.js';
import { DEFAULT_DEVICE_LISTS, EmulatorStore } from '../emulators/cloudflare/store.js';
import { parseRateLimit, parseTokensFile } from '../emulators/cloudflare/main.js';

describe('entrypoint store', () => {
  it('creates on first PUT, keeps ids of named rules, bumps versions, replaces rules wholesale', () => {
    const store = new EmulatorStore();
    const first = store.putEntrypoint('zones', 'z', 'http_request_firewall_custom', {
      rules: [
        { action: 'block', expression: 'a' },
        { action: 'block', expression: 'b', ref: 'my-ref' },
      ],
    });
    expect(first).toMatchObject({ version: '1', kind: 'zone', phase: 'http_request_firewall_custom' });
    const [a, b] = first.rules;
    expect(a?.ref).toBe(a?.id);
    expect(b?.ref).toBe('my-ref');

    const second = store.putEntrypoint('zones', 'z', 'http_request_firewall_custom', {
      rules: [
        { id: a!.id, action: 'block', expression: 'a' },
        { id: b!.id, action: 'log', expression: 'b', ref: 'my-ref' },
      ],
    });
    expect(second.id).toBe(first.id);
    expect(second.version).toBe('2');
    expect(second.rules.map((r) => [r.id, r.version])).toEqual([
      [a!.id, '1'],
      [b!.id, '2'],
    ]);

    const third = store.putEntrypoint('zones', 'z', 'http_request_firewall_custom', { rules: [] });
    expect(third.rules).toEqual([]);
    expect(third.version).toBe('3');
    expect(store.getEntrypoint('zones', 'z', 'http_request_transform')).toBeUndefined();
  });

  it('device lists are per account, profile and list; PUT replaces', () => {
    const store = new EmulatorStore();
    store.putDeviceList('a', undefined, 'include', [{ address: '10.0.0.0/8' }, { address: '10.1.0.0/16' }]);
    store.putDeviceList('a', undefined, 'include', [{ address: '10.0.0.0/8' }]);
    store.putDeviceList('a', 'p1', 'include', [{ address: '172.16.0.0/12' }]);
    expect(store.getDeviceList('a', undefined, 'include')).toEqual([{ address: '10.0.0.0/8' }]);
    expect(store.getDeviceList('a', 'p1', 'include')).toEqual([{ address: '172.16.0.0/12' }]);
    // Never written: the default profile's exclude list is Cloudflare's default one, a custom profile's is empty.
    expect(store.getDeviceList('a', undefined, 'exclude')).toEqual(DEFAULT_DEVICE_LISTS.exclude);
    expect(store.getDeviceList('a', 'p1', 'exclude')).toEqual([]);
  });

  it('seeds zones with their accounts and lists them in name order', () => {
    const store = new EmulatorStore();
    store.seed({
      accounts: [{ id: 'a', name: 'A' }],
      zones: [
        { name: 'b.example', account_id: 'a' },
        { name: 'a.example', account_id: 'x' },
      ],
    });
    expect(store.zoneList().map((z) => [z.name, z.account.id])).toEqual([
      ['a.example', 'x'],
      ['b.example', 'a'],
    ]);
    expect(store.accounts.has('x')).toBe(true);
  });
});

describe('fault injector', () => {
  it('matches by method and path, N times or always', () => {
    const faults = new FaultInjector();
    faults.add({ method: 'PUT', path: '/entrypoint$', status: 429, retryAfter: 2, times: 2 });
    faults.add({ path: '^/zones', latencyMs: 50 });
    expect(faults.apply('GET', '/zones/z/rulesets/phases/p/entrypoint')).toEqual({ latencyMs: 50 });
    const hit = faults.apply('PUT', '/zones/z/rulesets/phases/p/entrypoint');
    expect(hit?.error).toEqual({ status: 429, headers: { 'retry-after': '2' } });
    faults.apply('PUT', '/zones/z/rulesets/phases/p/entrypoint');
    expect(faults.apply('PUT', '/zones/z/rulesets/phases/p/entrypoint')?.error).toBeUndefined();
    expect(faults.apply('GET', '/user/tokens/verify')).toBeUndefined();
    expect(faults.list().map((f) => f.hits)).toEqual([2, 2]);
  });

  it('rejects an invalid path pattern when added', () => {
    expect(() => new FaultInjector().add({ path: '(' })).toThrow();
  });
});

describe('router', () => {
  const router = new Router([
    { method: 'GET', pattern: '/zones/:zone_id', handler: () => ({ result: null }) },
    {
      method: 'GET',
      pattern: '/accounts/:account_id/devices/policy/:policy_id/include',
      handler: () => ({ result: null }),
    },
  ]);

  it('extracts params', () => {
    expect(router.match('GET', '/zones/abc').params).toEqual({ zone_id: 'abc' });
    expect(router.match('GET', '/accounts/a/devices/policy/p/include').params).toEqual({
      account_id: 'a',
      policy_id: 'p',
    });
  });

  it('unknown path → 404/7000, known path with another method → 405', () => {
    expect(() => router.match('GET', '/nope')).toThrow(expect.objectContaining({ status: 404 }));
    expect(() => router.match('DELETE', '/zones/abc')).toThrow(expect.objectContaining({ status: 405 }));
  });
});

describe('CLI parsing', () => {
  it('reads tokens as JSON or one per line', () => {
    expect(parseTokensFile('["a", {"token": "b", "accounts": ["x"]}]')).toEqual([
      { token: 'a' },
      { token: 'b', accounts: ['x'] },
    ]);
    expect(parseTokensFile('{"tokens": ["c"]}')).toEqual([{ token: 'c' }]);
    expect(parseTokensFile('# comment\nd\n\n e \n')).toEqual([{ token: 'd' }, { token: 'e' }]);
  });

  it('reads a rate limit as requests/seconds', () => {
    expect(parseRateLimit('1200/300')).toEqual({ requests: 1200, windowSeconds: 300 });
    expect(() => parseRateLimit('0/10')).toThrow();
    expect(() => parseRateLimit('fast')).toThrow();
  });
});
