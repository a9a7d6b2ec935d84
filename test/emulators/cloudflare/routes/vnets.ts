/**
 * Zero Trust virtual networks (`/accounts/{a}/teamnet/virtual_networks`): create, list (a
 * SinglePage: the full array; filters `id`, `name`, `is_default`/`is_default_network`,
 * `is_deleted`), get, PATCH, DELETE (soft: `deleted_at` is set and the network answered).
 *
 * Exactly one live default per account: the first network of an account becomes the default;
 * making another one default un-defaults the old one; the default cannot be un-defaulted directly
 * nor deleted while other networks exist (codes guessed, see `CfErrors.teamnet`).
 */
import { randomUUID } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { CfErrors } from '../envelope.js';
import type { Route, RouteContext } from '../router.js';
import type { VirtualNetwork } from '../store.js';
import { checkBody } from '../validate.js';
import { accountFor } from './accounts.js';

const CreateBody = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    comment: Type.Optional(Type.String()),
    is_default: Type.Optional(Type.Boolean()),
    is_default_network: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: true },
);
const EditBody = Type.Partial(CreateBody);

function networks(ctx: RouteContext): VirtualNetwork[] {
  const account = accountFor(ctx);
  let list = ctx.store.virtualNetworks.get(account.id);
  if (!list) ctx.store.virtualNetworks.set(account.id, (list = []));
  return list;
}

const live = (list: readonly VirtualNetwork[]) => list.filter((v) => v.deleted_at === null);

function find(list: readonly VirtualNetwork[], id: string): VirtualNetwork {
  const vnet = list.find((v) => v.id === id);
  if (!vnet) throw CfErrors.teamnet(404, 1002, 'virtual network not found');
  return vnet;
}

function checkName(list: readonly VirtualNetwork[], name: string, self?: string): void {
  if (live(list).some((v) => v.name === name && v.id !== self)) {
    throw CfErrors.teamnet(400, 1010, `a virtual network named ${JSON.stringify(name)} already exists`);
  }
}

function makeDefault(list: readonly VirtualNetwork[], vnet: VirtualNetwork): void {
  for (const v of list) v.is_default_network = v === vnet;
}

function boolParam(query: URLSearchParams, name: string): boolean | undefined {
  const raw = query.get(name);
  if (raw === null || raw === '') return undefined;
  if (raw !== 'true' && raw !== 'false') throw CfErrors.invalidBody([`${name} must be true or false`]);
  return raw === 'true';
}

export const vnetRoutes: Route[] = [
  {
    method: 'POST',
    pattern: '/accounts/:account_id/teamnet/virtual_networks',
    handler: (ctx) => {
      const list = networks(ctx);
      const body = checkBody(CreateBody, ctx.body ?? {});
      checkName(list, body.name);
      const vnet: VirtualNetwork = {
        id: randomUUID(),
        name: body.name,
        comment: body.comment ?? '',
        is_default_network: false,
        created_at: ctx.store.timestamp(),
        deleted_at: null,
      };
      list.push(vnet);
      const wantsDefault = body.is_default_network ?? body.is_default ?? false;
      if (wantsDefault || !live(list).some((v) => v.is_default_network)) makeDefault(list, vnet);
      return { result: vnet };
    },
  },
  {
    method: 'GET',
    pattern: '/accounts/:account_id/teamnet/virtual_networks',
    handler: (ctx) => {
      const { query } = ctx;
      const id = query.get('id');
      const name = query.get('name');
      const isDefault = boolParam(query, 'is_default') ?? boolParam(query, 'is_default_network');
      const isDeleted = boolParam(query, 'is_deleted');
      const result = networks(ctx)
        .filter((v) => id === null || v.id === id)
        .filter((v) => name === null || v.name === name)
        .filter((v) => isDefault === undefined || v.is_default_network === isDefault)
        .filter((v) => isDeleted === undefined || (v.deleted_at !== null) === isDeleted);
      return { result };
    },
  },
  {
    method: 'GET',
    pattern: '/accounts/:account_id/teamnet/virtual_networks/:virtual_network_id',
    handler: (ctx) => ({ result: find(networks(ctx), ctx.params.virtual_network_id ?? '') }),
  },
  {
    method: 'PATCH',
    pattern: '/accounts/:account_id/teamnet/virtual_networks/:virtual_network_id',
    handler: (ctx) => {
      const list = networks(ctx);
      const vnet = find(list, ctx.params.virtual_network_id ?? '');
      if (vnet.deleted_at !== null) throw CfErrors.teamnet(404, 1002, 'virtual network not found');
      const body = checkBody(EditBody, ctx.body ?? {});
      if (body.name !== undefined) checkName(list, body.name, vnet.id);
      const wantsDefault = body.is_default_network ?? body.is_default;
      if (wantsDefault === false && vnet.is_default_network) {
        throw CfErrors.teamnet(400, 1011, 'the default virtual network cannot be unset; make another one the default');
      }
      if (body.name !== undefined) vnet.name = body.name;
      if (body.comment !== undefined) vnet.comment = body.comment;
      if (wantsDefault === true) makeDefault(list, vnet);
      return { result: vnet };
    },
  },
  {
    method: 'DELETE',
    pattern: '/accounts/:account_id/teamnet/virtual_networks/:virtual_network_id',
    handler: (ctx) => {
      const list = networks(ctx);
      const vnet = find(list, ctx.params.virtual_network_id ?? '');
      if (vnet.deleted_at !== null) throw CfErrors.teamnet(404, 1002, 'virtual network not found');
      if (vnet.is_default_network && live(list).length > 1) {
        throw CfErrors.teamnet(
          400,
          1011,
          'the default virtual network cannot be deleted; make another one the default',
        );
      }
      vnet.deleted_at = ctx.store.timestamp();
      vnet.is_default_network = false;
      return { result: vnet };
    },
  },
];
