/**
 * A sandbox's environment values never enter workflow history in clear (the Web UI shows
 * history to anyone who may read the namespace): the fast path seals each value (AES-256-GCM)
 * where it enters Temporal — the create's update, and a Sandbox record an activity returns — and
 * opens it only inside the activities that hand it to the agent or write the Sandbox record.
 * The workflow decides on sealed values only.
 *
 * Sealing is deterministic (a synthetic IV, HMAC of the name and value, as AES-SIV does), so the
 * same create sealed twice is the same: a retried create is still recognised as the same one.
 * It reveals only that two values are equal. The keys are derived from the fast path's agent key
 * (DO_AGENT_TOKEN_FILE); a value sealed under another key cannot be opened and says so.
 * Values recorded before sealing existed have no prefix and pass through unchanged.
 */
import { createCipheriv, createDecipheriv, createHmac } from 'node:crypto';

export const SEALED_PREFIX = 'sealed:v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

const derive = (key: string, purpose: string) => createHmac('sha256', key).update(purpose).digest();

export class EnvSealer {
  private readonly encryptionKey: Buffer;
  private readonly ivKey: Buffer;

  constructor(key: string) {
    this.encryptionKey = derive(key, 'sandbox-env-encryption/v1');
    this.ivKey = derive(key, 'sandbox-env-iv/v1');
  }

  seal(name: string, value: string): string {
    const iv = createHmac('sha256', this.ivKey).update(`${name}\0${value}`).digest().subarray(0, IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.encryptionKey, iv);
    cipher.setAAD(Buffer.from(name)); // a sealed value moved to another variable does not open
    const sealed = Buffer.concat([iv, cipher.update(value, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return SEALED_PREFIX + sealed.toString('base64url');
  }

  open(name: string, value: string): string {
    if (!value.startsWith(SEALED_PREFIX)) return value;
    const raw = Buffer.from(value.slice(SEALED_PREFIX.length), 'base64url');
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.encryptionKey, raw.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(name));
      decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
      return Buffer.concat([
        decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)),
        decipher.final(),
      ]).toString('utf8');
    } catch {
      throw new Error(
        `the value of env ${name} was sealed with another key (the fast path's agent key changed since the create)`,
      );
    }
  }

  sealEnvs(envs: Record<string, string>): Record<string, string> {
    return Object.fromEntries(Object.entries(envs).map(([k, v]) => [k, this.seal(k, v)]));
  }

  openEnvs(envs: Record<string, string>): Record<string, string> {
    return Object.fromEntries(Object.entries(envs).map(([k, v]) => [k, this.open(k, v)]));
  }
}
