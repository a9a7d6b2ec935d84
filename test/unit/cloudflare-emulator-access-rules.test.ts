/**
 * Access group rules as Cloudflare's schema has them, through the real SDK (issue 33, E8): one
 * selector per rule, spelled as Cloudflare spells it (`azureAD`, `github-organization`), with its
 * fields; an `ip` stored in CIDR form. And what the product writes for an AccessGroup comes back
 * equal under its own comparison (no drift, no rewrite on every observation).
 */
import { describe, expect, it } from 'vitest';
import type { AccessGroupSpec } from '../../src/api/cloudflare-zerotrust.js';
import { accessGroupRules } from '../../src/domain/cloudflare/kinds/access-group.js';
import { accessGroupCodec, type AccessGroupItem } from '../../src/domain/cloudflare/items.js';
import { emulatorThroughSdk } from '../support/emulator-unit.js';

const account = 'a'.repeat(32);
const sdk = emulatorThroughSdk(account);

let n = 0;
const create = (include: unknown[], exclude: unknown[] = []) =>
  sdk.cf.zeroTrust.access.groups.create({ account_id: account, name: `g${n++}`, include, exclude } as never);

describe('Access rule schema (E8)', () => {
  it('stores an ip in CIDR form: a bare IPv4 as /32, IPv6 as /128; a block as given', async () => {
    const g = await create(
      [{ ip: { ip: '192.0.2.7' } }],
      [{ ip: { ip: '2001:db8::1' } }, { ip: { ip: '10.0.0.0/8' } }],
    );
    expect(g.include).toEqual([{ ip: { ip: '192.0.2.7/32' } }]);
    expect(g.exclude).toEqual([{ ip: { ip: '2001:db8::1/128' } }, { ip: { ip: '10.0.0.0/8' } }]);
    expect((await sdk.cf.zeroTrust.access.groups.get(g.id!, { account_id: account })).include).toEqual(g.include);
  });

  it('refuses a selector Cloudflare does not have (github_organization, azure_ad), two selectors in one rule, a missing field, a non-address', async () => {
    for (const rule of [
      { github_organization: { name: 'acme', identity_provider_id: 'idp' } },
      { azure_ad: { id: 'x', identity_provider_id: 'idp' } },
      { email: { email: 'a@example.com' }, everyone: {} },
      { email_domain: {} },
      { ip: { ip: 'not-an-ip' } },
    ])
      await expect(create([rule])).rejects.toMatchObject({ status: 400, errors: [{ code: 12130 }] });
    expect((await sdk.cf.zeroTrust.access.groups.list({ account_id: account })).result).toHaveLength(1);
  });

  it('takes the selectors as Cloudflare spells them', async () => {
    const rules = [
      { 'github-organization': { name: 'acme', identity_provider_id: 'idp', team: 'ops' } },
      { azureAD: { id: 'grp', identity_provider_id: 'idp' } },
      { geo: { country_code: 'DE' } },
      { everyone: {} },
    ];
    expect((await create(rules)).include).toEqual(rules);
  });
});

describe("the product's AccessGroup rules", () => {
  it('come back from Cloudflare equal under the product’s comparison (bare IPs, GitHub teams, Azure groups)', async () => {
    const spec: AccessGroupSpec = {
      name: 'product',
      include: [
        { github: { name: 'acme', identityProviderId: 'idp', teams: ['ops'] } },
        { azure: { id: 'grp', identityProviderId: 'idp' } },
      ],
      exclude: [{ ipRanges: { ip: ['198.51.100.7', '2001:db8::1', '203.0.113.0/24'] } }],
    } as AccessGroupSpec;
    const contribution = accessGroupRules.contribution(
      spec,
      { resourceType: 'AccessGroup', accountId: account, name: 'product' },
      { name: 'product' },
    );
    const [entry] = ('entries' in contribution ? contribution.entries : []) as AccessGroupItem[];
    const written = await sdk.cf.zeroTrust.access.groups.create({ account_id: account, ...entry } as never);
    const live: AccessGroupItem = {
      name: written.name!,
      include: written.include as never,
      exclude: written.exclude as never,
      require: written.require as never,
    };
    expect(accessGroupCodec.comparable(live)).toEqual(accessGroupCodec.comparable({ ...entry! }));
  });
});
