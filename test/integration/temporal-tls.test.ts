/**
 * The roles against a Temporal frontend secured with mTLS (the stack's dev server behind a
 * TLS proxy that verifies client certificates, test/support/temporal-tls-proxy.ts), configured
 * only by the temporal CLI's variables: with the client certificate the cluster's CA signed, a
 * spawned worker runs workflows and a client starts them; without one, or with one from another
 * CA, the client, the worker's connection and a spawned role are refused with UNAUTHENTICATED
 * and a message that says what they presented.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import type { ManagedProcess } from '../../src/infra/process.js';
import { connectClient, connectWorker } from '../../src/temporal/connection.js';
import { requestTtlSweepScheduleId } from '../../src/workers/schedules.js';
import { requestTtlSweepWorkflow } from '../../src/workflows/requests/contract.js';
import { spawnRole, stackInfo, uniq } from '../support/env.js';
import { startTemporalTlsProxy, type TemporalTlsProxy } from '../support/temporal-tls-proxy.js';

let proxy: TemporalTlsProxy;
let dir: string;
/** The variables of a role that trusts the frontend's CA and name; the client certificate is added per case. */
let tlsEnv: Record<string, string>;

beforeAll(async () => {
  const info = stackInfo();
  dir = await mkdtemp(path.join(info.stateDir, 'temporal-tls-'));
  proxy = await startTemporalTlsProxy({
    upstream: info.temporal.address,
    dir,
    logFile: path.join(info.logsDir, 'temporal-tls-proxy.log'),
  });
  tlsEnv = {
    TEMPORAL_ADDRESS: proxy.address,
    TEMPORAL_NAMESPACE: info.temporal.namespace,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: proxy.files.serverCa,
    TEMPORAL_TLS_SERVER_NAME: proxy.serverName,
  };
});

afterAll(async () => {
  await proxy?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const withCert = () => ({
  ...tlsEnv,
  TEMPORAL_TLS_CLIENT_CERT_PATH: proxy.files.clientCert,
  TEMPORAL_TLS_CLIENT_KEY_PATH: proxy.files.clientKey,
});
const withOtherCaCert = () => ({
  ...tlsEnv,
  TEMPORAL_TLS_CLIENT_CERT_PATH: proxy.files.otherCaClientCert,
  TEMPORAL_TLS_CLIENT_KEY_PATH: proxy.files.otherCaClientKey,
});

it('with the client certificate, a spawned worker runs workflows that a client starts, all through mTLS', async () => {
  const taskQueue = uniq('temporal-tls');
  const worker = spawnRole('worker', taskQueue, uniq('temporal-tls-worker'), withCert());
  const client = await connectClient(loadConfig({ taskQueue }, withCert()).temporal);
  try {
    // The sweep is a workflow and an activity on the worker's queue: both poll through the proxy.
    const result = await client.workflow.execute(requestTtlSweepWorkflow, {
      taskQueue,
      workflowId: uniq('tls-sweep'),
      args: [],
      workflowExecutionTimeout: '2 minutes',
    });
    expect(result).toMatchObject({ reaped: expect.any(Number), examined: expect.any(Number) });
    // The worker's own client made its Schedule through the proxy too.
    const schedule = await client.schedule.getHandle(requestTtlSweepScheduleId(taskQueue)).describe();
    expect(schedule.action).toMatchObject({ taskQueue });
    await client.schedule.getHandle(requestTtlSweepScheduleId(taskQueue)).delete();
  } finally {
    await client.connection.close();
    await worker.stop();
  }
});

describe.each([
  ['without a client certificate', () => tlsEnv, 'no client certificate'],
  ['with a client certificate from another CA', withOtherCaCert, 'a client certificate'],
])('%s', (_case, env, presented) => {
  it('the client and the worker connection are refused with UNAUTHENTICATED, saying what they presented', async () => {
    const cfg = loadConfig({}, env()).temporal;
    const client = await connectClient(cfg).then(
      () => 'connected',
      (e: Error) => e.message,
    );
    expect(client).toContain(`cannot connect to Temporal at ${proxy.address} (TLS, server name ${proxy.serverName}`);
    expect(client).toContain(presented);
    expect(client).toMatch(/UNAUTHENTICATED: a client certificate signed by the cluster's CA is required/);
    const worker = await connectWorker(cfg).then(
      () => 'connected',
      (e: Error) => e.message,
    );
    expect(worker).toContain(`cannot connect to Temporal at ${proxy.address}`);
    expect(worker).toMatch(
      /valid authentication credentials.*a client certificate signed by the cluster's CA is required/,
    );
  });
});

it('a spawned role without a client certificate stops at start with that error', async () => {
  const watcher: ManagedProcess = spawnRole('watcher', uniq('temporal-tls'), uniq('temporal-tls-watcher'), tlsEnv);
  try {
    expect(await watcher.exited).toBe(1);
    expect(watcher.logTail(5)).toMatch(
      /cannot connect to Temporal at .*no client certificate.*UNAUTHENTICATED: a client certificate signed by the cluster's CA is required/,
    );
  } finally {
    await watcher.stop();
  }
});
