/** DeviceSettingsPolicy descriptions against Cloudflare's 100 characters, marker included (issue 23, D9). */
import { describe, expect, it } from 'vitest';
import { deviceSettingsPolicyRules } from '../../src/domain/cloudflare/kinds/device-settings-policy.js';

const spec = (description: string) => ({
  splitTunnelMode: 'include' as const,
  splitTunnelInclude: [{ address: '10.0.0.0/8', description }],
  fallbackDomains: [{ suffix: 'corp.example', description }],
  cloudflare: {},
});

describe('DeviceSettingsPolicy descriptions and the ownership marker', () => {
  it("refuses, before any call, a description that with the marker exceeds Cloudflare's 100 characters", () => {
    const name = 'corp-vpn-proxy-eu-west-1-production';
    // ' [managed-by:default:DeviceSettingsPolicy/<35>]' is 1 + 77 characters: 22 are left.
    expect(deviceSettingsPolicyRules.validate(spec('d'.repeat(22)), { name }, { clusterId: 'default' })).toEqual([]);
    const problems = deviceSettingsPolicyRules.validate(spec('d'.repeat(23)), { name }, { clusterId: 'default' });
    expect(problems).toHaveLength(2);
    expect(problems[0]).toContain('spec.splitTunnelInclude[0].description: with the ownership marker it would be 101');
    expect(problems[1]).toContain('spec.fallbackDomains[0].description');
  });

  it('a name long enough that the marker alone exceeds 100 is refused even without a description', () => {
    const problems = deviceSettingsPolicyRules.validate(
      { splitTunnelMode: 'include', splitTunnelInclude: [{ address: '10.0.0.0/8' }], cloudflare: {} },
      { name: 'n'.repeat(59) },
      { clusterId: 'default' },
    );
    expect(problems[0]).toContain('shorten the description or the object');
  });

  it('without the cluster id (the source workflow) the length is left to the sync', () => {
    expect(deviceSettingsPolicyRules.validate(spec('d'.repeat(99)), { name: 'x'.repeat(60) })).toEqual([]);
  });
});
