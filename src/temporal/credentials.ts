/**
 * The Temporal credentials a role reads from files — client certificate and key, server CA, API
 * key — re-read while it runs: a mounted Secret (cert-manager's renewal, a rotated API key) is
 * rewritten in place, and the connections take the new set without a restart.
 *
 * One reader serves both SDKs. The client (grpc-js) gets it as a CertificateProvider, so every
 * new TLS connection is made with the newest pair (grpc-js's own reloading credentials); the
 * worker's NativeConnection (Rust core) takes TLS only at connect, so WorkerConnection (in
 * ./connection.ts) makes a new one on a change and moves its workers to it. The API key is
 * changed in place (`setApiKey`) on both.
 *
 * Like the fast path's ServingTls: a set that does not load (a file missing mid-rotation, a key
 * that does not match its certificate yet) is not published; the last good one stays in use.
 */
import { readFileSync } from 'node:fs';
import { createSecureContext, rootCertificates } from 'node:tls';
import type * as grpc from '@grpc/grpc-js';
import type { TemporalConfig } from '../config.js';
import { LastGoodCredentials, sameBytes } from '../credential-files.js';
import type { Logger } from '../log.js';

/** What the files hold now; a value not from a file is the config's, fixed. */
interface Material {
  cert?: Buffer;
  key?: Buffer;
  ca?: Buffer;
  apiKey?: string;
}

export interface CredentialsChange {
  tls: boolean;
  apiKey: boolean;
}

type CaListener = (u: { caCertificate: Buffer } | null) => void;
type IdentityListener = (u: { certificate: Buffer; privateKey: Buffer } | null) => void;
const tlsChanged = (a: Material, b: Material) =>
  !sameBytes(a.cert, b.cert) || !sameBytes(a.key, b.key) || !sameBytes(a.ca, b.ca);

type TlsOptions = Exclude<TemporalConfig['tls'], boolean | null | undefined>;

export class TemporalCredentials implements grpc.experimental.CertificateProvider {
  private current: Material;
  private timer?: NodeJS.Timeout;
  private readonly files: LastGoodCredentials;
  private readonly changeListeners = new Set<(c: CredentialsChange) => void>();
  private readonly caListeners = new Set<CaListener>();
  private readonly identityListeners = new Set<IdentityListener>();

  /** Undefined when nothing of the connection comes from a file (nothing to re-read). */
  static of(cfg: TemporalConfig, log: Logger): TemporalCredentials | undefined {
    const f = cfg.files;
    if (!f || !(f.clientCert || f.clientKey || f.serverCa || f.apiKey)) return undefined;
    return new TemporalCredentials(cfg, log);
  }

  private constructor(
    private readonly cfg: TemporalConfig,
    private readonly log: Logger,
  ) {
    this.files = new LastGoodCredentials(log, 'Temporal credential files');
    this.current = this.read();
  }

  /** Whether TLS material comes from files (then the client takes it through this provider). */
  get tlsFromFiles(): boolean {
    const f = this.cfg.files ?? {};
    return !!(f.clientCert || f.clientKey || f.serverCa) && typeof this.cfg.tls === 'object' && !!this.cfg.tls;
  }

  get hasClientCert(): boolean {
    return this.current.cert !== undefined;
  }

  /** The connection's TLS option with the newest files (for a NativeConnection). */
  get tls(): TemporalConfig['tls'] {
    if (!this.tlsFromFiles) return this.cfg.tls;
    const { cert, key, ca } = this.current;
    return {
      ...(this.cfg.tls as TlsOptions),
      ...(ca && { serverRootCACertificate: ca }),
      ...(cert && key && { clientCertPair: { crt: cert, key } }),
    };
  }

  get apiKey(): string | undefined {
    return this.current.apiKey;
  }

  get serverName(): string | undefined {
    return typeof this.cfg.tls === 'object' && this.cfg.tls ? this.cfg.tls.serverNameOverride : undefined;
  }

  /** Re-read every `reloadIntervalMs`; `listener` hears of each change that loads. */
  watch(listener: (c: CredentialsChange) => void): void {
    this.changeListeners.add(listener);
    this.timer ??= setInterval(() => this.reload(), this.cfg.reloadIntervalMs ?? 10_000).unref();
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.changeListeners.clear();
  }

  /** Re-reads the files; publishes a set that differs and loads, keeps the last good one otherwise. */
  reload(): void {
    const next = this.files.next(
      () => this.read(),
      this.current,
      (a, b) => !tlsChanged(a, b) && a.apiKey === b.apiKey,
    );
    if (!next) return;
    const change: CredentialsChange = {
      tls: tlsChanged(next, this.current),
      apiKey: next.apiKey !== this.current.apiKey,
    };
    this.current = next;
    this.log.info(
      { certificateChanged: change.tls, keyChanged: change.apiKey },
      'Temporal credentials changed in their files: renewing the connections',
    );
    if (change.tls) {
      for (const l of this.identityListeners) l(this.identity());
      for (const l of this.caListeners) l({ caCertificate: this.caOrSystem() });
    }
    for (const l of this.changeListeners) l(change);
  }

  private read(): Material {
    const f = this.cfg.files ?? {};
    const tls = typeof this.cfg.tls === 'object' && this.cfg.tls ? this.cfg.tls : undefined;
    const file = (p: string) => readFileSync(p);
    const buf = (v?: Buffer | Uint8Array | string) => (v === undefined ? undefined : Buffer.from(v));
    const m: Material = {
      cert: f.clientCert ? file(f.clientCert) : buf(tls?.clientCertPair?.crt),
      key: f.clientKey ? file(f.clientKey) : buf(tls?.clientCertPair?.key),
      ca: f.serverCa ? file(f.serverCa) : buf(tls?.serverRootCACertificate),
      apiKey: f.apiKey ? readApiKeyFile(f.apiKey) : this.cfg.apiKey,
    };
    // Throws ("key values mismatch", a PEM that does not parse) on a set that would not connect.
    if (tls) createSecureContext({ cert: m.cert, key: m.key, ...(m.ca && { ca: m.ca }) });
    return m;
  }

  private identity() {
    const { cert, key } = this.current;
    return cert && key ? { certificate: cert, privateKey: key } : null;
  }

  /** The server CA, or the system's (what grpc-js uses when none is given). */
  private caOrSystem(): Buffer {
    return this.current.ca ?? Buffer.from(rootCertificates.join('\n'));
  }

  addCaCertificateListener(listener: CaListener): void {
    this.caListeners.add(listener);
    process.nextTick(listener, { caCertificate: this.caOrSystem() });
  }
  removeCaCertificateListener(listener: CaListener): void {
    this.caListeners.delete(listener);
  }
  addIdentityCertificateListener(listener: IdentityListener): void {
    this.identityListeners.add(listener);
    process.nextTick(listener, this.identity());
  }
  removeIdentityCertificateListener(listener: IdentityListener): void {
    this.identityListeners.delete(listener);
  }
}

/** An API key file's content without the trailing newline an editor or `kubectl create secret --from-file` leaves. */
export function readApiKeyFile(file: string): string {
  let key: string;
  try {
    key = readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new Error(`cannot read the Temporal API key file (DO_TEMPORAL_API_KEY_FILE): ${(err as Error).message}`);
  }
  if (!key) throw new Error(`the Temporal API key file ${file} is empty`);
  return key;
}
