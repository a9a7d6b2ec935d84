import { describe, expect, it } from 'vitest';
import { Backoff } from '../../src/backoff.js';

const steps = (b: Backoff, n: number) => Array.from({ length: n }, () => b.next());

describe('Backoff', () => {
  it('jitters: two schedules with the same limits differ, and every delay stays within [0, max]', () => {
    const limits = { initialMs: 1000, maxMs: 30_000 };
    const a = steps(new Backoff(limits), 20);
    const b = steps(new Backoff(limits), 20);
    expect(a).not.toEqual(b);
    for (const d of [...a, ...b]) {
      expect(d).toBeGreaterThanOrEqual(0);
      expect(d).toBeLessThanOrEqual(30_000);
    }
  });

  it('grows with the multiplier: the total wait after n failures follows initial × multiplier^n', () => {
    // Uncapped, decorrelated jitter telescopes: the sum of the first n delays is
    // initial/1.4 × m^t × tanh(√4t) with t in [n-1, n) — so it stays between these bounds.
    for (const multiplier of [1.5, 2]) {
      for (let run = 0; run < 50; run++) {
        const total = steps(new Backoff({ initialMs: 1000, maxMs: 1e12, multiplier }), 8).reduce((s, d) => s + d, 0);
        expect(total).toBeGreaterThanOrEqual((1000 / 1.4) * multiplier ** 7 * Math.tanh(Math.sqrt(28)) - 8);
        expect(total).toBeLessThanOrEqual((1000 / 1.4) * multiplier ** 8 + 8);
      }
    }
  });

  it('reaches the cap and stays under it', () => {
    const b = new Backoff({ initialMs: 250, maxMs: 10_000 });
    const late = steps(b, 60).slice(30);
    expect(Math.max(...late)).toBe(10_000);
    expect(late.filter((d) => d === 10_000).length).toBeGreaterThan(20);
  });

  it('starts over after a reset (a success)', () => {
    const b = new Backoff({ initialMs: 1000, maxMs: 30_000 });
    steps(b, 30); // at the cap by now
    b.reset();
    // The first step of a fresh schedule is at most initial × 2 × tanh(2) / 1.4 ≈ 1.38 s.
    expect(b.next()).toBeLessThanOrEqual(1380);
  });

  it('rejects a schedule that would not back off', () => {
    expect(() => new Backoff({ initialMs: 0, maxMs: 10 })).toThrow();
    expect(() => new Backoff({ initialMs: 10, maxMs: 5 })).toThrow();
    expect(() => new Backoff({ initialMs: 10, maxMs: 50, multiplier: 1 })).toThrow();
  });
});
