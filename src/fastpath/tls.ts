/**
 * TLS for the fast path's gRPC and HTTP ports: a serving certificate and key, and optionally a
 * client CA (client certificates verified against it authenticate as a tenant that names them,
 * src/fastpath/tenant.ts), all read from files and re-read on change — a Kubernetes Secret volume
 * (cert-manager's `tls.crt`, `tls.key`, `ca.crt`) is rewritten in place when the certificate is
 * renewed, and the servers pick the new one up without a restart.
 *
 * Why not grpc-js's FileWatcherCertificateProvider as it is: a read that fails mid-rotation (a
 * file briefly missing, a key that does not match its certificate yet) makes it publish "no
 * certificate" and the server drops every new connection until the next good read. This one
 * checks a new set with `tls.createSecureContext` and keeps serving the last good set otherwise.
 * It implements grpc-js's CertificateProvider so the gRPC server uses the library's own reloading
 * credentials, and tells the HTTPS server through `setSecureContext`.
 */
import { readFileSync } from 'node:fs';
import type { Server as HttpsServer } from 'node:https';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import { LastGoodCredentials, sameBytes } from '../credential-files.js';
import type { Logger } from '../log.js';

export interface ServingTlsConfig {
  certFile: string;
  keyFile: string;
  /** Client certificates are requested and verified against this CA. */
  clientCaFile?: string;
  /** Refuse connections without a client certificate the CA verifies (default: optional). */
  requireClientCert?: boolean;
  /** How often the files are re-read. */
  reloadIntervalMs: number;
}

interface Material {
  cert: Buffer;
  key: Buffer;
  ca?: Buffer;
}

type CaListener = (u: { caCertificate: Buffer } | null) => void;
type IdentityListener = (u: { certificate: Buffer; privateKey: Buffer } | null) => void;

export class ServingTls implements grpc.experimental.CertificateProvider {
  private current: Material;
  private timer?: NodeJS.Timeout;
  private readonly files: LastGoodCredentials;
  private readonly caListeners = new Set<CaListener>();
  private readonly identityListeners = new Set<IdentityListener>();
  private readonly httpsServers = new Set<HttpsServer>();

  /** Reads and checks the files now: a missing or invalid file fails the start with its reason. */
  constructor(
    readonly config: ServingTlsConfig,
    private readonly log: Logger,
  ) {
    this.files = new LastGoodCredentials(log, 'TLS files');
    this.current = this.read();
  }

  /** The gRPC server's credentials: reloaded with the files. */
  grpcCredentials(): grpc.ServerCredentials {
    this.watch();
    return grpc.experimental.createCertificateProviderServerCredentials(
      this,
      this.config.clientCaFile ? this : null,
      this.config.requireClientCert ?? false,
    );
  }

  /** Options for `https.createServer`; call `serveHttps` with the server to keep it reloaded. */
  httpsOptions() {
    return {
      ...this.contextOptions(this.current),
      requestCert: this.config.clientCaFile !== undefined,
      rejectUnauthorized: this.config.requireClientCert ?? false,
    };
  }

  serveHttps(server: HttpsServer): void {
    this.watch();
    this.httpsServers.add(server);
    server.once('close', () => this.httpsServers.delete(server));
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Re-reads the files; publishes a new set that differs and is valid, keeps the last good one otherwise. */
  reload(): void {
    const next = this.files.next(
      () => this.read(),
      this.current,
      (a, b) => sameBytes(a.cert, b.cert) && sameBytes(a.key, b.key) && sameBytes(a.ca, b.ca),
    );
    if (!next) return;
    this.current = next;
    this.log.info({ certFile: this.config.certFile }, 'TLS certificate reloaded');
    for (const l of this.identityListeners) l({ certificate: next.cert, privateKey: next.key });
    if (next.ca) for (const l of this.caListeners) l({ caCertificate: next.ca });
    for (const s of this.httpsServers) s.setSecureContext(this.contextOptions(next));
  }

  private read(): Material {
    const { certFile, keyFile, clientCaFile } = this.config;
    const m: Material = {
      cert: readFileSync(certFile),
      key: readFileSync(keyFile),
      ...(clientCaFile && { ca: readFileSync(clientCaFile) }),
    };
    // Throws (e.g. "key values mismatch") on a set that would not serve.
    createSecureContext(this.contextOptions(m));
    return m;
  }

  private contextOptions(m: Material): SecureContextOptions {
    return { cert: m.cert, key: m.key, ...(m.ca && { ca: m.ca }) };
  }

  private watch(): void {
    this.timer ??= setInterval(() => this.reload(), this.config.reloadIntervalMs).unref();
  }

  addCaCertificateListener(listener: CaListener): void {
    this.caListeners.add(listener);
    if (this.current.ca) process.nextTick(listener, { caCertificate: this.current.ca });
  }
  removeCaCertificateListener(listener: CaListener): void {
    this.caListeners.delete(listener);
  }
  addIdentityCertificateListener(listener: IdentityListener): void {
    this.identityListeners.add(listener);
    process.nextTick(listener, { certificate: this.current.cert, privateKey: this.current.key });
  }
  removeIdentityCertificateListener(listener: IdentityListener): void {
    this.identityListeners.delete(listener);
  }
}
