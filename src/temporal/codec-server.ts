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
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Payload } from '@temporalio/common';
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';
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
interface JsonPayload {
  metadata?: Record<string, string> | null;
  data?: string | null;
}

type Verdict = { allowed: true } | { allowed: false; status: 401 | 403; message: string };

const MAX_BODY_BYTES = 32 * 1024 * 1024;

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
    return {
      allowed: false,
      status: 401,
      message: 'a codec server token is needed (Authorization: Bearer <token>)',
    } satisfies Verdict;
  }

  const handler: http.RequestListener = (req, res) => {
    const origin = req.headers.origin;
    if (origin && origins.has(origin)) {
      res.setHeader('access-control-allow-origin', origin);
      res.setHeader('vary', 'origin');
    }
    const url = new URL(req.url ?? '/', 'http://codec');
    if (req.method === 'OPTIONS') {
      res.writeHead(204, {
        'access-control-allow-methods': 'POST, OPTIONS',
        'access-control-allow-headers': 'authorization, content-type, x-namespace',
        'access-control-max-age': '600',
      });
      res.end();
      return;
    }
    if (url.pathname === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      return;
    }
    // `/decode`, or `/<token>/decode` where path tokens are on.
    const segments = url.pathname.split('/').filter(Boolean);
    const operation = segments.at(-1);
    const pathToken = segments.length === 2 ? segments[0] : undefined;
    if (segments.length > 2 || (operation !== 'decode' && operation !== 'encode')) {
      send(res, 404, { message: 'not found: POST /decode or /encode' });
      return;
    }
    const bearer = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    const namespace = header(req, 'x-namespace');
    void authorize(bearer, pathToken, namespace).then((verdict) => {
      if (!verdict.allowed) {
        // Never the path itself: it may hold a token.
        opts.log.warn({ operation, namespace, origin, status: verdict.status }, 'codec request refused');
        if (verdict.status === 401) res.setHeader('www-authenticate', 'Bearer');
        send(res, verdict.status, { message: verdict.message });
        return;
      }
      if (req.method !== 'POST') {
        res.setHeader('allow', 'POST, OPTIONS');
        send(res, 405, { message: 'POST only' });
        return;
      }
      handle(req, operation)
        .then((body) => send(res, 200, body))
        .catch((err: Error & { status?: number }) => {
          opts.log.warn({ operation, err: err.message }, 'codec request failed');
          send(res, err.status ?? 400, { message: err.message });
        });
    });
  };

  async function handle(req: http.IncomingMessage, operation: 'decode' | 'encode') {
    const body = await readJson(req);
    const raw = (body as { payloads?: unknown }).payloads;
    if (!Array.isArray(raw)) throw Object.assign(new Error('body must be { "payloads": [...] }'), { status: 400 });
    const payloads = raw.map(fromJson);
    const out = operation === 'decode' ? await codec.decode(payloads) : await codec.encode(payloads);
    return { payloads: out.map(toJson) };
  }

  const { tls } = opts;
  const loadTls = () => ({
    cert: readFileSync(tls!.certFile),
    key: readFileSync(tls!.keyFile),
    minVersion: 'TLSv1.2' as const,
  });
  const server = tls ? https.createServer(loadTls(), handler) : http.createServer(handler);
  // Polling stat follows the symlink swap kubelet does when a mounted Secret changes.
  const reload = () => {
    try {
      (server as https.Server).setSecureContext(loadTls());
      opts.log.info('codec server: certificate reloaded');
    } catch (err) {
      opts.log.warn({ err: String(err) }, 'codec server: certificate not reloaded');
    }
  };
  if (tls) watchFile(tls.certFile, { interval: 30_000 }, reload);

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = opts.host === '0.0.0.0' || opts.host === '::' ? '127.0.0.1' : opts.host;
  return {
    port,
    url: `${tls ? 'https' : 'http'}://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        if (tls) unwatchFile(tls.certFile, reload);
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function header(req: http.IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return (Array.isArray(v) ? v[0] : v) || undefined;
}

/**
 * Access tokens verified against the issuer's keys with `jose` (signature, `iss`, `aud`, `exp`,
 * `nbf`; the key set cached and re-fetched for an unknown key ID), then the namespace rule.
 */
class AccessTokens {
  private readonly keys: ReturnType<typeof createRemoteJWKSet>;

  constructor(private readonly o: CodecOidcOptions) {
    this.keys = createRemoteJWKSet(new URL(o.jwksUrl));
  }

  async authorize(token: string, namespace: string | undefined): Promise<Verdict> {
    let claims: JWTPayload;
    try {
      ({ payload: claims } = await jwtVerify(token, this.keys, {
        issuer: this.o.issuer,
        ...(this.o.audience ? { audience: this.o.audience } : {}),
      }));
    } catch (err) {
      const reason = (err as { code?: string }).code ?? 'invalid';
      return { allowed: false, status: 401, message: `the bearer token is not accepted (${reason})` };
    }
    if (!namespace) return { allowed: false, status: 403, message: 'the X-Namespace header is needed' };
    const granted = grants(claims[this.o.permissionsClaim]);
    if (this.o.roles.some((role) => granted.has(`${namespace}:${role}`))) return { allowed: true };
    return {
      allowed: false,
      status: 403,
      message: `the token grants none of ${this.o.roles.map((r) => `${namespace}:${r}`).join(', ')} in its ${this.o.permissionsClaim} claim`,
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

function readJson(req: http.IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        reject(Object.assign(new Error(`body over ${MAX_BODY_BYTES} bytes`), { status: 413 }));
        req.destroy();
      } else chunks.push(c);
    });
    req.on('error', reject);
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        reject(Object.assign(new Error('body is not JSON'), { status: 400 }));
      }
    });
  });
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
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
