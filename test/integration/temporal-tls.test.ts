/**
 * The roles against a Temporal frontend secured with mTLS (the stack's dev server behind a
 * TLS proxy that verifies client certificates, test/support/temporal-tls-proxy.ts), configured
 * only by the temporal CLI's variables. With the client certificate the cluster's CA signed, a
 * spawned watcher starts workflows that a spawned worker runs, and a client starts them too;
 * without one, or with one from another CA, the client, the worker's connection and a spawned
 * role are refused with UNAUTHENTICATED and a message that says what they presented.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { objectKeeperRef, type ObjectKeeper } from '../../src/api/objectkeeper.js';
import { loadConfig } from '../../src/config.js';
import { followRefTo, objectKeeperWorkflowId } from '../../src/domain/objectkeeper.js';
import type { ManagedProcess } from '../../src/infra/process.js';
import { connectClient, connectWorker } from '../../src/temporal/connection.js';
import { requestTtlSweepScheduleId } from '../../src/workers/schedules.js';
import { requestTtlSweepWorkflow } from '../../src/workflows/requests/contract.js';
import { eventually, kube, spawnRole, stackInfo, uniq } from '../support/env.js';
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

it('with the client certificate, spawned roles work through mTLS: the watcher starts a workflow, the worker runs it', async () => {
  const taskQueue = uniq('temporal-tls');
  const worker = spawnRole('worker', taskQueue, uniq('temporal-tls-worker'), withCert());
  const watcher = spawnRole('watcher', taskQueue, uniq('temporal-tls-watcher'), withCert());
  const client = await connectClient(loadConfig({ taskQueue }, withCert()).temporal);
  const k = kube();
  const followed = await k.create<V1ConfigMap>({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: uniq('tls-followed'), namespace: 'default' },
  });
  try {
    // A keeper following a name that now belongs to another UID deletes itself at once: the
    // watcher (through the proxy) starts its workflow, the worker (through the proxy) runs it.
    const keeper = await k.create<ObjectKeeper>({
      apiVersion: 'deckhouse.io/v1alpha1',
      kind: 'ObjectKeeper',
      metadata: { name: uniq('tls-keeper') },
      spec: {
        mode: 'FollowObject',
        followObjectRef: { ...followRefTo(followed), uid: '00000000-0000-0000-0000-000000000000' },
      },
    });
    const workflowId = objectKeeperWorkflowId(keeper.metadata!.name!, keeper.metadata!.uid!);
    await eventually(
      'keeper deleted by its workflow',
      async () => (await k.get(objectKeeperRef(keeper.metadata!.name!))) === undefined,
    );
    expect(await client.workflow.getHandle(workflowId).result()).toMatch(/was recreated/);

    // A client with the certificate starts and awaits a workflow too (a workflow and an activity).
    const result = await client.workflow.execute(requestTtlSweepWorkflow, {
      taskQueue,
      workflowId: uniq('tls-sweep'),
      args: [],
      workflowExecutionTimeout: '2 minutes',
    });
    expect(result).toMatchObject({ reaped: expect.any(Number), examined: expect.any(Number) });
    // The worker's own client made its Schedule through the proxy.
    const schedule = client.schedule.getHandle(requestTtlSweepScheduleId(taskQueue));
    expect((await schedule.describe()).action).toMatchObject({ taskQueue });
    await schedule.delete();
  } finally {
    await k.delete({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: followed.metadata!.name! });
    await client.connection.close();
    await Promise.all([watcher.stop(), worker.stop()]);
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
