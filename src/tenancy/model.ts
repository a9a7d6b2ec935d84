/**
 * The tenant configuration model: the etcd key layout under the namespace prefix, and one TypeBox
 * schema per stored value, from which the TypeScript types derive. Field names and types follow
 * the JSON the original (Go) publisher writes, so existing publishers and consumers keep working.
 *
 * These schemas say what a value may hold as the original decodes it (Go types, zero values as
 * defaults); parse.ts reads them leniently, and the publisher checks its own input strictly
 * (document.ts, validateResolverConfig).
 *
 *   tenants/{id}/meta                      tenants/{id}/storage
 *   tenants/{id}/database/{serviceCode}    tenants/{id}/platform/wvp
 *   tenants/{id}/ftp/{username}            tenants/{id}/domain/{primary|internal|aliases}
 *   tenants/{id}/sandbox                   common/resolver
 *
 * Anything else (`tenants/_index/...`, `common/storage-directory`, extra segments) is ignored.
 */
import { Type, type Static, type TLiteral } from '@sinclair/typebox';

/** The namespace prefix the original publisher uses. */
export const DEFAULT_TENANT_PREFIX = 'jxt/';

export const TENANT_STATUSES = ['active', 'inactive', 'suspended'] as const;
export type TenantStatus = (typeof TENANT_STATUSES)[number];

// Go's zero values: what a field the JSON leaves out (or sets to null) reads as.
const str = () => Type.String({ default: '' });
const int = () => Type.Integer({ default: 0 });
const bool = () => Type.Boolean({ default: false });
const oneOf = <T extends string>(values: readonly T[], fallback?: NoInfer<T>) =>
  Type.Union(
    values.map((v) => Type.Literal(v)) as Array<TLiteral<T>>,
    fallback === undefined ? {} : { default: fallback },
  );

/** `tenants/{id}/meta`. `status` is kept as written; only `active` counts as enabled. The key decides `id`. */
export const TenantMetaSchema = Type.Object({ id: int(), code: str(), name: str(), status: str(), billingPlan: str() });
export type TenantMeta = Readonly<Static<typeof TenantMetaSchema>>;

/** `tenants/{id}/database/{serviceCode}`: one database per service; the key decides tenant and service. */
export const DatabaseConfigSchema = Type.Object({
  tenantId: int(),
  serviceCode: str(),
  driver: str(),
  host: str(),
  port: int(),
  database: str(),
  username: str(),
  /** Base64 ciphertext when `passwordEncrypted`; decrypting is the consumer's business. */
  password: str(),
  sslMode: str(),
  maxOpenConns: int(),
  maxIdleConns: int(),
  passwordEncrypted: bool(),
});
export type DatabaseConfig = Readonly<Static<typeof DatabaseConfigSchema>>;

/** `tenants/{id}/ftp/{username}`: one FTP account; `status` is `active` or `inactive`. */
export const FtpConfigSchema = Type.Object({
  tenantId: int(),
  username: str(),
  passwordHash: str(),
  description: str(),
  status: str(),
  homeDirectory: str(),
  writePermission: bool(),
});
export type FtpConfig = Readonly<Static<typeof FtpConfigSchema>>;

/** `tenants/{id}/storage`; readers take `code` and `name` from the tenant's meta. */
export const StorageConfigSchema = Type.Object({
  tenantId: int(),
  code: str(),
  name: str(),
  quotaBytes: int(),
  maxFileSizeBytes: int(),
  maxConcurrentUploads: int(),
});
export type StorageConfig = Readonly<Static<typeof StorageConfigSchema>>;

/** `tenants/{id}/platform/wvp` (video platform); a value missing either field is skipped, as the original does. */
export const WvpConfigSchema = Type.Object({ tenantId: int(), apiUrl: str(), realm: str() });
export type WvpConfig = Readonly<Static<typeof WvpConfigSchema>>;

/**
 * `tenants/{id}/sandbox`: what the tenant may do with sandboxes on the fast path. Not a key of the
 * original; absent fields (and a tenant without the key) mean no limit: any number of live
 * sandboxes, in any namespace, from any pool. `maxSandboxes: 0` allows none.
 */
export const SandboxConfigSchema = Type.Object({
  /** The tenant's fast-path API keys, hashed (see the document's schema). */
  apiKeys: Type.Optional(Type.Array(Type.Object({ id: Type.String(), sha256: Type.String() }))),
  /** Names a verified client certificate may carry to authenticate as the tenant (see the document's schema). */
  clientCertificateNames: Type.Optional(Type.Array(Type.String())),
  maxSandboxes: Type.Optional(Type.Integer({ minimum: 0 })),
  namespaces: Type.Optional(Type.Array(Type.String())),
  pools: Type.Optional(Type.Array(Type.String())),
});
export type SandboxConfig = Readonly<Static<typeof SandboxConfigSchema>>;

/** `tenants/{id}/domain/{primary,internal,aliases}` merged; `code` and `name` from meta. */
export interface DomainConfig {
  readonly tenantId: number;
  readonly code: string;
  readonly name: string;
  /** Empty when unset. */
  readonly primary: string;
  /** Empty when unset. */
  readonly internal: string;
  readonly aliases: readonly string[];
}

export const HTTP_RESOLVER_TYPES = ['host', 'header', 'query', 'path'] as const;
export type HttpResolverType = (typeof HTTP_RESOLVER_TYPES)[number];

export const HTTP_HOST_MODES = ['numeric', 'domain', 'code'] as const;
/** How `host` resolution reads the Host header: numeric first label, whole-domain lookup, or first label as tenant code. */
export type HttpHostMode = (typeof HTTP_HOST_MODES)[number];

export const FTP_RESOLVER_TYPES = ['username'] as const;
export type FtpResolverType = (typeof FTP_RESOLVER_TYPES)[number];

/**
 * `common/resolver`: how every service tells which tenant a request belongs to. Global, not per
 * tenant. An empty `httpType` means HTTP requests carry no tenant (an FTP-only config); an empty
 * `httpHostMode` reads as `numeric`, an empty `ftpType` as `username`.
 */
export const ResolverConfigSchema = Type.Object({
  /** The publisher's database key; carried for compatibility, unused here. */
  id: int(),
  httpType: oneOf<HttpResolverType | ''>([...HTTP_RESOLVER_TYPES, ''], ''),
  httpHeaderName: str(),
  httpQueryParam: str(),
  httpPathIndex: int(),
  httpHostMode: oneOf(HTTP_HOST_MODES, 'numeric'),
  ftpType: oneOf(FTP_RESOLVER_TYPES, 'username'),
  /** RFC 3339 timestamps, for audit only. */
  createdAt: str(),
  updatedAt: str(),
});
export type ResolverConfig = Readonly<Static<typeof ResolverConfigSchema>>;

/** In force while `common/resolver` is unset (the original's default). */
export const DEFAULT_RESOLVER_CONFIG: ResolverConfig = Object.freeze({
  id: 0,
  httpType: 'header',
  httpHeaderName: 'X-Tenant-ID',
  httpQueryParam: '',
  httpPathIndex: 0,
  httpHostMode: 'numeric',
  ftpType: 'username',
  createdAt: '',
  updatedAt: '',
});

/** Tenant IDs are positive integers written in canonical decimal form (`7`, never `07` or `+7`). */
export function parseTenantId(text: string): number | undefined {
  if (!/^[1-9][0-9]{0,15}$/.test(text)) return undefined;
  const id = Number(text);
  return Number.isSafeInteger(id) ? id : undefined;
}

// ---------------------------------------------------------------------------------------------
// Key layout

export const DOMAIN_PARTS = ['primary', 'internal', 'aliases'] as const;
export type DomainPart = (typeof DOMAIN_PARTS)[number];

export type ConfigKey =
  | { readonly kind: 'resolver' }
  | { readonly kind: 'meta'; readonly tenantId: number }
  | { readonly kind: 'database'; readonly tenantId: number; readonly serviceCode: string }
  | { readonly kind: 'ftp'; readonly tenantId: number; readonly username: string }
  | { readonly kind: 'storage'; readonly tenantId: number }
  | { readonly kind: 'wvp'; readonly tenantId: number }
  | { readonly kind: 'sandbox'; readonly tenantId: number }
  | { readonly kind: 'domain'; readonly tenantId: number; readonly part: DomainPart };

export type ConfigKind = ConfigKey['kind'];
export type TenantConfigKey = Exclude<ConfigKey, { kind: 'resolver' }>;
export const CONFIG_KINDS: readonly ConfigKind[] = [
  'resolver',
  'meta',
  'database',
  'ftp',
  'storage',
  'wvp',
  'sandbox',
  'domain',
];

export const RESOLVER_KEY = 'common/resolver';

/** What a key (relative to the prefix) names, or undefined when readers must ignore it. */
export function classifyKey(key: string): ConfigKey | undefined {
  if (key === RESOLVER_KEY) return { kind: 'resolver' };
  const [root, idText = '', group, name, ...rest] = key.split('/');
  const tenantId = parseTenantId(idText); // also rules out tenants/_index/...
  if (root !== 'tenants' || tenantId === undefined || rest.length > 0) return undefined;
  if (name === undefined) {
    if (group === 'meta') return { kind: 'meta', tenantId };
    if (group === 'storage') return { kind: 'storage', tenantId };
    if (group === 'sandbox') return { kind: 'sandbox', tenantId };
    return undefined;
  }
  if (name === '') return undefined;
  if (group === 'database') return { kind: 'database', tenantId, serviceCode: copied(name) };
  if (group === 'ftp') return { kind: 'ftp', tenantId, username: copied(name) };
  if (group === 'platform' && name === 'wvp') return { kind: 'wvp', tenantId };
  if (group === 'domain' && (DOMAIN_PARTS as readonly string[]).includes(name))
    return { kind: 'domain', tenantId, part: name as DomainPart };
  return undefined;
}

/**
 * A flat copy of a name cut out of a key, for use as a Map key. V8 keeps a substring of 13 or
 * more characters as a view into the whole key, and Maps keyed by such views made
 * `getDatabaseConfig(7, 'evidence-command')` take ~2 µs instead of ~0.1 µs.
 */
function copied(name: string): string {
  return Buffer.from(name).toString();
}

/** The relative key a config lives at (inverse of classifyKey). */
export function keyOf(ref: ConfigKey): string {
  switch (ref.kind) {
    case 'resolver':
      return RESOLVER_KEY;
    case 'meta':
    case 'storage':
    case 'sandbox':
      return `tenants/${ref.tenantId}/${ref.kind}`;
    case 'database':
      return `tenants/${ref.tenantId}/database/${ref.serviceCode}`;
    case 'ftp':
      return `tenants/${ref.tenantId}/ftp/${ref.username}`;
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

/** Prefixes are used verbatim, so `jxt` would also match `jxt2/...`: normalize to a trailing slash. */
export function normalizePrefix(prefix: string): string {
  if (prefix === '') throw new Error('the tenant namespace prefix must not be empty');
  return prefix.endsWith('/') ? prefix : `${prefix}/`;
}
