/**
 * Authentication — an API token (`Authorization: Bearer <token>`) or a Global API Key
 * (`X-Auth-Key` with the account's `X-Auth-Email`) — and the request budget of the user a
 * credential belongs to. Credentials are configured up front; one may be limited to some accounts
 * (their zones included).
 */
import { CfErrors } from './envelope.js';

export interface TokenSpec {
  token: string;
  /** The token's identifier tag (what `/user/tokens/verify` returns); derived from the token if absent. */
  id?: string;
  status?: 'active' | 'disabled' | 'expired';
  /** Account ids the token may act on; absent = every account. */
  accounts?: string[];
  /**
   * Every permission of the token is a Read one (e.g. Zone:Read, Zone WAF:Read): reads pass and
   * every write answers 403/10000, as Cloudflare answers a token lacking the Edit permission.
   */
  readOnly?: boolean;
  /** The token's permissions (permissions.ts, e.g. `zone:read`, `rulesets:edit`); absent = all. */
  permissions?: string[];
  /**
   * The Cloudflare user the token belongs to: Cloudflare's budget is the user's, shared by all
   * their tokens (and the dashboard). Absent: a user of its own (a Global API Key's: its email).
   */
  user?: string;
  /**
   * Makes `token` a Global API Key of the user with this email: it authenticates only as
   * `X-Auth-Key` with this `X-Auth-Email` (never as a Bearer token), as Cloudflare's does.
   */
  email?: string;
}

export interface TokenRecord {
  token: string;
  id: string;
  status: 'active' | 'disabled' | 'expired';
  accounts?: ReadonlySet<string>;
  readOnly?: boolean;
  permissions?: ReadonlySet<string>;
  /** Whose budget the token spends (the token's id when its spec names no user). */
  user: string;
  /** A Global API Key's account email (the record is then a key, not a token). */
  email?: string;
}

/** The credentials of a request, as its headers carry them (absent: the header was not sent). */
export interface AuthHeaders {
  authorization?: string | undefined;
  /** `X-Auth-Key` */
  key?: string | undefined;
  /** `X-Auth-Email` */
  email?: string | undefined;
}

/**
 * The Global API Key formats: `cfk_` + 40 characters + a checksum, or (before 2026) 37–45
 * lowercase hex (developers.cloudflare.com/fundamentals/api/get-started/token-formats/).
 */
export const GLOBAL_API_KEY_FORMAT = /^(cfk_[A-Za-z0-9]{41,}|[0-9a-f]{37,45})$/;
const EMAIL_FORMAT = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** Budget of requests per user in a fixed window. Cloudflare's default: 1200 per 5 minutes. */
export interface RateLimitBudget {
  requests: number;
  windowSeconds: number;
}

export const CLOUDFLARE_DEFAULT_BUDGET: RateLimitBudget = { requests: 1200, windowSeconds: 300 };

export class TokenAuth {
  private readonly tokens = new Map<string, TokenRecord>();
  /** Global API Keys, by key. */
  private readonly keys = new Map<string, TokenRecord>();

  constructor(specs: readonly TokenSpec[]) {
    for (const spec of specs) this.add(spec);
  }

  add(spec: TokenSpec): void {
    if (!spec.token) throw new Error('a token must not be empty');
    if (spec.email !== undefined && !GLOBAL_API_KEY_FORMAT.test(spec.token))
      throw new Error('a Global API Key is cfk_ + 41 or more letters and digits, or 37–45 lowercase hex');
    const record: TokenRecord = {
      token: spec.token,
      id: spec.id ?? tokenId(spec.token),
      status: spec.status ?? 'active',
      ...(spec.accounts ? { accounts: new Set(spec.accounts) } : {}),
      ...(spec.readOnly ? { readOnly: true } : {}),
      ...(spec.permissions ? { permissions: new Set(spec.permissions) } : {}),
      user: spec.user ?? (spec.email ? `user:${spec.email.toLowerCase()}` : `token:${spec.id ?? tokenId(spec.token)}`),
      ...(spec.email !== undefined ? { email: spec.email } : {}),
    };
    (spec.email !== undefined ? this.keys : this.tokens).set(spec.token, record);
  }

  /**
   * The token behind an Authorization header, whatever its status; throws the real API's error
   * when the header is missing (400/9106) or malformed (400/6003 with 6111).
   */
  lookup(header: string | undefined): TokenRecord | undefined {
    if (header === undefined) throw CfErrors.missingAuthHeaders();
    const match = /^Bearer ([^\s]+)$/.exec(header.trim());
    if (!match?.[1]) throw CfErrors.malformedAuthorization();
    return this.tokens.get(match[1]);
  }

  /**
   * The active token or Global API Key a request authenticates with, or the real API's refusal:
   * a bad token 403/10000; a key without its email, or neither header, 400/9106; an email without
   * a key 400/9107; a key or email of the wrong format 400/6003 (6103, 6102 in the chain); a key
   * and email that are not a pair 403/9103.
   */
  authenticate(headers: AuthHeaders): TokenRecord {
    const { authorization, key, email } = headers;
    if (authorization !== undefined || (key === undefined && email === undefined)) {
      const record = this.lookup(authorization);
      if (!record || record.status !== 'active') throw CfErrors.authentication();
      return record;
    }
    if (key === undefined) throw CfErrors.missingAuthKey();
    if (email === undefined) throw CfErrors.missingAuthHeaders();
    if (!GLOBAL_API_KEY_FORMAT.test(key)) throw CfErrors.malformedAuthHeader(6103, 'X-Auth-Key');
    if (!EMAIL_FORMAT.test(email)) throw CfErrors.malformedAuthHeader(6102, 'X-Auth-Email');
    const record = this.keys.get(key);
    // The email is case-insensitive; a key of another user's email is not a pair.
    if (!record || record.email?.toLowerCase() !== email.toLowerCase() || record.status !== 'active')
      throw CfErrors.unknownAuthKey();
    return record;
  }
}

/** Whether the token may act on the account (403/10000 otherwise). */
export function authorizeAccount(token: TokenRecord, accountId: string): void {
  if (token.accounts && !token.accounts.has(accountId)) throw CfErrors.authentication();
}

/** Whether the token may make this request: a read-only token only reads (403/10000 otherwise). */
export function authorizeMethod(token: TokenRecord, method: string): void {
  if (token.readOnly && method !== 'GET' && method !== 'HEAD') throw CfErrors.authentication();
}

/** A stable 32-hex identifier tag for a token (not a secret: a hash prefix). */
export function tokenId(token: string): string {
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193;
  for (let i = 0; i < token.length; i++) {
    const c = token.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193) >>> 0;
    h2 = Math.imul(h2 ^ c, 0x811c9dc5) >>> 0;
  }
  return [h1, h2, (h1 ^ h2) >>> 0, Math.imul(h1, 31) >>> 0].map((n) => n.toString(16).padStart(8, '0')).join('');
}

export type RateDecision =
  | { allowed: true; remaining: number; resetSeconds: number }
  | { allowed: false; retryAfterSeconds: number; resetSeconds: number };

/**
 * Fixed-window request budget per key (a user). A breach blocks the key for a whole window from
 * then on, as Cloudflare does ("all API calls for the next five minutes will be blocked"):
 * https://developers.cloudflare.com/fundamentals/api/reference/limits/. `now` is injectable for tests.
 */
export class RateLimiter {
  private readonly windows = new Map<string, { start: number; used: number; blockedUntil?: number }>();

  constructor(
    private budget: RateLimitBudget,
    private readonly now: () => number = Date.now,
  ) {}

  get current(): RateLimitBudget {
    return { ...this.budget };
  }

  setBudget(budget: RateLimitBudget): void {
    this.budget = { ...budget };
    this.windows.clear();
  }

  reset(): void {
    this.windows.clear();
  }

  take(key: string): RateDecision {
    const now = this.now();
    const windowMs = this.budget.windowSeconds * 1000;
    let w = this.windows.get(key);
    if (w?.blockedUntil !== undefined && now < w.blockedUntil) {
      const left = Math.max(1, Math.ceil((w.blockedUntil - now) / 1000));
      return { allowed: false, retryAfterSeconds: left, resetSeconds: left };
    }
    if (!w || w.blockedUntil !== undefined || now - w.start >= windowMs) {
      w = { start: now, used: 0 };
      this.windows.set(key, w);
    }
    const resetSeconds = Math.max(1, Math.ceil((w.start + windowMs - now) / 1000));
    if (w.used >= this.budget.requests) {
      w.blockedUntil = now + windowMs;
      return { allowed: false, retryAfterSeconds: this.budget.windowSeconds, resetSeconds: this.budget.windowSeconds };
    }
    w.used++;
    return { allowed: true, remaining: this.budget.requests - w.used, resetSeconds };
  }

  /** The `Ratelimit` and `Ratelimit-Policy` headers Cloudflare sends. */
  headers(decision: RateDecision): Record<string, string> {
    const remaining = decision.allowed ? decision.remaining : 0;
    return {
      ratelimit: `"default";r=${remaining};t=${decision.resetSeconds}`,
      'ratelimit-policy': `"burst";q=${this.budget.requests};w=${this.budget.windowSeconds}`,
    };
  }
}
