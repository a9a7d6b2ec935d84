/**
 * A write refused for a missing token permission is reported so the user knows what to grant:
 * Cloudflare answers it as it answers a bad token (403, 10000 "Authentication error").
 */
import Cloudflare from 'cloudflare';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLOUDFLARE_FAILURE_TYPES, cloudflareFailure } from '../../src/activities/cloudflare/errors.js';
import { startCloudflareEmulator, type RunningEmulator } from '../emulators/cloudflare/index.js';

const zoneId = 'z'.repeat(32);
let emulator: RunningEmulator;

beforeAll(async () => {
  emulator = await startCloudflareEmulator({
    tokens: [{ token: 'rules-reader', permissions: ['zone:read', 'rulesets:read'] }],
    seed: { zones: [{ id: zoneId, name: 'a.example', account_id: 'a'.repeat(32) }] },
  });
});
afterAll(() => emulator?.close());

describe('cloudflareFailure of a write the token may not make', () => {
  it("is a non-retryable CloudflareAuth naming Cloudflare's answer and the missing permission", async () => {
    const cf = new Cloudflare({ apiToken: 'rules-reader', baseURL: emulator.baseURL, maxRetries: 0 });
    const err = await cf.rulesets.phases
      .update('http_request_firewall_custom', { zone_id: zoneId, rules: [] })
      .catch((e: unknown) => e);
    const failure = cloudflareFailure(err, 'write ruleset');
    expect(failure.type).toBe(CLOUDFLARE_FAILURE_TYPES.auth);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toContain('Cloudflare answered 403: [10000] Authentication error');
    expect(failure.message).toContain('lacks the permission this call needs');
    expect(failure.message).not.toContain('rules-reader');
  });
});
