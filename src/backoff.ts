/**
 * The one retry schedule of the long-running loops (watcher informer, tenant watch, workflow
 * dispatch): exponential with cockatiel's decorrelated jitter (Polly's "DecorrelatedJitterV2"),
 * so replicas that failed together do not retry together. A call site keeps its own loop, its
 * own stop condition and its own (abortable) sleep; this only says how long to wait.
 */
import { ExponentialBackoff, type IBackoff } from 'cockatiel';

export interface BackoffLimits {
  /** Scale of the first delay (its median is about this). */
  initialMs: number;
  /** No delay is longer. */
  maxMs: number;
  /** Growth per failed attempt; default 2. */
  multiplier?: number;
}

export class Backoff {
  private readonly schedule: ExponentialBackoff<unknown>;
  private current: IBackoff<unknown> | undefined;

  constructor(readonly limits: BackoffLimits) {
    const { initialMs, maxMs, multiplier = 2 } = limits;
    if (!(initialMs > 0 && maxMs >= initialMs && multiplier > 1)) {
      throw new Error(`invalid backoff ${JSON.stringify(limits)}`);
    }
    this.schedule = new ExponentialBackoff({ initialDelay: initialMs, maxDelay: maxMs, exponent: multiplier });
  }

  /** The delay before the next attempt (ms); each call moves one step further. */
  next(): number {
    this.current = (this.current ?? this.schedule).next(undefined);
    return Math.round(this.current.duration);
  }

  /** After a success: the next failure starts from the first step again. */
  reset(): void {
    this.current = undefined;
  }
}
