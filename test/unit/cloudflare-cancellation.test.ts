/**
 * Cancellation reaches the SDK's calls (issue 23, D8): a client made in an activity carries the
 * activity's cancellation signal (src/activities/cloudflare/credentials.ts), so an attempt
 * Temporal cancelled or timed out stops its request at once instead of writing next to its retry.
 * Cloudflare is the emulator, with a 10 s latency on the call.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cloudflareClient } from '../../src/activities/cloudflare/credentials.js';
import { EmulatorAdmin, startCloudflareEmulator, type RunningEmulator } from '../emulators/cloudflare/index.js';

let emulator: RunningEmulator;
let admin: EmulatorAdmin;

beforeAll(async () => {
  emulator = await startCloudflareEmulator({ tokens: [{ token: 'tok' }] });
  admin = new EmulatorAdmin(emulator.url, emulator.adminToken);
  await admin.addFault({ path: '^/user/tokens/verify$', latencyMs: 10_000 });
});
afterAll(() => emulator?.close());

it('an aborted signal stops the SDK call in flight, long before the answer would come', async () => {
  const controller = new AbortController();
  const cf = cloudflareClient({ apiToken: 'tok' }, emulator.baseURL, controller.signal);
  const started = Date.now();
  const call = cf.user.tokens.verify().then(
    () => 'answered',
    (e: unknown) => `${(e as Error).constructor.name}: ${(e as Error).message}`,
  );
  setTimeout(() => controller.abort(), 200);
  // The SDK reports its aborted request as a connection timeout; what counts is that it stopped.
  expect(await call).toMatch(/APIConnectionTimeoutError|APIUserAbortError/);
  expect(Date.now() - started).toBeLessThan(3_000);
});

it('without a signal (outside an activity) the client works as before', async () => {
  await admin.clearFaults();
  const cf = cloudflareClient({ apiToken: 'tok' }, emulator.baseURL, undefined);
  expect((await cf.user.tokens.verify()).status).toBe('active');
});
