/**
 * The fast path's TLS settings (refused when they cannot mean what they say) and the names a
 * client certificate authenticates with.
 */
import type { PeerCertificate } from 'node:tls';
import { describe, expect, it } from 'vitest';
import { loadFastPathConfig } from '../../src/config.js';
import { certificateNames } from '../../src/fastpath/tenant.js';

describe('DO_FASTPATH_TLS_*', () => {
  const load = (env: Record<string, string>) => loadFastPathConfig(env).tls;

  it('is off without a certificate, on with a certificate and its key', () => {
    expect(load({})).toBeUndefined();
    expect(load({ DO_FASTPATH_TLS_CERT_FILE: '/t/tls.crt', DO_FASTPATH_TLS_KEY_FILE: '/t/tls.key' })).toEqual({
      certFile: '/t/tls.crt',
      keyFile: '/t/tls.key',
      requireClientCert: false,
      reloadIntervalMs: 30_000,
    });
    expect(
      load({
        DO_FASTPATH_TLS_CERT_FILE: '/t/tls.crt',
        DO_FASTPATH_TLS_KEY_FILE: '/t/tls.key',
        DO_FASTPATH_TLS_CLIENT_CA_FILE: '/t/ca.crt',
        DO_FASTPATH_TLS_REQUIRE_CLIENT_CERT: 'true',
        DO_FASTPATH_TLS_RELOAD_INTERVAL: '5s',
      }),
    ).toMatchObject({ clientCaFile: '/t/ca.crt', requireClientCert: true, reloadIntervalMs: 5000 });
  });

  it('refuses settings that would not do what they say', () => {
    expect(() => load({ DO_FASTPATH_TLS_CERT_FILE: '/t/tls.crt' })).toThrow('must be set together');
    expect(() => load({ DO_FASTPATH_TLS_CLIENT_CA_FILE: '/t/ca.crt' })).toThrow('client certificates need TLS');
    expect(() =>
      load({
        DO_FASTPATH_TLS_CERT_FILE: '/t/tls.crt',
        DO_FASTPATH_TLS_KEY_FILE: '/t/tls.key',
        DO_FASTPATH_TLS_REQUIRE_CLIENT_CERT: 'true',
      }),
    ).toThrow('needs DO_FASTPATH_TLS_CLIENT_CA_FILE');
    expect(() => load({ DO_FASTPATH_TLS_REQUIRE_CLIENT_CERT: 'yes' })).toThrow('must be true or false');
  });
});

describe('certificateNames', () => {
  const cert = (subject: Record<string, string | string[]>, subjectaltname?: string) =>
    ({ subject, subjectaltname }) as unknown as PeerCertificate;

  it('are the subject CN and the DNS and URI alternative names, never an IP or an e-mail', () => {
    expect(
      certificateNames(
        cert(
          { CN: 'team-a', O: 'acme' },
          'DNS:a.clients.example, IP Address:10.0.0.1, URI:spiffe://c/ns/a/sa/ci, email:x@y',
        ),
      ),
    ).toEqual(['team-a', 'a.clients.example', 'spiffe://c/ns/a/sa/ci']);
    expect(certificateNames(cert({ CN: ['one', 'two'] }))).toEqual(['one', 'two']);
    expect(certificateNames(cert({ O: 'acme' }, 'DNS:"a,b"'))).toEqual(['a,b']);
    expect(certificateNames(cert({}))).toEqual([]);
  });
});
