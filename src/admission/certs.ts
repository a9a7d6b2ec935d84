/**
 * The serving certificate of the admission webhook in the local stack (`dev`, tests).
 *
 * The apiserver calls a webhook only over HTTPS and verifies it against the `caBundle` of the
 * ValidatingWebhookConfiguration, so the webhook needs a certificate the stack can vouch for.
 * kube-apiserver and kube-controller-manager make their own self-signed serving certificates
 * (`--cert-dir`), but they do not sign one for anybody else, and node:crypto makes keys, not
 * X.509 certificates; @peculiar/x509 (WebCrypto) does, without a system `openssl`. In a cluster
 * cert-manager issues the certificate instead (deploy/webhook/certificate.yaml).
 *
 * One CA per state dir, kept across `dev` restarts (its caBundle is re-registered at each start
 * anyway); a leaf for 127.0.0.1/localhost signed by it. The CA key stays in the state dir (0600)
 * and is never sent anywhere.
 *
 * `newCa` and `issueLeaf` also make the fast path's TLS material in tests (server and client
 * certificates).
 */
import { webcrypto } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
// @peculiar/x509 2.x resolves its ASN.1 codecs through tsyringe, which needs the Reflect metadata API.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';

export interface ServingCert {
  /** PEM of the CA that signed `cert`: the webhook configuration's caBundle. */
  caPem: string;
  certPem: string;
  keyPem: string;
  certFile: string;
  keyFile: string;
}

// The library's default provider is the global WebCrypto; name Node's explicitly.
x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY_MS = 24 * 60 * 60 * 1000;
/** Regenerate a leaf that expires within this margin (a long-lived dev state dir). */
const RENEW_BEFORE_MS = 30 * DAY_MS;

/**
 * Returns the CA and a serving certificate for `hosts` (IPs and DNS names) under `dir`, making
 * them when missing, when the leaf is about to expire, or when it does not name every host.
 */
export async function ensureServingCert(
  dir: string,
  hosts: string[] = ['127.0.0.1', 'localhost'],
): Promise<ServingCert> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const files = {
    caCert: path.join(dir, 'ca.crt'),
    caKey: path.join(dir, 'ca.key'),
    cert: path.join(dir, 'tls.crt'),
    key: path.join(dir, 'tls.key'),
  };
  const ca = await ensureCa(files.caCert, files.caKey);
  if (!(await leafUsable(files.cert, files.key, hosts))) {
    const leaf = await issueLeaf(ca, { subject: 'CN=durable-operators-admission', usage: 'server', hosts });
    await writeFile(files.key, leaf.keyPem, { mode: 0o600 });
    await writeFile(files.cert, leaf.certPem, { mode: 0o644 });
  }
  return {
    caPem: ca.cert.toString('pem') + '\n',
    certPem: await readFile(files.cert, 'utf8'),
    keyPem: await readFile(files.key, 'utf8'),
    certFile: files.cert,
    keyFile: files.key,
  };
}

async function ensureCa(
  certFile: string,
  keyFile: string,
): Promise<{ cert: x509.X509Certificate; key: webcrypto.CryptoKey }> {
  if (existsSync(certFile) && existsSync(keyFile)) {
    const cert = new x509.X509Certificate(await readFile(certFile, 'utf8'));
    if (cert.notAfter.getTime() - Date.now() > RENEW_BEFORE_MS) {
      const key = await webcrypto.subtle.importKey('pkcs8', pemBody(await readFile(keyFile, 'utf8')), ALG, false, [
        'sign',
      ]);
      return { cert, key };
    }
  }
  const ca = await newCa(`durable-operators-local-admission-ca@${Math.floor(Date.now() / 1000)}`);
  await writeFile(keyFile, ca.keyPem, { mode: 0o600 });
  await writeFile(certFile, ca.certPem, { mode: 0o644 });
  // A new CA invalidates any leaf signed by the old one.
  await writeFile(path.join(path.dirname(certFile), 'tls.crt'), '', { mode: 0o644 });
  return ca;
}

/** A CA that signs leaves (issueLeaf); its key never leaves the caller. */
export interface LocalCa {
  cert: x509.X509Certificate;
  key: webcrypto.CryptoKey;
  certPem: string;
  keyPem: string;
}

/** A new self-signed CA (ECDSA P-256, ten years). */
export async function newCa(commonName: string): Promise<LocalCa> {
  const keys = await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: `CN=${commonName}`,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + 10 * 365 * DAY_MS),
    signingAlgorithm: ALG,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false),
    ],
  });
  return { cert, key: keys.privateKey, certPem: cert.toString('pem') + '\n', keyPem: await pkcs8Pem(keys.privateKey) };
}

/**
 * A leaf signed by `ca` (one year): a server certificate for `hosts` (IPs and DNS names), or a
 * client certificate whose subject alternative names are `hosts` (DNS) and `uris`.
 */
export async function issueLeaf(
  ca: Pick<LocalCa, 'cert' | 'key'>,
  leaf: { subject: string; usage: 'server' | 'client'; hosts?: string[]; uris?: string[] },
): Promise<{ certPem: string; keyPem: string; serialNumber: string }> {
  const keys = await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
  const now = Date.now();
  const names = [
    ...(leaf.hosts ?? []).map((h) =>
      /^[\d.]+$|:/.test(h) ? { type: 'ip' as const, value: h } : { type: 'dns' as const, value: h },
    ),
    ...(leaf.uris ?? []).map((u) => ({ type: 'url' as const, value: u })),
  ];
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject: leaf.subject,
    issuer: ca.cert.subject,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + 365 * DAY_MS),
    signingAlgorithm: ALG,
    publicKey: keys.publicKey,
    signingKey: ca.key,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
      new x509.ExtendedKeyUsageExtension([
        leaf.usage === 'server' ? x509.ExtendedKeyUsage.serverAuth : x509.ExtendedKeyUsage.clientAuth,
      ]),
      ...(names.length ? [new x509.SubjectAlternativeNameExtension(names)] : []),
      await x509.AuthorityKeyIdentifierExtension.create(ca.cert, false),
    ],
  });
  return {
    certPem: cert.toString('pem') + '\n',
    keyPem: await pkcs8Pem(keys.privateKey),
    serialNumber: cert.serialNumber,
  };
}

async function leafUsable(certFile: string, keyFile: string, hosts: string[]): Promise<boolean> {
  if (!existsSync(certFile) || !existsSync(keyFile)) return false;
  const pem = await readFile(certFile, 'utf8');
  if (!pem.trim()) return false;
  const cert = new x509.X509Certificate(pem);
  if (cert.notAfter.getTime() - Date.now() < RENEW_BEFORE_MS) return false;
  const san = cert.getExtension(x509.SubjectAlternativeNameExtension);
  const named = new Set(san?.names.items.map((n) => n.value) ?? []);
  return hosts.every((h) => named.has(h));
}

function randomSerial(): string {
  // Positive 16-byte serial (the top bit clear), as RFC 5280 asks.
  const bytes = webcrypto.getRandomValues(new Uint8Array(16));
  bytes[0] = bytes[0]! & 0x7f;
  return Buffer.from(bytes).toString('hex');
}

async function pkcs8Pem(key: webcrypto.CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  return x509.PemConverter.encode(der, 'PRIVATE KEY') + '\n';
}

function pemBody(pem: string): ArrayBuffer {
  const [der] = x509.PemConverter.decode(pem);
  if (!der) throw new Error('empty PEM');
  return der;
}
