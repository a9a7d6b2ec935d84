/**
 * Zones: list (page pagination, `name`/`status`/`account.id` filters; `name` takes the API's
 * operators, `ends_with:example.com` and the others) and get.
 */
import { authorizeAccount } from '../auth.js';
import { CfErrors } from '../envelope.js';
import { paginatePage } from '../pagination.js';
import type { Route, RouteContext } from '../router.js';
import type { Zone } from '../store.js';

export const ZONE_PAGE_LIMITS = { defaultPerPage: 20, minPerPage: 5, maxPerPage: 50 };

/** The zone named by `:zone_id` that the token may use, or the real API's error. */
export function zoneFor(ctx: RouteContext): Zone {
  const zone = ctx.store.zones.get(ctx.params.zone_id ?? '');
  if (!zone) throw CfErrors.invalidIdentifier(`/client/v4${ctx.path}`);
  authorizeAccount(ctx.token, zone.account.id);
  return zone;
}

const NAME_OPERATORS = new Set([
  'equal',
  'not_equal',
  'starts_with',
  'ends_with',
  'contains',
  'starts_with_case_sensitive',
  'ends_with_case_sensitive',
  'contains_case_sensitive',
]);

/** The list's `name` filter: `value` (equal) or `operator:value`, as the API documents it. */
export function nameMatches(zone: string, filter: string): boolean {
  const colon = filter.indexOf(':');
  const known = colon > 0 && NAME_OPERATORS.has(filter.slice(0, colon));
  const op = known ? filter.slice(0, colon) : 'equal';
  const raw = known ? filter.slice(colon + 1) : filter;
  const sensitive = op.endsWith('_case_sensitive');
  const [z, v] = sensitive ? [zone, raw] : [zone.toLowerCase(), raw.toLowerCase()];
  switch (op.replace('_case_sensitive', '')) {
    case 'not_equal':
      return z !== v;
    case 'starts_with':
      return z.startsWith(v);
    case 'ends_with':
      return z.endsWith(v);
    case 'contains':
      return z.includes(v);
    default:
      return z === v;
  }
}

export const zoneRoutes: Route[] = [
  {
    method: 'GET',
    pattern: '/zones',
    handler: (ctx) => {
      const { query, token } = ctx;
      const name = query.get('name');
      const status = query.get('status');
      const accountId = query.get('account.id');
      const accountName = query.get('account.name');
      const zones = ctx.store
        .zoneList()
        .filter((z) => !token.accounts || token.accounts.has(z.account.id))
        .filter((z) => name === null || nameMatches(z.name, name))
        .filter((z) => status === null || z.status === status)
        .filter((z) => accountId === null || z.account.id === accountId)
        .filter((z) => accountName === null || z.account.name === accountName);
      return paginatePage(zones, query, ZONE_PAGE_LIMITS);
    },
  },
  { method: 'GET', pattern: '/zones/:zone_id', handler: (ctx) => ({ result: zoneFor(ctx) }) },
];
