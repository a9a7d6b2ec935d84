/**
 * A bounded log of one sandbox's output (stdout and stderr interleaved as they arrive): keeps
 * the last `limit` bytes, dropping the oldest whole chunks (and cutting one if needed).
 *
 * Readers pull at their own pace (`read` from a position, `changed` to wait for more), so a
 * follower that stops reading only falls behind — it never makes anything grow: the memory is
 * the buffer's, whatever the readers do. A reader that fell behind what is kept skips to the
 * oldest kept byte and is told how much it missed.
 */
export const DEFAULT_LOG_LIMIT_BYTES = 1024 * 1024;

export class LogBuffer {
  private chunks: Buffer[] = [];
  private size = 0;
  private ended = false;
  private waiters: (() => void)[] = [];
  /** Bytes dropped from the front so far: the position of the oldest kept byte. */
  dropped = 0;

  constructor(readonly limit = DEFAULT_LOG_LIMIT_BYTES) {}

  append(chunk: Buffer): void {
    if (chunk.length === 0 || this.ended) return;
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.size > this.limit) {
      const first = this.chunks[0]!;
      const excess = this.size - this.limit;
      if (first.length <= excess) {
        this.chunks.shift();
        this.size -= first.length;
        this.dropped += first.length;
      } else {
        this.chunks[0] = first.subarray(excess);
        this.size -= excess;
        this.dropped += excess;
      }
    }
    this.wake();
  }

  /** What is kept now (at most `limit` bytes). */
  snapshot(): Buffer {
    return Buffer.concat(this.chunks, this.size);
  }

  /** The position after the last byte written so far. */
  get written(): number {
    return this.dropped + this.size;
  }

  get isEnded(): boolean {
    return this.ended;
  }

  /**
   * The bytes from position `from` on (at most `max`), the position after them, and how many bytes
   * before them were dropped unread (`from` older than what is kept).
   */
  read(from: number, max = 64 * 1024): { data: Buffer; next: number; missed: number } {
    const start = Math.max(from, this.dropped);
    let skip = start - this.dropped;
    const parts: Buffer[] = [];
    let taken = 0;
    for (const c of this.chunks) {
      if (skip >= c.length) {
        skip -= c.length;
        continue;
      }
      const part = c.subarray(skip, skip + (max - taken));
      skip = 0;
      parts.push(part);
      taken += part.length;
      if (taken >= max) break;
    }
    return { data: Buffer.concat(parts, taken), next: start + taken, missed: start - from };
  }

  /** Resolves when more is written or the log ends (or `signal` aborts). */
  changed(signal?: AbortSignal): Promise<void> {
    if (this.ended || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        signal?.removeEventListener('abort', done);
        resolve();
      };
      this.waiters.push(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  /** No more output will come (the process exited): readers waiting are told. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.wake();
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }
}
