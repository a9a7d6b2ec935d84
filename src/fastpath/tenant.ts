/**
 * Which tenant a fast-path call belongs to, and whether it may act as that tenant. The landed
 * tenant provider's resolution (its resolver config says header, host, query or path) applied to
 * the HTTP request or the gRPC call's metadata *identifies* the tenant; a tenant with credentials
 * in its document — API keys (`sandbox.apiKeys`, stored hashed) or client certificate names
 * (`sandbox.clientCertificateNames`) — is then served only with one of them: `Authorization:
 * Bearer <key>`, or a client certificate the TLS layer verified against the fast path's client CA
 * that carries one of the names. The identifier alone is something anyone can send. No
 * identifier, an unknown tenant, or missing or wrong credentials → UNAUTHENTICATED; a tenant that
 * is not active → PERMISSION_DENIED; each with the reason (never the key).
 */
import type { PeerCertificate } from 'node:tls';
import { isOneOfApiKeys } from '../tenancy/api-keys.js';
import { resolveHttpTenant, type HoldsTenantSnapshot, type HttpRequestLike } from '../tenancy/index.js';
import { FastPathError } from './service.js';

/**
 * @param verifiedPeer the client certificate of the call's TLS connection, only when the TLS
 *   layer verified it against the client CA (grpc-js's auth context and `socket.authorized`).
 */
export function tenantOf(source: HoldsTenantSnapshot, req: HttpRequestLike, verifiedPeer?: PeerCertificate): string {
  const r = resolveHttpTenant(req, source.snapshot);
  if (!r.ok)
    return fail(r.error.code === 'tenant_not_active' ? 'PermissionDenied' : 'Unauthenticated', r.error.message);
  const settings = source.snapshot.getSandboxConfig?.(r.tenantId);
  const keys = settings?.apiKeys ?? [];
  const certNames = settings?.clientCertificateNames ?? [];
  if (keys.length === 0 && certNames.length === 0) return String(r.tenantId);

  const raw = req.headers.authorization;
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec((Array.isArray(raw) ? raw[0] : raw) ?? '')?.[1];
  if (bearer) {
    if (isOneOfApiKeys(bearer, keys)) return String(r.tenantId);
    return fail('Unauthenticated', `the API key is not one of tenant ${r.tenantId}'s`);
  }
  if (verifiedPeer) {
    const names = certificateNames(verifiedPeer);
    if (names.some((n) => certNames.includes(n))) return String(r.tenantId);
    return fail(
      'Unauthenticated',
      `the client certificate (${names.join(', ') || 'no name'}) is not one of tenant ${r.tenantId}'s`,
    );
  }
  const ways = [
    keys.length > 0 && 'an API key: Authorization: Bearer <key>',
    certNames.length > 0 && 'a client certificate it names',
  ].filter(Boolean);
  return fail('Unauthenticated', `tenant ${r.tenantId} requires ${ways.join(' or ')}`);
}

/** The names a certificate can authenticate with: its subject CN, DNS and URI alternative names. */
export function certificateNames(cert: PeerCertificate): string[] {
  const names: string[] = [];
  const cn = cert.subject?.CN;
  for (const c of Array.isArray(cn) ? cn : cn ? [cn] : []) names.push(c);
  // Node formats subjectaltname as "DNS:a, URI:b, IP Address:c" (values with a comma are quoted).
  for (const m of (cert.subjectaltname ?? '').matchAll(/(?:^|,\s*)(DNS|URI):("(?:[^"\\]|\\.)*"|[^,]*)/g)) {
    const v = m[2]!;
    names.push(v.startsWith('"') ? (JSON.parse(v) as string) : v);
  }
  return names;
}

function fail(code: 'PermissionDenied' | 'Unauthenticated', message: string): never {
  throw new FastPathError(code, message);
}
