/**
 * A sandbox's environment values never enter workflow history in clear (the Web UI shows
 * history to anyone who may read the namespace): the fast path seals each value (AES-256-GCM)
 * where it enters Temporal — the create's update, and a Sandbox record an activity returns — and
 * opens it only inside the activities that hand it to the agent or write the Sandbox record.
 * The workflow decides on sealed values only.
 *
 * An `envs[].valueFrom` (a Secret's or ConfigMap's key) enters the same way, as a sealed
 * *reference* (its own prefix and associated data): the workflow carries it like any sealed value
 * and the activity that calls the agent reads the object then (src/activities/sandbox/env.ts), so
 * the value itself never passes through Temporal at all. Sealed, a reference cannot be forged: a
 * literal value is always sealed where it enters (whatever it looks like), so no value a user
 * writes can make the operator read a Secret.
 *
 * Sealing is deterministic (a synthetic IV, HMAC of the name and value, as AES-SIV does), so the
 * same create sealed twice is the same: a retried create is still recognised as the same one.
 * It reveals only that two values are equal. The keys are derived from the fast path's agent key
 * (DO_AGENT_TOKEN_FILE); a value sealed under another key cannot be opened and says so.
 * Values recorded before sealing existed have no prefix and pass through unchanged.
 */
import { createCipheriv, createDecipheriv, createHmac } from 'node:crypto';
import type { EnvSource } from '../domain/sandbox-env.js';

export const SEALED_PREFIX = 'sealed:v1:';
export const SEALED_SOURCE_PREFIX = 'sealed-source:v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

const derive = (key: string, purpose: string) => createHmac('sha256', key).update(purpose).digest();

/** What a sealed env entry opens to: a value, or a reference the activity reads. */
export type OpenedEnv = { value: string } | { source: EnvSource };

export class EnvSealer {
  private readonly encryptionKey: Buffer;
  private readonly ivKey: Buffer;

  constructor(key: string) {
    this.encryptionKey = derive(key, 'sandbox-env-encryption/v1');
    this.ivKey = derive(key, 'sandbox-env-iv/v1');
  }

  seal(name: string, value: string): string {
    return SEALED_PREFIX + this.encrypt(name, value);
  }

  /** A reference, sealed: associated data `source\0<name>`, so it never opens as a value (nor a value as one). */
  sealSource(name: string, source: EnvSource): string {
    return SEALED_SOURCE_PREFIX + this.encrypt(`source\0${name}`, JSON.stringify(source));
  }

  /** A literal value; a reference here is a bug (the record and the agent never get one unread). */
  open(name: string, value: string): string {
    const opened = this.openEntry(name, value);
    if ('source' in opened)
      throw new Error(`env ${name} is a reference to a ${opened.source.kind}, not a value: it must be read first`);
    return opened.value;
  }

  openEntry(name: string, value: string): OpenedEnv {
    if (value.startsWith(SEALED_SOURCE_PREFIX))
      return {
        source: JSON.parse(
          this.decrypt(name, `source\0${name}`, value.slice(SEALED_SOURCE_PREFIX.length)),
        ) as EnvSource,
      };
    if (!value.startsWith(SEALED_PREFIX)) return { value };
    return { value: this.decrypt(name, name, value.slice(SEALED_PREFIX.length)) };
  }

  sealEnvs(envs: Record<string, string>): Record<string, string> {
    return Object.fromEntries(Object.entries(envs).map(([k, v]) => [k, this.seal(k, v)]));
  }

  openEnvs(envs: Record<string, string>): Record<string, string> {
    return Object.fromEntries(Object.entries(envs).map(([k, v]) => [k, this.open(k, v)]));
  }

  private encrypt(aad: string, plaintext: string): string {
    const iv = createHmac('sha256', this.ivKey).update(`${aad}\0${plaintext}`).digest().subarray(0, IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.encryptionKey, iv);
    cipher.setAAD(Buffer.from(aad)); // a sealed value moved to another variable does not open
    const sealed = Buffer.concat([iv, cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return sealed.toString('base64url');
  }

  private decrypt(name: string, aad: string, data: string): string {
    const raw = Buffer.from(data, 'base64url');
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.encryptionKey, raw.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(aad));
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
}
