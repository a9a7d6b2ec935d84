/**
 * An OIDC issuer's part the codec server sees: a JWKS endpoint (node:http) and access tokens
 * signed with its key, as a Web UI with login forwards them; `jose` makes both.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair, type JWTPayload } from 'jose';

export interface TestIssuer {
  issuer: string;
  jwksUrl: string;
  /** An access token of this issuer with `claims` (e.g. `{ permissions: ['team-a:read'] }`). */
  token(claims: JWTPayload, o?: { expiresIn?: string; issuer?: string }): Promise<string>;
  /** The same claims signed by a key the JWKS does not hold. */
  forged(claims: JWTPayload): Promise<string>;
  close(): Promise<void>;
}

export async function startIssuer(): Promise<TestIssuer> {
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const other = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
  const server = http.createServer((req, res) => {
    if (req.url !== '/jwks.json') return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const sign = (claims: JWTPayload, key: typeof privateKey, o: { expiresIn?: string; issuer?: string } = {}) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(o.issuer ?? base)
      .setSubject('someone@example.com')
      .setIssuedAt()
      .setExpirationTime(o.expiresIn ?? '5m')
      .sign(key);
  return {
    issuer: base,
    jwksUrl: `${base}/jwks.json`,
    token: (claims, o) => sign(claims, privateKey, o),
    forged: (claims) => sign(claims, other.privateKey),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
