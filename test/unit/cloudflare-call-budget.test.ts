/**
 * The Cloudflare call budget (issue 23, D7): a token bucket per credentials' owner whose burst
 * plus refill over a window is this replica's share of the limit, changes served before
 * observations, and a 429 holding every call of the owner until its Retry-After.
 */
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { CallBudget, bucketShape } from '../../src/activities/cloudflare/call-budget.js';

const limit = { requests: 1200, windowMs: 300_000 };

beforeEach(() => vi.useFakeTimers({ now: 0 }));
afterEach(() => vi.useRealTimers());

/** Starts `n` calls of `key` and counts those let through after `ms` of fake time. */
async function passedAfter(budget: CallBudget, key: string, n: number, ms: number): Promise<number> {
  let passed = 0;
  for (let i = 0; i < n; i++) void budget.take(key, 'observe').then(() => passed++);
  await vi.advanceTimersByTimeAsync(ms);
  return passed;
}

it("a window's calls stay within the share: 80 % of 1,200 per 5 minutes, halved by two replicas", async () => {
  expect(bucketShape(limit, 0.8, 1)).toEqual({ burst: 96, perMs: 864 / 300_000 });
  const one = new CallBudget({ limit, share: 0.8, now: Date.now });
  expect(await passedAfter(one, 'alice', 2_000, 300_000)).toBeLessThanOrEqual(960);
  const half = new CallBudget({ limit, share: 0.8, replicas: () => 2, now: Date.now });
  expect(await passedAfter(half, 'alice', 2_000, 300_000)).toBeLessThanOrEqual(480);
});

it("owners have budgets of their own: one owner's backlog does not hold another's calls", async () => {
  const budget = new CallBudget({ limit: { requests: 10, windowMs: 10_000 }, share: 1, now: Date.now });
  void passedAfter(budget, 'alice', 50, 0);
  let bob = false;
  void budget.take('bob', 'change').then(() => (bob = true));
  await vi.advanceTimersByTimeAsync(0);
  expect(bob).toBe(true);
  expect(budget.waiting('alice')).toBeGreaterThan(40);
});

it('a change waiting goes before every observation waiting, whatever came first', async () => {
  const budget = new CallBudget({ limit: { requests: 10, windowMs: 10_000 }, share: 1, now: Date.now });
  const order: string[] = [];
  for (let i = 0; i < 5; i++) void budget.take('alice', 'observe').then(() => order.push(`observe${i}`));
  await vi.advanceTimersByTimeAsync(0); // the burst (1) went to the first observation
  void budget.take('alice', 'change').then(() => order.push('change'));
  await vi.advanceTimersByTimeAsync(10_000);
  expect(order.slice(0, 2)).toEqual(['observe0', 'change']);
});

it('a 429 holds every call of the owner until its Retry-After; an aborted wait leaves the queue', async () => {
  const budget = new CallBudget({ limit, share: 0.8, now: Date.now });
  budget.block('alice', 60_000);
  let passed = false;
  void budget.take('alice', 'change').then(() => (passed = true));
  const aborted = new AbortController();
  const gone = budget.take('alice', 'change', aborted.signal).catch(() => 'aborted');
  aborted.abort();
  expect(await gone).toBe('aborted');
  await vi.advanceTimersByTimeAsync(59_000);
  expect(passed).toBe(false);
  await vi.advanceTimersByTimeAsync(1_500);
  expect(passed).toBe(true);
  expect(budget.waiting('alice')).toBe(0);
});
