/** Settings targets (zone settings), decided purely: winner per setting, remembered holdings, release and restore. */
import { describe, expect, it } from 'vitest';
import { desiredSettings, type RegisteredSource } from '../../src/domain/cloudflare/aggregate.js';
import { cloudflareDomainRules, zoneSettingsOf } from '../../src/domain/cloudflare/kinds/cloudflare-domain.js';
import { gatewaySettingsOf } from '../../src/domain/cloudflare/kinds/gateway-configuration.js';
import { planSettings, type SettingItem } from '../../src/domain/cloudflare/settings.js';

const account = '0123456789abcdef0123456789abcdef';
const zoneId = 'fedcba9876543210fedcba9876543210';
const target = { resourceType: 'CloudflareDomain' as const, accountId: account, zoneId };

function domain(name: string, spec: Record<string, unknown>, createdAt = '2026-01-01T00:00:00Z'): RegisteredSource {
  const full = { domain: 'example.com', ...spec };
  return {
    ref: { kind: 'CloudflareDomain', name },
    priority: cloudflareDomainRules.priority(full as never),
    createdAt,
    generation: 1,
    uid: `uid-${name}`,
    config: cloudflareDomainRules.contribution(full as never, target, { name }),
  };
}

const live = (values: Record<string, unknown>): SettingItem[] =>
  Object.entries(values).map(([id, value]) => ({ id, value }));

describe('CloudflareDomain → zone settings', () => {
  it('writes each field under its Cloudflare name; unset fields are not managed', () => {
    expect(
      zoneSettingsOf({
        domain: 'example.com',
        ssl: {
          mode: 'full_strict',
          minTLSVersion: '1.2',
          alwaysUseHttps: true,
          authenticatedOriginPull: { enabled: true },
        },
        cache: { browserTTL: 3600 },
        security: { level: 'high', challengePassage: 900 },
        performance: { zeroRTT: false, minify: { css: true } },
      } as never),
    ).toEqual([
      { id: 'ssl', value: 'strict' },
      { id: 'min_tls_version', value: '1.2' },
      { id: 'always_use_https', value: 'on' },
      // The original wrote this one to origin_error_page_pass_thru.
      { id: 'tls_client_auth', value: 'on' },
      { id: 'browser_cache_ttl', value: 3600 },
      { id: 'security_level', value: 'high' },
      { id: 'challenge_ttl', value: 900 },
      { id: '0rtt', value: 'off' },
      { id: 'minify', value: { css: 'on', html: 'off', js: 'off' } },
    ]);
    expect(zoneSettingsOf({ domain: 'example.com' } as never)).toEqual([]);
  });

  it('one target per zone; the zone is spec.domain; a bad domain is named', () => {
    expect(
      cloudflareDomainRules.targets({ domain: 'example.com' } as never, { accountId: account, zoneId }, { name: 'd' }),
    ).toEqual([target]);
    expect(cloudflareDomainRules.zone({ domain: 'example.com' } as never)).toBe('example.com');
    expect(cloudflareDomainRules.validate({ domain: 'not a domain' } as never, { name: 'd' })).toEqual([
      'spec.domain: "not a domain" is not a domain name',
    ]);
  });
});

describe('GatewayConfiguration → gateway settings', () => {
  it("top-level keys under Cloudflare's names, nested fields too; unset keys absent", () => {
    expect(
      gatewaySettingsOf({
        settings: {
          tlsDecrypt: { enabled: true },
          antiVirus: {
            enabled: true,
            notificationSettings: { enabled: true, message: 'Blocked', supportUrl: 'https://it' },
          },
          blockPage: { enabled: true, footerText: 'IT', suppressFooter: false },
          nonIdentityBrowserIsolation: { enabled: true },
        },
      } as never),
    ).toEqual([
      { id: 'tls_decrypt', value: { enabled: true } },
      {
        id: 'antivirus',
        value: { enabled: true, notification_settings: { enabled: true, msg: 'Blocked', support_url: 'https://it' } },
      },
      { id: 'block_page', value: { enabled: true, footer_text: 'IT', suppress_footer: false } },
      { id: 'browser_isolation', value: { non_identity_enabled: true } },
    ]);
    expect(gatewaySettingsOf({ settings: {} } as never)).toEqual([]);
  });
});

describe('planSettings', () => {
  const strict = domain('security', { priority: 10, ssl: { minTLSVersion: '1.3' }, security: { level: 'high' } });
  const relaxed = domain('web', { priority: 50, ssl: { minTLSVersion: '1.0', alwaysUseHttps: true } });

  it('per setting the lower priority wins; the loser is told who holds it; previous values remembered', () => {
    const p = planSettings(
      live({ min_tls_version: '1.0', security_level: 'medium', always_use_https: 'off', brotli: 'on' }),
      desiredSettings([relaxed, strict]),
      [],
    );
    expect(p.plan.items).toEqual([
      { id: 'min_tls_version', value: '1.3' },
      { id: 'security_level', value: 'high' },
      { id: 'always_use_https', value: 'on' },
    ]);
    expect(p.plan.conflicts).toEqual([
      { owner: 'CloudflareDomain/web', key: 'setting min_tls_version', heldBy: 'CloudflareDomain/security' },
    ]);
    expect(p.held).toEqual([
      { setting: 'min_tls_version', previous: '"1.0"', heldBy: 'CloudflareDomain/security' },
      { setting: 'security_level', previous: '"medium"', heldBy: 'CloudflareDomain/security' },
      { setting: 'always_use_https', previous: '"off"', heldBy: 'CloudflareDomain/web' },
    ]);
    expect(p.takesNew).toBe(true);
  });

  it('nothing to write when Cloudflare already has the winners; drift is a difference', () => {
    const first = planSettings(
      live({ min_tls_version: '1.0', security_level: 'medium' }),
      desiredSettings([strict]),
      [],
    );
    const now = live({ min_tls_version: '1.3', security_level: 'high' });
    const again = planSettings(now, desiredSettings([strict]), first.held);
    expect(again.plan.write).toBe(false);
    expect(again.takesNew).toBe(false);
    const edited = planSettings(
      live({ min_tls_version: '1.1', security_level: 'high' }),
      desiredSettings([strict]),
      first.held,
    );
    expect(edited.plan.items).toEqual([{ id: 'min_tls_version', value: '1.3' }]);
    expect(edited.plan.differences).toEqual(['setting min_tls_version: "1.1" in Cloudflare, "1.3" wanted']);
  });

  it('deleting the winner hands the setting to the next source; the first previous value is kept', () => {
    const both = planSettings(live({ min_tls_version: '1.0' }), desiredSettings([relaxed, strict]), []);
    const after = planSettings(
      live({ min_tls_version: '1.3', always_use_https: 'on' }),
      desiredSettings([relaxed]),
      both.held,
    );
    expect(after.plan.items).toEqual([{ id: 'min_tls_version', value: '1.0' }]);
    expect(after.held.find((h) => h.setting === 'min_tls_version')).toEqual({
      setting: 'min_tls_version',
      previous: '"1.0"',
      heldBy: 'CloudflareDomain/web',
    });
  });

  it('a released setting stays as it is, or goes back to its previous value when its holder asked', () => {
    const keep = domain('keep', { ssl: { minTLSVersion: '1.2' } });
    const restore = domain('restore', { ssl: { alwaysUseHttps: true }, restoreOnDelete: true });
    const taken = planSettings(
      live({ min_tls_version: '1.0', always_use_https: 'off' }),
      desiredSettings([keep, restore]),
      [],
    );
    const released = planSettings(live({ min_tls_version: '1.2', always_use_https: 'on' }), [], taken.held);
    expect(released.plan.items).toEqual([{ id: 'always_use_https', value: 'off' }]);
    expect(released.plan.differences).toEqual([
      'setting always_use_https: released by CloudflareDomain/restore, restored to "off"',
    ]);
    expect(released.held).toEqual([]);
  });

  it('a sync that takes one setting and releases another records both before writing (D22)', () => {
    const before = domain('swap', { ssl: { alwaysUseHttps: true }, restoreOnDelete: true });
    const after = domain('swap', { ssl: { minTLSVersion: '1.3' }, restoreOnDelete: true });
    const taken = planSettings(
      live({ min_tls_version: '1.0', always_use_https: 'off' }),
      desiredSettings([before]),
      [],
    );
    const swap = planSettings(
      live({ min_tls_version: '1.0', always_use_https: 'on' }),
      desiredSettings([after]),
      taken.held,
    );
    expect(swap.takesNew).toBe(true);
    expect(swap.plan.items).toEqual([
      { id: 'min_tls_version', value: '1.3' },
      { id: 'always_use_https', value: 'off' },
    ]);
    expect(swap.held.map((h) => h.setting)).toEqual(['min_tls_version']);
    // Recorded before the write: a crash before the restore still knows what to restore.
    expect(swap.heldWhileWriting).toEqual([
      { setting: 'min_tls_version', previous: '"1.0"', heldBy: 'CloudflareDomain/swap', restoreOnDelete: true },
      { setting: 'always_use_https', previous: '"off"', heldBy: 'CloudflareDomain/swap', restoreOnDelete: true },
    ]);
  });

  it("a frozen (invalid) source's settings are left as they are and still held", () => {
    const taken = planSettings(live({ min_tls_version: '1.0' }), desiredSettings([strict]), []);
    const p = planSettings(
      live({ min_tls_version: '1.3' }),
      desiredSettings([relaxed]),
      taken.held,
      new Set(['CloudflareDomain/security']),
    );
    expect(p.plan.items).toEqual([{ id: 'always_use_https', value: 'on' }]);
    expect(p.plan.conflicts[0]).toEqual({
      owner: 'CloudflareDomain/web',
      key: 'setting min_tls_version',
      heldBy: 'CloudflareDomain/security (invalid spec, left as it is)',
    });
    expect(p.held.map((h) => h.setting)).toContain('min_tls_version');
  });
});
