import { describe, expect, it } from 'vitest';
import { ZONE_SETTINGS } from '../emulators/cloudflare/routes/settings.js';
import { emulatorUnit, errorOf } from '../support/emulator-unit.js';

const emu = emulatorUnit({
  accounts: [{ id: 'acc' }],
  zones: [{ id: 'z', name: 'example.com', account_id: 'acc' }],
});

function call(method: string, path: string, body?: unknown): Record<string, unknown> {
  return emu.call(method, path, body);
}

describe('zone settings', () => {
  it('every required setting answers its default, untouched (modified_on null)', () => {
    const required = [
      'ssl',
      'min_tls_version',
      'always_use_https',
      'automatic_https_rewrites',
      'tls_1_3',
      'cache_level',
      'browser_cache_ttl',
      'security_level',
      'brotli',
      'development_mode',
      'opportunistic_encryption',
      'http3',
      '0rtt',
      'ipv6',
      'websockets',
      'always_online',
      'email_obfuscation',
      'hotlink_protection',
      'rocket_loader',
      'origin_error_page_pass_thru',
      'opportunistic_onion',
    ];
    for (const id of required) {
      expect(call('GET', `/zones/z/settings/${id}`)).toMatchObject({
        id,
        value: ZONE_SETTINGS[id]!.default,
        // Enterprise only: a Free zone reads it, and cannot change it
        editable: id !== 'origin_error_page_pass_thru',
        modified_on: null,
      });
    }
    expect(call('GET', '/zones/z/settings/ssl').value).toBe('full');
    expect(call('GET', '/zones/z/settings/min_tls_version').value).toBe('1.0');
    expect(call('GET', '/zones/z/settings/browser_cache_ttl').value).toBe(14400);
  });

  it('PATCH validates and stores the value, per zone', () => {
    emu.store.addZone({ id: 'z2', name: 'other.com', account_id: 'acc' });
    const out = call('PATCH', '/zones/z/settings/min_tls_version', { value: '1.2' });
    expect(out).toMatchObject({ id: 'min_tls_version', value: '1.2', editable: true });
    expect(typeof out.modified_on).toBe('string');
    expect(call('GET', '/zones/z/settings/min_tls_version').value).toBe('1.2');
    expect(call('GET', '/zones/z2/settings/min_tls_version').value).toBe('1.0');
    expect(call('PATCH', '/zones/z/settings/browser_cache_ttl', { value: 0 }).value).toBe(0);
    expect(call('PATCH', '/zones/z/settings/development_mode', { value: 'on' })).toMatchObject({
      value: 'on',
      time_remaining: 10800,
    });
    expect(emu.store.zones.get('z')?.development_mode).toBe(10800);
  });

  it('an invalid value is 400/1007, an unknown setting 404/1006, a missing value 400/9207', () => {
    const bad: Array<[string, unknown]> = [
      ['ssl', 'full_strict'],
      ['min_tls_version', 1.2],
      ['always_use_https', true],
      ['browser_cache_ttl', 42],
      ['security_level', 'extreme'],
      ['tls_1_3', 'yes'],
      ['cache_level', 'none'],
    ];
    for (const [id, value] of bad) {
      expect(errorOf(() => call('PATCH', `/zones/z/settings/${id}`, { value }))).toEqual({ status: 400, code: 1007 });
    }
    expect(call('GET', '/zones/z/settings/ssl').modified_on).toBeNull();
    expect(errorOf(() => call('GET', '/zones/z/settings/no_such_thing'))).toEqual({ status: 404, code: 1006 });
    expect(errorOf(() => call('PATCH', '/zones/z/settings/toString', { value: 'on' }))).toEqual({
      status: 404,
      code: 1006,
    });
    expect(errorOf(() => call('PATCH', '/zones/z/settings/ssl', {})).code).toBe(9207);
    expect(errorOf(() => call('GET', '/zones/nope/settings/ssl')).code).toBe(7003);
  });
});

describe('gateway configuration', () => {
  it('GET starts empty; PUT replaces settings; PATCH merges top-level keys', () => {
    const first = call('GET', '/accounts/acc/gateway/configuration');
    expect(first).toMatchObject({ settings: {} });
    expect(typeof first.created_at).toBe('string');
    call('PUT', '/accounts/acc/gateway/configuration', {
      settings: { activity_log: { enabled: true }, tls_decrypt: { enabled: false } },
    });
    const patched = call('PATCH', '/accounts/acc/gateway/configuration', {
      settings: { tls_decrypt: { enabled: true }, antivirus: { enabled_download_phase: true } },
    });
    expect(patched.settings).toEqual({
      activity_log: { enabled: true },
      tls_decrypt: { enabled: true },
      antivirus: { enabled_download_phase: true },
    });
    const put = call('PUT', '/accounts/acc/gateway/configuration', { settings: { block_page: { enabled: true } } });
    expect(put.settings).toEqual({ block_page: { enabled: true } });
    expect(put.created_at).toBe(first.created_at);
    expect(errorOf(() => call('PUT', '/accounts/acc/gateway/configuration', { settings: [] })).code).toBe(9207);
    expect(errorOf(() => call('GET', '/accounts/nope/gateway/configuration')).code).toBe(7003);
  });
});
