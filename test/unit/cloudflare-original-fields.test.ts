/**
 * The fields the original's CRDs had that this operator had dropped (review §2), from the
 * migrating user's side: AccessGroup's `emailList`, `ipList`, `okta`, `authMethod`,
 * `authContext`, `loginMethod` selectors are admitted and go to Cloudflare in its rule shapes
 * (the SDK's `AccessRuleParam`); `isDefault` and CloudflareDomain's
 * `certificateSecretRef.{apiKeyKey,apiTokenKey,emailKey}` are admitted, and what cannot be
 * honoured is refused naming the field.
 */
import { describe, expect, it } from 'vitest';
import { AccessGroupKind } from '../../src/api/cloudflare-zerotrust.js';
import { CloudflareDomainKind } from '../../src/api/cloudflare-zones.js';
import { crdOf } from '../../src/api/kind.js';
import { accessGroupRules, wireRules } from '../../src/domain/cloudflare/kinds/access-group.js';
import { cloudflareDomainRules } from '../../src/domain/cloudflare/kinds/cloudflare-domain.js';

type Schema = { properties?: Record<string, Schema>; items?: Schema };
const specSchema = (def: Parameters<typeof crdOf>[0]) =>
  (crdOf(def) as { spec: { versions: Array<{ schema: { openAPIV3Schema: Schema } }> } }).spec.versions[0]!.schema
    .openAPIV3Schema.properties!.spec!;

describe('AccessGroup selectors of the original', () => {
  const rules = [
    { emailList: { id: 'list-1' } },
    { ipList: { id: 'list-2' } },
    { okta: { name: 'admins', identityProviderId: 'idp-1' } },
    { authMethod: { authMethod: 'mfa' } },
    { authContext: { id: 'ctx', acId: 'c1', identityProviderId: 'idp-2' } },
    { loginMethod: { id: 'idp-3' } },
  ];

  it('are in the CRD', () => {
    const rule = specSchema(AccessGroupKind).properties!.include!.items!.properties!;
    for (const r of rules) expect(Object.keys(rule)).toContain(Object.keys(r)[0]);
  });

  it('go to Cloudflare in its rule shapes, each a valid rule on its own', () => {
    expect(rules.flatMap((r) => wireRules(r as never))).toEqual([
      { email_list: { id: 'list-1' } },
      { ip_list: { id: 'list-2' } },
      { okta: { name: 'admins', identity_provider_id: 'idp-1' } },
      { auth_method: { auth_method: 'mfa' } },
      { auth_context: { id: 'ctx', ac_id: 'c1', identity_provider_id: 'idp-2' } },
      { login_method: { id: 'idp-3' } },
    ]);
    const spec = { include: rules, cloudflare: {} };
    expect(accessGroupRules.validate(spec as never, { name: 'g' } as never)).toEqual([]);
  });

  it('isDefault: admitted; true refused naming the field (Cloudflare has no default group any more)', () => {
    expect(Object.keys(specSchema(AccessGroupKind).properties!)).toContain('isDefault');
    const spec = (isDefault: boolean) => ({ include: [{ everyone: true }], isDefault, cloudflare: {} }) as never;
    expect(accessGroupRules.validate(spec(false), { name: 'g' } as never)).toEqual([]);
    expect(accessGroupRules.validate(spec(true), { name: 'g' } as never)).toEqual([
      'spec.isDefault: Cloudflare Access groups have no default group any more (remove it or set false)',
    ]);
  });
});

describe("CloudflareDomain's certificateSecretRef", () => {
  it('has the keys the original had; set, it is refused naming the field (nothing uploads that certificate)', () => {
    const ref =
      specSchema(CloudflareDomainKind).properties!.ssl!.properties!.authenticatedOriginPull!.properties!
        .certificateSecretRef!;
    expect(Object.keys(ref.properties!).sort()).toEqual(['apiKeyKey', 'apiTokenKey', 'emailKey', 'name', 'namespace']);
    const problems = cloudflareDomainRules.validate(
      {
        domain: 'example.com',
        ssl: { authenticatedOriginPull: { enabled: true, certificateSecretRef: { name: 'aop', apiTokenKey: 'x' } } },
      } as never,
      { name: 'example' } as never,
    );
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^spec\.ssl\.authenticatedOriginPull\.certificateSecretRef: /);
  });
});
