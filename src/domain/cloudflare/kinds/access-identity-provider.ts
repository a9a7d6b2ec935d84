/**
 * AccessIdentityProvider (cluster-scoped): one Zero Trust identity provider, named `spec.name`
 * or the object's name; target (account, name), owned by the ID the operator remembers (as
 * AccessGroup). Its client secret comes from the Secret `spec.configSecretRef` names and is read
 * by the activity that writes it: the spec, the SyncState, workflow history and logs carry the
 * reference only. Inline secrets (the original's legacy `config.clientSecret`, `config.apiToken`,
 * `scimConfig.secret`) are refused, since they would be copied into the SyncState.
 */
import {
  AccessIdentityProviderKind,
  type AccessIdentityProviderSpec,
  type IdentityProviderConfig,
} from '../../../api/cloudflare-zerotrust.js';
import type { IdentityProviderItem } from '../items.js';
import type { SourceKindRules, SourceObjectMeta } from './types.js';

export function providerNameOf(spec: AccessIdentityProviderSpec, object: SourceObjectMeta): string {
  return spec.name ?? object.name;
}

/** Types that sign in with an OAuth/OIDC client: they need a client ID and its secret. */
const NO_CLIENT_TYPES = new Set(['onetimepin', 'saml']);

const snake = (k: string) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** The spec's config in Cloudflare's field names, without any secret. */
export function wireConfig(config: IdentityProviderConfig | undefined): Record<string, unknown> {
  const { clientSecret: _s, apiToken: _t, headerAttributes, idpPublicCerts: _d, ...rest } = config ?? {};
  const out: Record<string, unknown> = Object.fromEntries(
    Object.entries(rest)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => [snake(k), v]),
  );
  if (headerAttributes)
    out.header_attributes = headerAttributes.map((h) => ({
      attribute_name: h.attributeName,
      header_name: h.headerName,
      ...(h.required !== undefined ? { required: h.required } : {}),
    }));
  return out;
}

/** What stands for an inline secret's value outside the object (it is refused, never used). */
export const INLINE_SECRET_PLACEHOLDER = '(inline secret: refused, never read)';

/**
 * The spec with every inline secret's value replaced: what may leave the activity that read it
 * (a workflow's history is readable by whoever may use Temporal's UI or CLI). The fields stay
 * present, so validation still names and refuses them.
 */
export function withoutInlineSecrets(spec: AccessIdentityProviderSpec): AccessIdentityProviderSpec {
  const hide = <T extends object, K extends keyof T>(fields: T | undefined, ...keys: K[]): T | undefined => {
    if (!fields || !keys.some((k) => fields[k] !== undefined)) return fields;
    const copy = { ...fields };
    for (const k of keys) if (copy[k] !== undefined) copy[k] = INLINE_SECRET_PLACEHOLDER as T[K];
    return copy;
  };
  const config = hide(spec.config, 'clientSecret', 'apiToken');
  const scimConfig = hide(spec.scimConfig, 'secret');
  return { ...spec, ...(config ? { config } : {}), ...(scimConfig ? { scimConfig } : {}) };
}

export const accessIdentityProviderRules: SourceKindRules<AccessIdentityProviderSpec> = {
  definition: AccessIdentityProviderKind,
  clusterScoped: true,
  oneSourcePerTarget: true,
  statusIdField: 'providerId',
  priority: () => 100,
  credentialsRef: (spec) => spec.cloudflare?.credentialsRef?.name,
  zone: () => undefined,
  validate(spec, object) {
    const problems: string[] = [];
    if (!providerNameOf(spec, object).trim()) problems.push('spec.name: the provider name must not be empty');
    const inline = [
      spec.config?.clientSecret !== undefined && 'spec.config.clientSecret',
      spec.config?.apiToken !== undefined && 'spec.config.apiToken',
      spec.scimConfig?.secret !== undefined && 'spec.scimConfig.secret',
    ].filter(Boolean);
    for (const field of inline)
      problems.push(
        `${field as string}: inline secrets are not accepted (they would be copied into the CloudflareSyncState); put the value in a Secret and name it in spec.configSecretRef`,
      );
    if (!NO_CLIENT_TYPES.has(spec.type)) {
      if (!spec.config?.clientId) problems.push(`spec.config.clientId: a ${spec.type} provider needs its client ID`);
      if (!spec.configSecretRef)
        problems.push(`spec.configSecretRef: a ${spec.type} provider needs its client secret, from a Secret`);
    }
    if (spec.type === 'oidc')
      for (const f of ['authUrl', 'tokenUrl', 'certsUrl'] as const)
        if (!spec.config?.[f]) problems.push(`spec.config.${f}: an oidc provider needs it`);
    if (spec.type === 'saml')
      for (const f of ['issuerUrl', 'ssoTargetUrl'] as const)
        if (!spec.config?.[f]) problems.push(`spec.config.${f}: a saml provider needs it`);
    return problems;
  },
  targets: (spec, place, object) => [
    { resourceType: 'AccessIdentityProvider', accountId: place.accountId, name: providerNameOf(spec, object) },
  ],
  contribution(spec, target, object) {
    const name = providerNameOf(spec, object);
    if (target.resourceType !== 'AccessIdentityProvider' || target.name !== name) return { entries: [] };
    const { secret: _s, ...scim } = spec.scimConfig ?? {};
    const item: IdentityProviderItem = {
      name,
      type: spec.type,
      config: wireConfig(spec.config),
      // The SCIM settings take the same camelCase → snake_case rename (every field is optional in both).
      ...(spec.scimConfig ? { scim_config: wireConfig(scim as IdentityProviderConfig) } : {}),
      ...(spec.configSecretRef ? { secret_ref: spec.configSecretRef } : {}),
    };
    return { entries: [item] };
  },
};
