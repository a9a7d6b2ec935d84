/**
 * A bounded log of one sandbox's output (stdout and stderr interleaved as they arrive): keeps
 * the last `limit` bytes, drops the oldest whole chunks (and cuts one if needed), and tells
 * followers about each new chunk and about the end.
 */
export const DEFAULT_LOG_LIMIT_BYTES = 1024 * 1024;

export interface LogFollower {
  data(chunk: Buffer): void;
  end(): void;
}

export class LogBuffer {
  private chunks: Buffer[] = [];
  private size = 0;
  private followers = new Set<LogFollower>();
  private ended = false;
  /** Bytes dropped from the front so far. */
  dropped = 0;

  constructor(readonly limit = DEFAULT_LOG_LIMIT_BYTES) {}

  append(chunk: Buffer): void {
    if (chunk.length === 0 || this.ended) return;
    for (const f of this.followers) f.data(chunk);
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
  }

  /** What is kept now (at most `limit` bytes). */
  snapshot(): Buffer {
    return Buffer.concat(this.chunks, this.size);
  }

  get isEnded(): boolean {
    return this.ended;
  }

  /** No more output will come (the process exited): followers are told and let go. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    for (const f of this.followers) f.end();
    this.followers.clear();
  }

  /** Follow new output; returns how to stop. Ends at once when the log already has. */
  follow(f: LogFollower): () => void {
    if (this.ended) {
      f.end();
      return () => {};
    }
    this.followers.add(f);
    return () => this.followers.delete(f);
  }
}
