/** Temporal connections for clients (watcher, CLI, fast path, worker) and workers, from the one config. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { StatusObject } from '@grpc/grpc-js';
import { Client, Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { TemporalConfig } from '../config.js';

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
  const connection = await Connection.connect({
    address: cfg.address,
    tls: cfg.tls,
    apiKey: cfg.apiKey,
    interceptors: [makeGrpcRetryInterceptor(retries.options)],
  });
  const close = connection.close.bind(connection);
  connection.close = async () => {
    await retries.drain();
    await close();
  };
  return new Client({ connection, namespace: cfg.namespace });
}

export async function connectWorker(cfg: TemporalConfig): Promise<NativeConnection> {
  return NativeConnection.connect({ address: cfg.address, tls: cfg.tls, apiKey: cfg.apiKey });
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
