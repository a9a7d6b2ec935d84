/**
 * What Cloudflare answers differently from what was written must compare equal, or every
 * observation rewrites it (issue 23, D16): identity providers come back with server-filled config
 * fields, split-tunnel addresses in CIDR form. The live items here are what the emulator answers.
 */
import { describe, expect, it } from 'vitest';
import {
  identityProviderCodec,
  splitTunnelCodec,
  type IdentityProviderItem,
  type SplitTunnelEntry,
} from '../../src/domain/cloudflare/items.js';
import { deviceSettingsPolicyRules } from '../../src/domain/cloudflare/kinds/device-settings-policy.js';
import { canonical, planWrite } from '../../src/domain/cloudflare/merge.js';
import { marker } from '../../src/domain/cloudflare/markers.js';
import { redactIdp } from '../emulators/cloudflare/routes/access.js';
import { cidrOf } from '../emulators/cloudflare/routes/devices.js';

const opts = { clusterId: 'default', adoptLegacy: false } as const;

const canonicalOf = (p: IdentityProviderItem) => canonical(identityProviderCodec.comparable(p));

describe('identity providers: server-filled config fields are not a difference', () => {
  for (const [type, config] of [
    ['azureAD', { client_id: 'id', directory_id: 'dir' }],
    ['oidc', { client_id: 'id', auth_url: 'https://i/a', token_url: 'https://i/t', certs_url: 'https://i/c' }],
    ['onetimepin', {}],
  ] as const) {
    it(`${type}: the provider read back as Cloudflare answers it compares equal to ours (no write)`, () => {
      const want: IdentityProviderItem = { name: 'idp', type, config: { ...config }, marker: 'm' };
      const answered = redactIdp({ id: 'x', name: 'idp', type, config: { ...config }, scim_config: {} });
      const live: IdentityProviderItem = {
        ...want,
        id: 'x',
        config: answered.config,
        scim_config: answered.scim_config,
      };
      expect(live.config).not.toEqual(want.config); // Cloudflare did fill something in
      // The per-object sync writes when the projections differ.
      expect(canonicalOf(live)).toEqual(canonicalOf(want));
    });
  }

  it('a field the user sets to something else than the default is still a difference', () => {
    const want: IdentityProviderItem = { name: 'idp', type: 'azureAD', config: { support_groups: true }, marker: 'm' };
    const answered = redactIdp({ id: 'x', name: 'idp', type: 'azureAD', config: {}, scim_config: {} });
    expect(canonicalOf(want)).not.toEqual(canonicalOf({ ...want, config: answered.config }));
  });
});

describe('split tunnel addresses: a bare IP is written and compared in CIDR form', () => {
  const spec = { splitTunnelMode: 'include' as const, splitTunnelInclude: [{ address: '192.0.2.7' }], cloudflare: {} };
  const target = { resourceType: 'DeviceSettingsPolicy', accountId: 'a', list: 'include' } as const;

  it('the entry written carries the one-host block', () => {
    const { entries } = deviceSettingsPolicyRules.contribution(spec as never, target, { name: 'p' } as never) as {
      entries: { address?: string }[];
    };
    expect(entries[0]!.address).toBe('192.0.2.7/32');
  });

  it('an entry Cloudflare answers in CIDR form equals the bare IP asked for: no write', () => {
    const ref = { kind: 'DeviceSettingsPolicy', name: 'p' };
    const description = `office ${marker('default', ref)}`;
    const want: SplitTunnelEntry = { address: '2001:db8::1', description };
    const live: SplitTunnelEntry = { address: cidrOf('2001:db8::1')!, description };
    expect(live.address).toBe('2001:db8::1/128');
    const plan = planWrite([live], [{ owner: ref, item: want }], splitTunnelCodec, opts);
    expect(plan.differences).toEqual([]);
    expect(plan.write).toBe(false);
    expect(splitTunnelCodec.keyOf!(want)).toBe(splitTunnelCodec.keyOf!(live));
  });
});
