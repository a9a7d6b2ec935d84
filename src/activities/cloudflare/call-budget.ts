/**
 * The throttle of Cloudflare API calls (issue 23, D7). Cloudflare allows 1,200 requests per
 * 5 minutes **per user**, across all of that user's tokens, accounts and the dashboard, and a
 * breach blocks every call of the user for the next 5 minutes
 * (https://developers.cloudflare.com/fundamentals/api/reference/limits/). One activity can make
 * one call or hundreds, so counting activities (a task queue's rate limit) does not bound calls:
 * every call of the SDK clients made by the activities waits here first, in the client's `fetch`.
 *
 * - Per user: one token bucket per credential owner (credentials.ts `budgetKeyOf`), shared by
 *   every account and token of that owner served by this process.
 * - Across replicas: each replica takes an equal share of the budget — the limit times the
 *   headroom (default 80 %) divided by the number of worker replicas serving Cloudflare, which the
 *   workers read from Temporal (the pollers of the Cloudflare task queues, src/workers/
 *   cloudflare-accounts.ts). A bucket whose burst plus refill over a window is its share keeps any
 *   window of the sum of replicas under the limit. A replica that left is still counted until
 *   Temporal forgets its poller (minutes): the others are then more careful, never less.
 * - Changes first: waiting calls of a change (a user's edit, a tunnel's lifecycle) are served
 *   before those of a periodic observation, so a change never queues behind a resync of every
 *   target.
 * - A 429 Cloudflare still answers (another tool of the same user, the dashboard) holds every
 *   call of that user here until its Retry-After: retrying into a blocked user only extends the
 *   block.
 */

export type CallPriority = 'change' | 'observe';

export interface CallBudgetOptions {
  /** Cloudflare's limit per user: requests per window (default 1,200 per 5 minutes). */
  limit: { requests: number; windowMs: number };
  /** The fraction of the limit this installation may use (default 0.8: room for the dashboard, Terraform…). */
  share: number;
  /** How many worker replicas share the budget now (read again on every refill). */
  replicas?: () => number;
  now?: () => number;
}

/** Burst and refill of one replica's bucket: burst + rate × window = its share of the budget. */
export function bucketShape(
  limit: { requests: number; windowMs: number },
  share: number,
  replicas: number,
): { burst: number; perMs: number } {
  const mine = (limit.requests * share) / Math.max(1, replicas);
  const burst = Math.max(1, Math.floor(mine / 10));
  return { burst, perMs: Math.max(0, mine - burst) / limit.windowMs };
}

interface Waiter {
  priority: CallPriority;
  resolve: () => void;
  reject: (err: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: () => void;
}

class Bucket {
  tokens: number;
  at: number;
  blockedUntil = 0;
  readonly waiting: Waiter[] = [];
  timer: NodeJS.Timeout | undefined;
  constructor(tokens: number, at: number) {
    this.tokens = tokens;
    this.at = at;
  }
}

export class CallBudget {
  private readonly buckets = new Map<string, Bucket>();
  private readonly now: () => number;

  constructor(private readonly opts: CallBudgetOptions) {
    this.now = opts.now ?? Date.now;
  }

  private shape() {
    return bucketShape(this.opts.limit, this.opts.share, this.opts.replicas?.() ?? 1);
  }

  private bucket(key: string): Bucket {
    let b = this.buckets.get(key);
    if (!b) {
      b = new Bucket(this.shape().burst, this.now());
      this.buckets.set(key, b);
    }
    return b;
  }

  private refill(b: Bucket): void {
    const now = this.now();
    const { burst, perMs } = this.shape();
    b.tokens = Math.min(burst, b.tokens + (now - b.at) * perMs);
    b.at = now;
  }

  /** Waits until a call of `key` may go (changes before observations); rejects when `signal` aborts. */
  take(key: string, priority: CallPriority, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    const b = this.bucket(key);
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        priority,
        resolve,
        reject,
        signal,
        onAbort: () => {
          const i = b.waiting.indexOf(waiter);
          if (i >= 0) b.waiting.splice(i, 1);
          reject(signal!.reason);
        },
      };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      // Changes go ahead of every waiting observation, in arrival order among themselves.
      const at = priority === 'change' ? b.waiting.findIndex((w) => w.priority === 'observe') : -1;
      if (at < 0) b.waiting.push(waiter);
      else b.waiting.splice(at, 0, waiter);
      this.drain(key, b);
    });
  }

  /** Cloudflare answered 429 for `key`: no call of it goes before `retryAfterMs` from now. */
  block(key: string, retryAfterMs: number): void {
    const b = this.bucket(key);
    b.blockedUntil = Math.max(b.blockedUntil, this.now() + retryAfterMs);
    b.tokens = 0;
    this.drain(key, b);
  }

  /** Waiting calls per key (for tests and the bench). */
  waiting(key: string): number {
    return this.buckets.get(key)?.waiting.length ?? 0;
  }

  private drain(key: string, b: Bucket): void {
    if (b.timer) return;
    this.refill(b);
    const now = this.now();
    while (b.waiting.length > 0 && now >= b.blockedUntil && b.tokens >= 1) {
      b.tokens -= 1;
      const w = b.waiting.shift()!;
      w.signal?.removeEventListener('abort', w.onAbort);
      w.resolve();
    }
    if (b.waiting.length === 0) return;
    const { perMs } = this.shape();
    const untilToken = perMs > 0 ? Math.ceil((1 - b.tokens) / perMs) : 1_000;
    const wait = Math.max(1, b.blockedUntil - now, untilToken);
    b.timer = setTimeout(() => {
      b.timer = undefined;
      this.drain(key, b);
    }, wait);
  }
}
