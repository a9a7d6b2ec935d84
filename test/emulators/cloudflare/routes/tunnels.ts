/**
 * Cloudflare Tunnels (`/accounts/{a}/cfd_tunnel`): create (`name`, `config_src`, `tunnel_secret`
 * — generated when absent), list (page pagination; filters `name`, `is_deleted`, `uuid`,
 * `include_prefix`, `exclude_prefix`), get, PATCH (`name`, `tunnel_secret`), DELETE (soft:
 * `deleted_at`), `/token` (base64 of `{"a":account,"t":tunnel,"s":secret}` as cloudflared reads it),
 * DELETE `/connections`, and the remote configuration GET/PUT (`version` +1 per PUT; the ingress
 * is checked as cloudflared checks it: the last rule is a catch-all, no catch-all before it; only
 * the schema's `ingress` and `originRequest` are kept — `warp-routing` is not).
 *
 * Connections: a connector (cloudflared) running the tunnel holds a connection (started and stopped
 * by a test hook, ../hooks.ts). DELETE `/connections` removes them, as Cloudflare does — but a
 * connector still running opens its connection again at once. A tunnel with connections is not
 * deleted: 400/1022 (code as users report it, e.g. tuanngocptn/nport#16; message guessed).
 *
 * Codes: a live tunnel of the same name 409/1013 (cloudflared's API client maps a create's 409 to
 * "tunnel with name already exists"; 1013 and its message as users' logs show them); not found
 * 404/1003, a bad secret 400/1005, a bad ingress 400/1056 (guessed).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { CfErrors } from '../envelope.js';
import { paginatePage } from '../pagination.js';
import type { Route, RouteContext } from '../router.js';
import type { EmulatorStore, Tunnel, TunnelConfiguration } from '../store.js';
import { checkBody } from '../validate.js';
import { accountFor } from './accounts.js';

export const TUNNEL_PAGE_LIMITS = { defaultPerPage: 20, minPerPage: 1, maxPerPage: 1000 };

const CreateBody = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    config_src: Type.Optional(Type.Union([Type.Literal('local'), Type.Literal('cloudflare')])),
    tunnel_secret: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);
const EditBody = Type.Object(
  { name: Type.Optional(Type.String({ minLength: 1 })), tunnel_secret: Type.Optional(Type.String()) },
  { additionalProperties: true },
);
/**
 * `originRequest` as Cloudflare's schema types it (the SDK's `OriginRequest`): durations in seconds
 * (numbers, not `30s`), flags booleans. cloudflared's fields the schema leaves out (`proxyAddress`,
 * `proxyPort`, `bastionMode`) are typed as cloudflared reads them.
 */
const OriginRequest = Type.Object(
  {
    connectTimeout: Type.Optional(Type.Number({ minimum: 0 })),
    tlsTimeout: Type.Optional(Type.Number({ minimum: 0 })),
    tcpKeepAlive: Type.Optional(Type.Number({ minimum: 0 })),
    keepAliveTimeout: Type.Optional(Type.Number({ minimum: 0 })),
    keepAliveConnections: Type.Optional(Type.Integer({ minimum: 0 })),
    noHappyEyeballs: Type.Optional(Type.Boolean()),
    noTLSVerify: Type.Optional(Type.Boolean()),
    http2Origin: Type.Optional(Type.Boolean()),
    disableChunkedEncoding: Type.Optional(Type.Boolean()),
    matchSNItoHost: Type.Optional(Type.Boolean()),
    bastionMode: Type.Optional(Type.Boolean()),
    caPool: Type.Optional(Type.String()),
    httpHostHeader: Type.Optional(Type.String()),
    originServerName: Type.Optional(Type.String()),
    proxyType: Type.Optional(Type.String()),
    proxyAddress: Type.Optional(Type.String()),
    proxyPort: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })),
  },
  { additionalProperties: true },
);
const IngressRule = Type.Object(
  {
    hostname: Type.Optional(Type.String()),
    service: Type.String({ minLength: 1 }),
    path: Type.Optional(Type.String()),
    originRequest: Type.Optional(OriginRequest),
  },
  { additionalProperties: true },
);
const ConfigBody = Type.Object(
  {
    config: Type.Object(
      {
        ingress: Type.Optional(Type.Array(IngressRule)),
        originRequest: Type.Optional(OriginRequest),
      },
      { additionalProperties: true },
    ),
  },
  { additionalProperties: true },
);

const notFound = () => CfErrors.teamnet(404, 1003, 'Tunnel not found');

function tunnelsOf(ctx: RouteContext): { accountId: string; list: Tunnel[] } {
  const account = accountFor(ctx);
  let list = ctx.store.tunnels.get(account.id);
  if (!list) ctx.store.tunnels.set(account.id, (list = []));
  return { accountId: account.id, list };
}

function find(ctx: RouteContext, { live = false } = {}): { accountId: string; tunnel: Tunnel } {
  const { accountId, list } = tunnelsOf(ctx);
  const tunnel = list.find((t) => t.id === ctx.params.tunnel_id);
  if (!tunnel || (live && tunnel.deleted_at !== null)) throw notFound();
  return { accountId, tunnel };
}

/** A tunnel secret is the base64 of at least 32 bytes. */
function checkSecret(secret: string): void {
  const ok = /^[A-Za-z0-9+/]+={0,2}$/.test(secret) && Buffer.from(secret, 'base64').length >= 32;
  if (!ok) throw CfErrors.teamnet(400, 1005, 'tunnel_secret must be the base64 encoding of at least 32 bytes');
}

function checkName(list: readonly Tunnel[], name: string, self?: string): void {
  if (list.some((t) => t.deleted_at === null && t.name === name && t.id !== self)) {
    throw CfErrors.teamnet(
      409,
      1013,
      'You already have a tunnel with this name. Delete the existing tunnel, or choose a different name for your new tunnel',
    );
  }
}

function liveTunnel(store: EmulatorStore, tunnelId: string): Tunnel {
  for (const list of store.tunnels.values()) {
    const t = list.find((x) => x.id === tunnelId && x.deleted_at === null);
    if (t) return t;
  }
  throw notFound();
}

function connect(store: EmulatorStore, tunnel: Tunnel, clientId: string): void {
  tunnel.connections.push({
    id: randomUUID(),
    client_id: clientId,
    client_version: '2025.4.0',
    colo_name: 'emu01',
    is_pending_reconnect: false,
    opened_at: store.timestamp(),
    origin_ip: '192.0.2.1',
    uuid: randomUUID(),
  });
  tunnel.status = 'healthy';
  tunnel.conns_active_at = store.timestamp();
}

/** A connector starts running the tunnel (test hook): its connection is there until it stops. */
export function startConnector(store: EmulatorStore, tunnelId: string, clientId: string = randomUUID()): string {
  const tunnel = liveTunnel(store, tunnelId);
  let running = store.tunnelConnectors.get(tunnelId);
  if (!running) store.tunnelConnectors.set(tunnelId, (running = new Set()));
  running.add(clientId);
  connect(store, tunnel, clientId);
  return clientId;
}

/** Every connector of the tunnel stops (test hook): their connections close. */
export function stopConnectors(store: EmulatorStore, tunnelId: string): void {
  store.tunnelConnectors.delete(tunnelId);
  const tunnel = liveTunnel(store, tunnelId);
  tunnel.connections = [];
  tunnel.status = 'down';
  tunnel.conns_inactive_at = store.timestamp();
}

const SERVICE =
  /^(https?|tcp|ssh|rdp|smb|unix|unix\+tls|wss?):\/\/\S+$|^http_status:[1-5]\d\d$|^hello_world$|^bastion$|^socks5$/;

/** cloudflared's ingress rules, as the API validates them before storing. */
export function ingressError(
  ingress: ReadonlyArray<{ hostname?: string; path?: string; service: string }>,
): string | undefined {
  if (!ingress.length) return undefined;
  for (const [i, rule] of ingress.entries()) {
    if (!SERVICE.test(rule.service)) return `Rule #${i + 1}: ${JSON.stringify(rule.service)} is not a valid service`;
    const catchAll = !rule.hostname && !rule.path;
    if (catchAll && i < ingress.length - 1) {
      return `Rule #${i + 1} is matching all requests, but it's not the last rule; rules after it would never match`;
    }
  }
  const last = ingress[ingress.length - 1]!;
  if (last.hostname || last.path) {
    return 'The last ingress rule must match all URLs (i.e. it should not have a hostname or path filter)';
  }
  return undefined;
}

/**
 * What Cloudflare keeps of a PUT configuration: the fields of its schema, `ingress` and
 * `originRequest`. Others are dropped, `warp-routing` among them: it left the schema in 2025
 * (WARP traffic reaches a tunnel once a private network route targets it; cloudflared ignores
 * `warp-routing.enabled` since 2023.9), so it is neither stored nor answered.
 */
function storedConfig(config: Record<string, unknown>): Record<string, unknown> {
  const { ingress, originRequest } = structuredClone(config);
  return { ...(ingress !== undefined ? { ingress } : {}), ...(originRequest !== undefined ? { originRequest } : {}) };
}

function configOf(ctx: RouteContext, accountId: string, tunnel: Tunnel): TunnelConfiguration {
  return (
    ctx.store.tunnelConfigs.get(tunnel.id) ?? {
      tunnel_id: tunnel.id,
      account_id: accountId,
      version: 0,
      config: null,
      source: 'cloudflare',
      created_at: tunnel.created_at,
    }
  );
}

export const tunnelRoutes: Route[] = [
  {
    method: 'POST',
    pattern: '/accounts/:account_id/cfd_tunnel',
    handler: (ctx) => {
      const { accountId, list } = tunnelsOf(ctx);
      const body = checkBody(CreateBody, ctx.body ?? {});
      checkName(list, body.name);
      if (body.tunnel_secret !== undefined) checkSecret(body.tunnel_secret);
      const configSrc = body.config_src ?? 'local';
      const tunnel: Tunnel = {
        id: randomUUID(),
        account_tag: accountId,
        name: body.name,
        created_at: ctx.store.timestamp(),
        deleted_at: null,
        connections: [],
        conns_active_at: null,
        conns_inactive_at: null,
        tun_type: 'cfd_tunnel',
        status: 'inactive',
        remote_config: configSrc === 'cloudflare',
        config_src: configSrc,
        metadata: {},
      };
      list.push(tunnel);
      ctx.store.tunnelSecrets.set(tunnel.id, body.tunnel_secret ?? randomBytes(32).toString('base64'));
      return { result: tunnel };
    },
  },
  {
    method: 'GET',
    pattern: '/accounts/:account_id/cfd_tunnel',
    handler: (ctx) => {
      const { query } = ctx;
      const name = query.get('name');
      const uuid = query.get('uuid');
      const include = query.get('include_prefix');
      const exclude = query.get('exclude_prefix');
      const deletedRaw = query.get('is_deleted');
      if (deletedRaw !== null && deletedRaw !== 'true' && deletedRaw !== 'false') {
        throw CfErrors.invalidBody(['is_deleted must be true or false']);
      }
      const tunnels = tunnelsOf(ctx)
        .list.filter((t) => name === null || t.name === name)
        .filter((t) => uuid === null || t.id === uuid)
        .filter((t) => include === null || t.name.startsWith(include))
        .filter((t) => exclude === null || !t.name.startsWith(exclude))
        .filter((t) => deletedRaw === null || (t.deleted_at !== null) === (deletedRaw === 'true'));
      return paginatePage(tunnels, query, TUNNEL_PAGE_LIMITS);
    },
  },
  {
    method: 'GET',
    pattern: '/accounts/:account_id/cfd_tunnel/:tunnel_id',
    handler: (ctx) => ({ result: find(ctx).tunnel }),
  },
  {
    method: 'PATCH',
    pattern: '/accounts/:account_id/cfd_tunnel/:tunnel_id',
    handler: (ctx) => {
      const { tunnel } = find(ctx, { live: true });
      const body = checkBody(EditBody, ctx.body ?? {});
      if (body.name !== undefined) checkName(tunnelsOf(ctx).list, body.name, tunnel.id);
      if (body.tunnel_secret !== undefined) checkSecret(body.tunnel_secret);
      if (body.name !== undefined) tunnel.name = body.name;
      if (body.tunnel_secret !== undefined) ctx.store.tunnelSecrets.set(tunnel.id, body.tunnel_secret);
      return { result: tunnel };
    },
  },
  {
    method: 'DELETE',
    pattern: '/accounts/:account_id/cfd_tunnel/:tunnel_id',
    handler: (ctx) => {
      const { tunnel } = find(ctx, { live: true });
      if (tunnel.connections.length)
        throw CfErrors.teamnet(400, 1022, 'Cannot delete tunnel because it has active connections');
      tunnel.deleted_at = ctx.store.timestamp();
      ctx.store.tunnelConnectors.delete(tunnel.id);
      return { result: tunnel };
    },
  },
  {
    method: 'GET',
    pattern: '/accounts/:account_id/cfd_tunnel/:tunnel_id/token',
    handler: (ctx) => {
      const { accountId, tunnel } = find(ctx, { live: true });
      const secret = ctx.store.tunnelSecrets.get(tunnel.id) ?? '';
      return { result: Buffer.from(JSON.stringify({ a: accountId, t: tunnel.id, s: secret })).toString('base64') };
    },
  },
  {
    method: 'DELETE',
    pattern: '/accounts/:account_id/cfd_tunnel/:tunnel_id/connections',
    handler: (ctx) => {
      const { tunnel } = find(ctx, { live: true });
      const clientId = ctx.query.get('client_id');
      const removed = (c: unknown) => !clientId || (c as { client_id?: string }).client_id === clientId;
      tunnel.connections = tunnel.connections.filter((c) => !removed(c));
      // A connector still running reconnects at once (cloudflared retries with the same token).
      for (const running of ctx.store.tunnelConnectors.get(tunnel.id) ?? [])
        if (!clientId || running === clientId) connect(ctx.store, tunnel, running);
      return { result: null };
    },
  },
  {
    method: 'GET',
    pattern: '/accounts/:account_id/cfd_tunnel/:tunnel_id/configurations',
    handler: (ctx) => {
      const { accountId, tunnel } = find(ctx, { live: true });
      return { result: configOf(ctx, accountId, tunnel) };
    },
  },
  {
    method: 'PUT',
    pattern: '/accounts/:account_id/cfd_tunnel/:tunnel_id/configurations',
    handler: (ctx) => {
      const { accountId, tunnel } = find(ctx, { live: true });
      const body = checkBody(ConfigBody, ctx.body ?? {});
      const problem = ingressError(body.config.ingress ?? []);
      if (problem) throw CfErrors.teamnet(400, 1056, problem);
      const previous = configOf(ctx, accountId, tunnel);
      const next: TunnelConfiguration = {
        ...previous,
        version: previous.version + 1,
        config: storedConfig(body.config),
        source: 'cloudflare',
        created_at: ctx.store.timestamp(),
      };
      ctx.store.tunnelConfigs.set(tunnel.id, next);
      return { result: next };
    },
  },
];
