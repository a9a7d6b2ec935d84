/**
 * The Global API Key (`X-Auth-Key` with `X-Auth-Email`), through the real SDK (issue 33, E4): the
 * pair authenticates, and the emulator refuses what Cloudflare refuses — a key with another
 * user's email, a key without its email, a token given as a key, the key sent as a Bearer token.
 * And the product's client sends the key alone, whatever token the worker's environment holds.
 */
import Cloudflare from 'cloudflare';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { cloudflareClient } from '../../src/activities/cloudflare/credentials.js';
import { startCloudflareEmulator, type RunningEmulator } from '../emulators/cloudflare/index.js';

const account = 'a'.repeat(32);
const zoneId = 'z'.repeat(32);
const email = 'ops@example.com';
/** The pre-2026 format (37 lowercase hex) and the scannable one (cfk_ + 40 + checksum). */
const hexKey = '0123456789abcdef0123456789abcdef01234';
const cfkKey = `cfk_${'K'.repeat(40)}c0ffee42`;
const token = 'cfut_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1234';
let emulator: RunningEmulator;

const client = (auth: { apiKey?: string | null; apiEmail?: string | null; apiToken?: string | null }) =>
  new Cloudflare({ apiKey: null, apiEmail: null, apiToken: null, ...auth, baseURL: emulator.baseURL, maxRetries: 0 });
const zoneOf = (cf: Cloudflare) => cf.zones.get({ zone_id: zoneId });

beforeAll(async () => {
  emulator = await startCloudflareEmulator({
    tokens: [
      { token: hexKey, email, id: 'global-key' },
      { token: cfkKey, email: 'other@example.com', id: 'cfk-key' },
      { token, id: 'api-token' },
    ],
    seed: { zones: [{ id: zoneId, name: 'a.example', account_id: account }] },
  });
});
afterAll(() => emulator?.close());
beforeEach(() => emulator.log.clear());

describe('Global API Key', () => {
  it('the key with its email authenticates (either key format, the email in any case), as its own credential', async () => {
    expect((await zoneOf(client({ apiKey: hexKey, apiEmail: email }))).id).toBe(zoneId);
    expect((await zoneOf(client({ apiKey: hexKey, apiEmail: 'Ops@Example.COM' }))).id).toBe(zoneId);
    expect((await zoneOf(client({ apiKey: cfkKey, apiEmail: 'other@example.com' }))).id).toBe(zoneId);
    expect(emulator.log.list().map((r) => r.tokenId)).toEqual(['global-key', 'global-key', 'cfk-key']);
  });

  it("a key with another user's email, or an unknown key, is 403 / 9103", async () => {
    for (const auth of [
      { apiKey: hexKey, apiEmail: 'other@example.com' },
      { apiKey: 'f'.repeat(37), apiEmail: email },
    ])
      await expect(zoneOf(client(auth))).rejects.toMatchObject({
        status: 403,
        errors: [{ code: 9103, message: 'Unknown X-Auth-Key or X-Auth-Email' }],
      });
  });

  it('a key without its email is 400 / 9106; an email without a key 400 / 9107; no credentials 400 / 9106', async () => {
    await expect(zoneOf(client({ apiKey: hexKey }))).rejects.toMatchObject({
      status: 400,
      errors: [{ code: 9106, message: 'Missing X-Auth-Key, X-Auth-Email or Authorization headers' }],
    });
    await expect(zoneOf(client({ apiEmail: email }))).rejects.toMatchObject({
      status: 400,
      errors: [{ code: 9107 }],
    });
    const bare = await fetch(`${emulator.baseURL}/zones/${zoneId}`);
    expect(bare.status).toBe(400);
    expect(((await bare.json()) as { errors: unknown[] }).errors).toEqual([
      { code: 9106, message: 'Missing X-Auth-Key, X-Auth-Email or Authorization headers' },
    ]);
  });

  it('an API token given as the key is 400 / 6003 with 6103; a malformed email 6003 with 6102', async () => {
    await expect(zoneOf(client({ apiKey: token, apiEmail: email }))).rejects.toMatchObject({
      status: 400,
      errors: [
        {
          code: 6003,
          message: 'Invalid request headers',
          error_chain: [{ code: 6103, message: 'Invalid format for X-Auth-Key header' }],
        },
      ],
    });
    await expect(zoneOf(client({ apiKey: hexKey, apiEmail: 'ops' }))).rejects.toMatchObject({
      status: 400,
      errors: [{ code: 6003, error_chain: [{ code: 6102, message: 'Invalid format for X-Auth-Email header' }] }],
    });
  });

  it('the key sent as a Bearer token is refused (403 / 10000): a key is never a token', async () => {
    await expect(zoneOf(client({ apiToken: hexKey }))).rejects.toMatchObject({
      status: 403,
      errors: [{ code: 10000 }],
    });
  });

  it("spends its user's budget (the email's), not a budget of its own", () => {
    expect(emulator.auth.authenticate({ key: hexKey, email }).user).toBe(`user:${email}`);
  });
});

describe("the product's client (src/activities/cloudflare/credentials.ts)", () => {
  const saved = { ...process.env };
  afterEach(() => {
    for (const k of ['CLOUDFLARE_API_TOKEN', 'CLOUDFLARE_API_KEY', 'CLOUDFLARE_EMAIL'])
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
  });

  it('Global API Key credentials send the key and email only, never a token from the environment', async () => {
    process.env.CLOUDFLARE_API_TOKEN = token; // what the SDK would add as Authorization on its own
    const cf = cloudflareClient({ apiKey: hexKey, apiEmail: email }, emulator.baseURL, undefined);
    expect((await zoneOf(cf)).id).toBe(zoneId);
    expect(emulator.log.list().map((r) => r.tokenId)).toEqual(['global-key']);
  });
});
