/**
 * A write refused for a missing token permission is reported so the user knows what to grant:
 * Cloudflare answers it as it answers a bad token (403, 10000 "Authentication error").
 */
import Cloudflare from 'cloudflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLOUDFLARE_FAILURE_TYPES, cloudflareFailure } from '../../src/activities/cloudflare/errors.js';
import { permissionFor } from '../../src/domain/cloudflare/permissions.js';
import { startCloudflareEmulator, type RunningEmulator } from '../emulators/cloudflare/index.js';

const zoneId = 'z'.repeat(32);
let emulator: RunningEmulator;

beforeAll(async () => {
  emulator = await startCloudflareEmulator({
    tokens: [{ token: 'rules-reader', permissions: ['zone:read', 'rulesets:read'] }],
    seed: { zones: [{ id: zoneId, name: 'a.example', account_id: 'a'.repeat(32) }] },
  });
});
afterAll(() => emulator?.close());

describe('cloudflareFailure of a write the token may not make', () => {
  it("is a non-retryable CloudflareAuth naming Cloudflare's answer and the missing permission", async () => {
    const cf = new Cloudflare({ apiToken: 'rules-reader', baseURL: emulator.baseURL, maxRetries: 0 });
    const err = await cf.rulesets.phases
      .update('http_request_firewall_custom', { zone_id: zoneId, rules: [] })
      .catch((e: unknown) => e);
    const failure = cloudflareFailure(err, 'write ruleset');
    expect(failure.type).toBe(CLOUDFLARE_FAILURE_TYPES.auth);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toContain('Cloudflare answered 403: [10000] Authentication error');
    expect(failure.message).toContain('lacks the permission this call needs');
    expect(failure.message).not.toContain('rules-reader');
  });

  it("names the permission the call needs, by Cloudflare's name for it, when the sync knows it", async () => {
    const cf = new Cloudflare({ apiToken: 'rules-reader', baseURL: emulator.baseURL, maxRetries: 0 });
    const err = await cf.rulesets.phases
      .update('http_request_firewall_custom', { zone_id: zoneId, rules: [] })
      .catch((e: unknown) => e);
    const target = {
      resourceType: 'ZoneRuleset',
      accountId: 'a'.repeat(32),
      zoneId,
      phase: 'http_request_firewall_custom',
    } as const;
    const failure = cloudflareFailure(err, 'write ruleset', permissionFor(target, 'Edit'));
    expect(failure.message).toContain('lacks the permission this call needs: Zone WAF Edit (zone-level)');
  });
});

describe('permissionFor', () => {
  it('maps each target to its permission group', () => {
    const account = 'a'.repeat(32);
    expect(
      permissionFor(
        { resourceType: 'DNSRecord', accountId: account, zoneId, zone: 'a.example', name: 'x.a.example', type: 'A' },
        'Edit',
      ),
    ).toBe('DNS Edit (zone-level)');
    expect(
      permissionFor(
        { resourceType: 'ZoneRuleset', accountId: account, zoneId, phase: 'http_request_dynamic_redirect' },
        'Read',
      ),
    ).toBe('Dynamic URL Redirects Read (zone-level)');
    expect(
      permissionFor(
        { resourceType: 'ZoneRuleset', accountId: account, zoneId, phase: 'http_response_headers_transform' },
        'Edit',
      ),
    ).toBe('Transform Rules Edit (zone-level)');
    expect(permissionFor({ resourceType: 'CloudflareDomain', accountId: account, zoneId }, 'Edit')).toBe(
      'Zone Settings Edit (zone-level)',
    );
    expect(permissionFor({ resourceType: 'TunnelConfiguration', accountId: account, tunnelId: 't' }, 'Edit')).toBe(
      'Cloudflare Tunnel Edit (account-level)',
    );
    expect(permissionFor({ resourceType: 'DeviceSettingsPolicy', accountId: account, list: 'include' }, 'Edit')).toBe(
      'Zero Trust Edit (account-level)',
    );
    expect(permissionFor({ resourceType: 'AccessGroup', accountId: account, name: 'g' }, 'Edit')).toBe(
      'Access: Organizations, Identity Providers, and Groups Edit (account-level)',
    );
    expect(
      permissionFor({ resourceType: 'ZoneRuleset', accountId: account, zoneId, phase: 'http_unknown' }, 'Edit'),
    ).toBeUndefined();
  });
});
