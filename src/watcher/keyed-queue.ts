/**
 * Runs tasks with bounded concurrency while keeping tasks of the same key in order (events of
 * one object are dispatched in the order they were seen; different objects run in parallel).
 */
export class KeyedQueue {
  private readonly tails = new Map<string, Promise<void>>();
  private running = 0;
  private pending = 0;
  private readonly slots: Array<() => void> = [];
  private idleWaiters: Array<() => void> = [];

  constructor(
    private readonly concurrency: number,
    private readonly onDepth: (depth: number) => void = () => {},
  ) {}

  get depth(): number {
    return this.pending;
  }

  push(key: string, task: () => Promise<void>): void {
    this.pending++;
    this.onDepth(this.pending);
    const prev = this.tails.get(key) ?? Promise.resolve();
    const next = prev.then(() => this.withSlot(task));
    this.tails.set(key, next);
    void next.finally(() => {
      if (this.tails.get(key) === next) this.tails.delete(key);
      this.pending--;
      this.onDepth(this.pending);
      if (this.pending === 0) for (const w of this.idleWaiters.splice(0)) w();
    });
  }

  onIdle(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private async withSlot(task: () => Promise<void>): Promise<void> {
    if (this.running >= this.concurrency) await new Promise<void>((r) => this.slots.push(r));
    this.running++;
    try {
      await task();
    } catch {
      // Tasks handle their own errors; a throw here must not break the key's chain.
    } finally {
      this.running--;
      this.slots.shift()?.();
    }
  }
}
