/**
 * The tenant configuration model: what the tenant-service publishes under the etcd namespace and
 * what readers get back. Field names follow the JSON the original (Go) publisher writes, so
 * existing publishers and consumers keep working unchanged.
 *
 * Every object handed to a reader is frozen: readers share one snapshot and must not be able to
 * corrupt it for each other.
 */

/** The namespace prefix the original publisher uses. */
export const DEFAULT_TENANT_PREFIX = 'jxt/';

export const TENANT_STATUSES = ['active', 'inactive', 'suspended'] as const;
export type TenantStatus = (typeof TENANT_STATUSES)[number];

/** `tenants/{id}/meta`. `status` is kept as written; only `active` counts as enabled. */
export interface TenantMeta {
  readonly id: number;
  readonly code: string;
  readonly name: string;
  readonly status: string;
  readonly billingPlan: string;
}

/** `tenants/{id}/database/{serviceCode}`: one database per service of the tenant. */
export interface DatabaseConfig {
  readonly tenantId: number;
  readonly serviceCode: string;
  readonly driver: string;
  readonly host: string;
  readonly port: number;
  readonly database: string;
  readonly username: string;
  /** Base64 ciphertext when `passwordEncrypted`; decrypting is the consumer's business. */
  readonly password: string;
  readonly sslMode: string;
  readonly maxOpenConns: number;
  readonly maxIdleConns: number;
  readonly passwordEncrypted: boolean;
}

/** `tenants/{id}/ftp/{username}`: one FTP account of the tenant. */
export interface FtpConfig {
  readonly tenantId: number;
  readonly username: string;
  readonly passwordHash: string;
  readonly description: string;
  /** `active` or `inactive`. */
  readonly status: string;
  readonly homeDirectory: string;
  readonly writePermission: boolean;
}

/** `tenants/{id}/storage`; `code` and `name` are copied from the tenant's meta. */
export interface StorageConfig {
  readonly tenantId: number;
  readonly code: string;
  readonly name: string;
  readonly quotaBytes: number;
  readonly maxFileSizeBytes: number;
  readonly maxConcurrentUploads: number;
}

/** `tenants/{id}/platform/wvp` (video platform); both fields are required. */
export interface WvpConfig {
  readonly tenantId: number;
  readonly apiUrl: string;
  readonly realm: string;
}

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
 * tenant. Stored normalized: an empty `httpHostMode` reads as `numeric`, an empty `ftpType` as
 * `username`.
 */
export interface ResolverConfig {
  /** The publisher's database key; carried for compatibility, unused here. */
  readonly id: number;
  readonly httpType: HttpResolverType;
  readonly httpHeaderName: string;
  readonly httpQueryParam: string;
  readonly httpPathIndex: number;
  readonly httpHostMode: HttpHostMode;
  readonly ftpType: FtpResolverType;
  /** RFC 3339 timestamps, for audit only. */
  readonly createdAt: string;
  readonly updatedAt: string;
}

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

/**
 * Tenant IDs are positive integers written in canonical decimal form (`7`, never `07` or `+7`).
 * Hand-rolled rather than a regex: it runs on every request.
 */
export function parseTenantId(text: string): number | undefined {
  const length = text.length;
  if (length === 0 || length > 16) return undefined;
  let id = 0;
  for (let i = 0; i < length; i++) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9 || (digit === 0 && i === 0)) return undefined;
    id = id * 10 + digit;
  }
  return id <= Number.MAX_SAFE_INTEGER ? id : undefined;
}
