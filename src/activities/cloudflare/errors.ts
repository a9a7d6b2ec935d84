/**
 * The one place Cloudflare API errors are classified, by HTTP status and Cloudflare error code
 * (never by message text — the original's substring matching misfiled errors). The SDK runs with
 * its own retries off; Temporal's retry policy owns retries:
 *
 * - 429 (codes 971, 10300): retryable `CloudflareRateLimited`, next attempt after `Retry-After`.
 * - 5xx, 408, 409, connection errors and timeouts: retryable `CloudflareUnavailable` (a create
 *   whose name is taken — 409 — is the caller's to decide first: `isCloudflareNameTaken`).
 * - 401/403 and the auth codes (10000, 9109, 6003/6111…): non-retryable `CloudflareAuth`.
 * - 400/422 (invalid expression, bad field): non-retryable `CloudflareInvalid`.
 * - 404: non-retryable `CloudflareNotFound` (callers that expect a 404 catch it before this).
 *
 * The message carries Cloudflare's own codes and messages, which end up on the SyncState's and
 * the sources' status; never the request headers (the token).
 */
import { ApplicationFailure } from '@temporalio/common';
import Cloudflare from 'cloudflare';

export const CLOUDFLARE_FAILURE_TYPES = {
  rateLimited: 'CloudflareRateLimited',
  unavailable: 'CloudflareUnavailable',
  auth: 'CloudflareAuth',
  invalid: 'CloudflareInvalid',
  notFound: 'CloudflareNotFound',
} as const;

/** Whether a Cloudflare call answered 404 (for callers to whom "not there" is an answer, not a failure). */
export function isCloudflareNotFound(err: unknown): boolean {
  return (err as { status?: number } | undefined)?.status === 404;
}

/**
 * Whether a create was refused because the name is taken (409, e.g. a tunnel: code 1013). The
 * object is someone else's — never ours to adopt — so the caller decides, not a retry.
 */
export function isCloudflareNameTaken(err: unknown): boolean {
  return err instanceof Cloudflare.APIError && err.status === 409;
}

/**
 * Whether Cloudflare answered a request with a refusal that did nothing (a 4xx but 408): a create
 * so refused made no object. A timeout, a 5xx or a lost connection may have made one.
 */
export function isCloudflareRefusal(err: unknown): boolean {
  return err instanceof Cloudflare.APIError && err.status >= 400 && err.status < 500 && err.status !== 408;
}

/**
 * Whether Cloudflare refused to delete a tunnel because connectors still hold connections to it
 * (code 1022): it accepts the delete once they are gone — the caller retries, never gives up.
 */
export function isCloudflareTunnelBusy(err: unknown): boolean {
  return err instanceof Cloudflare.APIError && err.status === 400 && (err.errors ?? []).some((e) => e.code === 1022);
}

/** The call's answer, or undefined when Cloudflare has no such object (404); other errors pass. */
export const unlessNotFound = <T>(call: Promise<T>): Promise<T | undefined> =>
  call.catch((err: unknown) => (isCloudflareNotFound(err) ? undefined : Promise.reject(err)));

/** The SyncState's `failureReason` for a non-retryable failure type (the original's vocabulary). */
export function failureReasonOf(type: string | undefined): string {
  switch (type) {
    case CLOUDFLARE_FAILURE_TYPES.auth:
      return 'AuthError';
    case CLOUDFLARE_FAILURE_TYPES.invalid:
      return 'ValidationError';
    case CLOUDFLARE_FAILURE_TYPES.notFound:
      return 'NotFound';
    default:
      return 'NonRetryable';
  }
}

const AUTH_CODES = new Set([10000, 10001, 9103, 9106, 9109, 6003, 6102, 6103, 6111]);
const RATE_LIMIT_CODES = new Set([971, 10300]);

/** `Retry-After` (seconds or an HTTP date) or `retry-after-ms`, in milliseconds. */
export function retryAfterMs(headers: Headers | undefined, now = Date.now()): number | undefined {
  const ms = Number(headers?.get('retry-after-ms'));
  if (Number.isFinite(ms) && ms > 0) return ms;
  const raw = headers?.get('retry-after');
  if (!raw) return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(raw);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** `[code] message; [code] message` from the envelope's errors[] (and their error_chain). */
export function cloudflareMessages(err: InstanceType<typeof Cloudflare.APIError>): string {
  const parts: string[] = [];
  for (const e of err.errors ?? []) {
    const chain = (e as { error_chain?: { code: number; message: string }[] }).error_chain ?? [];
    parts.push(`[${e.code}] ${e.message}`, ...chain.map((c) => `[${c.code}] ${c.message}`));
  }
  return parts.join('; ') || `HTTP ${err.status ?? 'error'}`;
}

/** `needs`: the permission the failed call needs (domain/cloudflare/permissions.ts), named on a 403. */
export function cloudflareFailure(err: unknown, action: string, needs?: string): ApplicationFailure {
  if (err instanceof ApplicationFailure) return err;
  if (!(err instanceof Cloudflare.APIError)) {
    return ApplicationFailure.retryable(
      `${action}: ${(err as Error)?.message ?? String(err)}`,
      CLOUDFLARE_FAILURE_TYPES.unavailable,
    );
  }
  const status = err.status;
  const codes = (err.errors ?? []).map((e) => e.code);
  const message = `${action}: Cloudflare answered ${status ?? 'no response'}: ${
    status === undefined ? (err.message ?? 'connection failed') : cloudflareMessages(err)
  }`;
  if (status === 429 || codes.some((c) => c !== undefined && RATE_LIMIT_CODES.has(c))) {
    const wait = retryAfterMs(err.headers ?? undefined);
    return ApplicationFailure.create({
      message,
      type: CLOUDFLARE_FAILURE_TYPES.rateLimited,
      ...(wait !== undefined ? { nextRetryDelay: Math.max(wait, 100) } : {}),
    });
  }
  if (status === undefined || status >= 500 || status === 408 || status === 409)
    return ApplicationFailure.retryable(message, CLOUDFLARE_FAILURE_TYPES.unavailable);
  if (status === 401 || status === 403 || codes.some((c) => c !== undefined && AUTH_CODES.has(c)))
    // Cloudflare answers a missing permission as it answers a bad token ("Authentication
    // error"): say which it may be, so the status tells the user what to grant.
    return ApplicationFailure.nonRetryable(
      `${message} (the credentials' token is not valid, or lacks ${
        needs
          ? `the permission this call needs: ${needs} —`
          : 'the permission this call needs — e.g. Edit where it may only Read —'
      } or access to this account or zone)`,
      CLOUDFLARE_FAILURE_TYPES.auth,
    );
  if (status === 404) return ApplicationFailure.nonRetryable(message, CLOUDFLARE_FAILURE_TYPES.notFound);
  return ApplicationFailure.nonRetryable(message, CLOUDFLARE_FAILURE_TYPES.invalid);
}
