/**
 * Mutual TLS between the fast path and its agents, with no new state to operate: everything is
 * derived from the one key the fast path already holds (DO_AGENT_TOKEN_FILE), so every replica
 * computes the same CA and the same certificates and none has a Secret to share.
 *
 *   CA key        = Ed25519 seed HKDF-SHA256(key, "sandbox-agent-ca/v1")
 *   CA            = self-signed, fixed dates: the same bytes on every replica
 *   agent of pool = Ed25519 seed HKDF(key, "sandbox-agent-tls/v1", ns, name, uid, window),
 *                   URI SAN urn:sandbox.fast.io:agent:<ns>:<name>:<uid>, serverAuth
 *   fast path     = Ed25519 seed HKDF(key, "sandbox-fastpath-tls/v1", window),
 *                   URI SAN urn:sandbox.fast.io:fastpath, clientAuth
 *
 * (labels distinct from the pool tokens' HMAC and the env-sealing keys, src/fastpath/sealed-env.ts).
 * A certificate is issued for a window of RENEW_EVERY_MS (10 days) and valid for
 * CERT_LIFETIME_MS (30 days) from its start: the one a window issues always has 20 days left, so
 * a pool's workflow that renews its agents' certificate when the window changes has 20 days of
 * margin. Ed25519 signatures are deterministic, so a certificate is a function of (key, pool,
 * window): a retried or concurrent issue writes the same bytes.
 *
 * The fast path accepts an agent only with a chain to this CA and the URI of the pool it admitted
 * the address for (so an agent of pool A cannot answer as pool B's, and a Pod that is not an
 * admitted agent never gets a request); an agent serves only a client certificate of this CA
 * naming the fast path (an agent's own certificate, serverAuth only, is not one).
 */
import { createHash, createPrivateKey, createPublicKey, hkdfSync, webcrypto } from 'node:crypto';
// @peculiar/x509 2.x resolves its ASN.1 codecs through tsyringe, which needs the Reflect metadata API.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { FASTPATH_IDENTITY, agentIdentity, type PoolIdentity } from '../domain/agent-identity.js';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;
/** A new certificate per window: the pool's workflow rewrites its agents' certificate when it changes. */
export const RENEW_EVERY_MS = 10 * DAY_MS;
/** How long a certificate is valid from the start of its window. */
export const CERT_LIFETIME_MS = 30 * DAY_MS;
/** Valid this much before its window starts: clocks a little apart still accept it. */
const BACKDATE_MS = HOUR_MS;

/** The start of the window `now` falls in (certificates issued in it are identical). */
export function windowStart(now: number): number {
  return Math.floor(now / RENEW_EVERY_MS) * RENEW_EVERY_MS;
}

export interface TlsMaterial {
  /** PEM certificate. */
  cert: string;
  /** PEM PKCS#8 private key. */
  key: string;
  /** PEM of the CA: what the other side's certificate must chain to. */
  ca: string;
}

interface KeyPair {
  privateKey: webcrypto.CryptoKey;
  publicKey: webcrypto.CryptoKey;
  pem: string;
}

const ED25519 = { name: 'Ed25519' } as const;
/** PKCS#8 wrapping of a raw Ed25519 seed (RFC 8410). */
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

async function ed25519(seed: Buffer): Promise<KeyPair> {
  const pkcs8 = Buffer.concat([ED25519_PKCS8_PREFIX, seed]);
  const spki = createPublicKey(createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' })).export({
    format: 'der',
    type: 'spki',
  });
  return {
    privateKey: await webcrypto.subtle.importKey('pkcs8', pkcs8, ED25519, false, ['sign']),
    publicKey: await webcrypto.subtle.importKey('spki', spki, ED25519, true, ['verify']),
    pem: x509.PemConverter.encode(pkcs8, 'PRIVATE KEY') + '\n',
  };
}

/** A positive 16-byte serial derived from what the certificate is (deterministic, unique per window). */
function serialOf(...parts: string[]): string {
  const bytes = createHash('sha256').update(parts.join('\n')).digest().subarray(0, 16);
  bytes[0] = bytes[0]! & 0x7f;
  return bytes.toString('hex');
}

interface Ca {
  cert: x509.X509Certificate;
  key: webcrypto.CryptoKey;
  pem: string;
}

/** The fast path's agent PKI, derived from its agent key; certificates cached per window. */
export class AgentPki {
  private ca?: Promise<Ca>;
  private readonly issued = new Map<string, Promise<TlsMaterial>>();

  constructor(private readonly key: string) {}

  private seed(label: string, ...parts: string[]): Buffer {
    return Buffer.from(hkdfSync('sha256', this.key, '', [label, ...parts].join('\n'), 32));
  }

  private authority(): Promise<Ca> {
    this.ca ??= (async () => {
      const keys = await ed25519(this.seed('sandbox-agent-ca/v1'));
      const spki = Buffer.from(await webcrypto.subtle.exportKey('spki', keys.publicKey));
      // The key's fingerprint in the name: CAs of two keys are told apart by name too.
      const tag = createHash('sha256').update(spki).digest('hex').slice(0, 12);
      const cert = await x509.X509CertificateGenerator.createSelfSigned({
        serialNumber: serialOf('ca', tag),
        name: `CN=durable-operators sandbox agent CA ${tag}`,
        notBefore: new Date('2020-01-01T00:00:00Z'),
        notAfter: new Date('2100-01-01T00:00:00Z'),
        signingAlgorithm: ED25519,
        keys,
        extensions: [
          new x509.BasicConstraintsExtension(true, 0, true),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true),
          await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false),
        ],
      });
      return { cert, key: keys.privateKey, pem: cert.toString('pem') + '\n' };
    })();
    return this.ca;
  }

  /** The CA's name: it changes with the key (so a pool's Secret is rewritten after a key rotation). */
  async caName(): Promise<string> {
    return (await this.authority()).cert.subject;
  }

  /** The CA certificate (PEM): agents verify the fast path's client certificate against it. */
  async caPem(): Promise<string> {
    return (await this.authority()).pem;
  }

  /** The certificate and key of the pool's agents for the window `now` falls in. */
  agentTls(pool: PoolIdentity, now = Date.now()): Promise<TlsMaterial> {
    const start = windowStart(now);
    return this.cached(`agent\n${agentIdentity(pool)}\n${start}`, () =>
      this.issue(
        this.seed('sandbox-agent-tls/v1', pool.namespace, pool.name, pool.uid, String(start)),
        `CN=sandbox-agent ${pool.namespace}/${pool.name}`,
        agentIdentity(pool),
        'server',
        start,
      ),
    );
  }

  /** The fast path's client certificate and key for the window `now` falls in. */
  fastPathTls(now = Date.now()): Promise<TlsMaterial> {
    const start = windowStart(now);
    return this.cached(`fastpath\n${start}`, () =>
      this.issue(
        this.seed('sandbox-fastpath-tls/v1', String(start)),
        'CN=sandbox-fastpath',
        FASTPATH_IDENTITY,
        'client',
        start,
      ),
    );
  }

  private cached(id: string, make: () => Promise<TlsMaterial>): Promise<TlsMaterial> {
    let p = this.issued.get(id);
    if (!p) {
      // Only the current windows are ever asked for again: keep the map small.
      if (this.issued.size > 1000) this.issued.clear();
      p = make();
      this.issued.set(id, p);
      p.catch(() => this.issued.delete(id));
    }
    return p;
  }

  private async issue(
    seed: Buffer,
    subject: string,
    uri: string,
    usage: 'server' | 'client',
    start: number,
  ): Promise<TlsMaterial> {
    const ca = await this.authority();
    const keys = await ed25519(seed);
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: serialOf(uri, String(start)),
      subject,
      issuer: ca.cert.subject,
      notBefore: new Date(start - BACKDATE_MS),
      notAfter: new Date(start + CERT_LIFETIME_MS),
      signingAlgorithm: ED25519,
      publicKey: keys.publicKey,
      signingKey: ca.key,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([
          usage === 'server' ? x509.ExtendedKeyUsage.serverAuth : x509.ExtendedKeyUsage.clientAuth,
        ]),
        new x509.SubjectAlternativeNameExtension([{ type: 'url', value: uri }], false),
        await x509.AuthorityKeyIdentifierExtension.create(ca.cert, false),
      ],
    });
    return { cert: cert.toString('pem') + '\n', key: keys.pem, ca: ca.pem };
  }
}
