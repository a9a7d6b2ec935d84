import { describe, expect, it } from 'vitest';
import { parseGoDuration } from '../../src/domain/duration.js';

describe('parseGoDuration', () => {
  it.each([
    ['4s', 4000],
    ['1h30m', 5_400_000],
    ['1.5h', 5_400_000],
    ['168h', 604_800_000],
    ['250ms', 250],
    ['2m3s', 123_000],
  ])('%s = %d ms', (text, ms) => expect(parseGoDuration(text)).toBe(ms));

  it.each(['', '10', 'h', '5 s', '1d', '-5s', '5s garbage'])('rejects %j', (text) => {
    expect(() => parseGoDuration(text)).toThrow(/invalid duration/);
  });
});
