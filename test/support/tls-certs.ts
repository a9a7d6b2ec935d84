/**
 * Throwaway X.509 for TLS tests: a CA, and server or client certificates it signs, as PEM — the
 * shapes the Temporal TLS tests use, made by src/admission/certs.ts's newCa/issueLeaf
 * (@peculiar/x509, no system `openssl`).
 */
import { issueLeaf, newCa } from '../../src/admission/certs.js';

export interface Pem {
  cert: string;
  key: string;
}

export interface TestCa extends Pem {
  /** A certificate signed by this CA: `server` names its hosts (DNS names or IPs) in the SAN. */
  issue(cn: string, use: { server: string[] } | 'client'): Promise<Pem>;
}

export async function createTestCa(name: string): Promise<TestCa> {
  const ca = await newCa(name);
  return {
    cert: ca.certPem,
    key: ca.keyPem,
    async issue(cn, use) {
      const leaf = await issueLeaf(ca, {
        subject: `CN=${cn}`,
        ...(use === 'client' ? { usage: 'client' as const } : { usage: 'server' as const, hosts: use.server }),
      });
      return { cert: leaf.certPem, key: leaf.keyPem };
    },
  };
}
