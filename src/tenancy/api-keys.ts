/**
 * A tenant's sandbox API keys (`sandbox.apiKeys` in its document): only their SHA-256 is stored.
 * A key is 32 random bytes, so a plain SHA-256 cannot be reversed by guessing (no password
 * hashing needed); compared in constant time.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A new key, `dosk_` and 32 random bytes (base64url). */
export function newApiKey(): string {
  return `dosk_${randomBytes(32).toString('base64url')}`;
}

/** A key's stored form. */
export function apiKeyHash(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** Whether `key` is one of the stored keys. */
export function isOneOfApiKeys(key: string, keys: readonly { sha256: string }[]): boolean {
  const given = createHash('sha256').update(key).digest();
  let match = false;
  for (const k of keys) {
    const stored = Buffer.from(k.sha256, 'hex');
    if (stored.length === given.length && timingSafeEqual(stored, given)) match = true;
  }
  return match;
}
