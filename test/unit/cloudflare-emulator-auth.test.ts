import { describe, expect, it } from 'vitest';
import { authorizeAccount, authorizeMethod, RateLimiter, TokenAuth, tokenId } from '../emulators/cloudflare/auth.js';
import { ApiError } from '../emulators/cloudflare/envelope.js';

function errorOf(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('expected an ApiError');
}

describe('token auth', () => {
  const auth = new TokenAuth([
    { token: 'good' },
    { token: 'off', status: 'disabled' },
    { token: 'acct', accounts: ['a1'] },
    { token: 'reader', readOnly: true },
  ]);

  const bearer = (authorization: string | undefined) => auth.authenticate({ authorization });

  it('accepts a configured active bearer token', () => {
    expect(bearer('Bearer good')).toMatchObject({ token: 'good', status: 'active', id: tokenId('good') });
  });

  it('refuses unknown and disabled tokens with 403 / 10000', () => {
    for (const header of ['Bearer bad', 'Bearer off']) {
      const err = errorOf(() => bearer(header));
      expect(err.status).toBe(403);
      expect(err.errors).toEqual([{ code: 10000, message: 'Authentication error' }]);
    }
  });

  it('refuses a malformed header with 400 / 6003 (6111 in the chain), no credentials at all with 400 / 9106', () => {
    for (const header of ['', 'Basic abc', 'Bearer']) {
      const err = errorOf(() => bearer(header));
      expect(err.status).toBe(400);
      expect(err.errors[0]?.code).toBe(6003);
      expect(err.errors[0]?.error_chain?.[0]?.code).toBe(6111);
    }
    const none = errorOf(() => bearer(undefined));
    expect(none.status).toBe(400);
    expect(none.errors).toEqual([{ code: 9106, message: 'Missing X-Auth-Key, X-Auth-Email or Authorization headers' }]);
  });

  it('limits an account-scoped token to its accounts', () => {
    const token = bearer('Bearer acct');
    expect(() => authorizeAccount(token, 'a1')).not.toThrow();
    expect(errorOf(() => authorizeAccount(token, 'a2')).status).toBe(403);
    expect(() => authorizeAccount(bearer('Bearer good'), 'a2')).not.toThrow();
  });

  it('a read-only token reads, and every write answers 403 / 10000 as a token without Edit does', () => {
    const reader = bearer('Bearer reader');
    expect(() => authorizeMethod(reader, 'GET')).not.toThrow();
    for (const method of ['PUT', 'POST', 'PATCH', 'DELETE']) {
      const err = errorOf(() => authorizeMethod(reader, method));
      expect(err.status).toBe(403);
      expect(err.errors).toEqual([{ code: 10000, message: 'Authentication error' }]);
    }
    expect(() => authorizeMethod(bearer('Bearer good'), 'PUT')).not.toThrow();
  });

  it('token ids are stable 32-hex tags', () => {
    expect(tokenId('x')).toMatch(/^[0-9a-f]{32}$/);
    expect(tokenId('x')).toBe(tokenId('x'));
    expect(tokenId('x')).not.toBe(tokenId('y'));
  });
});

describe('rate limiter', () => {
  it('allows the budget per key per window; a breach blocks the key for a whole window from then on', () => {
    let now = 0;
    const limiter = new RateLimiter({ requests: 2, windowSeconds: 10 }, () => now);
    expect(limiter.take('t')).toMatchObject({ allowed: true, remaining: 1 });
    expect(limiter.take('t')).toMatchObject({ allowed: true, remaining: 0 });
    now = 2_500;
    expect(limiter.take('t')).toEqual({ allowed: false, retryAfterSeconds: 10, resetSeconds: 10 });
    expect(limiter.take('other')).toMatchObject({ allowed: true });
    now = 10_000; // the window has ended, the block (from 2.5 s) has not
    expect(limiter.take('t')).toEqual({ allowed: false, retryAfterSeconds: 3, resetSeconds: 3 });
    now = 12_500;
    expect(limiter.take('t')).toMatchObject({ allowed: true, remaining: 1 });
  });

  it('sends the Ratelimit and Ratelimit-Policy headers', () => {
    const limiter = new RateLimiter({ requests: 5, windowSeconds: 60 }, () => 0);
    expect(limiter.headers(limiter.take('t'))).toEqual({
      ratelimit: '"default";r=4;t=60',
      'ratelimit-policy': '"burst";q=5;w=60',
    });
  });

  it('a new budget starts fresh windows', () => {
    const limiter = new RateLimiter({ requests: 1, windowSeconds: 60 }, () => 0);
    limiter.take('t');
    expect(limiter.take('t').allowed).toBe(false);
    limiter.setBudget({ requests: 3, windowSeconds: 60 });
    expect(limiter.take('t').allowed).toBe(true);
  });
});
