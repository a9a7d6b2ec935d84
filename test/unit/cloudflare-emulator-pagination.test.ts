import { describe, expect, it } from 'vitest';
import { ApiError } from '../emulators/cloudflare/envelope.js';
import { paginateCursor, paginatePage } from '../emulators/cloudflare/pagination.js';
import { nameMatches } from '../emulators/cloudflare/routes/zones.js';

const limits = { defaultPerPage: 20, minPerPage: 5, maxPerPage: 50 };
const items = Array.from({ length: 12 }, (_, i) => i);
const q = (s: string) => new URLSearchParams(s);

describe('page pagination', () => {
  it('slices pages and reports result_info', () => {
    expect(paginatePage(items, q('page=2&per_page=5'), limits)).toEqual({
      result: [5, 6, 7, 8, 9],
      result_info: { page: 2, per_page: 5, count: 5, total_count: 12, total_pages: 3 },
    });
    expect(paginatePage(items, q('page=3&per_page=5'), limits).result).toEqual([10, 11]);
  });

  it('a page past the end is an empty result (the SDK stops on it)', () => {
    expect(paginatePage(items, q('page=4&per_page=5'), limits)).toEqual({
      result: [],
      result_info: { page: 4, per_page: 5, count: 0, total_count: 12, total_pages: 3 },
    });
  });

  it('defaults and clamps per_page', () => {
    expect(paginatePage(items, q(''), limits).result_info.per_page).toBe(20);
    expect(paginatePage(items, q('per_page=1'), limits).result_info.per_page).toBe(5);
    expect(paginatePage(items, q('per_page=500'), limits).result_info.per_page).toBe(50);
  });

  it('walking page+1 until empty yields every item once', () => {
    const seen: number[] = [];
    for (let page = 1; ; page++) {
      const { result } = paginatePage(items, q(`page=${page}&per_page=5`), limits);
      if (result.length === 0) break;
      seen.push(...result);
    }
    expect(seen).toEqual(items);
  });

  it('rejects a non-positive page with a 400', () => {
    expect(() => paginatePage(items, q('page=0'), limits)).toThrow(ApiError);
    expect(() => paginatePage(items, q('page=x'), limits)).toThrow(ApiError);
  });
});

describe('cursor pagination', () => {
  it('follows result_info.cursor and leaves it out on the last page', () => {
    const seen: number[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const { result, result_info } = paginateCursor(
        items,
        q(`per_page=5${cursor ? `&cursor=${cursor}` : ''}`),
        limits,
      );
      seen.push(...result);
      cursor = result_info.cursor;
      pages++;
    } while (cursor);
    expect(seen).toEqual(items);
    expect(pages).toBe(3);
  });

  it('rejects a forged cursor', () => {
    expect(() => paginateCursor(items, q('cursor=bm9wZQ'), limits)).toThrow(ApiError);
  });
});

describe("the zone list's name filter (the API's operators)", () => {
  it('equal by default; `ends_with:` and the others as Cloudflare documents them', () => {
    expect(nameMatches('example.com', 'example.com')).toBe(true);
    expect(nameMatches('sub.example.com', 'example.com')).toBe(false);
    expect(nameMatches('sub.example.com', 'ends_with:example.com')).toBe(true);
    expect(nameMatches('notexample.com', 'ends_with:example.com')).toBe(true); // a suffix of text, not of labels
    expect(nameMatches('example.org', 'ends_with:example.com')).toBe(false);
    expect(nameMatches('Example.com', 'ends_with:example.COM')).toBe(true);
    expect(nameMatches('Example.com', 'ends_with_case_sensitive:example.com')).toBe(false);
    expect(nameMatches('example.com', 'starts_with:exam')).toBe(true);
    expect(nameMatches('example.com', 'contains:ample')).toBe(true);
    expect(nameMatches('example.com', 'not_equal:example.com')).toBe(false);
  });
});
