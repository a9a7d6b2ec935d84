/** The AccessGroup and AccessIdentityProvider kinds, decided purely: wire shapes, validation, targets, ownership by marker. */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { identityProviderAdapter } from '../../src/activities/cloudflare/targets/identity-providers.js';
import type { TargetContext } from '../../src/activities/cloudflare/targets/index.js';
import { desiredOwnedObjects } from '../../src/domain/cloudflare/aggregate.js';
import {
  accessGroupCodec,
  type AccessGroupItem,
  type IdentityProviderItem,
} from '../../src/domain/cloudflare/items.js';
import { accessGroupRules, wireRules } from '../../src/domain/cloudflare/kinds/access-group.js';
import {
  accessIdentityProviderRules,
  wireConfig,
  withoutInlineSecrets,
} from '../../src/domain/cloudflare/kinds/access-identity-provider.js';
import { planWrite, type DesiredItem } from '../../src/domain/cloudflare/merge.js';
import { targetKey } from '../../src/domain/cloudflare/targets.js';

const account = '0123456789abcdef0123456789abcdef';

describe('AccessGroup rules', () => {
  it("one rule per selector in Cloudflare's shape; a list is one rule per entry", () => {
    expect(wireRules({ emailDomain: { domain: 'example.com' } })).toEqual([
      { email_domain: { domain: 'example.com' } },
    ]);
    expect(wireRules({ ipRanges: { ip: ['10.0.0.0/8', '192.0.2.1'] } })).toEqual([
      { ip: { ip: '10.0.0.0/8' } },
      { ip: { ip: '192.0.2.1/32' } },
    ]);
    expect(wireRules({ country: { country: ['DE', 'FR'] } })).toEqual([
      { geo: { country_code: 'DE' } },
      { geo: { country_code: 'FR' } },
    ]);
    expect(wireRules({ github: { name: 'acme', identityProviderId: 'idp', teams: ['ops', 'dev'] } })).toEqual([
      { 'github-organization': { name: 'acme', identity_provider_id: 'idp', team: 'ops' } },
      { 'github-organization': { name: 'acme', identity_provider_id: 'idp', team: 'dev' } },
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
    const desired = desiredOwnedObjects<AccessGroupItem>([source], 'c1');
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

describe('AccessIdentityProvider rules', () => {
  it('withoutInlineSecrets hides every inline secret value, and validation still names each field', () => {
    const spec = {
      type: 'google' as const,
      config: { clientId: 'id', clientSecret: 'v1', apiToken: 'v2' },
      scimConfig: { enabled: true, secret: 'v3' },
      cloudflare: {},
    };
    const hidden = withoutInlineSecrets(spec);
    const text = JSON.stringify(hidden);
    for (const v of ['v1', 'v2', 'v3']) expect(text).not.toContain(`"${v}"`);
    expect(hidden.config?.clientId).toBe('id');
    expect(hidden.scimConfig?.enabled).toBe(true);
    const problems = accessIdentityProviderRules.validate(hidden, { name: 'idp' }).join('\n');
    for (const f of ['spec.config.clientSecret', 'spec.config.apiToken', 'spec.scimConfig.secret'])
      expect(problems).toContain(`${f}: inline secrets are not accepted`);
    expect(withoutInlineSecrets({ type: 'onetimepin', cloudflare: {} })).toEqual({
      type: 'onetimepin',
      cloudflare: {},
    });
  });

  it("config in Cloudflare's names, never a secret; the Secret only by reference", () => {
    const spec = {
      type: 'oidc',
      config: {
        clientId: 'abc',
        authUrl: 'https://idp/auth',
        tokenUrl: 'https://idp/token',
        certsUrl: 'https://idp/certs',
        pkceEnabled: true,
        headerAttributes: [{ attributeName: 'email', headerName: 'X-Email' }],
      },
      configSecretRef: { name: 's', key: 'k', namespace: 'ops' },
    };
    const [t] = accessIdentityProviderRules.targets(spec as never, { accountId: account }, { name: 'corp' });
    expect(targetKey(t!)).toBe(`AccessIdentityProvider/${account}/corp`);
    expect(accessIdentityProviderRules.validate(spec as never, { name: 'corp' })).toEqual([]);
    expect(accessIdentityProviderRules.contribution(spec as never, t!, { name: 'corp' })).toEqual({
      entries: [
        {
          name: 'corp',
          type: 'oidc',
          config: {
            client_id: 'abc',
            auth_url: 'https://idp/auth',
            token_url: 'https://idp/token',
            certs_url: 'https://idp/certs',
            pkce_enabled: true,
            header_attributes: [{ attribute_name: 'email', header_name: 'X-Email' }],
          },
          secret_ref: { name: 's', key: 'k', namespace: 'ops' },
        },
      ],
    });
    expect(wireConfig({ clientId: 'a', clientSecret: 'never', apiToken: 'never' })).toEqual({ client_id: 'a' });
  });

  it('refuses inline secrets and names what a type needs', () => {
    expect(
      accessIdentityProviderRules.validate(
        { type: 'oidc', config: { clientSecret: 'x' }, scimConfig: { secret: 'y' } } as never,
        { name: 'p' },
      ),
    ).toEqual([
      'spec.config.clientSecret: inline secrets are not accepted (they would be copied into the CloudflareSyncState); put the value in a Secret and name it in spec.configSecretRef',
      'spec.scimConfig.secret: inline secrets are not accepted (they would be copied into the CloudflareSyncState); put the value in a Secret and name it in spec.configSecretRef',
      'spec.config.clientId: a oidc provider needs its client ID',
      'spec.configSecretRef: a oidc provider needs its client secret, from a Secret',
      'spec.config.authUrl: an oidc provider needs it',
      'spec.config.tokenUrl: an oidc provider needs it',
      'spec.config.certsUrl: an oidc provider needs it',
    ]);
    expect(accessIdentityProviderRules.validate({ type: 'onetimepin' } as never, { name: 'p' })).toEqual([]);
  });
});

describe('AccessIdentityProvider client secret digest (issue 23, D25)', () => {
  const secretRef = { namespace: 'ops', name: 'idp', key: 'clientSecret' };
  const want = (): DesiredItem<IdentityProviderItem>[] => [
    {
      owner: { kind: 'AccessIdentityProvider', name: 'gh' },
      item: { name: 'gh', type: 'github', config: { client_id: 'c' }, secret_ref: secretRef },
    },
  ];
  /** What the SyncState would keep for this secret under this key. */
  const stored = async (secret: string, key: string) => {
    const ctx = {
      data: {},
      remember: async () => undefined,
      claims: async () => new Map<string, string>(),
      claim: async () => undefined,
      secret: async () => secret,
      digestKey: async () => Buffer.from(key),
    } satisfies TargetContext;
    const [done] = await identityProviderAdapter.complete!(want(), ctx, []);
    return done!.item.secret_digest!;
  };

  it('is keyed by the worker-held key: not the plain SHA-256 of the secret, another with another key; a changed secret still changes it', async () => {
    const secret = 'a-client-secret-of-moderate-entropy';
    const plain = createHash('sha256').update(secret).digest('hex');
    const digest = await stored(secret, 'key-one');
    expect(digest).toBeTruthy();
    expect(plain).not.toContain(digest.replace(/^[a-z0-9-]+:/, ''));
    expect(digest).not.toBe(plain.slice(0, 16));
    expect(await stored(secret, 'key-two')).not.toBe(digest);
    expect(await stored(secret, 'key-one')).toBe(digest); // stable under one key: no rewrite per sync
    expect(await stored(`${secret}-rotated`, 'key-one')).not.toBe(digest);
  });
});
