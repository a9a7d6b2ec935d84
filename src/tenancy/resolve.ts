/**
 * Which tenant does a request belong to? Reads the identifier where the resolver config says it
 * is (HTTP header, query parameter, path segment or Host header; FTP username), maps it to a
 * tenant ID and checks that the tenant exists and is active.
 *
 * Pure: resolve against one snapshot per request so the config and the tenants come from the
 * same revision. Failures are returned, not thrown,
 * as one of three error types a server maps to 400 / 404 / 403.
 */
import { parseTenantId, type ResolverConfig, type SandboxConfig, type TenantMeta } from './model.js';

/** What resolution reads; a TenantSnapshot is one. */
export interface TenantDirectory {
  readonly effectiveResolverConfig: ResolverConfig;
  isTenantEnabled(id: number): boolean;
  getTenantMeta(id: number): TenantMeta | undefined;
  getTenantIdByDomain(domain: string): number | undefined;
  getTenantIdByCode(code: string): number | undefined;
  getTenantIdByFtpUsername(username: string): number | undefined;
  /** The tenant's sandbox settings (the fast path's quota); optional so directories without them mean no limit. */
  getSandboxConfig?(id: number): SandboxConfig | undefined;
}

/** The parts of a request resolution looks at; Node's IncomingMessage is one. */
export interface HttpRequestLike {
  /** The request target: `/path?query` (origin form) or `http://host/path?query` (absolute form). */
  readonly url?: string | undefined;
  /** Lower-case header names, as Node delivers them. */
  readonly headers: { readonly [name: string]: string | string[] | undefined };
}

export type TenantResolutionErrorCode = 'no_tenant_identifier' | 'unknown_tenant' | 'tenant_not_active';

export abstract class TenantResolutionError extends Error {
  abstract readonly code: TenantResolutionErrorCode;
  /** The HTTP status a server should answer with. */
  abstract readonly httpStatus: 400 | 403 | 404;
  constructor(
    message: string,
    /** Where the identifier was looked for, e.g. `header X-Tenant-ID`. */
    readonly source: string,
  ) {
    super(message);
  }
}

/** The request carries no tenant identifier where the resolver config says to look (400). */
export class NoTenantIdentifierError extends TenantResolutionError {
  readonly code = 'no_tenant_identifier';
  readonly httpStatus = 400;
  override readonly name = 'NoTenantIdentifierError';
  constructor(source: string) {
    super(`no tenant identifier in ${source}`, source);
  }
}

/** The identifier names no known tenant (404). */
export class UnknownTenantError extends TenantResolutionError {
  readonly code = 'unknown_tenant';
  readonly httpStatus = 404;
  override readonly name = 'UnknownTenantError';
  constructor(
    readonly identifier: string,
    source: string,
  ) {
    super(`no tenant matches ${JSON.stringify(identifier)} (${source})`, source);
  }
}

/** The tenant exists but its status is not `active` (403). */
export class TenantNotActiveError extends TenantResolutionError {
  readonly code = 'tenant_not_active';
  readonly httpStatus = 403;
  override readonly name = 'TenantNotActiveError';
  constructor(
    readonly tenantId: number,
    readonly status: string,
    source: string,
  ) {
    super(`tenant ${tenantId} is ${status || 'not active'}`, source);
  }
}

export type TenantResolution =
  { readonly ok: true; readonly tenantId: number } | { readonly ok: false; readonly error: TenantResolutionError };

/** Resolves an HTTP request with the directory's resolver config. */
export function resolveHttpTenant(req: HttpRequestLike, directory: TenantDirectory): TenantResolution {
  const cfg = directory.effectiveResolverConfig;
  switch (cfg.httpType) {
    case 'header': {
      const raw = req.headers[cfg.httpHeaderName.toLowerCase()];
      const value = Array.isArray(raw) ? raw[0] : raw;
      return byTenantId(directory, value?.trim() ?? '', cfg);
    }
    case 'query': {
      const value = queryParameter(req.url ?? '', cfg.httpQueryParam);
      return byTenantId(directory, value?.trim() ?? '', cfg);
    }
    case 'path': {
      const value = pathSegment(req.url ?? '', cfg.httpPathIndex);
      return byTenantId(directory, value ?? '', cfg);
    }
    case 'host':
      return resolveHost(req, directory, cfg);
    case '':
      // No HTTP resolution configured (an FTP-only config): the original's middleware answers 400.
      return failure(NoTenantIdentifierError, describeSource(cfg));
  }
}

/** Resolves an FTP session by its login name (`ftpType: username`). */
export function resolveFtpTenant(username: string, directory: TenantDirectory): TenantResolution {
  const source = 'FTP username';
  if (username === '') return failure(NoTenantIdentifierError, source);
  const id = directory.getTenantIdByFtpUsername(username);
  if (id === undefined) return failure(UnknownTenantError, username, source);
  return checked(directory, id, source);
}

function resolveHost(req: HttpRequestLike, directory: TenantDirectory, cfg: ResolverConfig): TenantResolution {
  const header = req.headers.host ?? req.headers[':authority'];
  const hostname = normalizeHost(Array.isArray(header) ? (header[0] ?? '') : (header ?? ''));
  if (hostname === '') return failure(NoTenantIdentifierError, described(cfg));
  if (cfg.httpHostMode === 'domain') {
    const id = directory.getTenantIdByDomain(hostname);
    return id === undefined ? failure(UnknownTenantError, hostname, described(cfg)) : checked(directory, id, cfg);
  }
  // numeric and code read the first label: `7.example.com`, `acme.example.com`. A bare name
  // (`localhost`) or `www` carries no tenant.
  const dot = hostname.indexOf('.');
  if (dot <= 0) return failure(NoTenantIdentifierError, described(cfg));
  const label = hostname.slice(0, dot);
  if (label === 'www') return failure(NoTenantIdentifierError, described(cfg));
  if (cfg.httpHostMode === 'numeric') return byTenantId(directory, label, cfg);
  const id = directory.getTenantIdByCode(label);
  return id === undefined ? failure(UnknownTenantError, label, described(cfg)) : checked(directory, id, cfg);
}

/** Where the identifier was looked for: a description, or the config (described only when a request fails). */
type Source = string | ResolverConfig;

const described = (source: Source) => (typeof source === 'string' ? source : describeSource(source));

function byTenantId(directory: TenantDirectory, text: string, source: Source): TenantResolution {
  if (text === '') return failure(NoTenantIdentifierError, described(source));
  const id = parseTenantId(text);
  if (id === undefined) return failure(UnknownTenantError, text, described(source));
  return checked(directory, id, source);
}

function checked(directory: TenantDirectory, id: number, source: Source): TenantResolution {
  if (directory.isTenantEnabled(id)) return { ok: true, tenantId: id };
  const meta = directory.getTenantMeta(id);
  if (meta === undefined) return failure(UnknownTenantError, String(id), described(source));
  return failure(TenantNotActiveError, id, meta.status, described(source));
}

/**
 * Resolution errors are values returned on every bad request, not exceptions: a stack trace
 * would cost more than the whole resolution and tell nothing, so none is captured.
 */
function failure<A extends unknown[]>(Type: new (...args: A) => TenantResolutionError, ...args: A): TenantResolution {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return { ok: false, error: new Type(...args) };
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/** Where a config looks for the identifier, for error messages. */
export function describeSource(cfg: ResolverConfig): string {
  switch (cfg.httpType) {
    case 'header':
      return `header ${cfg.httpHeaderName}`;
    case 'query':
      return `query parameter ${cfg.httpQueryParam}`;
    case 'path':
      return `path segment ${cfg.httpPathIndex}`;
    case 'host':
      return `Host header (${cfg.httpHostMode})`;
    case '':
      return 'HTTP requests (the resolver config sets no httpType)';
  }
}

/**
 * `Example.COM:8080` → `example.com`; `[::1]:80` stays a bracketed literal; a trailing dot goes.
 * (Node has already stripped surrounding whitespace from header values.)
 */
export function normalizeHost(host: string): string {
  let end = host.length;
  if (host.charCodeAt(0) === 91 /* [ */) {
    const bracket = host.indexOf(']');
    if (bracket >= 0) end = bracket + 1;
  } else {
    const colon = host.indexOf(':');
    if (colon >= 0) end = colon;
  }
  if (end > 0 && host.charCodeAt(end - 1) === 46 /* . */) end--;
  return (end === host.length ? host : host.slice(0, end)).toLowerCase();
}

/** Percent-decoding; in query strings `+` also means a space (form encoding), in paths it does not. */
function decodeComponent(text: string, plusIsSpace: boolean): string {
  const plus = plusIsSpace && text.includes('+');
  if (!plus && !text.includes('%')) return text;
  try {
    return decodeURIComponent(plus ? text.replaceAll('+', ' ') : text);
  } catch {
    return text; // malformed escapes: compare and report as written
  }
}

/** The first value of a query parameter in a request target, decoded; undefined when absent. */
export function queryParameter(url: string, name: string): string | undefined {
  const q = url.indexOf('?');
  if (q < 0) return undefined;
  let end = url.indexOf('#', q);
  if (end < 0) end = url.length;
  let i = q + 1;
  while (i < end) {
    let amp = url.indexOf('&', i);
    if (amp < 0 || amp > end) amp = end;
    const eq = url.indexOf('=', i);
    const hasValue = eq >= 0 && eq < amp;
    if (decodeComponent(url.slice(i, hasValue ? eq : amp), true) === name)
      return hasValue ? decodeComponent(url.slice(eq + 1, amp), true) : '';
    i = amp + 1;
  }
  return undefined;
}

/** Path segment `index` (0 = first after the leading slash) of a request target, decoded. */
export function pathSegment(url: string, index: number): string | undefined {
  let start = 0;
  if (!url.startsWith('/')) {
    // Absolute form (`http://host/path`), as proxies send it: skip scheme and authority.
    const scheme = url.indexOf('://');
    if (scheme < 0) return undefined;
    start = url.indexOf('/', scheme + 3);
    if (start < 0) return undefined;
  }
  let end = url.length;
  for (const stop of ['?', '#']) {
    const at = url.indexOf(stop, start);
    if (at >= 0 && at < end) end = at;
  }
  let segStart = start + 1;
  for (let n = 0; segStart <= end; n++) {
    let slash = url.indexOf('/', segStart);
    if (slash < 0 || slash > end) slash = end;
    if (n === index) return decodeComponent(url.slice(segStart, slash), false);
    segStart = slash + 1;
  }
  return undefined;
}
