/**
 * AccessGroup (cluster-scoped): one Zero Trust Access group, named `spec.name` or the object's
 * name. Its target is the group name in the account (names are unique there), so two objects
 * wanting one name meet in one target and the first by priority wins. A group has no field for a
 * marker: the operator owns the group whose ID its SyncState remembers (../../../activities/
 * cloudflare/targets/access-groups.ts), and never adopts a group of that name it did not create.
 */
import { AccessGroupKind, type AccessGroupRule, type AccessGroupSpec } from '../../../api/cloudflare-zerotrust.js';
import type { SourceKindRules, SourceObjectMeta } from './types.js';
import { cidrOf, validAddress } from './validation.js';

export const ACCESS_GROUP_NAME_MAX = 255;

export function groupNameOf(spec: AccessGroupSpec, object: SourceObjectMeta): string {
  return spec.name ?? object.name;
}

type Rule = Record<string, unknown>;

/**
 * One spec rule in Cloudflare's shape; a rule with a list (ipRanges, country, teams) is one rule
 * per entry. Selector names as Cloudflare's schema spells them (`azureAD`, `github-organization`);
 * an address in the CIDR form Cloudflare stores it in (a bare IP as `/32`, `/128`), so what is
 * read back compares equal to what was written.
 */
export function wireRules(rule: AccessGroupRule): Rule[] {
  const out: Rule[] = [];
  if (rule.email) out.push({ email: { email: rule.email.email } });
  if (rule.emailDomain) out.push({ email_domain: { domain: rule.emailDomain.domain } });
  if (rule.everyone) out.push({ everyone: {} });
  for (const ip of rule.ipRanges?.ip ?? []) out.push({ ip: { ip: cidrOf(ip) } });
  for (const c of rule.country?.country ?? []) out.push({ geo: { country_code: c } });
  if (rule.group) out.push({ group: { id: rule.group.id } });
  if (rule.serviceToken) out.push({ service_token: { token_id: rule.serviceToken.tokenId } });
  if (rule.anyValidServiceToken) out.push({ any_valid_service_token: {} });
  if (rule.certificate) out.push({ certificate: {} });
  if (rule.commonName) out.push({ common_name: { common_name: rule.commonName.commonName } });
  if (rule.devicePosture) out.push({ device_posture: { integration_uid: rule.devicePosture.integrationUid } });
  if (rule.gsuite)
    out.push({ gsuite: { email: rule.gsuite.email, identity_provider_id: rule.gsuite.identityProviderId } });
  if (rule.github) {
    const org = { name: rule.github.name, identity_provider_id: rule.github.identityProviderId };
    if (rule.github.teams?.length)
      for (const team of rule.github.teams) out.push({ 'github-organization': { ...org, team } });
    else out.push({ 'github-organization': org });
  }
  if (rule.azure) out.push({ azureAD: { id: rule.azure.id, identity_provider_id: rule.azure.identityProviderId } });
  if (rule.oidc)
    out.push({
      oidc: {
        claim_name: rule.oidc.claimName,
        claim_value: rule.oidc.claimValue,
        identity_provider_id: rule.oidc.identityProviderId,
      },
    });
  if (rule.saml)
    out.push({
      saml: {
        attribute_name: rule.saml.attributeName,
        attribute_value: rule.saml.attributeValue,
        identity_provider_id: rule.saml.identityProviderId,
      },
    });
  if (rule.externalEvaluation)
    out.push({
      external_evaluation: {
        evaluate_url: rule.externalEvaluation.evaluateUrl,
        keys_url: rule.externalEvaluation.keysUrl,
      },
    });
  if (rule.emailList) out.push({ email_list: { id: rule.emailList.id } });
  if (rule.ipList) out.push({ ip_list: { id: rule.ipList.id } });
  if (rule.okta) out.push({ okta: { name: rule.okta.name, identity_provider_id: rule.okta.identityProviderId } });
  if (rule.authMethod) out.push({ auth_method: { auth_method: rule.authMethod.authMethod } });
  if (rule.authContext)
    out.push({
      auth_context: {
        id: rule.authContext.id,
        ac_id: rule.authContext.acId,
        identity_provider_id: rule.authContext.identityProviderId,
      },
    });
  if (rule.loginMethod) out.push({ login_method: { id: rule.loginMethod.id } });
  return out;
}

/** How many selectors a rule sets (a rule must set exactly one). */
function selectors(rule: AccessGroupRule): string[] {
  return Object.entries(rule)
    .filter(([, v]) => v !== undefined && v !== false)
    .map(([k]) => k);
}

function validateRules(field: string, rules: AccessGroupRule[] | undefined): string[] {
  const problems: string[] = [];
  (rules ?? []).forEach((rule, i) => {
    const set = selectors(rule);
    if (set.length !== 1)
      problems.push(
        `${field}[${i}]: set exactly one selector (${set.length ? `it sets ${set.join(', ')}` : 'it sets none'})`,
      );
    (rule.ipRanges?.ip ?? []).forEach((ip, j) => {
      if (!validAddress(ip))
        problems.push(`${field}[${i}].ipRanges.ip[${j}]: ${JSON.stringify(ip)} is not an IP or CIDR`);
    });
    if (rule.ipRanges && !rule.ipRanges.ip.length) problems.push(`${field}[${i}].ipRanges.ip: must not be empty`);
    (rule.country?.country ?? []).forEach((c, j) => {
      if (!/^[A-Z]{2}$/.test(c))
        problems.push(`${field}[${i}].country.country[${j}]: ${JSON.stringify(c)} is not a two-letter country code`);
    });
  });
  return problems;
}

export const accessGroupRules: SourceKindRules<AccessGroupSpec> = {
  definition: AccessGroupKind,
  clusterScoped: true,
  oneSourcePerTarget: true,
  statusIdField: 'groupId',
  priority: () => 100,
  credentialsRef: (spec) => spec.cloudflare?.credentialsRef?.name,
  zone: () => undefined,
  validate(spec, object) {
    const name = groupNameOf(spec, object);
    const field = spec.name === undefined ? 'metadata.name (spec.name is not set)' : 'spec.name';
    return [
      ...(!name.trim() ? [`${field}: the group name must not be empty`] : []),
      ...(name.length > ACCESS_GROUP_NAME_MAX
        ? [`${field}: the group name is ${name.length} characters; at most ${ACCESS_GROUP_NAME_MAX}`]
        : []),
      ...(!(spec.include ?? []).length ? ['spec.include: at least one rule'] : []),
      ...(spec.isDefault
        ? ['spec.isDefault: Cloudflare Access groups have no default group any more (remove it or set false)']
        : []),
      ...validateRules('spec.include', spec.include),
      ...validateRules('spec.exclude', spec.exclude),
      ...validateRules('spec.require', spec.require),
    ];
  },
  targets: (spec, place, object) => [
    { resourceType: 'AccessGroup', accountId: place.accountId, name: groupNameOf(spec, object) },
  ],
  contribution(spec, target, object) {
    const name = groupNameOf(spec, object);
    if (target.resourceType !== 'AccessGroup' || target.name !== name) return { entries: [] };
    return {
      entries: [
        {
          name,
          include: (spec.include ?? []).flatMap(wireRules),
          exclude: (spec.exclude ?? []).flatMap(wireRules),
          require: (spec.require ?? []).flatMap(wireRules),
        },
      ],
    };
  },
};
