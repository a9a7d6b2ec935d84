/**
 * Page and cursor pagination as the official SDK iterates them. Page lists (V4PagePaginationArray)
 * ask for page+1 until a page comes back empty, so a page past the end answers `result: []`.
 * Cursor lists (CursorPagination) follow `result_info.cursor` and stop when it is absent.
 */
import { CfErrors, type ResultInfo } from './envelope.js';

export interface PageLimits {
  defaultPerPage: number;
  minPerPage: number;
  maxPerPage: number;
}

function positiveInt(query: URLSearchParams, name: string): number | undefined {
  const raw = query.get(name);
  if (raw === null || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw CfErrors.invalidBody([`${name} must be a positive integer`]);
  return n;
}

export function paginatePage<T>(
  items: readonly T[],
  query: URLSearchParams,
  limits: PageLimits,
): { result: T[]; result_info: ResultInfo } {
  const page = positiveInt(query, 'page') ?? 1;
  const asked = positiveInt(query, 'per_page') ?? limits.defaultPerPage;
  const perPage = Math.min(limits.maxPerPage, Math.max(limits.minPerPage, asked));
  const result = items.slice((page - 1) * perPage, page * perPage);
  return {
    result,
    result_info: {
      page,
      per_page: perPage,
      count: result.length,
      total_count: items.length,
      total_pages: Math.ceil(items.length / perPage),
    },
  };
}

function encodeCursor(offset: number): string {
  return Buffer.from(`o:${offset}`).toString('base64url');
}

function decodeCursor(cursor: string): number {
  const m = /^o:(\d+)$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (!m?.[1]) throw CfErrors.invalidBody(['cursor is invalid']);
  return Number(m[1]);
}

export function paginateCursor<T>(
  items: readonly T[],
  query: URLSearchParams,
  limits: PageLimits,
): { result: T[]; result_info: ResultInfo } {
  const asked = positiveInt(query, 'per_page') ?? limits.defaultPerPage;
  const perPage = Math.min(limits.maxPerPage, Math.max(limits.minPerPage, asked));
  const cursor = query.get('cursor');
  const offset = cursor ? decodeCursor(cursor) : 0;
  const result = items.slice(offset, offset + perPage);
  const next = offset + perPage < items.length ? encodeCursor(offset + perPage) : undefined;
  return { result, result_info: { per_page: perPage, count: result.length, ...(next ? { cursor: next } : {}) } };
}
