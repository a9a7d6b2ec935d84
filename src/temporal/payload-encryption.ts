/**
 * Encrypted payloads: every workflow input, result, signal, query answer, memo and heartbeat the
 * roles hand to Temporal is sealed with AES-256-GCM before it leaves the process, so Temporal's
 * database, its UI and `temporal workflow show` hold ciphertext only (sandbox env values,
 * capture contents, Cloudflare specs). The format is the Temporal samples' encryption codec
 * (samples-typescript `encryption`): the whole inner Payload, serialised, becomes
 * `iv(12) ‖ ciphertext ‖ tag(16)` under the encoding `binary/encrypted`, with the key's ID in the
 * metadata `encryption-key-id` — so a payload names the key that opens it, and a key rotation
 * keeps old histories readable as long as the old key is kept.
 *
 * Keys come from a directory (a Kubernetes Secret mounted as a volume): one file per key, its
 * name the key ID, its content 32 random bytes in base64 (`openssl rand -base64 32`). The newest
 * key — the greatest ID in natural order (`2026-11`, `2027-01`; `k9` < `k10`), unless
 * `DO_PAYLOAD_KEY_ID` names one — encrypts; every key decrypts. A payload under an ID the ring
 * does not know makes it read the directory again (the kubelet updates a mounted Secret in place),
 * so a process started before a rotation still reads what a newer one wrote.
 */
import { Buffer } from 'node:buffer';
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { METADATA_ENCODING_KEY, ValueError, type Payload, type PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const METADATA_KEY_ID = 'encryption-key-id';
// A CommonJS module: its namespace has no named exports under Node's ESM loader.
const PayloadMessage = proto.temporal.api.common.v1.Payload;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
/** Least time between two re-reads of the key directory for an unknown key ID. */
const RELOAD_AFTER_MS = 5_000;

export interface PayloadKeysSource {
  /** Directory with one file per key (`DO_PAYLOAD_KEYS_DIR`). */
  dir: string;
  /** The key that encrypts (`DO_PAYLOAD_KEY_ID`); default the newest ID. */
  encryptKeyId?: string;
}

/**
 * The keys `DO_PAYLOAD_KEYS_DIR` (and `DO_PAYLOAD_KEY_ID`) name; none when it is unset or names
 * an empty directory (the mount of an optional Secret that does not exist), which the roles
 * report at start (dataConverterOf).
 */
export function payloadKeysFromEnv(env: NodeJS.ProcessEnv): PayloadKeyRing | undefined {
  if (!env.DO_PAYLOAD_KEYS_DIR) return undefined;
  if (existsSync(env.DO_PAYLOAD_KEYS_DIR) && keyFiles(env.DO_PAYLOAD_KEYS_DIR).length === 0) return undefined;
  return new PayloadKeyRing({
    dir: env.DO_PAYLOAD_KEYS_DIR,
    ...(env.DO_PAYLOAD_KEY_ID && { encryptKeyId: env.DO_PAYLOAD_KEY_ID }),
  });
}

/** The keys of one directory, read at start and again when a payload names a key it lacks. */
export class PayloadKeyRing {
  private keys = new Map<string, Buffer>();
  private encryptId = '';
  private lastReadAt = 0;

  constructor(readonly source: PayloadKeysSource) {
    this.read();
    this.lastReadAt = 0; // the first unknown ID re-reads at once
  }

  /** The ID new payloads are encrypted under. */
  get encryptKeyId(): string {
    return this.encryptId;
  }

  /** Every key ID known, oldest first. */
  get keyIds(): string[] {
    return [...this.keys.keys()];
  }

  encryptionKey(): { id: string; key: Buffer } {
    return { id: this.encryptId, key: this.keys.get(this.encryptId)! };
  }

  /** The key of `id`, re-reading the directory (at most every few seconds) when it is not known. */
  keyFor(id: string): Buffer | undefined {
    if (!this.keys.has(id) && Date.now() - this.lastReadAt >= RELOAD_AFTER_MS) {
      try {
        this.read();
      } catch {
        // A directory half-updated or emptied keeps the keys already read.
      }
    }
    return this.keys.get(id);
  }

  private read(): void {
    this.lastReadAt = Date.now();
    const { dir, encryptKeyId } = this.source;
    let names: string[];
    try {
      names = keyFiles(dir);
    } catch (err) {
      throw new Error(`cannot read the payload keys directory ${dir} (DO_PAYLOAD_KEYS_DIR): ${(err as Error).message}`);
    }
    const keys = new Map<string, Buffer>();
    for (const id of names.sort((a, b) => a.localeCompare(b, 'en', { numeric: true }))) {
      const text = readFileSync(path.join(dir, id), 'utf8').trim();
      const key = Buffer.from(text, 'base64');
      // Never the content in a message: only which file and what is wrong with it.
      if (key.length !== KEY_BYTES || key.toString('base64') !== text.replace(/\s/g, ''))
        throw new Error(
          `payload key ${JSON.stringify(id)} in ${dir} must be ${KEY_BYTES} bytes in base64 (openssl rand -base64 32), got ${key.length} bytes`,
        );
      keys.set(id, key);
    }
    if (keys.size === 0) throw new Error(`the payload keys directory ${dir} (DO_PAYLOAD_KEYS_DIR) holds no key`);
    const encryptId = encryptKeyId ?? [...keys.keys()].at(-1)!;
    if (!keys.has(encryptId))
      throw new Error(`DO_PAYLOAD_KEY_ID names ${JSON.stringify(encryptId)}, which ${dir} does not hold`);
    this.keys = keys;
    this.encryptId = encryptId;
  }
}

/** The key files of a directory: a mounted Secret also holds `..data` and `..<timestamp>` entries, not keys. */
function keyFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => !e.name.startsWith('.') && (e.isFile() || e.isSymbolicLink()))
    .map((e) => e.name);
}

/** The PayloadCodec of every client and worker when keys are configured. */
export class EncryptionCodec implements PayloadCodec {
  constructor(private readonly ring: PayloadKeyRing) {}

  async encode(payloads: Payload[]): Promise<Payload[]> {
    const { id, key } = this.ring.encryptionKey();
    return payloads.map((payload) => ({
      metadata: { [METADATA_ENCODING_KEY]: utf8(ENCRYPTED_ENCODING), [METADATA_KEY_ID]: utf8(id) },
      data: seal(PayloadMessage.encode(payload).finish(), key),
    }));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      // Payloads written before encryption was turned on stay readable.
      if (!payload.metadata || text(payload.metadata[METADATA_ENCODING_KEY]) !== ENCRYPTED_ENCODING) return payload;
      if (!payload.data) throw new ValueError('encrypted payload without data');
      const idBytes = payload.metadata[METADATA_KEY_ID];
      if (!idBytes) throw new ValueError(`encrypted payload without ${METADATA_KEY_ID}`);
      const id = text(idBytes)!;
      const key = this.ring.keyFor(id);
      if (!key)
        throw new ValueError(
          `payload encrypted with key ${JSON.stringify(id)}, which ${this.ring.source.dir} does not hold (keys: ${this.ring.keyIds.join(', ')})`,
        );
      return PayloadMessage.decode(open(payload.data, key, id));
    });
  }
}

const utf8 = (s: string): Uint8Array => Buffer.from(s, 'utf8');
const text = (b: Uint8Array | null | undefined): string | undefined =>
  b ? Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8') : undefined;

function seal(plain: Uint8Array, key: Buffer): Uint8Array {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
  return Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
}

function open(sealed: Uint8Array, key: Buffer, id: string): Uint8Array {
  const data = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
  if (data.length < IV_BYTES + TAG_BYTES) throw new ValueError('encrypted payload too short');
  const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
  decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
  } catch {
    throw new ValueError(`payload does not open with key ${JSON.stringify(id)} (altered, or another key of that ID)`);
  }
}
