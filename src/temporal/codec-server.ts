/**
 * The codec server: the Temporal Web UI's (and `temporal --codec-endpoint`'s) remote codec, so
 * people who may read payloads see them decrypted while Temporal keeps ciphertext. The protocol
 * is Temporal's: `POST <endpoint>/decode` and `/encode` with `{ "payloads": [<Payload as proto
 * JSON>] }` (metadata values and data in base64), answered in the same shape; the UI sends the
 * namespace as `X-Namespace`. The browser calls it cross-origin, so the UI's origin is allowed by
 * CORS (no credentials mode: auth travels in a header, never a cookie).
 *
 * Every other request needs `Authorization: Bearer <token>`, either
 * - a token of the tokens file (the temporal CLI's `--codec-auth`; any namespace), or
 * - with OIDC configured, the user's access token a Web UI with login forwards
 *   (`TEMPORAL_CODEC_PASS_ACCESS_TOKEN`): a JWT signed by a key of the issuer's JWKS whose
 *   permissions claim grants the request's `X-Namespace` (`<namespace>:<role>`, the form of
 *   Temporal's own claim mapper), so a token for namespace A never decodes B.
 * The token as the endpoint's first path segment (`/<token>/decode`) works only when switched on
 * (`pathTokens`), for a Web UI that sends no token at all: it lands in every proxy's access log.
 */
import { Buffer } from 'node:buffer';
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync, unwatchFile, watchFile } from 'node:fs';
import type https from 'node:https';
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import type { Payload } from '@temporalio/common';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';
import { HttpError, answerOf, closeHttpApp, httpApp, listen } from '../http/server.js';
import type { Logger } from '../log.js';
import { EncryptionCodec, type PayloadKeyRing } from './payload-encryption.js';

/** Access tokens of the Web UI's identity provider, checked per namespace. */
export interface CodecOidcOptions {
  /** The tokens' `iss`. */
  issuer: string;
  /** Where the issuer publishes its signing keys (JWKS), re-fetched for a key ID it lacks. */
  jwksUrl: string;
  /** The tokens' `aud`, when the issuer sets one for the UI. */
  audience?: string;
  /** The claim listing `<namespace>:<role>` grants (Temporal's claim mapper reads `permissions`). */
  permissionsClaim: string;
  /** The roles that may decode and encode a namespace's payloads. */
  roles: string[];
}

export interface CodecServerOptions {
  keys: PayloadKeyRing;
  /** File of accepted tokens, one a line (two during a token rotation); re-read when a token is not in it. */
  tokensFile?: string;
  oidc?: CodecOidcOptions;
  /** Accept a token of the tokens file as the endpoint's first path segment (a Web UI that sends none). */
  pathTokens?: boolean;
  /** Origins allowed to call from a browser (the Web UI's, e.g. `https://temporal.example`). */
  corsOrigins: string[];
  /** Serve HTTPS with this certificate (re-read when the file changes, e.g. a renewed Secret). */
  tls?: { certFile: string; keyFile: string };
  port: number;
  host: string;
  log: Logger;
}

export interface RunningCodecServer {
  port: number;
  url: string;
  close(): Promise<void>;
}

/** Proto JSON of a Payload: metadata values and data in base64. */
const JsonPayload = Type.Object({
  metadata: Type.Optional(Type.Union([Type.Record(Type.String(), Type.String()), Type.Null()])),
  data: Type.Optional(Type.Union([Type.String(), Type.Null()])),
});
type JsonPayload = Static<typeof JsonPayload>;
/** `/decode` and `/encode` take and answer this. */
const Payloads = Type.Object({ payloads: Type.Array(JsonPayload) });

/** A body checked by its route schema; the refusal names the shape and, below the top, the first field wrong. */
function bodyValidator(schema: TSchema) {
  const check = TypeCompiler.Compile(schema);
  return (body: unknown) => {
    if (check.Check(body)) return { value: body };
    const first = check.Errors(body).First();
    const where =
      first && first.path.split('/').length > 2
        ? ` (${first.path.slice(1).replaceAll('/', '.')}: ${first.message})`
        : '';
    return { error: new HttpError(400, `body must be { "payloads": [...] }${where}`) };
  };
}

type Verdict = { allowed: true } | { allowed: false; status: 401 | 403; message: string };

const MAX_BODY_BYTES = 32 * 1024 * 1024;
const notFound = 'not found: POST /decode or /encode';
const unauthenticated = 'a codec server token is needed (Authorization: Bearer <token>)';

export async function startCodecServer(opts: CodecServerOptions): Promise<RunningCodecServer> {
  if (!opts.tokensFile && !opts.oidc) throw new Error('the codec server needs a tokens file, OIDC, or both');
  if (opts.pathTokens && !opts.tokensFile) throw new Error('path tokens need a tokens file');
  const codec = new EncryptionCodec(opts.keys);
  const tokens = opts.tokensFile ? new TokenFile(opts.tokensFile) : undefined;
  const oidc = opts.oidc ? new AccessTokens(opts.oidc) : undefined;
  const origins = new Set(opts.corsOrigins.map((u) => u.replace(/\/+$/, '')));

  async function authorize(bearer: string | undefined, pathToken: string | undefined, namespace: string | undefined) {
    if (bearer && tokens?.accepts(bearer)) return { allowed: true } as const;
    if (bearer && oidc) return oidc.authorize(bearer, namespace);
    if (pathToken && opts.pathTokens && tokens?.accepts(pathToken)) return { allowed: true } as const;
    return { allowed: false, status: 401, message: unauthenticated } satisfies Verdict;
  }

  const { tls } = opts;
  const loadTls = () => ({
    cert: readFileSync(tls!.certFile),
    key: readFileSync(tls!.keyFile),
    minVersion: 'TLSv1.2' as const,
  });
  const app = httpApp({
    bodyLimit: MAX_BODY_BYTES,
    ...(tls && { https: loadTls() }),
    json: {
      empty: () => {
        throw new HttpError(400, 'body is not JSON');
      },
      notJson: () => new HttpError(400, 'body is not JSON'),
    },
  });
  app.setValidatorCompiler(({ schema }) => bodyValidator(schema as TSchema));
  app.setErrorHandler((err: FastifyError, req, reply) => {
    const { status, message } = answerOf(err, req, 400);
    opts.log.warn({ operation: operationOf(req), err: err.message }, 'codec request failed');
    return send(reply, status, { message });
  });
  // The browser's preflight, and the UI's origin allowed on every answer (no credentials mode).
  app.addHook('onRequest', async (req, reply) => {
    const origin = req.headers.origin;
    if (origin && origins.has(origin)) reply.header('access-control-allow-origin', origin).header('vary', 'origin');
    if (req.method === 'OPTIONS')
      return reply
        .code(204)
        .headers({
          'access-control-allow-methods': 'POST, OPTIONS',
          'access-control-allow-headers': 'authorization, content-type, x-namespace',
          'access-control-max-age': '600',
        })
        .send();
  });
  app.all('/healthz', async (_req, reply) => reply.code(200).type('text/plain').send('ok'));

  // Before the body is read: the operation, then who asks, then the method.
  const authorized = async (req: FastifyRequest, reply: FastifyReply) => {
    const { operation, pathToken } = req.params as { operation: string; pathToken?: string };
    if (operation !== 'decode' && operation !== 'encode') return send(reply, 404, { message: notFound });
    const bearer = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    const namespace = header(req, 'x-namespace');
    const verdict = await authorize(bearer, pathToken, namespace);
    if (!verdict.allowed) {
      // Never the path itself: it may hold a token.
      opts.log.warn(
        { operation, namespace, origin: req.headers.origin, status: verdict.status },
        'codec request refused',
      );
      if (verdict.status === 401) reply.header('www-authenticate', 'Bearer');
      return send(reply, verdict.status, { message: verdict.message });
    }
    if (req.method !== 'POST') return send(reply.header('allow', 'POST, OPTIONS'), 405, { message: 'POST only' });
  };
  // `/decode`, or `/<token>/decode` (its token counts only where path tokens are on).
  for (const url of ['/:operation', '/:pathToken/:operation']) {
    app.post(url, { onRequest: authorized, schema: { body: Payloads } }, async (req, reply) => {
      const { operation } = req.params as { operation: 'decode' | 'encode' };
      const payloads = (req.body as Static<typeof Payloads>).payloads.map(fromJson);
      const out = operation === 'decode' ? await codec.decode(payloads) : await codec.encode(payloads);
      return send(reply, 200, { payloads: out.map(toJson) });
    });
    // Any other method: refused by `authorized` (405 once authenticated).
    app.route({
      method: ['GET', 'HEAD', 'PUT', 'PATCH', 'DELETE'],
      url,
      onRequest: authorized,
      handler: async () => undefined,
    });
  }
  app.setNotFoundHandler(async (_req, reply) => send(reply, 404, { message: notFound }));

  // Polling stat follows the symlink swap kubelet does when a mounted Secret changes.
  const reload = () => {
    try {
      (app.server as unknown as https.Server).setSecureContext(loadTls());
      opts.log.info('codec server: certificate reloaded');
    } catch (err) {
      opts.log.warn({ err: String(err) }, 'codec server: certificate not reloaded');
    }
  };
  if (tls) watchFile(tls.certFile, { interval: 30_000 }, reload);

  const port = await listen(app, opts.port, opts.host);
  const host = opts.host === '0.0.0.0' || opts.host === '::' ? '127.0.0.1' : opts.host;
  return {
    port,
    url: `${tls ? 'https' : 'http'}://${host}:${port}`,
    close: () => {
      if (tls) unwatchFile(tls.certFile, reload);
      return closeHttpApp(app);
    },
  };
}

function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  return (Array.isArray(v) ? v[0] : v) || undefined;
}

/**
 * Access tokens verified against the issuer's keys with `jose` (signature, `iss`, `aud`, `exp`,
 * `nbf`; the key set cached and re-fetched for an unknown key ID), then the namespace rule.
 */
class AccessTokens {
  private readonly keys: ReturnType<typeof createRemoteJWKSet>;

  constructor(private readonly oidc: CodecOidcOptions) {
    this.keys = createRemoteJWKSet(new URL(oidc.jwksUrl));
  }

  async authorize(token: string, namespace: string | undefined): Promise<Verdict> {
    let claims: JWTPayload;
    try {
      ({ payload: claims } = await jwtVerify(token, this.keys, {
        issuer: this.oidc.issuer,
        ...(this.oidc.audience ? { audience: this.oidc.audience } : {}),
      }));
    } catch (err) {
      const reason = (err as { code?: string }).code ?? 'invalid';
      return { allowed: false, status: 401, message: `the bearer token is not accepted (${reason})` };
    }
    if (!namespace) return { allowed: false, status: 403, message: 'the X-Namespace header is needed' };
    const granted = grants(claims[this.oidc.permissionsClaim]);
    if (this.oidc.roles.some((role) => granted.has(`${namespace}:${role}`))) return { allowed: true };
    return {
      allowed: false,
      status: 403,
      message: `the token grants none of ${this.oidc.roles.map((r) => `${namespace}:${r}`).join(', ')} in its ${this.oidc.permissionsClaim} claim`,
    };
  }
}

/** A permissions claim: a list of `<namespace>:<role>`, or one space-separated string of them. */
function grants(claim: unknown): Set<string> {
  if (Array.isArray(claim)) return new Set(claim.filter((c): c is string => typeof c === 'string'));
  if (typeof claim === 'string') return new Set(claim.split(/\s+/).filter(Boolean));
  return new Set();
}

/** The accepted tokens, compared in constant time; the file is read again for a token it lacked (a rotation), at most every few seconds. */
class TokenFile {
  private digests: Buffer[] = [];
  private readAt = 0;

  constructor(private readonly file: string) {
    this.read();
    if (this.digests.length === 0) throw new Error(`the codec server's tokens file ${file} holds no token`);
  }

  accepts(token: string | undefined): boolean {
    if (!token) return false;
    const digest = sha256(token);
    if (this.matches(digest)) return true;
    if (Date.now() - this.readAt < 5_000) return false;
    try {
      this.read();
    } catch {
      return false; // a file being replaced: the tokens already read stay
    }
    return this.matches(digest);
  }

  private matches(digest: Buffer): boolean {
    let found = false;
    for (const d of this.digests) found = timingSafeEqual(d, digest) || found;
    return found;
  }

  private read(): void {
    this.readAt = Date.now();
    const lines = readFileSync(this.file, 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    this.digests = lines.map(sha256);
  }
}

const sha256 = (s: string): Buffer => createHash('sha256').update(s).digest();

function send(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return reply.code(status).type('application/json').send(body);
}

/** The operation a request names (its last path segment), for the log; never the path, which may hold a token. */
function operationOf(req: FastifyRequest): string | undefined {
  return (req.params as { operation?: string } | undefined)?.operation;
}

function fromJson(p: JsonPayload): Payload {
  return {
    metadata: Object.fromEntries(Object.entries(p?.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
    data: p?.data ? Buffer.from(p.data, 'base64') : new Uint8Array(),
  };
}

function toJson(p: Payload): JsonPayload {
  return {
    metadata: Object.fromEntries(
      Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? new Uint8Array()).toString('base64')]),
    ),
    data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
  };
}
