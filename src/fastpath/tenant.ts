/**
 * Which tenant a fast-path call belongs to: the landed tenant provider's resolution (its resolver
 * config says header, host, query or path) applied to the HTTP request or the gRPC call's
 * metadata. No identifier or an unknown tenant → UNAUTHENTICATED; a tenant that is not active →
 * PERMISSION_DENIED; each with the resolver's reason.
 */
import { resolveHttpTenant, type HoldsTenantSnapshot, type HttpRequestLike } from '../tenancy/index.js';
import { FastPathError } from './service.js';

export function tenantOf(source: HoldsTenantSnapshot, req: HttpRequestLike): string {
  const r = resolveHttpTenant(req, source.snapshot);
  if (r.ok) return String(r.tenantId);
  const code = r.error.code === 'tenant_not_active' ? 'PermissionDenied' : 'Unauthenticated';
  return fail(code, r.error.message);
}

function fail(code: 'PermissionDenied' | 'Unauthenticated', message: string): never {
  throw new FastPathError(code, message);
}
