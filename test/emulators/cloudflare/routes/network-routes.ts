/**
 * Zero Trust private network routes (`/accounts/{a}/teamnet/routes`): create (`network` CIDR,
 * `tunnel_id` of a live tunnel of the account, `virtual_network_id`, `comment`), list (page
 * pagination; filters `tunnel_id`, `virtual_network_id`, `is_deleted`, `comment`), DELETE (soft:
 * `deleted_at`). One live route per (network, virtual network).
 *
 * Codes guessed (teamnet family): a bad CIDR 400/1001, an unknown tunnel 404/1003, a network
 * already routed 400/1014, a route not found 404/1002.
 */
import { randomUUID } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { CfErrors } from '../envelope.js';
import { paginatePage } from '../pagination.js';
import type { Route, RouteContext } from '../router.js';
import type { NetworkRoute } from '../store.js';
import { checkBody } from '../validate.js';
import { accountFor } from './accounts.js';

const CreateBody = Type.Object(
  {
    network: Type.String({ minLength: 1 }),
    tunnel_id: Type.String({ minLength: 1 }),
    virtual_network_id: Type.Optional(Type.String()),
    comment: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

const CIDR = /^(\d{1,3}(\.\d{1,3}){3}\/\d{1,2}|[0-9a-fA-F:]+\/\d{1,3})$/;

function routesOf(ctx: RouteContext): { accountId: string; list: NetworkRoute[] } {
  const account = accountFor(ctx);
  let list = ctx.store.networkRoutes.get(account.id);
  if (!list) ctx.store.networkRoutes.set(account.id, (list = []));
  return { accountId: account.id, list };
}

export const networkRouteRoutes: Route[] = [
  {
    method: 'POST',
    pattern: '/accounts/:account_id/teamnet/routes',
    handler: (ctx) => {
      const { accountId, list } = routesOf(ctx);
      const body = checkBody(CreateBody, ctx.body ?? {});
      if (!CIDR.test(body.network)) throw CfErrors.teamnet(400, 1001, `${JSON.stringify(body.network)} is not a CIDR`);
      const tunnel = (ctx.store.tunnels.get(accountId) ?? []).find((t) => t.id === body.tunnel_id && !t.deleted_at);
      if (!tunnel) throw CfErrors.teamnet(404, 1003, 'Tunnel not found');
      const vnet = body.virtual_network_id ?? null;
      if (list.some((r) => !r.deleted_at && r.network === body.network && r.virtual_network_id === vnet))
        throw CfErrors.teamnet(400, 1014, `the network ${body.network} is already routed in this virtual network`);
      const route: NetworkRoute = {
        id: randomUUID(),
        network: body.network,
        tunnel_id: tunnel.id,
        tunnel_name: tunnel.name,
        tun_type: 'cfd_tunnel',
        virtual_network_id: vnet,
        comment: body.comment ?? '',
        created_at: ctx.store.timestamp(),
        deleted_at: null,
      };
      list.push(route);
      return { result: route };
    },
  },
  {
    method: 'GET',
    pattern: '/accounts/:account_id/teamnet/routes',
    handler: (ctx) => {
      const { query } = ctx;
      const tunnelId = query.get('tunnel_id');
      const vnetId = query.get('virtual_network_id');
      const comment = query.get('comment');
      const deleted = query.get('is_deleted');
      const routes = routesOf(ctx)
        .list.filter((r) => tunnelId === null || r.tunnel_id === tunnelId)
        .filter((r) => vnetId === null || r.virtual_network_id === vnetId)
        .filter((r) => comment === null || r.comment === comment)
        // Like the real API, deleted routes are left out unless asked for.
        .filter((r) => (deleted === 'true' ? r.deleted_at !== null : r.deleted_at === null));
      return paginatePage(routes, query, { defaultPerPage: 20, minPerPage: 1, maxPerPage: 1000 });
    },
  },
  {
    method: 'DELETE',
    pattern: '/accounts/:account_id/teamnet/routes/:route_id',
    handler: (ctx) => {
      const route = routesOf(ctx).list.find((r) => r.id === ctx.params.route_id && !r.deleted_at);
      if (!route) throw CfErrors.teamnet(404, 1002, 'route not found');
      route.deleted_at = ctx.store.timestamp();
      return { result: route };
    },
  },
];
