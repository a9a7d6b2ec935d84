/**
 * The codec server: the Temporal Web UI's (and `temporal --codec-endpoint`'s) remote codec, so
 * people who may read payloads see them decrypted while Temporal keeps ciphertext. The protocol
 * is Temporal's: `POST <endpoint>/decode` and `/encode` with `{ "payloads": [<Payload as proto
 * JSON>] }` (metadata values and data in base64), answered in the same shape; the browser calls it
 * cross-origin, so the UI's origin is allowed by CORS (preflights are answered without
 * credentials, as browsers send none).
 *
 * Every other request needs a token from the tokens file, either as `Authorization: Bearer
 * <token>` (the temporal CLI's `--codec-auth`, a Web UI with login forwarding a token) or as the
 * endpoint's first path segment (`http://host:8888/<token>`, for a Web UI that sends no token:
 * its endpoint setting reaches only the browsers of people who can open the UI). Nothing is
 * answered without one.
 */
import { Buffer } from 'node:buffer';
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Payload } from '@temporalio/common';
import type { Logger } from '../log.js';
import { EncryptionCodec, type PayloadKeyRing } from './payload-encryption.js';

export interface CodecServerOptions {
  keys: PayloadKeyRing;
  /** File of accepted tokens, one a line (two during a token rotation); re-read when a token is not in it. */
  tokensFile: string;
  /** Origins allowed to call from a browser (the Web UI's, e.g. `https://temporal.example`). */
  corsOrigins: string[];
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

const MAX_BODY_BYTES = 32 * 1024 * 1024;

export async function startCodecServer(o: CodecServerOptions): Promise<RunningCodecServer> {
  const codec = new EncryptionCodec(o.keys);
  const tokens = new TokenFile(o.tokensFile);
  const origins = new Set(o.corsOrigins.map((u) => u.replace(/\/+$/, '')));

  const server = http.createServer((req, res) => {
    const origin = req.headers.origin;
    if (origin && origins.has(origin)) {
      res.setHeader('access-control-allow-origin', origin);
      res.setHeader('access-control-allow-credentials', 'true');
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
    // `/<token>/decode` or, with a bearer token, `/decode`.
    const segments = url.pathname.split('/').filter(Boolean);
    const operation = segments.at(-1);
    const pathToken = segments.length === 2 ? segments[0] : undefined;
    if (segments.length > 2 || (operation !== 'decode' && operation !== 'encode')) {
      send(res, 404, { message: 'not found: POST /decode or /encode' });
      return;
    }
    const bearer = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    if (!tokens.accepts(bearer ?? pathToken)) {
      o.log.warn({ path: segments.length === 2 ? '/…/' + operation : url.pathname, origin }, 'codec request refused');
      res.setHeader('www-authenticate', 'Bearer');
      send(res, 401, { message: 'a codec server token is needed (Authorization: Bearer <token>)' });
      return;
    }
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST, OPTIONS');
      send(res, 405, { message: 'POST only' });
      return;
    }
    void handle(req, operation)
      .then((body) => send(res, 200, body))
      .catch((err: Error & { status?: number }) => {
        o.log.warn({ operation, err: err.message }, 'codec request failed');
        send(res, err.status ?? 400, { message: err.message });
      });
  });

  async function handle(req: http.IncomingMessage, operation: 'decode' | 'encode') {
    const body = await readJson(req);
    const raw = (body as { payloads?: unknown }).payloads;
    if (!Array.isArray(raw)) throw Object.assign(new Error('body must be { "payloads": [...] }'), { status: 400 });
    const payloads = raw.map(fromJson);
    const out = operation === 'decode' ? await codec.decode(payloads) : await codec.encode(payloads);
    return { payloads: out.map(toJson) };
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = o.host === '0.0.0.0' || o.host === '::' ? '127.0.0.1' : o.host;
  return {
    port,
    url: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
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
