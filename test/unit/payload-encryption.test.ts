/**
 * The payload codec without a server: the key directory's rules (a mounted Secret's own entries
 * skipped, a malformed key refused by name, the newest ID encrypts unless one is named), sealing
 * (nothing of the value left, each payload its own IV), tampering detected, and rotation.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EncryptionCodec, PayloadKeyRing, payloadKeysFromEnv } from '../../src/temporal/payload-encryption.js';

let dir: string;
const key = () => randomBytes(32).toString('base64');

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'keys-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const payload = (value: unknown) => defaultPayloadConverter.toPayload(value);
const keyIdOf = (p: { metadata?: Record<string, Uint8Array> | null }) =>
  Buffer.from(p.metadata!['encryption-key-id']!).toString();

describe('the key directory', () => {
  it('reads one key per file, skips the entries a mounted Secret adds, and encrypts with the newest ID', async () => {
    for (const id of ['k9', 'k10', 'k2']) await writeFile(path.join(dir, id), key() + '\n');
    // What the kubelet writes for a Secret volume: ..data and a timestamped directory.
    await mkdir(path.join(dir, '..2026_11_27_00_00_00.1'));
    await symlink('..2026_11_27_00_00_00.1', path.join(dir, '..data'));
    const ring = new PayloadKeyRing({ dir });
    expect(ring.keyIds).toEqual(['k2', 'k9', 'k10']);
    expect(ring.encryptKeyId).toBe('k10');
    expect(new PayloadKeyRing({ dir, encryptKeyId: 'k2' }).encryptKeyId).toBe('k2');
  });

  it('refuses a key that is not 32 bytes of base64, naming the file and never its content', async () => {
    await writeFile(path.join(dir, 'short'), 'c2VjcmV0LXZhbHVl');
    expect(() => new PayloadKeyRing({ dir })).toThrow(
      /payload key "short" .* must be 32 bytes in base64 .*, got 12 bytes/,
    );
    expect(() => new PayloadKeyRing({ dir })).not.toThrow(/c2VjcmV0/);
  });

  it('refuses an empty directory, a missing one, and an encrypting ID it lacks', async () => {
    expect(() => new PayloadKeyRing({ dir })).toThrow(/holds no key/);
    expect(() => new PayloadKeyRing({ dir: path.join(dir, 'nope') })).toThrow(/cannot read the payload keys directory/);
    await writeFile(path.join(dir, 'a'), key());
    expect(() => new PayloadKeyRing({ dir, encryptKeyId: 'b' })).toThrow(/DO_PAYLOAD_KEY_ID names "b"/);
  });

  it('is configured by DO_PAYLOAD_KEYS_DIR and DO_PAYLOAD_KEY_ID; none without, or in an empty directory (an absent optional Secret)', async () => {
    expect(payloadKeysFromEnv({ DO_PAYLOAD_KEYS_DIR: dir })).toBeUndefined();
    expect(() => payloadKeysFromEnv({ DO_PAYLOAD_KEYS_DIR: path.join(dir, 'nope') })).toThrow(/cannot read/);
    await writeFile(path.join(dir, 'a'), key());
    await writeFile(path.join(dir, 'b'), key());
    expect(payloadKeysFromEnv({})).toBeUndefined();
    expect(payloadKeysFromEnv({ DO_PAYLOAD_KEYS_DIR: dir })!.encryptKeyId).toBe('b');
    expect(payloadKeysFromEnv({ DO_PAYLOAD_KEYS_DIR: dir, DO_PAYLOAD_KEY_ID: 'a' })!.encryptKeyId).toBe('a');
  });
});

describe('the codec', () => {
  it('seals the whole payload (nothing of the value or its encoding left) under a fresh IV, and opens it again', async () => {
    await writeFile(path.join(dir, 'one'), key());
    const codec = new EncryptionCodec(new PayloadKeyRing({ dir }));
    const plain = payload({ env: 'super-secret-value' });
    const [a, b] = await codec.encode([plain, plain]);
    for (const p of [a!, b!]) {
      expect(Buffer.from(p.data!).toString('latin1')).not.toContain('super-secret');
      expect(Buffer.from(p.metadata!.encoding!).toString()).toBe('binary/encrypted');
      expect(keyIdOf(p)).toBe('one');
    }
    expect(Buffer.from(a!.data!).equals(Buffer.from(b!.data!))).toBe(false);
    const [opened] = await codec.decode([a!]);
    expect(defaultPayloadConverter.fromPayload(opened!)).toEqual({ env: 'super-secret-value' });
  });

  it('passes plain payloads through (histories from before encryption was turned on)', async () => {
    await writeFile(path.join(dir, 'one'), key());
    const codec = new EncryptionCodec(new PayloadKeyRing({ dir }));
    const plain = payload('old');
    expect(await codec.decode([plain])).toEqual([plain]);
  });

  it('refuses an altered payload and a key ID it does not hold', async () => {
    await writeFile(path.join(dir, 'one'), key());
    const codec = new EncryptionCodec(new PayloadKeyRing({ dir }));
    const [sealed] = await codec.encode([payload('x')]);
    const altered = Buffer.from(sealed!.data!);
    altered[20]! ^= 1;
    await expect(codec.decode([{ ...sealed!, data: altered }])).rejects.toThrow(/does not open with key "one"/);
    await expect(
      codec.decode([{ ...sealed!, metadata: { ...sealed!.metadata, 'encryption-key-id': Buffer.from('gone') } }]),
    ).rejects.toThrow(/encrypted with key "gone", which .* does not hold \(keys: one\)/);
  });

  it('after a rotation: a new process encrypts with the new key and opens the old payloads; a running one learns the new key from the directory', async () => {
    await writeFile(path.join(dir, '2026-01'), key());
    const before = new EncryptionCodec(new PayloadKeyRing({ dir }));
    const [old] = await before.encode([payload('old')]);
    await writeFile(path.join(dir, '2026-02'), key());
    const after = new EncryptionCodec(new PayloadKeyRing({ dir }));
    const [fresh] = await after.encode([payload('new')]);
    expect([keyIdOf(old!), keyIdOf(fresh!)]).toEqual(['2026-01', '2026-02']);
    expect(defaultPayloadConverter.fromPayload((await after.decode([old!]))[0]!)).toBe('old');
    expect(defaultPayloadConverter.fromPayload((await before.decode([fresh!]))[0]!)).toBe('new');
  });
});
