/**
 * The worker's proof that an object made a tunnel (src/domain/cloudflare/tunnel-ownership.ts says
 * why): an HMAC-SHA256, keyed with the credentials' secret, of the account, the tunnel and the
 * object's kind, namespace, name and UID — stored beside the `cloudflare-id` annotation. Without
 * the key (users never read the credentials' Secret) no one forges it; bound to the UID, it holds
 * for no fresh object. Also the run token's checksum the connector's Pod template carries (M1).
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

export interface TunnelOwner {
  kind: string;
  namespace?: string;
  name: string;
  uid: string;
}

/** The proof that `owner` made tunnel `tunnelId` of `accountId`, keyed with the credentials' secret. */
export function tunnelProof(key: string, accountId: string, tunnelId: string, owner: TunnelOwner): string {
  const message = ['tunnel-made-by', accountId, tunnelId, owner.kind, owner.namespace ?? '', owner.name, owner.uid];
  return `v1.${createHmac('sha256', key).update(message.join('\0')).digest('hex').slice(0, 40)}`;
}

/** Whether `proof` is the worker's proof for this owner and tunnel (constant-time). */
export function tunnelProofHolds(
  proof: string | undefined,
  key: string,
  accountId: string,
  tunnelId: string,
  owner: TunnelOwner,
): boolean {
  if (!proof) return false;
  const expected = Buffer.from(tunnelProof(key, accountId, tunnelId, owner));
  const given = Buffer.from(proof);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * A digest of a tunnel's run token, safe to show (the token holds a 32-byte random secret: its
 * SHA-256 reveals nothing): it changes when the token is rotated.
 */
export function tokenChecksum(token: string): string {
  return `sha256:${createHash('sha256').update(`cloudflared-run-token\0${token}`).digest('hex').slice(0, 32)}`;
}
