/** Temporal connections for clients (watcher, CLI, fast path, worker) and workers, from the one config. */
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { StatusObject } from '@grpc/grpc-js';
import { Client, Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { NativeConnection } from '@temporalio/worker';
import type { TemporalConfig } from '../config.js';
import { logger } from '../log.js';
import { tracingClientInterceptors } from '../tracing/temporal.js';
import { EncryptionCodec } from './payload-encryption.js';

/**
 * The client's connection with Temporal's default retries of failed calls, closed safely: the
 * SDK's retry interceptor schedules each retry on a timer, and a retry that fires after
 * `connection.close()` starts its call on the closed channel — an uncaught "Channel has been
 * shut down" and a call that never settles (seen at the fast path's shutdown while signals to a
 * busy workflow were backing off). So `close()` first stops deciding to retry, waits out the
 * retries already scheduled (each makes its last attempt on the open channel and settles with
 * its error), and only then closes.
 */
export async function connectClient(cfg: TemporalConfig): Promise<Client> {
  const retries = new DrainableRetries();
  const connection = await explained(
    cfg,
    Connection.connect({
      ...connectionOptions(cfg),
      interceptors: [makeGrpcRetryInterceptor(retries.options)],
    }),
  );
  const close = connection.close.bind(connection);
  connection.close = async () => {
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

let told = false;

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
  if (!told) {
    told = true;
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

export async function connectWorker(cfg: TemporalConfig): Promise<NativeConnection> {
  return explained(cfg, NativeConnection.connect(connectionOptions(cfg)));
}

function connectionOptions(cfg: TemporalConfig) {
  return { address: cfg.address, tls: cfg.tls, apiKey: cfg.apiKey, metadata: cfg.metadata };
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
