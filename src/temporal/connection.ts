/** Temporal connections for clients (watcher, CLI, fast path, worker) and workers, from the one config. */
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import type { StatusObject } from '@grpc/grpc-js';
import { Client, Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { NativeConnection, type Worker } from '@temporalio/worker';
import type { TemporalConfig } from '../config.js';
import { logger } from '../log.js';
import { tracingClientInterceptors } from '../tracing/temporal.js';
import { TemporalCredentials, type CredentialsChange } from './credentials.js';
import { EncryptionCodec } from './payload-encryption.js';

/**
 * The client's connection with Temporal's default retries of failed calls, closed safely: the
 * SDK's retry interceptor schedules each retry on a timer, and a retry that fires after
 * `connection.close()` starts its call on the closed channel — an uncaught "Channel has been
 * shut down" and a call that never settles (seen at the fast path's shutdown while signals to a
 * busy workflow were backing off). So `close()` first stops deciding to retry, waits out the
 * retries already scheduled (each makes its last attempt on the open channel and settles with
 * its error), and only then closes.
 *
 * Credentials from files are re-read while it runs: each new TLS connection grpc-js makes uses
 * the newest certificate and CA (a CertificateProvider), each call the newest API key.
 */
export async function connectClient(cfg: TemporalConfig): Promise<Client> {
  const retries = new DrainableRetries();
  const credentials = TemporalCredentials.of(cfg, logger.child({ temporalConnection: 'client' }));
  const connection = Connection.lazy({
    ...(credentials ? renewingClientOptions(cfg, credentials) : connectionOptions(cfg)),
    interceptors: [makeGrpcRetryInterceptor(retries.options)],
  });
  if (credentials?.apiKey !== undefined) connection.setApiKey(() => credentials.apiKey ?? '');
  credentials?.watch(() => undefined);
  try {
    await explained(cfg, connection.ensureConnected());
  } catch (err) {
    credentials?.close();
    await connection.close();
    throw err;
  }
  const close = connection.close.bind(connection);
  connection.close = async () => {
    credentials?.close();
    await retries.drain();
    await close();
  };
  const interceptors = tracingClientInterceptors();
  return new Client({
    connection,
    namespace: cfg.namespace,
    dataConverter: dataConverterOf(cfg),
    ...(interceptors ? { interceptors } : {}),
  });
}

let encodingLogged = false;

/**
 * The failure converter module (failure-converter.cjs, beside this file in src/ and dist/): failure
 * messages and stack traces go into an encoded payload, which the payload codec encrypts. Set for
 * every client and worker, and bundled into both workflow bundles (src/workers/bundle.ts), plain
 * or encrypted alike: a bundle is built once, before any key is known.
 */
export const FAILURE_CONVERTER_PATH = fileURLToPath(new URL('./failure-converter.cjs', import.meta.url));

/**
 * How payloads are encoded, the same for every client and worker (`Worker.create({ dataConverter })`):
 * encrypted with the configured keys, else plain — said once per process at start, loudly when
 * plain, since then every value a workflow carries is readable in Temporal.
 */
export function dataConverterOf(cfg: Pick<TemporalConfig, 'payloadKeys'>): DataConverter {
  const ring = cfg.payloadKeys;
  if (!encodingLogged) {
    encodingLogged = true;
    if (ring)
      logger.info({ encryptKeyId: ring.encryptKeyId, keyIds: ring.keyIds }, 'payloads to Temporal are encrypted');
    else
      logger.warn(
        'payloads go to Temporal unencrypted (DO_PAYLOAD_KEYS_DIR unset or empty): workflow inputs and results are readable in its history',
      );
  }
  return {
    failureConverterPath: FAILURE_CONVERTER_PATH,
    ...(ring ? { payloadCodecs: [new EncryptionCodec(ring)] } : {}),
  };
}

/**
 * The workers' connection to Temporal, renewed when its credential files change. The Rust core
 * takes TLS only at connect, so a changed certificate or CA means a new NativeConnection: each
 * worker that `follow`s is moved to it (`worker.connection =`, the SDK's in-place client swap —
 * polls and task completions continue on the new one, nothing is restarted), then the old one
 * is dropped (calls in flight on it finish). A failed connect keeps the old connection and is
 * tried again at the next re-read. A changed API key is set in place.
 */
export class WorkerConnection {
  private workers = new Set<Worker>();
  private renewing: Promise<void> = Promise.resolve();
  private closed = false;
  private retry?: NodeJS.Timeout;
  /** A renewal of TLS failed and is tried again. */
  private tlsPending = false;

  private constructor(
    private connection: NativeConnection,
    private readonly cfg: TemporalConfig,
    private readonly credentials: TemporalCredentials | undefined,
  ) {
    credentials?.watch((change) => this.schedule(change));
  }

  private schedule(change: CredentialsChange): void {
    clearTimeout(this.retry);
    const tls = change.tls || this.tlsPending;
    this.renewing = this.renewing
      .then(() => this.renew({ ...change, tls }))
      .catch((err: Error) => log.error({ err: err.message }, 'renewing the Temporal connection failed'));
  }

  static async connect(cfg: TemporalConfig): Promise<WorkerConnection> {
    const credentials = TemporalCredentials.of(cfg, log);
    try {
      const connection = await explained(cfg, NativeConnection.connect(nativeOptions(cfg, credentials)));
      return new WorkerConnection(connection, cfg, credentials);
    } catch (err) {
      credentials?.close();
      throw err;
    }
  }

  /** The connection now: give it to `Worker.create`, then `follow` the worker. */
  get current(): NativeConnection {
    return this.connection;
  }

  /** The worker moves to each renewed connection until it stops. */
  follow<W extends Worker>(worker: W): W {
    this.workers.add(worker);
    return worker;
  }

  /** Stops re-reading; closes the connection (its workers must have stopped). */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    this.credentials?.close();
    await this.renewing;
    await this.connection.close();
  }

  private async renew(change: CredentialsChange): Promise<void> {
    if (this.closed) return;
    if (!change.tls) {
      const key = this.credentials?.apiKey;
      if (key) await this.connection.setApiKey(key);
      return;
    }
    let next: NativeConnection;
    try {
      next = await explained(this.cfg, NativeConnection.connect(nativeOptions(this.cfg, this.credentials)));
    } catch (err) {
      // E.g. the server does not accept the new certificate yet: tried again until it does.
      log.error({ err: (err as Error).message }, 'renewed Temporal connection refused: the workers keep the old one');
      this.tlsPending = true;
      this.retry = setTimeout(() => this.schedule(change), this.cfg.reloadIntervalMs ?? 10_000).unref();
      return;
    }
    this.tlsPending = false;
    const previous = this.connection;
    this.connection = next;
    for (const worker of this.workers) {
      if (worker.getState() === 'STOPPED' || worker.getState() === 'FAILED') {
        this.workers.delete(worker);
        continue;
      }
      worker.connection = next;
    }
    // Refused while a worker not followed still holds it: then it stays open with that worker.
    await previous.close().catch((err: Error) => log.warn({ err: err.message }, 'previous Temporal connection kept'));
    log.info({ workers: this.workers.size }, 'workers moved to the renewed Temporal connection');
  }
}

const log = logger.child({ temporalConnection: 'worker' });

/** The connection of a role's workers: renewed while it runs (WorkerConnection). */
export async function connectRenewingWorker(cfg: TemporalConfig): Promise<WorkerConnection> {
  return WorkerConnection.connect(cfg);
}

/** A connection for a worker that runs briefly (tests, benchmarks): read once, never renewed. */
export async function connectWorker(cfg: TemporalConfig): Promise<NativeConnection> {
  return explained(cfg, NativeConnection.connect(connectionOptions(cfg)));
}

function connectionOptions(cfg: TemporalConfig) {
  return { address: cfg.address, tls: cfg.tls, apiKey: cfg.apiKey, metadata: cfg.metadata };
}

function nativeOptions(cfg: TemporalConfig, credentials: TemporalCredentials | undefined) {
  return credentials
    ? { ...connectionOptions(cfg), tls: credentials.tls, apiKey: credentials.apiKey }
    : connectionOptions(cfg);
}

/**
 * grpc-js credentials that load the newest files at each new TLS connection; the API key is set
 * as a function after (the SDK refuses `apiKey` next to `credentials`).
 */
function renewingClientOptions(cfg: TemporalConfig, credentials: TemporalCredentials) {
  if (!credentials.tlsFromFiles) return { ...connectionOptions(cfg), apiKey: undefined };
  const name = credentials.serverName;
  return {
    address: cfg.address,
    metadata: cfg.metadata,
    credentials: grpc.experimental.createCertificateProviderChannelCredentials(
      credentials,
      credentials.hasClientCert ? credentials : null,
    ),
    ...(name && { channelArgs: { 'grpc.ssl_target_name_override': name, 'grpc.default_authority': name } }),
  };
}

/**
 * A failed connect names where it went and with which credentials (never their contents): the
 * SDKs' own messages ("Failed to connect before the deadline", a TLS alert) do not say whether
 * TLS or a client certificate was in use at all.
 */
async function explained<T>(cfg: TemporalConfig, connecting: Promise<T>): Promise<T> {
  try {
    return await connecting;
  } catch (err) {
    throw new Error(`cannot connect to Temporal at ${cfg.address} (${credentialsOf(cfg)}): ${causes(err)}`, {
      cause: err,
    });
  }
}

/** The messages of an error and its causes ("Failed to connect to Temporal server" says why only in its cause). */
function causes(err: unknown): string {
  const messages: string[] = [];
  for (let e: unknown = err; e !== undefined && messages.length < 5; e = (e as { cause?: unknown }).cause) {
    const message = e instanceof Error ? e.message : String(e);
    if (!messages.includes(message)) messages.push(message);
    if (!(e instanceof Error)) break;
  }
  return messages.join(': ');
}

/** What a connection presents, for messages: TLS on or off, server name, CA, client certificate, API key. */
function credentialsOf(cfg: TemporalConfig): string {
  // As the SDKs decide: an API key without a TLS setting means TLS.
  const tls = cfg.tls === true || (!!cfg.tls && typeof cfg.tls === 'object') || (cfg.tls == null && !!cfg.apiKey);
  const parts = [tls ? 'TLS' : 'no TLS'];
  if (cfg.tls && typeof cfg.tls === 'object') {
    if (cfg.tls.serverNameOverride) parts.push(`server name ${cfg.tls.serverNameOverride}`);
    parts.push(cfg.tls.serverRootCACertificate ? 'server CA given' : 'system CAs');
    parts.push(cfg.tls.clientCertPair ? 'a client certificate' : 'no client certificate');
  } else if (tls) {
    parts.push('system CAs', 'no client certificate');
  }
  if (cfg.apiKey) parts.push('an API key');
  return parts.join(', ');
}

/** Temporal's default retry options, which stop retrying on `drain()` and say when the last scheduled retry fires. */
class DrainableRetries {
  private readonly defaults = defaultGrpcRetryOptions();
  private draining = false;
  /** When the latest scheduled retry fires (epoch ms). */
  private lastRetryAt = 0;

  readonly options = {
    retryableDecider: (attempt: number, status: StatusObject) =>
      !this.draining && this.defaults.retryableDecider(attempt, status),
    delayFunction: (attempt: number, status: StatusObject) => {
      const ms = this.defaults.delayFunction(attempt, status);
      this.lastRetryAt = Math.max(this.lastRetryAt, Date.now() + ms);
      return ms;
    },
  };

  async drain(): Promise<void> {
    this.draining = true;
    // The retry's call must be started before the channel closes (a few ms after its timer).
    const wait = this.lastRetryAt - Date.now();
    if (wait > -50) await sleep(Math.max(0, wait) + 50);
  }
}
