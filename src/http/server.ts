/**
 * The plumbing every HTTP server of the project shares (each role's ops port, the agent, the fast
 * path's HTTP face, the codec server): fastify with the TypeBox type provider, on a `node:http` or
 * `node:https` server made here so TLS stays the project's (`ServingTls` swaps a renewed
 * certificate in place), Node's own timeouts, JSON bodies read under a byte limit with each
 * server's own refusals, and a close that lets the caller say when open streams are cut.
 */
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerOptions,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyError,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import type { ServingTls } from '../fastpath/tls.js';

export type HttpApp = FastifyInstance<Server, IncomingMessage, ServerResponse, FastifyBaseLogger, TypeBoxTypeProvider>;

/** How a server reads JSON bodies: what an empty one is (or its refusal), and the refusal of one that is not JSON. */
export interface JsonBodies {
  empty(): unknown;
  notJson(reason: string): Error;
}

export interface HttpAppOptions {
  /** Most bytes of a body (a route may set its own `bodyLimit`); fastify's 1 MiB by default. */
  bodyLimit?: number;
  /** JSON bodies for every content type; without it a body is drained unread. */
  json?: JsonBodies;
  /** HTTPS with these files, reloaded in place; plain HTTP without. */
  tls?: ServingTls;
  /** HTTPS with fixed options (the codec server reloads its own). */
  https?: ServerOptions & { cert: Buffer; key: Buffer; minVersion?: 'TLSv1.2' };
  /** Answers a path the router cannot decode (a malformed percent-escape); fastify's 400 without it. */
  badUrl?: (path: string, reply: FastifyReply) => void;
  /** Idle keep-alive of a connection (Node's 5 s by default). */
  keepAliveTimeoutMs?: number;
}

const WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);

export function httpApp(opts: HttpAppOptions): HttpApp {
  const app = Fastify({
    ...(opts.bodyLimit !== undefined && { bodyLimit: opts.bodyLimit }),
    // Each server logs its own requests with the project's logger.
    logger: false,
    // The caller closes connections when its streams may be cut (closeHttpApp).
    forceCloseConnections: false,
    return503OnClosing: true,
    // A path parameter may be as long as a URL Node reads (a Sandbox name has 253 characters; fastify's default is 100).
    routerOptions: { maxParamLength: 16 * 1024 },
    ...(opts.badUrl && {
      frameworkErrors: (err: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
        if (err.code !== 'FST_ERR_BAD_URL') return void reply.code(400).send(err);
        opts.badUrl!(req.url.split('?')[0]!, reply);
      },
    }),
    serverFactory: (handler) => {
      const server = opts.tls
        ? createHttpsServer(opts.tls.httpsOptions(), handler)
        : opts.https
          ? createHttpsServer(opts.https, handler)
          : createHttpServer(handler);
      if (opts.tls) opts.tls.serveHttps(server as HttpsServer);
      if (opts.keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = opts.keepAliveTimeoutMs;
      // https.Server serves the same IncomingMessage/ServerResponse as http.Server.
      return server as Server;
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.removeAllContentTypeParsers();
  const json = opts.json;
  if (json) {
    app.addContentTypeParser('*', { parseAs: 'string' }, (_req, text, done) => {
      try {
        const body = text as string;
        done(null, body.trim() === '' ? json.empty() : JSON.parse(body));
      } catch (err) {
        done(err instanceof SyntaxError ? json.notJson(err.message) : (err as Error));
      }
    });
    // A body-less POST never reaches the parser.
    app.addHook('preValidation', async (req) => {
      if (req.body === undefined && WITH_BODY.has(req.method)) req.body = json.empty();
    });
  } else
    app.addContentTypeParser('*', (_req, payload, done) => {
      payload.resume();
      payload.once('end', () => done(null, undefined));
    });
  return app;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Said after `body over N bytes` when a body is refused for its size (what the limit is for). */
    bodyLimitWhy?: string;
  }
}

/** A refusal with its HTTP status, answered with its message. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * What an error is answered with: an HttpError's own status, 413 for a body over its limit, the
 * framework's own 4xx (a bad Content-Length…), `otherwise` for anything else.
 */
export function answerOf(
  err: FastifyError,
  req: FastifyRequest,
  otherwise: number,
): { status: number; message: string } {
  if (err instanceof HttpError) return { status: err.status, message: err.message };
  const tooLarge = tooLargeMessage(err, req);
  if (tooLarge) return { status: 413, message: tooLarge };
  return { status: err.statusCode && err.statusCode < 500 ? err.statusCode : otherwise, message: err.message };
}

/** `body over N bytes…` when a body went over its route's limit; undefined for any other error. */
export function tooLargeMessage(err: { code?: string }, req: FastifyRequest): string | undefined {
  if (err.code !== 'FST_ERR_CTP_BODY_TOO_LARGE') return undefined;
  return `body over ${req.routeOptions.bodyLimit} bytes${req.routeOptions.config.bodyLimitWhy ?? ''}`;
}

/**
 * Takes the response over for a stream: the head is written now, the framework answers nothing
 * more, and an error after this point can only cut the connection.
 */
export function startStream(reply: FastifyReply, headers: Record<string, string>): ServerResponse {
  if (!reply.raw.headersSent) {
    reply.hijack();
    reply.raw.writeHead(200, headers);
  }
  return reply.raw;
}

/**
 * Runs a handler that may take the response over (startStream): an error before that is answered
 * as any other; after it, `cut` hears of it and the connection is cut, the only way left to say so.
 */
export async function streaming(
  reply: FastifyReply,
  cut: (err: unknown) => void,
  run: () => Promise<void>,
): Promise<void> {
  try {
    await run();
  } catch (err) {
    if (!reply.raw.headersSent) throw err;
    cut(err);
    reply.raw.destroy();
  }
}

/** Listens (every address when no host is given, as Node's `listen`); resolves with the port (the one picked for 0). */
export async function listen(app: HttpApp, port: number, host?: string): Promise<number> {
  await app.ready();
  const server = app.server;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

/**
 * Stops listening, then `beforeCut` (say, stopping what streams are reading), then cuts every
 * connection still open (a follower of a log stream), and resolves when the server has closed.
 */
export async function closeHttpApp(app: HttpApp, beforeCut?: () => Promise<void>): Promise<void> {
  const closed = new Promise<void>((resolve) => app.server.close(() => resolve()));
  await beforeCut?.();
  app.server.closeAllConnections();
  await closed;
  await app.close();
}
