/**
 * API token permissions, through the real SDK: a token that may read a zone and its rulesets but
 * not edit them gets Cloudflare's 403 / 10000 "Authentication error" on the write, and only there.
 */
import Cloudflare from 'cloudflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCloudflareEmulator, type RunningEmulator } from '../emulators/cloudflare/index.js';
import { requiredPermission } from '../emulators/cloudflare/permissions.js';

const zoneId = 'z'.repeat(32);
const account = 'a'.repeat(32);
const phase = 'http_request_firewall_custom';
let emulator: RunningEmulator;
const client = (apiToken: string) => new Cloudflare({ apiToken, baseURL: emulator.baseURL, maxRetries: 0 });

beforeAll(async () => {
  emulator = await startCloudflareEmulator({
    tokens: [
      { token: 'all' },
      { token: 'rules-reader', permissions: ['zone:read', 'rulesets:read'] },
      { token: 'dns-editor', permissions: ['zone:read', 'dns:edit'] },
    ],
    seed: { zones: [{ id: zoneId, name: 'a.example', account_id: account }] },
  });
});
afterAll(() => emulator?.close());

describe('token permissions', () => {
  const rules = [{ action: 'block', expression: 'ip.src eq 192.0.2.1' }] as never;

  it('read of zone and rulesets passes; the ruleset write answers 403 / 10000 and writes nothing', async () => {
    await client('all').rulesets.phases.update(phase, { zone_id: zoneId, rules });
    const reader = client('rules-reader');
    expect((await reader.zones.get({ zone_id: zoneId })).id).toBe(zoneId);
    expect((await reader.rulesets.phases.get(phase, { zone_id: zoneId })).rules).toHaveLength(1);
    await expect(reader.rulesets.phases.update(phase, { zone_id: zoneId, rules: [] })).rejects.toMatchObject({
      status: 403,
      errors: [{ code: 10000, message: 'Authentication error' }],
    });
    expect((await reader.rulesets.phases.get(phase, { zone_id: zoneId })).rules).toHaveLength(1);
  });

  it('edit includes read; another group is refused (a DNS editor reads no rulesets)', async () => {
    const dns = client('dns-editor');
    await dns.dns.records.create({ zone_id: zoneId, type: 'A', name: 'x', content: '192.0.2.1', ttl: 1 });
    expect((await dns.dns.records.list({ zone_id: zoneId })).result).toHaveLength(1);
    await expect(dns.rulesets.phases.get(phase, { zone_id: zoneId })).rejects.toMatchObject({ status: 403 });
  });

  it('maps each served path to its permission group', () => {
    expect(requiredPermission('GET', '/zones')).toBe('zone:read');
    expect(requiredPermission('PATCH', `/zones/${zoneId}/settings/ssl`)).toBe('zone_settings:edit');
    expect(requiredPermission('PUT', `/accounts/${account}/rulesets/phases/${phase}/entrypoint`)).toBe('rulesets:edit');
    expect(requiredPermission('PUT', `/accounts/${account}/cfd_tunnel/t/configurations`)).toBe(
      'cloudflare_tunnel:edit',
    );
    expect(requiredPermission('POST', `/accounts/${account}/teamnet/virtual_networks`)).toBe('cloudflare_tunnel:edit');
    expect(requiredPermission('PUT', `/accounts/${account}/devices/policy/include`)).toBe('zero_trust:edit');
    expect(requiredPermission('GET', `/zones/${zoneId}/access/groups`)).toBe('access:read');
    expect(requiredPermission('GET', '/user/tokens/verify')).toBeUndefined();
  });
});
