/** Shared bench helpers: a private stack, percentiles, and a machine line for RESULTS.md. */
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalStack } from '../src/infra/stack.js';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export async function benchStack(name: string): Promise<LocalStack> {
  return LocalStack.start({ stateDir: path.join(REPO_ROOT, '.state', `bench-${name}`), mode: 'test', log: () => {} });
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export function summary(label: string, samples: number[], unit = 'ms'): string {
  const s = [...samples].sort((a, b) => a - b);
  const f = (n: number) => n.toFixed(1);
  return `${label}: n=${s.length} p50=${f(percentile(s, 50))}${unit} p90=${f(percentile(s, 90))}${unit} p99=${f(percentile(s, 99))}${unit} max=${f(s.at(-1) ?? NaN)}${unit}`;
}

export function machine(): string {
  return `${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), ${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}`;
}

/** Runs `fn` over `items` with at most `limit` in flight (the project's one helper for it). */
export { mapLimited as pool } from '../src/concurrency.js';

/** mulberry32: a fixed seed gives the same inputs, hence comparable figures, on every run. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Polls `fn` every `intervalMs` until it is true; throws after `timeoutMs` naming `what`. */
export async function until(
  what: string,
  fn: () => boolean | Promise<boolean>,
  timeoutMs = 300_000,
  intervalMs = 5,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
