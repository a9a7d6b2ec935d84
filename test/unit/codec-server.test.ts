/**
 * The codec server on its own (no Temporal): who may decode — a token of the tokens file as a
 * bearer token, a path token only where switched on, an OIDC access token (real `jose` keys and
 * a JWKS endpoint) only for the namespaces its permissions claim grants —, CORS without
 * credentials, and HTTPS with a certificate from files.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureServingCert } from '../../src/admission/certs.js';
import { logger } from '../../src/log.js';
import { startCodecServer, type RunningCodecServer } from '../../src/temporal/codec-server.js';
import { EncryptionCodec, PayloadKeyRing } from '../../src/temporal/payload-encryption.js';
import { startIssuer, type TestIssuer } from '../support/oidc.js';

const quiet = logger.child({ test: true });
quiet.level = 'silent';
const TOKEN = `codec-${randomBytes(8).toString('hex')}`;
const UI = 'https://temporal.example';

let dir: string;
let keys: PayloadKeyRing;
let issuer: TestIssuer;
let sealed: { metadata: Record<string, string>; data: string };
const servers: RunningCodecServer[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'codec-'));
  await mkdir(path.join(dir, 'keys'));
  await writeFile(path.join(dir, 'keys', 'k1'), randomBytes(32).toString('base64'));
  await writeFile(path.join(dir, 'tokens'), `${TOKEN}\n`);
  keys = new PayloadKeyRing({ dir: path.join(dir, 'keys') });
  issuer = await startIssuer();
  const [p] = await new EncryptionCodec(keys).encode([defaultPayloadConverter.toPayload('the secret value')]);
  sealed = {
    metadata: Object.fromEntries(Object.entries(p!.metadata!).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
    data: Buffer.from(p!.data!).toString('base64'),
  };
});
afterAll(async () => {
  for (const s of servers) await s.close();
  await issuer.close();
  await rm(dir, { recursive: true, force: true });
});

async function server(o: Partial<Parameters<typeof startCodecServer>[0]> = {}) {
  const s = await startCodecServer({
    keys,
    tokensFile: path.join(dir, 'tokens'),
    corsOrigins: [UI],
    port: 0,
    host: '127.0.0.1',
    log: quiet,
    ...o,
  });
  servers.push(s);
  return s;
}

async function decode(s: RunningCodecServer, headers: Record<string, string>, pathPrefix = '') {
  const res = await fetch(`${s.url}${pathPrefix}/decode`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: UI, ...headers },
    body: JSON.stringify({ payloads: [sealed] }),
  });
  const body = (await res.json()) as { payloads?: { data: string }[]; message?: string };
  const text = body.payloads?.map((p) => Buffer.from(p.data, 'base64').toString()).join('') ?? '';
  return { status: res.status, text, message: body.message, headers: res.headers };
}

describe('tokens of the tokens file', () => {
  it('decodes for a bearer token, refuses none or a wrong one; no credentials mode in CORS', async () => {
    const s = await server();
    const ok = await decode(s, { authorization: `Bearer ${TOKEN}` });
    expect(ok.status).toBe(200);
    expect(ok.text).toContain('the secret value');
    expect(ok.headers.get('access-control-allow-origin')).toBe(UI);
    expect(ok.headers.get('access-control-allow-credentials')).toBeNull();
    for (const headers of [{}, { authorization: 'Bearer wrong' }, { authorization: TOKEN }] as Record<
      string,
      string
    >[]) {
      const refused = await decode(s, headers);
      expect(refused.status, JSON.stringify(headers)).toBe(401);
      expect(refused.text).toBe('');
    }
  });

  it('answers the preflight, names what is wrong with a request, and reads no body before the token', async () => {
    const s = await server();
    const call = async (method: string, route: string, body?: string, auth = `Bearer ${TOKEN}`) => {
      const res = await fetch(`${s.url}${route}`, { method, headers: { authorization: auth, origin: UI }, body });
      return { status: res.status, allow: res.headers.get('allow'), body: await res.text() };
    };
    const preflight = await fetch(`${s.url}/decode`, { method: 'OPTIONS', headers: { origin: UI } });
    expect([preflight.status, preflight.headers.get('access-control-allow-origin')]).toEqual([204, UI]);
    expect(preflight.headers.get('access-control-allow-headers')).toBe('authorization, content-type, x-namespace');
    expect(await call('GET', '/decode')).toEqual({
      status: 405,
      allow: 'POST, OPTIONS',
      body: '{"message":"POST only"}',
    });
    expect(await call('POST', '/a/b/decode', '{}')).toMatchObject({
      status: 404,
      body: '{"message":"not found: POST /decode or /encode"}',
    });
    expect(await call('POST', '/decode', '{"payloads":')).toMatchObject({
      status: 400,
      body: '{"message":"body is not JSON"}',
    });
    expect(await call('POST', '/decode', '{"payloads":{}}')).toMatchObject({
      status: 400,
      body: JSON.stringify({ message: 'body must be { "payloads": [...] }' }),
    });
    expect(JSON.parse((await call('POST', '/decode', '{"payloads":[{"data":1}]}')).body)).toEqual({
      message: expect.stringMatching(/^body must be \{ "payloads": \[\.\.\.\] \} \(payloads\.0\.data: /),
    });
    expect(await call('POST', '/decode', 'x'.repeat(32 * 1024 * 1024 + 1), 'Bearer wrong')).toMatchObject({
      status: 401,
    });
    expect(await call('POST', '/decode', 'x'.repeat(32 * 1024 * 1024 + 1))).toMatchObject({
      status: 413,
      body: JSON.stringify({ message: `body over ${32 * 1024 * 1024} bytes` }),
    });
  });

  it('a token in the path only where path tokens are switched on', async () => {
    expect((await decode(await server(), {}, `/${TOKEN}`)).status).toBe(401);
    const withPathTokens = await server({ pathTokens: true });
    expect((await decode(withPathTokens, {}, `/${TOKEN}`)).text).toContain('the secret value');
    expect((await decode(withPathTokens, {}, '/wrong')).status).toBe(401);
    // A token longer than a router's default parameter limit (100) is still read as a token.
    expect((await decode(withPathTokens, {}, `/${'t'.repeat(300)}`)).status).toBe(401);
  });
});

describe('OIDC access tokens (a Web UI with login)', () => {
  let s: RunningCodecServer;
  beforeAll(async () => {
    s = await server({
      oidc: {
        issuer: issuer.issuer,
        jwksUrl: issuer.jwksUrl,
        permissionsClaim: 'permissions',
        roles: ['read', 'admin'],
      },
    });
  });

  it('decodes the namespaces the token grants, refuses the others', async () => {
    const token = await issuer.token({ permissions: ['team-a:read', 'team-c:worker'] });
    const as = (namespace?: string) =>
      decode(s, { authorization: `Bearer ${token}`, ...(namespace ? { 'x-namespace': namespace } : {}) });
    const a = await as('team-a');
    expect(a.status).toBe(200);
    expect(a.text).toContain('the secret value');
    for (const [ns, message] of [
      ['team-b', /none of team-b:read, team-b:admin/],
      ['team-c', /none of team-c:read/], // a role not in the list
      [undefined, /X-Namespace/],
    ] as const) {
      const refused = await as(ns);
      expect(refused.status, ns).toBe(403);
      expect(refused.message, ns).toMatch(message);
      expect(refused.text).toBe('');
    }
  });

  it('refuses a token signed by another key, of another issuer, or expired; the tokens file still works', async () => {
    const claims = { permissions: ['team-a:admin'] };
    for (const token of [
      await issuer.forged(claims),
      await issuer.token(claims, { issuer: 'https://elsewhere.example' }),
      await issuer.token(claims, { expiresIn: '-1m' }),
    ])
      expect((await decode(s, { authorization: `Bearer ${token}`, 'x-namespace': 'team-a' })).status).toBe(401);
    expect((await decode(s, { authorization: `Bearer ${TOKEN}`, 'x-namespace': 'team-b' })).status).toBe(200);
  });
});

it('serves HTTPS with the certificate of its files', async () => {
  await ensureServingCert(path.join(dir, 'tls'));
  const s = await server({
    tls: { certFile: path.join(dir, 'tls', 'tls.crt'), keyFile: path.join(dir, 'tls', 'tls.key') },
  });
  expect(s.url).toMatch(/^https:/);
  const ca = await readFile(path.join(dir, 'tls', 'ca.crt'));
  const status = await new Promise<number>((resolve, reject) => {
    const req = https.request(
      `${s.url}/decode`,
      { method: 'POST', ca, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' } },
      (res) => {
        res.resume();
        resolve(res.statusCode!);
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ payloads: [sealed] }));
  });
  expect(status).toBe(200);
});
