/**
 * The original's inline credentials (`spec.cloudflare.secret`, `accountId`, `accountName`,
 * `email`), decided purely. The original read the Secret `secret` names when no credentialsRef
 * is given; here credentials come only from CloudflareCredentials, so such a manifest is refused
 * with a reason — never written with the default credentials, which may be another account's.
 * With a credentialsRef the inline fields are ignored, as the original ignored them.
 */
import type { CloudflareDetails } from '../../api/cloudflare.js';

/** The inline credential fields a spec sets without a credentialsRef (undefined: none, or a ref names the credentials). */
export type LegacyCredentials = Pick<CloudflareDetails, 'secret' | 'accountId' | 'accountName' | 'email'>;

export function legacyCredentialsOf(spec: object): LegacyCredentials | undefined {
  const d = (spec as { cloudflare?: CloudflareDetails }).cloudflare;
  if (!d || d.credentialsRef?.name) return undefined;
  const { secret, accountId, accountName, email } = d;
  const set = Object.entries({ secret, accountId, accountName, email }).filter(([, v]) => v !== undefined && v !== '');
  return set.length ? (Object.fromEntries(set) as LegacyCredentials) : undefined;
}

/** Why the default credentials must not stand in for the spec's inline ones (undefined: they may). */
export function legacyCredentialsRefusal(
  legacy: LegacyCredentials | undefined,
  defaults: { credentials: string; accountId: string },
): { reason: string; message: string } | undefined {
  if (!legacy) return undefined;
  const instead = `create a CloudflareCredentials for it and name it in spec.cloudflare.credentialsRef (the default CloudflareCredentials ${defaults.credentials}, account ${defaults.accountId}, is not used in its place)`;
  if (legacy.secret)
    return {
      reason: 'LegacyCredentials',
      message: `spec.cloudflare.secret: inline credentials (the Secret ${legacy.secret}) are not read; ${instead}`,
    };
  if (legacy.accountId && legacy.accountId !== defaults.accountId)
    return {
      reason: 'LegacyCredentials',
      message: `spec.cloudflare.accountId: ${legacy.accountId} is not the default credentials' account; ${instead}`,
    };
  if (!legacy.accountId && legacy.accountName)
    return {
      reason: 'LegacyCredentials',
      message: `spec.cloudflare.accountName: ${legacy.accountName} cannot be matched to the default credentials' account; set spec.cloudflare.accountId, or ${instead}`,
    };
  return undefined;
}
