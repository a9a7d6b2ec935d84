/**
 * Which tenant a fast-path call belongs to, and whether it may act as that tenant. The landed
 * tenant provider's resolution (its resolver config says header, host, query or path) applied to
 * the HTTP request or the gRPC call's metadata *identifies* the tenant; a tenant with API keys
 * (its document's `sandbox.apiKeys`, stored hashed) is then served only with one of them in
 * `Authorization: Bearer <key>` — the identifier alone is something anyone can send. No
 * identifier, an unknown tenant, or a missing or wrong key → UNAUTHENTICATED; a tenant that is not
 * active → PERMISSION_DENIED; each with the reason (never the key).
 */
import { isOneOfApiKeys } from '../tenancy/api-keys.js';
import { resolveHttpTenant, type HoldsTenantSnapshot, type HttpRequestLike } from '../tenancy/index.js';
import { FastPathError } from './service.js';

export function tenantOf(source: HoldsTenantSnapshot, req: HttpRequestLike): string {
  const r = resolveHttpTenant(req, source.snapshot);
  if (!r.ok)
    return fail(r.error.code === 'tenant_not_active' ? 'PermissionDenied' : 'Unauthenticated', r.error.message);
  const keys = source.snapshot.getSandboxConfig?.(r.tenantId)?.apiKeys;
  if (keys?.length) {
    const raw = req.headers.authorization;
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec((Array.isArray(raw) ? raw[0] : raw) ?? '')?.[1];
    if (!bearer)
      return fail('Unauthenticated', `tenant ${r.tenantId} requires an API key: Authorization: Bearer <key>`);
    if (!isOneOfApiKeys(bearer, keys))
      return fail('Unauthenticated', `the API key is not one of tenant ${r.tenantId}'s`);
  }
  return String(r.tenantId);
}

function fail(code: 'PermissionDenied' | 'Unauthenticated', message: string): never {
  throw new FastPathError(code, message);
}
