/** `/user/tokens/verify`: the calling token's id and status. */
import type { Route } from '../router.js';

export const userRoutes: Route[] = [
  {
    method: 'GET',
    pattern: '/user/tokens/verify',
    handler: (ctx) => ({ result: { id: ctx.token.id, status: ctx.token.status } }),
  },
];
