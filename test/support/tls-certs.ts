/**
 * Throwaway X.509 for TLS tests: a CA, and server or client certificates it signs, as PEM.
 * @peculiar/x509 (already what src/admission/certs.ts uses) rather than a system `openssl`, so
 * the tests need no extra tool and make the same certificates on every machine.
 */
import { webcrypto } from 'node:crypto';
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY_MS = 24 * 60 * 60 * 1000;

export interface Pem {
  cert: string;
  key: string;
}

export interface TestCa extends Pem {
  /** A certificate signed by this CA: `server` names its hosts (DNS names or IPs) in the SAN. */
  issue(cn: string, use: { server: string[] } | 'client'): Promise<Pem>;
}

export async function createTestCa(name: string): Promise<TestCa> {
  const keys = await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
  const now = Date.now();
  const caCert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=${name}`,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + DAY_MS),
    signingAlgorithm: ALG,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false),
    ],
  });
  return {
    cert: caCert.toString('pem') + '\n',
    key: await pkcs8Pem(keys.privateKey),
    async issue(cn, use) {
      const leafKeys = await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
      const leaf = await x509.X509CertificateGenerator.create({
        serialNumber: serial(),
        subject: `CN=${cn}`,
        issuer: caCert.subject,
        notBefore: new Date(now - 60_000),
        notAfter: new Date(now + DAY_MS),
        signingAlgorithm: ALG,
        publicKey: leafKeys.publicKey,
        signingKey: keys.privateKey,
        extensions: [
          new x509.BasicConstraintsExtension(false, undefined, true),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
          new x509.ExtendedKeyUsageExtension([
            use === 'client' ? x509.ExtendedKeyUsage.clientAuth : x509.ExtendedKeyUsage.serverAuth,
          ]),
          ...(use === 'client'
            ? []
            : [
                new x509.SubjectAlternativeNameExtension(
                  use.server.map((h) =>
                    /^[\d.]+$|:/.test(h) ? { type: 'ip' as const, value: h } : { type: 'dns' as const, value: h },
                  ),
                ),
              ]),
          await x509.AuthorityKeyIdentifierExtension.create(caCert, false),
        ],
      });
      return { cert: leaf.toString('pem') + '\n', key: await pkcs8Pem(leafKeys.privateKey) };
    },
  };
}

function serial(): string {
  const bytes = webcrypto.getRandomValues(new Uint8Array(16));
  bytes[0] = bytes[0]! & 0x7f;
  return Buffer.from(bytes).toString('hex');
}

async function pkcs8Pem(key: webcrypto.CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  return x509.PemConverter.encode(der, 'PRIVATE KEY') + '\n';
}
