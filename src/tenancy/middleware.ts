/**
 * Tenant resolution as connect-style middleware for Node's HTTP server, so plain `http`, Express
 * and friends adopt it the same way: on success the request carries `tenantId` and `next()` runs;
 * otherwise the request is answered here with 400 / 404 / 403 and a JSON error body.
 *
 * The resolver config is read from the current snapshot on every request, so a change published
 * to `common/resolver` applies without restarting (the original read it once at startup).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { resolveHttpTenant, type TenantDirectory, type TenantResolutionError } from './resolve.js';

/** Anything holding a current snapshot: a TenantProvider, or `{ snapshot }` in tests. */
export interface HoldsTenantSnapshot {
  readonly snapshot: TenantDirectory;
}

export type TenantRequest = IncomingMessage & { tenantId: number };

export type NextFunction = (err?: unknown) => void;

export interface TenantMiddlewareOptions {
  /**
   * Let requests without any tenant identifier through (without `tenantId`) instead of answering
   * 400, for routes where the tenant is optional. Unknown and inactive tenants are still refused.
   */
  optional?: boolean;
}

/** The JSON body of a refused request. */
export interface TenantErrorBody {
  error: TenantResolutionError['code'];
  message: string;
  source: string;
}

export function tenantMiddleware(
  source: HoldsTenantSnapshot,
  options: TenantMiddlewareOptions = {},
): (req: IncomingMessage, res: ServerResponse, next: NextFunction) => void {
  return (req, res, next) => {
    const result = resolveHttpTenant(req, source.snapshot);
    if (result.ok) {
      (req as TenantRequest).tenantId = result.tenantId;
      next();
      return;
    }
    if (options.optional && result.error.code === 'no_tenant_identifier') {
      next();
      return;
    }
    sendTenantError(res, result.error);
  };
}

/** The tenant the middleware attached, or undefined. */
export function tenantIdOf(req: IncomingMessage): number | undefined {
  const id = (req as Partial<TenantRequest>).tenantId;
  return typeof id === 'number' ? id : undefined;
}

export function sendTenantError(res: ServerResponse, error: TenantResolutionError): void {
  const body: TenantErrorBody = { error: error.code, message: error.message, source: error.source };
  const text = JSON.stringify(body);
  res.writeHead(error.httpStatus, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}
