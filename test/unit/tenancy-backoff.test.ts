import { describe, expect, it } from 'vitest';
import { ReconnectBackoff } from '../../src/tenancy/backoff.js';

describe('ReconnectBackoff', () => {
  it('starts at 1 s, grows ×1.5, caps at 30 s', () => {
    const b = new ReconnectBackoff();
    const delays = Array.from({ length: 12 }, () => b.next());
    expect(delays).toEqual([1000, 1500, 2250, 3375, 5063, 7595, 11393, 17090, 25635, 30000, 30000, 30000]);
  });

  it('goes back to 1 s after a reset (a success)', () => {
    const b = new ReconnectBackoff();
    b.next();
    b.next();
    b.next();
    b.reset();
    expect(b.next()).toBe(1000);
    expect(b.next()).toBe(1500);
  });

  it('rejects a schedule that would not back off', () => {
    expect(() => new ReconnectBackoff({ initialMs: 0, maxMs: 10, multiplier: 2 })).toThrow();
    expect(() => new ReconnectBackoff({ initialMs: 10, maxMs: 5, multiplier: 2 })).toThrow();
    expect(() => new ReconnectBackoff({ initialMs: 10, maxMs: 50, multiplier: 0.5 })).toThrow();
  });
});
