/**
 * Parsing and validation of the values stored at each key. Pure: a value is either parsed or
 * rejected with a reason; the caller decides what a rejection means (skip the key and keep the
 * last valid value, log it, refuse to publish).
 *
 * Decoding follows the original's Go `encoding/json` semantics so existing data reads the same:
 * missing fields take their zero value, unknown fields are ignored, a field of the wrong JSON
 * type rejects the whole value. Identity fields (tenant ID, service code, FTP username) come
 * from the key, which is authoritative.
 */
import type { DomainPart } from './keys.js';
import {
  FTP_RESOLVER_TYPES,
  HTTP_HOST_MODES,
  HTTP_RESOLVER_TYPES,
  type DatabaseConfig,
  type FtpConfig,
  type FtpResolverType,
  type HttpHostMode,
  type HttpResolverType,
  type ResolverConfig,
  type StorageConfig,
  type TenantMeta,
  type WvpConfig,
} from './model.js';

export type Parsed<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly reason: string };

class InvalidValue extends Error {}

function ok<T>(value: T): Parsed<T> {
  return { ok: true, value };
}

function guard<T>(parse: () => T): Parsed<T> {
  try {
    return ok(parse());
  } catch (err) {
    if (err instanceof InvalidValue || err instanceof SyntaxError) return { ok: false, reason: err.message };
    throw err;
  }
}

type JsonObject = Record<string, unknown>;

function parseObject(raw: string): JsonObject {
  const value: unknown = JSON.parse(raw);
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new InvalidValue('expected a JSON object');
  return value as JsonObject;
}

function str(obj: JsonObject, field: string): string {
  const v = obj[field];
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw new InvalidValue(`${field}: expected a string, got ${JSON.stringify(v)}`);
  return v;
}

function int(obj: JsonObject, field: string): number {
  const v = obj[field];
  if (v === undefined || v === null) return 0;
  if (typeof v !== 'number' || !Number.isSafeInteger(v))
    throw new InvalidValue(`${field}: expected an integer, got ${JSON.stringify(v)}`);
  return v;
}

function bool(obj: JsonObject, field: string): boolean {
  const v = obj[field];
  if (v === undefined || v === null) return false;
  if (typeof v !== 'boolean') throw new InvalidValue(`${field}: expected a boolean, got ${JSON.stringify(v)}`);
  return v;
}

export function parseTenantMeta(tenantId: number, raw: string): Parsed<TenantMeta> {
  return guard(() => {
    const o = parseObject(raw);
    return Object.freeze({
      id: tenantId,
      code: str(o, 'code'),
      name: str(o, 'name'),
      status: str(o, 'status'),
      billingPlan: str(o, 'billingPlan'),
    });
  });
}

export function parseDatabaseConfig(tenantId: number, serviceCode: string, raw: string): Parsed<DatabaseConfig> {
  return guard(() => {
    const o = parseObject(raw);
    return Object.freeze({
      tenantId,
      serviceCode,
      driver: str(o, 'driver'),
      host: str(o, 'host'),
      port: int(o, 'port'),
      database: str(o, 'database'),
      username: str(o, 'username'),
      password: str(o, 'password'),
      sslMode: str(o, 'sslMode'),
      maxOpenConns: int(o, 'maxOpenConns'),
      maxIdleConns: int(o, 'maxIdleConns'),
      passwordEncrypted: bool(o, 'passwordEncrypted'),
    });
  });
}

export function parseFtpConfig(tenantId: number, username: string, raw: string): Parsed<FtpConfig> {
  return guard(() => {
    const o = parseObject(raw);
    return Object.freeze({
      tenantId,
      username,
      passwordHash: str(o, 'passwordHash'),
      description: str(o, 'description'),
      status: str(o, 'status'),
      homeDirectory: str(o, 'homeDirectory'),
      writePermission: bool(o, 'writePermission'),
    });
  });
}

/** `code` and `name` are filled from the tenant's meta when the snapshot is assembled. */
export function parseStorageConfig(tenantId: number, raw: string): Parsed<StorageConfig> {
  return guard(() => {
    const o = parseObject(raw);
    return Object.freeze({
      tenantId,
      code: '',
      name: '',
      quotaBytes: int(o, 'quotaBytes'),
      maxFileSizeBytes: int(o, 'maxFileSizeBytes'),
      maxConcurrentUploads: int(o, 'maxConcurrentUploads'),
    });
  });
}

export function parseWvpConfig(tenantId: number, raw: string): Parsed<WvpConfig> {
  return guard(() => {
    const o = parseObject(raw);
    const apiUrl = str(o, 'apiUrl');
    const realm = str(o, 'realm');
    // The original skips a WVP config missing either field: a half config cannot be used.
    if (apiUrl === '' || realm === '') throw new InvalidValue('apiUrl and realm are both required');
    return Object.freeze({ tenantId, apiUrl, realm });
  });
}

// Hostnames as published (no scheme, port, path or wildcard); case is kept, lookups lowercase.
const HOSTNAME = /^[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,251}[A-Za-z0-9_.])?$/;

export function isHostname(value: string): boolean {
  return HOSTNAME.test(value) && !value.includes('..');
}

/**
 * `domain/primary` and `domain/internal` hold one hostname, written either plain (`app.example.com`)
 * or as a JSON string (`"app.example.com"`); empty means unset.
 */
export function parseDomainName(raw: string): Parsed<string> {
  return guard(() => {
    let value = raw.trim();
    if (value.startsWith('"')) {
      const decoded: unknown = JSON.parse(value);
      if (typeof decoded !== 'string') throw new InvalidValue('expected a hostname');
      value = decoded.trim();
    }
    if (value !== '' && !isHostname(value)) throw new InvalidValue(`not a hostname: ${JSON.stringify(value)}`);
    return value;
  });
}

/** `domain/aliases` holds a JSON array of hostnames. */
export function parseDomainAliases(raw: string): Parsed<readonly string[]> {
  return guard(() => {
    const decoded: unknown = JSON.parse(raw);
    if (!Array.isArray(decoded)) throw new InvalidValue('expected a JSON array of hostnames');
    const aliases: string[] = [];
    for (const item of decoded) {
      if (typeof item !== 'string') throw new InvalidValue(`alias ${JSON.stringify(item)} is not a string`);
      const alias = item.trim();
      if (alias === '') continue;
      if (!isHostname(alias)) throw new InvalidValue(`not a hostname: ${JSON.stringify(alias)}`);
      aliases.push(alias);
    }
    return Object.freeze(aliases);
  });
}

export function parseDomainPart(part: DomainPart, raw: string): Parsed<string | readonly string[]> {
  return part === 'aliases' ? parseDomainAliases(raw) : parseDomainName(raw);
}

// RFC 9110 token: what a header field name may contain.
const HTTP_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const QUERY_PARAM = /^[^\s&=#?]+$/;

/** The allowed value equal to `value`: the constant itself, so per-request comparisons are pointer-cheap. */
function oneOf<T extends string>(allowed: readonly T[], value: string, field: string): T {
  const match = allowed.find((a) => a === value);
  if (match === undefined)
    throw new InvalidValue(`${field}: ${JSON.stringify(value)} is not one of ${allowed.join(', ')}`);
  return match;
}

/**
 * Validates a resolver config (from etcd or from an operator). A config that would make services
 * unable to resolve any tenant is rejected as a whole, so the previous one can stay in force.
 */
export function validateResolverConfig(input: unknown): Parsed<ResolverConfig> {
  return guard(() => {
    if (input === null || typeof input !== 'object' || Array.isArray(input))
      throw new InvalidValue('expected a JSON object');
    const o = input as JsonObject;
    const httpType: HttpResolverType = oneOf(HTTP_RESOLVER_TYPES, str(o, 'httpType'), 'httpType');
    const httpHeaderName = str(o, 'httpHeaderName').trim();
    const httpQueryParam = str(o, 'httpQueryParam').trim();
    const httpPathIndex = int(o, 'httpPathIndex');
    const httpHostMode: HttpHostMode = oneOf(HTTP_HOST_MODES, str(o, 'httpHostMode') || 'numeric', 'httpHostMode');
    const ftpType: FtpResolverType = oneOf(FTP_RESOLVER_TYPES, str(o, 'ftpType') || 'username', 'ftpType');
    if (httpPathIndex < 0) throw new InvalidValue(`httpPathIndex: must be >= 0, got ${httpPathIndex}`);
    if (httpType === 'header' && httpHeaderName === '')
      throw new InvalidValue('httpHeaderName: required when httpType is header');
    if (httpHeaderName !== '' && !HTTP_TOKEN.test(httpHeaderName)) {
      throw new InvalidValue(`httpHeaderName: ${JSON.stringify(httpHeaderName)} is not a valid header name`);
    }
    if (httpType === 'query' && httpQueryParam === '')
      throw new InvalidValue('httpQueryParam: required when httpType is query');
    if (httpQueryParam !== '' && !QUERY_PARAM.test(httpQueryParam)) {
      throw new InvalidValue(`httpQueryParam: ${JSON.stringify(httpQueryParam)} is not a valid query parameter name`);
    }
    return Object.freeze({
      id: int(o, 'id'),
      httpType,
      httpHeaderName,
      httpQueryParam,
      httpPathIndex,
      httpHostMode,
      ftpType,
      createdAt: str(o, 'createdAt'),
      updatedAt: str(o, 'updatedAt'),
    });
  });
}

export function parseResolverConfig(raw: string): Parsed<ResolverConfig> {
  let decoded: unknown;
  try {
    decoded = JSON.parse(raw);
  } catch (err) {
    return { ok: false, reason: (err as Error).message };
  }
  return validateResolverConfig(decoded);
}
