/**
 * Maps `items` with at most `limit` calls of `fn` in flight, keeping their order in the result.
 * The one bounded-concurrency helper (admission reviews, checkpoint chunk reads, benchmarks).
 */
export async function mapLimited<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  });
  await Promise.all(lanes);
  return out;
}

/**
 * Writes `chunk` and, when the stream's buffer is full, waits until it drains (or closes): a
 * producer that awaits this goes at its reader's pace, and a reader that stops reading pauses it
 * instead of growing a buffer. The one place that honours `write()`'s answer for streamed replies.
 */
export async function writeWithBackpressure(
  stream: {
    write(chunk: unknown): boolean;
    once(event: string, f: () => void): unknown;
    off(event: string, f: () => void): unknown;
  },
  chunk: unknown,
): Promise<void> {
  if (stream.write(chunk)) return;
  await new Promise<void>((resolve) => {
    const done = () => {
      stream.off('drain', done);
      stream.off('close', done);
      resolve();
    };
    stream.once('drain', done);
    stream.once('close', done);
  });
}
