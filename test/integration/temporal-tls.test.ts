/**
 * The roles against a Temporal frontend secured with mTLS (the stack's dev server behind a
 * TLS proxy that verifies client certificates, test/support/temporal-tls-proxy.ts), configured
 * only by the temporal CLI's variables. With the client certificate the cluster's CA signed, a
 * spawned watcher starts workflows that a spawned worker runs, and a client starts them too;
 * without one, or with one from another CA, the client, the worker's connection and a spawned
 * role are refused with UNAUTHENTICATED and a message that says what they presented.
 *
 * Rotation: credentials read from files (a Secret volume, rewritten as the kubelet does) are
 * re-read while the roles run — a new client certificate and CA reach a running worker and
 * watcher, and no operation started before, during or after is lost; a new API key is used by
 * the next calls of the client and the worker connection.
 */
import { mkdir, mkdtemp, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { objectKeeperRef, type ObjectKeeper } from '../../src/api/objectkeeper.js';
import { loadConfig } from '../../src/config.js';
import { followRefTo, objectKeeperWorkflowId } from '../../src/domain/objectkeeper.js';
import type { ManagedProcess } from '../../src/infra/process.js';
import { connectClient, connectRenewingWorker, connectWorker } from '../../src/temporal/connection.js';
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

/**
 * A Secret volume as the kubelet writes one: the files are links through `..data`, a link to a
 * timestamped directory swapped atomically on each update.
 */
async function secretVolume(files: Record<string, string>) {
  const volume = await mkdtemp(path.join(dir, 'secret-'));
  let version = 0;
  const update = async (next: Record<string, string>) => {
    const data = `..${++version}`;
    await mkdir(path.join(volume, data));
    for (const [name, content] of Object.entries(next)) await writeFile(path.join(volume, data, name), content);
    await symlink(data, path.join(volume, '..data_tmp'));
    await rename(path.join(volume, '..data_tmp'), path.join(volume, '..data'));
  };
  await update(files);
  for (const name of Object.keys(files)) await symlink(path.join('..data', name), path.join(volume, name));
  return { path: (name: string) => path.join(volume, name), update };
}

it('an API key changed in its file is used by the next calls of the client and the worker connection', async () => {
  const secret = await secretVolume({ 'api-key': 'first-key\n' });
  await proxy.requireApiKey('first-key');
  const cfg = loadConfig(
    {},
    {
      ...withCert(),
      DO_TEMPORAL_API_KEY_FILE: secret.path('api-key'),
      DO_TEMPORAL_CREDENTIALS_RELOAD_INTERVAL: '500ms',
    },
  ).temporal;
  const client = await connectClient(cfg);
  const worker = await connectRenewingWorker(cfg);
  try {
    await secret.update({ 'api-key': 'second-key\n' });
    await proxy.requireApiKey('second-key');
    await eventually(
      'the client calls with the new key',
      async () => !!(await client.workflowService.getSystemInfo({})),
    );
    await eventually(
      'the worker connection calls with the new key',
      async () => !!(await worker.current.workflowService.getSystemInfo({})),
    );
    // The proxy does check: the old key is refused.
    const old = await connectClient(loadConfig({}, { ...withCert(), TEMPORAL_API_KEY: 'first-key' }).temporal).then(
      () => 'connected',
      (e: Error) => e.message,
    );
    expect(old).toMatch(/UNAUTHENTICATED: invalid API key/);
  } finally {
    await client.connection.close();
    await worker.close();
    await proxy.requireApiKey(undefined);
  }
});

it('a client certificate and CA renewed in their files reach the running worker and watcher; no operation started before, during or after is lost', async () => {
  const pem = async (file: string) => readFile(file, 'utf8');
  const secret = await secretVolume({
    'tls.crt': await pem(proxy.files.clientCert),
    'tls.key': await pem(proxy.files.clientKey),
    'ca.crt': await pem(proxy.files.serverCa),
  });
  const env = {
    ...tlsEnv,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: secret.path('ca.crt'),
    TEMPORAL_TLS_CLIENT_CERT_PATH: secret.path('tls.crt'),
    TEMPORAL_TLS_CLIENT_KEY_PATH: secret.path('tls.key'),
    DO_TEMPORAL_CREDENTIALS_RELOAD_INTERVAL: '1s',
  };
  const taskQueue = uniq('tls-rotation');
  const worker = spawnRole('worker', taskQueue, uniq('tls-rotation-worker'), env);
  const watcher = spawnRole('watcher', taskQueue, uniq('tls-rotation-watcher'), env);
  const client = await connectClient(loadConfig({ taskQueue }, env).temporal);
  const k = kube();
  const followed = await k.create<V1ConfigMap>({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: uniq('rotation-followed'), namespace: 'default' },
  });
  // Two kinds of operation: a workflow the client starts, and a keeper whose workflow the watcher
  // starts (it deletes the keeper: its followed object has another UID); the worker runs both.
  const sweep = () =>
    client.workflow.execute(requestTtlSweepWorkflow, {
      taskQueue,
      workflowId: uniq('rotation-sweep'),
      args: [],
      workflowExecutionTimeout: '3 minutes',
    });
  const keeper = async () => {
    const created = await k.create<ObjectKeeper>({
      apiVersion: 'deckhouse.io/v1alpha1',
      kind: 'ObjectKeeper',
      metadata: { name: uniq('rotation-keeper') },
      spec: {
        mode: 'FollowObject',
        followObjectRef: { ...followRefTo(followed), uid: '00000000-0000-0000-0000-000000000000' },
      },
    });
    await eventually(
      'keeper deleted by its workflow',
      async () => (await k.get(objectKeeperRef(created.metadata!.name!))) === undefined,
      { timeoutMs: 180_000 },
    );
  };
  const operations = (n: number) => Array.from({ length: n }, (_, i) => (i % 2 ? keeper() : sweep()));
  try {
    // The roles are up and connected with the first certificate.
    await Promise.all(operations(2));
    const before = operations(4);

    // The frontend also accepts the new CA's clients; cert-manager writes the new pair and CA bundle.
    const { next, revokeOld } = await proxy.rotate();
    const during = operations(4);
    const renewed = await next.issue('durable-operators', 'client');
    await secret.update({
      'tls.crt': renewed.cert,
      'tls.key': renewed.key,
      'ca.crt': (await pem(proxy.files.serverCa)) + next.cert,
    });
    await eventually('the worker moved to a connection with the new certificate', async () =>
      worker.logTail(200).includes('workers moved to the renewed Temporal connection'),
    );
    await eventually('the watcher read the new certificate', async () =>
      watcher.logTail(200).includes('Temporal credentials changed'),
    );
    during.push(...operations(2));

    // The old certificate and CA are revoked: every connection is cut and only the new pair is admitted.
    await revokeOld();
    const after = operations(4);
    await Promise.all([...before, ...during, ...after]);
    expect(worker.running && watcher.running).toBe(true);

    const stale = await connectClient(
      loadConfig({}, { ...env, ...withCert(), TEMPORAL_TLS_SERVER_CA_CERT_PATH: secret.path('ca.crt') }).temporal,
    ).then(
      () => 'connected',
      (e: Error) => e.message,
    );
    expect(stale).toMatch(/UNAUTHENTICATED: a client certificate signed by the cluster's CA is required/);
  } finally {
    await k.delete({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: followed.metadata!.name! });
    await client.connection.close();
    await Promise.all([watcher.stop(), worker.stop()]);
  }
});
