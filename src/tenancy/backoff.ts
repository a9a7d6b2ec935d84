/**
 * The reconnect schedule of the etcd watch: 1 s, then ×1.5 per failed attempt up to 30 s, back
 * to 1 s after a success (the original provider's constants).
 */
export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
  multiplier: number;
}

export const WATCH_BACKOFF: BackoffOptions = Object.freeze({ initialMs: 1000, maxMs: 30_000, multiplier: 1.5 });

export class ReconnectBackoff {
  private nextMs: number;

  constructor(readonly options: BackoffOptions = WATCH_BACKOFF) {
    if (!(options.initialMs > 0 && options.maxMs >= options.initialMs && options.multiplier >= 1)) {
      throw new Error(`invalid backoff ${JSON.stringify(options)}`);
    }
    this.nextMs = options.initialMs;
  }

  /** The delay before the next attempt; each call lengthens the following one. */
  next(): number {
    const delay = this.nextMs;
    this.nextMs = Math.min(Math.round(delay * this.options.multiplier), this.options.maxMs);
    return delay;
  }

  reset(): void {
    this.nextMs = this.options.initialMs;
  }
}
