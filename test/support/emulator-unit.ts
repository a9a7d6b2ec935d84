/**
 * The emulator's routes driven in-process, without HTTP: a fresh seeded `EmulatorStore` before
 * each test, an active token, `dispatch` on it, and the API error of a call.
 */
import Cloudflare from 'cloudflare';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import type { TokenRecord } from '../emulators/cloudflare/auth.js';
import { ApiError } from '../emulators/cloudflare/envelope.js';
import { startCloudflareEmulator, type RunningEmulator } from '../emulators/cloudflare/index.js';
import { dispatch } from '../emulators/cloudflare/routes/index.js';
import { EmulatorStore, type SeedDocument } from '../emulators/cloudflare/store.js';

export const TOKEN: TokenRecord = { token: 't', id: 'tid', status: 'active', user: 'token:tid' };

/** The status and first error code of the `ApiError` `fn` throws (fails when it throws none). */
export function errorOf(fn: () => unknown): { status: number; code: number | undefined } {
  try {
    fn();
  } catch (err) {
    if (err instanceof ApiError) return { status: err.status, code: err.errors[0]?.code };
    throw err;
  }
  throw new Error('expected an ApiError');
}

export interface EmulatorUnit {
  /** This test's store (a new one, seeded, before each test). */
  readonly store: EmulatorStore;
  /** `dispatch` on this test's store with `TOKEN` (or `token`); `path` is taken as is. */
  dispatch(method: string, path: string, body?: unknown, token?: TokenRecord): ReturnType<typeof dispatch>;
  /** The `result` of a request to `prefix` + `path`. */
  call<T = Record<string, unknown>>(method: string, path: string, body?: unknown): T;
}

/** Registers a `beforeEach` that makes a new store seeded with `seed`; requests go under `prefix`. */
export function emulatorUnit(seed: SeedDocument, prefix = ''): EmulatorUnit {
  let current: EmulatorStore | undefined;
  beforeEach(() => {
    current = new EmulatorStore();
    current.seed(structuredClone(seed));
  });
  const store = (): EmulatorStore => {
    if (!current) throw new Error('the emulator store exists only inside a test');
    return current;
  };
  return {
    get store() {
      return store();
    },
    dispatch: (method, path, body, token = TOKEN) => dispatch(store(), token, method, path, body),
    call: <T>(method: string, path: string, body?: unknown) =>
      dispatch(store(), TOKEN, method, `${prefix}${path}`, body).result as T,
  };
}

/**
 * The emulator as an HTTP server with one account and a token, and the real SDK on it (no
 * retries): started before the file's tests and closed after them — for tests of what
 * Cloudflare answers through the SDK.
 */
export function emulatorThroughSdk(account: string): { readonly cf: Cloudflare; readonly emulator: RunningEmulator } {
  let emulator: RunningEmulator | undefined;
  let cf: Cloudflare | undefined;
  beforeAll(async () => {
    emulator = await startCloudflareEmulator({ tokens: [{ token: 'good' }], seed: { accounts: [{ id: account }] } });
    cf = new Cloudflare({ apiToken: 'good', baseURL: emulator.baseURL, maxRetries: 0 });
  });
  afterAll(() => emulator?.close());
  return {
    get cf() {
      return cf!;
    },
    get emulator() {
      return emulator!;
    },
  };
}
