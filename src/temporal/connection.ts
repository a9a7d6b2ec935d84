/** Temporal connections for clients (watcher, CLI) and workers, from the one config. */
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { TemporalConfig } from '../config.js';

export async function connectClient(cfg: TemporalConfig): Promise<Client> {
  const connection = await Connection.connect({ address: cfg.address, tls: cfg.tls, apiKey: cfg.apiKey });
  return new Client({ connection, namespace: cfg.namespace });
}

export async function connectWorker(cfg: TemporalConfig): Promise<NativeConnection> {
  return NativeConnection.connect({ address: cfg.address, tls: cfg.tls, apiKey: cfg.apiKey });
}
