/**
 * The etcd key layout under the namespace prefix, in one place: classifying a key read from
 * etcd, and building the keys a publisher writes. Keys here are relative to the prefix.
 *
 *   tenants/{id}/meta                      tenants/{id}/storage
 *   tenants/{id}/database/{serviceCode}    tenants/{id}/platform/wvp
 *   tenants/{id}/ftp/{username}            tenants/{id}/domain/{primary|internal|aliases}
 *   common/resolver
 *
 * Anything else (`tenants/_index/...`, `common/storage-directory`, extra segments) is unknown and
 * ignored by readers.
 */
import { parseTenantId } from './model.js';

export const DOMAIN_PARTS = ['primary', 'internal', 'aliases'] as const;
export type DomainPart = (typeof DOMAIN_PARTS)[number];

export type ConfigKey =
  | { readonly kind: 'resolver' }
  | { readonly kind: 'meta'; readonly tenantId: number }
  | { readonly kind: 'database'; readonly tenantId: number; readonly serviceCode: string }
  | { readonly kind: 'ftp'; readonly tenantId: number; readonly username: string }
  | { readonly kind: 'storage'; readonly tenantId: number }
  | { readonly kind: 'wvp'; readonly tenantId: number }
  | { readonly kind: 'domain'; readonly tenantId: number; readonly part: DomainPart };

export type ConfigKind = ConfigKey['kind'];
export type TenantConfigKey = Exclude<ConfigKey, { kind: 'resolver' }>;

export const RESOLVER_KEY = 'common/resolver';

/** What a relative key names, or undefined when readers must ignore it. */
export function classifyKey(key: string): ConfigKey | undefined {
  if (key === RESOLVER_KEY) return { kind: 'resolver' };
  if (!key.startsWith('tenants/')) return undefined;
  const parts = key.split('/');
  const tenantId = parseTenantId(parts[1] ?? '');
  if (tenantId === undefined) return undefined; // includes tenants/_index/...
  if (parts.length === 3) {
    if (parts[2] === 'meta') return { kind: 'meta', tenantId };
    if (parts[2] === 'storage') return { kind: 'storage', tenantId };
    return undefined;
  }
  if (parts.length !== 4) return undefined;
  const [, , group, name = ''] = parts;
  if (name === '') return undefined;
  switch (group) {
    case 'database':
      return { kind: 'database', tenantId, serviceCode: detached(name) };
    case 'ftp':
      return { kind: 'ftp', tenantId, username: detached(name) };
    case 'platform':
      return name === 'wvp' ? { kind: 'wvp', tenantId } : undefined;
    case 'domain':
      return (DOMAIN_PARTS as readonly string[]).includes(name)
        ? { kind: 'domain', tenantId, part: name as DomainPart }
        : undefined;
    default:
      return undefined;
  }
}

/** The interned copy of a string (property names are interned, hence the object-key round trip). */
export function intern(s: string): string {
  return Object.keys({ [s]: 0 })[0] ?? s;
}

/**
 * A name cut out of a key, made fit to be a map key looked up on every request. V8 represents a
 * substring of 13 or more characters as a view into the longer string, and such views made
 * `getDatabaseConfig(id, 'evidence-command')` ~6× slower; shorter ones are copied flat already.
 */
function detached(name: string): string {
  return name.length < 13 ? name : intern(name);
}

/** The relative key a config lives at (inverse of classifyKey). */
export function keyOf(ref: ConfigKey): string {
  switch (ref.kind) {
    case 'resolver':
      return RESOLVER_KEY;
    case 'meta':
      return `tenants/${ref.tenantId}/meta`;
    case 'database':
      return `tenants/${ref.tenantId}/database/${ref.serviceCode}`;
    case 'ftp':
      return `tenants/${ref.tenantId}/ftp/${ref.username}`;
    case 'storage':
      return `tenants/${ref.tenantId}/storage`;
    case 'wvp':
      return `tenants/${ref.tenantId}/platform/wvp`;
    case 'domain':
      return `tenants/${ref.tenantId}/domain/${ref.part}`;
  }
}

/** All keys of one tenant share this relative prefix. */
export function tenantKeyPrefix(tenantId: number): string {
  return `tenants/${tenantId}/`;
}

/**
 * Namespace prefixes are used verbatim as key prefixes, so `jxt` would also match `jxt2/...`.
 * Normalize to a trailing slash.
 */
export function normalizePrefix(prefix: string): string {
  if (prefix === '') throw new Error('the tenant namespace prefix must not be empty');
  return prefix.endsWith('/') ? prefix : `${prefix}/`;
}
