/**
 * Access groups and identity providers, account- or zone-scoped (`/{accounts|zones}/{id}/access/…`):
 * create (UUID ids), list (page pagination; `name` and `search` filters), get, PUT (replace), delete
 * (answers `{id}`). Names are unique per account or zone (400/12130, guessed); unknown ids are
 * 404/12119 (guessed). A group's include/exclude/require rules must each be one selector of
 * Cloudflare's schema with its fields (ACCESS_RULE_SELECTORS); an `ip` is stored in CIDR form.
 *
 * Identity providers keep their secrets (`config.client_secret`) but never answer them, as the real
 * API redacts them; answers carry the config fields Cloudflare fills in (IDP_CONFIG_DEFAULTS); a PUT without `client_secret` keeps the stored one (so a read-modify-write does
 * not lose it). `scim_config.secret` is generated when SCIM is first enabled and answered once.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { CfErrors } from '../envelope.js';
import { paginatePage } from '../pagination.js';
import type { Route, RouteContext } from '../router.js';
import type { AccessGroup, IdentityProvider } from '../store.js';
import { checkBody } from '../validate.js';
import { accountFor } from './accounts.js';
import { cidrOf } from './devices.js';
import { zoneFor } from './zones.js';

export const ACCESS_PAGE_LIMITS = { defaultPerPage: 25, minPerPage: 1, maxPerPage: 1000 };

/** Keys of an identity provider's `config` that are stored but never answered. */
export const IDP_SECRET_KEYS: readonly string[] = ['client_secret'];

export const IDP_TYPES = [
  'onetimepin',
  'azureAD',
  'saml',
  'centrify',
  'facebook',
  'github',
  'google-apps',
  'google',
  'linkedin',
  'oidc',
  'okta',
  'onelogin',
  'pingone',
  'yandex',
] as const;

const Rules = Type.Array(Type.Record(Type.String(), Type.Unknown()));
const GroupBody = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    include: Type.Array(Type.Record(Type.String(), Type.Unknown()), { minItems: 1 }),
    exclude: Type.Optional(Rules),
    require: Type.Optional(Rules),
    is_default: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: true },
);

const IdpBody = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    type: Type.Union(IDP_TYPES.map((t) => Type.Literal(t))),
    config: Type.Record(Type.String(), Type.Unknown()),
    scim_config: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { additionalProperties: true },
);

/**
 * The selectors of an Access rule and the fields each requires, as Cloudflare's API schema has
 * them (the `cloudflare` SDK's `AccessRule` union, generated from it; developers.cloudflare.com/
 * cloudflare-one/api-terraform/access-api-examples/). Note `azureAD` and `github-organization`.
 */
export const ACCESS_RULE_SELECTORS: Readonly<Record<string, readonly string[]>> = {
  any_valid_service_token: [],
  auth_context: ['id', 'ac_id', 'identity_provider_id'],
  auth_method: ['auth_method'],
  azureAD: ['id', 'identity_provider_id'],
  certificate: [],
  cloudflare_account_member: [],
  common_name: ['common_name'],
  device_posture: ['integration_uid'],
  email: ['email'],
  email_domain: ['domain'],
  email_list: ['id'],
  everyone: [],
  external_evaluation: ['evaluate_url', 'keys_url'],
  geo: ['country_code'],
  'github-organization': ['identity_provider_id', 'name'],
  group: ['id'],
  gsuite: ['email', 'identity_provider_id'],
  ip: ['ip'],
  ip_list: ['id'],
  linked_app_token: ['app_uid'],
  login_method: ['id'],
  oidc: ['claim_name', 'claim_value', 'identity_provider_id'],
  okta: ['identity_provider_id', 'name'],
  saml: ['attribute_name', 'attribute_value', 'identity_provider_id'],
  service_token: ['token_id'],
  user_risk_score: ['user_risk_score'],
};

/**
 * A rule as Cloudflare stores it, or its 400: exactly one known selector, its required fields
 * non-empty; an `ip` ("an IPv4 or IPv6 CIDR block", the schema) in CIDR form, a bare IP as its
 * one-host block as split-tunnel addresses are (routes/devices.ts).
 */
export function storedRule(rule: Record<string, unknown>, pointer: string): Record<string, unknown> {
  const keys = Object.keys(rule);
  if (keys.length !== 1)
    throw CfErrors.accessInvalid(`${pointer}: a rule has exactly one selector, this one has ${keys.length}`);
  const selector = keys[0]!;
  const fields = Object.hasOwn(ACCESS_RULE_SELECTORS, selector) ? ACCESS_RULE_SELECTORS[selector] : undefined;
  if (!fields) throw CfErrors.accessInvalid(`${pointer}: unknown rule selector ${JSON.stringify(selector)}`);
  const value = rule[selector];
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw CfErrors.accessInvalid(`${pointer}/${selector}: must be an object`);
  const body = structuredClone(value) as Record<string, unknown>;
  for (const field of fields) {
    const v = body[field];
    if (v === undefined || v === '' || (Array.isArray(v) && v.length === 0))
      throw CfErrors.accessInvalid(`${pointer}/${selector}/${field}: required`);
  }
  if (selector === 'ip') {
    const cidr = typeof body.ip === 'string' ? cidrOf(body.ip) : undefined;
    if (!cidr) throw CfErrors.accessInvalid(`${pointer}/ip/ip: ${JSON.stringify(body.ip)} is not an IP or CIDR block`);
    body.ip = cidr;
  }
  return { [selector]: body };
}

/** A group's rules as stored (each checked, `ip` in CIDR form). */
function storedRules(field: string, rules: ReadonlyArray<Record<string, unknown>> | undefined): unknown[] {
  return (rules ?? []).map((r, i) => storedRule(r, `/${field}/${i}`));
}

function scopeKey(ctx: RouteContext): string {
  if (ctx.params.zone_id !== undefined) return `zones/${zoneFor(ctx).id}`;
  return `accounts/${accountFor(ctx).id}`;
}

function listOf<T>(map: Map<string, T[]>, key: string): T[] {
  let list = map.get(key);
  if (!list) map.set(key, (list = []));
  return list;
}

function byId<T extends { id: string }>(list: readonly T[], id: string | undefined, what: string): T {
  const item = list.find((x) => x.id === id);
  if (!item) throw CfErrors.accessNotFound(what);
  return item;
}

function uniqueName(list: ReadonlyArray<{ id: string; name: string }>, name: string, what: string, self?: string) {
  if (list.some((x) => x.name === name && x.id !== self)) throw CfErrors.accessConflict(what, name);
}

function filtered<T extends { name: string }>(list: readonly T[], query: URLSearchParams): T[] {
  const name = query.get('name');
  const search = query.get('search')?.toLowerCase();
  return list
    .filter((x) => name === null || x.name === name)
    .filter((x) => !search || x.name.toLowerCase().includes(search));
}

/**
 * Config fields Cloudflare fills in when a create or update leaves them out, by IdP type (what
 * Terraform's permanent-drift reports show coming back: cloudflare/terraform-provider-cloudflare
 * #5650, #5532, #4497; the exact set per type is not published). One-time PIN answers its
 * `redirect_url`, which nobody writes.
 */
export const IDP_CONFIG_DEFAULTS: Readonly<Record<string, Readonly<Record<string, unknown>>>> = {
  azureAD: { claims: [], conditional_access_enabled: false, support_groups: false, pkce_enabled: false },
  oidc: { claims: [], scopes: ['openid', 'email', 'profile'], email_claim_name: 'email', pkce_enabled: false },
  okta: { claims: [], pkce_enabled: false },
  onelogin: { claims: [], pkce_enabled: false },
  pingone: { claims: [], pkce_enabled: false },
  'google-apps': { claims: [], pkce_enabled: false },
  google: { claims: [], pkce_enabled: false },
  saml: { attributes: [], header_attributes: [], sign_request: false },
};

/** An identity provider as answered: server-filled config, secrets removed, the SCIM secret only when just generated. */
export function redactIdp(idp: IdentityProvider, showScimSecret = false): IdentityProvider {
  const filled: Record<string, unknown> = {
    ...structuredClone(IDP_CONFIG_DEFAULTS[idp.type] ?? {}),
    ...idp.config,
    ...(idp.type === 'onetimepin'
      ? { redirect_url: 'https://emulator.cloudflareaccess.com/cdn-cgi/access/callback' }
      : {}),
  };
  const config = Object.fromEntries(Object.entries(filled).filter(([k]) => !IDP_SECRET_KEYS.includes(k)));
  const { secret, ...scim } = idp.scim_config;
  return { ...idp, config, scim_config: showScimSecret && secret !== undefined ? { ...scim, secret } : scim };
}

const DEFAULT_SCIM = {
  enabled: false,
  identity_update_behavior: 'no_action',
  seat_deprovision: false,
  user_deprovision: false,
};

/** The stored IdP of a create or PUT body; `previous` lends secrets the body leaves out. */
function buildIdp(
  body: { name: string; type: string; config: Record<string, unknown>; scim_config?: Record<string, unknown> },
  id: string,
  previous?: IdentityProvider,
): { idp: IdentityProvider; newScimSecret: boolean } {
  const config = structuredClone(body.config);
  for (const key of IDP_SECRET_KEYS) {
    if (config[key] === undefined && previous?.config[key] !== undefined) config[key] = previous.config[key];
  }
  const { secret: _ignored, ...askedScim } = body.scim_config ?? {};
  const scim: Record<string, unknown> = { ...DEFAULT_SCIM, ...structuredClone(askedScim) };
  let newScimSecret = false;
  if (previous?.scim_config.secret !== undefined) scim.secret = previous.scim_config.secret;
  else if (scim.enabled === true) {
    scim.secret = randomBytes(32).toString('hex');
    newScimSecret = true;
  }
  return { idp: { id, name: body.name, type: body.type, config, scim_config: scim }, newScimSecret };
}

function scopedRoutes(prefix: '/accounts/:account_id' | '/zones/:zone_id'): Route[] {
  const groups = `${prefix}/access/groups`;
  const idps = `${prefix}/access/identity_providers`;
  const groupList = (ctx: RouteContext) => listOf(ctx.store.accessGroups, scopeKey(ctx));
  const idpList = (ctx: RouteContext) => listOf(ctx.store.identityProviders, scopeKey(ctx));
  return [
    {
      method: 'POST',
      pattern: groups,
      handler: (ctx) => {
        const list = groupList(ctx);
        const body = checkBody(GroupBody, ctx.body ?? {});
        uniqueName(list, body.name, 'group', undefined);
        const at = ctx.store.timestamp();
        const group: AccessGroup = {
          id: randomUUID(),
          name: body.name,
          include: storedRules('include', body.include),
          exclude: storedRules('exclude', body.exclude),
          require: storedRules('require', body.require),
          is_default: body.is_default ?? false,
          created_at: at,
          updated_at: at,
        };
        list.push(group);
        return { result: group };
      },
    },
    {
      method: 'GET',
      pattern: groups,
      handler: (ctx) => paginatePage(filtered(groupList(ctx), ctx.query), ctx.query, ACCESS_PAGE_LIMITS),
    },
    {
      method: 'GET',
      pattern: `${groups}/:group_id`,
      handler: (ctx) => ({ result: byId(groupList(ctx), ctx.params.group_id, 'group') }),
    },
    {
      method: 'PUT',
      pattern: `${groups}/:group_id`,
      handler: (ctx) => {
        const list = groupList(ctx);
        const group = byId(list, ctx.params.group_id, 'group');
        const body = checkBody(GroupBody, ctx.body ?? {});
        uniqueName(list, body.name, 'group', group.id);
        Object.assign(group, {
          name: body.name,
          include: storedRules('include', body.include),
          exclude: storedRules('exclude', body.exclude),
          require: storedRules('require', body.require),
          is_default: body.is_default ?? false,
          updated_at: ctx.store.timestamp(),
        });
        return { result: group };
      },
    },
    {
      method: 'DELETE',
      pattern: `${groups}/:group_id`,
      handler: (ctx) => {
        const list = groupList(ctx);
        const group = byId(list, ctx.params.group_id, 'group');
        list.splice(list.indexOf(group), 1);
        return { result: { id: group.id } };
      },
    },
    {
      method: 'POST',
      pattern: idps,
      handler: (ctx) => {
        const list = idpList(ctx);
        const body = checkBody(IdpBody, ctx.body ?? {});
        uniqueName(list, body.name, 'identity provider');
        const { idp, newScimSecret } = buildIdp(body, randomUUID());
        list.push(idp);
        return { result: redactIdp(idp, newScimSecret) };
      },
    },
    {
      method: 'GET',
      pattern: idps,
      handler: (ctx) => {
        const page = paginatePage(filtered(idpList(ctx), ctx.query), ctx.query, ACCESS_PAGE_LIMITS);
        return { ...page, result: page.result.map((idp) => redactIdp(idp)) };
      },
    },
    {
      method: 'GET',
      pattern: `${idps}/:identity_provider_id`,
      handler: (ctx) => ({
        result: redactIdp(byId(idpList(ctx), ctx.params.identity_provider_id, 'identity provider')),
      }),
    },
    {
      method: 'PUT',
      pattern: `${idps}/:identity_provider_id`,
      handler: (ctx) => {
        const list = idpList(ctx);
        const old = byId(list, ctx.params.identity_provider_id, 'identity provider');
        const body = checkBody(IdpBody, ctx.body ?? {});
        uniqueName(list, body.name, 'identity provider', old.id);
        const { idp, newScimSecret } = buildIdp(body, old.id, old);
        list[list.indexOf(old)] = idp;
        return { result: redactIdp(idp, newScimSecret) };
      },
    },
    {
      method: 'DELETE',
      pattern: `${idps}/:identity_provider_id`,
      handler: (ctx) => {
        const list = idpList(ctx);
        const idp = byId(list, ctx.params.identity_provider_id, 'identity provider');
        list.splice(list.indexOf(idp), 1);
        return { result: { id: idp.id } };
      },
    },
  ];
}

export const accessRoutes: Route[] = [...scopedRoutes('/accounts/:account_id'), ...scopedRoutes('/zones/:zone_id')];
