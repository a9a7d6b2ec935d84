/** The AccessGroup kind, decided purely: rules in Cloudflare's shape, validation, target and ownership by marker. */
import { describe, expect, it } from 'vitest';
import { desiredAccessGroups } from '../../src/domain/cloudflare/aggregate.js';
import { accessGroupCodec, type AccessGroupItem } from '../../src/domain/cloudflare/items.js';
import { accessGroupRules, wireRules } from '../../src/domain/cloudflare/kinds/access-group.js';
import { planWrite } from '../../src/domain/cloudflare/merge.js';
import { targetKey } from '../../src/domain/cloudflare/targets.js';

const account = '0123456789abcdef0123456789abcdef';

describe('AccessGroup rules', () => {
  it("one rule per selector in Cloudflare's shape; a list is one rule per entry", () => {
    expect(wireRules({ emailDomain: { domain: 'example.com' } })).toEqual([
      { email_domain: { domain: 'example.com' } },
    ]);
    expect(wireRules({ ipRanges: { ip: ['10.0.0.0/8', '192.0.2.1'] } })).toEqual([
      { ip: { ip: '10.0.0.0/8' } },
      { ip: { ip: '192.0.2.1' } },
    ]);
    expect(wireRules({ country: { country: ['DE', 'FR'] } })).toEqual([
      { geo: { country_code: 'DE' } },
      { geo: { country_code: 'FR' } },
    ]);
    expect(wireRules({ github: { name: 'acme', identityProviderId: 'idp', teams: ['ops', 'dev'] } })).toEqual([
      { github_organization: { name: 'acme', identity_provider_id: 'idp', team: 'ops' } },
      { github_organization: { name: 'acme', identity_provider_id: 'idp', team: 'dev' } },
    ]);
    expect(wireRules({ everyone: true })).toEqual([{ everyone: {} }]);
    expect(wireRules({ serviceToken: { tokenId: 't' } })).toEqual([{ service_token: { token_id: 't' } }]);
  });

  it('names the rule and field of each problem', () => {
    expect(
      accessGroupRules.validate(
        { include: [{}, { ipRanges: { ip: ['not-an-ip'] } }], exclude: [{ country: { country: ['de'] } }] } as never,
        { name: 'g' },
      ),
    ).toEqual([
      'spec.include[0]: set exactly one selector (it sets none)',
      'spec.include[1].ipRanges.ip[0]: "not-an-ip" is not an IP or CIDR',
      'spec.exclude[0].country.country[0]: "de" is not a two-letter country code',
    ]);
    expect(accessGroupRules.validate({ include: [{ everyone: true }] } as never, { name: 'g' })).toEqual([]);
  });

  it('targets (account, group name): spec.name or the object name', () => {
    const [t] = accessGroupRules.targets({ include: [] } as never, { accountId: account }, { name: 'staff' });
    expect(targetKey(t!)).toBe(`AccessGroup/${account}/staff`);
  });

  it('only the group whose ID is remembered carries our marker: one of that name without it is held, never adopted', () => {
    const source = {
      ref: { kind: 'AccessGroup', name: 'staff' },
      priority: 100,
      createdAt: '2026-01-01T00:00:00Z',
      generation: 1,
      uid: 'u',
      config: { entries: [{ name: 'staff', include: [{ everyone: {} }], exclude: [], require: [] }] },
    };
    const desired = desiredAccessGroups([source], 'c1');
    expect(desired[0]!.item.marker).toBe('[managed-by:c1:AccessGroup/staff]');
    const stranger: AccessGroupItem = {
      id: 'g1',
      name: 'staff',
      include: [{ everyone: {} }],
      exclude: [],
      require: [],
    };
    const p = planWrite([stranger], desired, accessGroupCodec, { clusterId: 'c1', adoptLegacy: false });
    expect(p.write).toBe(false);
    expect(p.conflicts[0]?.heldBy).toBe('external');
    const ours = { ...stranger, marker: '[managed-by:c1:AccessGroup/staff]' };
    expect(planWrite([ours], desired, accessGroupCodec, { clusterId: 'c1', adoptLegacy: false }).write).toBe(false);
  });
});
