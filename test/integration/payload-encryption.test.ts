/**
 * Encrypted payloads end to end (issue 24): the fast path, watcher and worker of this file encrypt
 * every payload with the keys of a directory (as roles given DO_PAYLOAD_KEYS_DIR). The raw
 * histories — fetched without the codec, as Temporal stores them and its UI shows them without a
 * codec server — of a sandbox create, a capture request and a Cloudflare sync hold none of the
 * plain values; nor does a failure's message (the failure converter moves it into an encoded
 * payload); the codec server decodes them for a token holder and refuses anyone else; after a
 * key rotation, new payloads use the new key and old histories stay readable.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import type { temporal as proto } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CLOUDFLARE_API_VERSION } from '../../src/api/cloudflare.js';
import type { ManifestCaptureRequest } from '../../src/api/manifests.js';
import { loadCloudflareConfig } from '../../src/config.js';
import { sandboxWorkflowId } from '../../src/domain/sandbox.js';
import { requestWorkflowId } from '../../src/domain/requests.js';
import { sourceWorkflowId, syncWorkflowId } from '../../src/domain/cloudflare/targets.js';
import { logger } from '../../src/log.js';
import { startCodecServer, type RunningCodecServer } from '../../src/temporal/codec-server.js';
import { ENCRYPTED_ENCODING, PayloadKeyRing } from '../../src/temporal/payload-encryption.js';
import {
  createCredentials,
  deleteCreatedCredentials,
  entrypointRules,
  hexId,
  sourceObject,
  startCloudflare,
  type CloudflareFixture,
} from '../support/cloudflare.js';
import { connectClient, connectWorker, dataConverterOf } from '../../src/temporal/connection.js';
import {
  encryptPayloads,
  eventually,
  historyText,
  startTestWorker,
  temporal,
  testConfig,
  uniq,
} from '../support/env.js';
import { SandboxStack } from '../support/fastpath.js';
import { waitTerminal } from '../support/requests.js';

const keysDir = await mkdtemp(path.join(tmpdir(), 'payload-keys-'));
const newKey = () => randomBytes(32).toString('base64');
await writeFile(path.join(keysDir, '2026-01'), newKey());
encryptPayloads(new PayloadKeyRing({ dir: keysDir }));

const codecToken = `codec-${randomBytes(8).toString('hex')}`;
const UI_ORIGIN = 'http://ui.example:8233';
const PHASE = 'http_request_firewall_custom';
const ZONE = `${uniq('enc')}.example`;
const quiet = logger.child({ test: true });
quiet.level = 'silent';

let stack: SandboxStack;
let cf: CloudflareFixture;
let worker: { stop(): Promise<void> };
let codec: RunningCodecServer;
const account = hexId();
let zoneId = '';
const credentials = uniq('cf-enc');

beforeAll(async () => {
  stack = await new SandboxStack({ agents: 1, capacity: 2, runtime: 'process' }).start();
  cf = await startCloudflare();
  const seeded = await cf.admin.seed({ accounts: [{ id: account }], zones: [{ name: ZONE, account_id: account }] });
  zoneId = seeded.zones[0]!.id;
  await createCredentials(stack.kube, { name: credentials, namespace: stack.namespace, accountId: account });
  // The requests' and Cloudflare's workflows on the fast path's queue: the one watcher dispatches there.
  worker = await startTestWorker(
    stack.taskQueue,
    { cloudflare: { ...loadCloudflareConfig({}), baseURL: cf.emulator.baseURL, debounceMs: 200 } },
    { cloudflare: true },
  );
  const tokensFile = path.join(keysDir, '..', `${path.basename(keysDir)}-tokens`);
  await writeFile(tokensFile, `${codecToken}\n`);
  codec = await startCodecServer({
    keys: new PayloadKeyRing({ dir: keysDir }),
    tokensFile,
    pathTokens: true,
    corsOrigins: [UI_ORIGIN],
    port: 0,
    host: '127.0.0.1',
    log: quiet,
  });
}, 240_000);

afterAll(async () => {
  await codec?.close();
  await deleteCreatedCredentials(stack.kube);
  await worker?.stop();
  await stack?.stop();
  await cf?.close();
  await rm(keysDir, { recursive: true, force: true });
});

type JsonPayload = { metadata: Record<string, string>; data: string };

/** The encrypted payloads of a workflow's raw history, as the Web UI sends them to the codec server (proto JSON). */
async function encryptedPayloads(workflowId: string): Promise<JsonPayload[]> {
  const history = await (await temporal()).workflow.getHandle(workflowId).fetchHistory();
  const found: JsonPayload[] = [];
  const walk = (v: unknown): void => {
    if (!v || typeof v !== 'object' || v instanceof Uint8Array) return;
    const p = v as proto.api.common.v1.IPayload;
    if (p.metadata && p.data instanceof Uint8Array) {
      const metadata = Object.fromEntries(
        Object.entries(p.metadata).map(([k, b]) => [k, Buffer.from(b as Uint8Array).toString('base64')]),
      );
      if (Buffer.from(metadata.encoding ?? '', 'base64').toString() === ENCRYPTED_ENCODING)
        found.push({ metadata, data: Buffer.from(p.data).toString('base64') });
      return;
    }
    (Array.isArray(v) ? v : Object.values(v)).forEach(walk);
  };
  walk(history);
  return found;
}

function codecCall(op: 'decode' | 'encode', payloads: JsonPayload[], headers: Record<string, string> = {}) {
  return fetch(`${codec.url}/${op}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-namespace': 'default', origin: UI_ORIGIN, ...headers },
    body: JSON.stringify({ payloads }),
  });
}

/** The history's payloads decoded by the codec server, as text (what the Web UI shows). */
async function decodedText(workflowId: string, auth = `Bearer ${codecToken}`): Promise<string> {
  const payloads = await encryptedPayloads(workflowId);
  expect(payloads.length, `encrypted payloads in ${workflowId}`).toBeGreaterThan(0);
  const res = await codecCall('decode', payloads, { authorization: auth });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { payloads: JsonPayload[] };
  return body.payloads.map((p) => Buffer.from(p.data, 'base64').toString('utf8')).join('\n');
}

/** Each value: absent from the raw history, present in what the codec server decodes of it. */
async function expectSealed(workflowId: string, values: string[]): Promise<void> {
  const raw = await historyText(workflowId);
  const decoded = await decodedText(workflowId);
  for (const value of values) {
    expect(raw, `raw history of ${workflowId}`).not.toContain(value);
    expect(decoded, `decoded history of ${workflowId}`).toContain(value);
  }
}

const sandboxName = uniq('enc');
const captureMarker = uniq('capture-target');
let captureWorkflowId = '';

describe('no plain value in raw histories; the codec server decodes them', () => {
  it('a sandbox create over gRPC: its name, command and env names', async () => {
    const arg = `plain-arg-${uniq('v')}`;
    const envName = `PLAIN_ENV_${randomBytes(4).toString('hex').toUpperCase()}`;
    await stack.grpc.call('CreateSandbox', {
      name: sandboxName,
      namespace: stack.namespace,
      image: 'node:22',
      poolRef: stack.pool,
      command: [process.execPath, '-e', 'setTimeout(() => {}, 3_600_000)', arg],
      envs: { [envName]: 'value' },
    });
    await eventually(
      `${sandboxName} Running`,
      async () => (await stack.sandbox(sandboxName))?.status?.phase === 'Running',
    );
    await expectSealed(sandboxWorkflowId(stack.namespace, sandboxName), [arg, envName]);
  });

  it('a capture request: the names of what it captures', async () => {
    await stack.kube.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: captureMarker, namespace: stack.namespace },
      data: { k: 'v' },
    });
    const mcr = await stack.kube.create<ManifestCaptureRequest>({
      apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1',
      kind: 'ManifestCaptureRequest',
      metadata: { name: uniq('mcr'), namespace: stack.namespace },
      spec: { targets: [{ apiVersion: 'v1', kind: 'ConfigMap', name: captureMarker }] },
    });
    const done = await waitTerminal<ManifestCaptureRequest>(stack.kube, mcr);
    expect(done.ready).toMatchObject({ status: 'True', reason: 'Completed' });
    captureWorkflowId = requestWorkflowId({
      kind: 'ManifestCaptureRequest',
      namespace: stack.namespace,
      name: mcr.metadata!.name!,
      uid: mcr.metadata!.uid!,
    });
    await expectSealed(captureWorkflowId, [captureMarker]);
  });

  it('a Cloudflare sync: the rule it writes, the zone, the credentials', async () => {
    // No quotes: in a JSON payload they would be escaped, and the value would not be found as written.
    const expression = `ip.src in {10.${[...randomBytes(3)].join('.')}}`;
    const name = uniq('team');
    await stack.kube.apply(
      sourceObject(
        'ZoneRuleset',
        name,
        { zone: ZONE, phase: PHASE, credentialsRef: { name: credentials }, rules: [{ expression, action: 'block' }] },
        stack.namespace,
      ),
    );
    await eventually('the rule in Cloudflare', async () =>
      (await entrypointRules(cf.cf, zoneId, PHASE)).some((r) => r.expression === expression),
    );
    // The source's workflow carries the rule; the target's sync the zone and the credentials' names.
    await expectSealed(sourceWorkflowId({ kind: 'ZoneRuleset', namespace: stack.namespace, name }), [expression]);
    await expectSealed(syncWorkflowId({ resourceType: 'ZoneRuleset', accountId: account, zoneId, phase: PHASE }), [
      ZONE,
      credentials,
    ]);
    await stack.kube.delete({
      apiVersion: CLOUDFLARE_API_VERSION,
      kind: 'ZoneRuleset',
      namespace: stack.namespace,
      name,
    });
  });
});

describe('failures', () => {
  it("an activity's and its workflow's failure messages: not in the raw history, decoded by the codec server and by clients", async () => {
    const marker = `failure-detail-${uniq('v')}`;
    const taskQueue = uniq('failing');
    const cfg = testConfig(taskQueue);
    // The worker's own bundle and data converter; the request workflow's first activity fails as a
    // Kubernetes call would, its message naming what it read.
    const worker = await Worker.create({
      connection: await connectWorker(cfg.temporal),
      namespace: cfg.temporal.namespace,
      taskQueue,
      dataConverter: dataConverterOf(cfg.temporal),
      workflowBundle: { codePath: inject('workflowBundle') },
      activities: {
        beginRequest: () =>
          Promise.reject(ApplicationFailure.nonRetryable(`get ${marker}: forbidden`, 'Kubernetes403')),
      },
    });
    const client = await connectClient(cfg.temporal);
    const workflowId = uniq('failing-request');
    const ref = { apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1', kind: 'ManifestCaptureRequest' };
    const failure = await worker.runUntil(async () => {
      const handle = await client.workflow.start('manifestCaptureRequestWorkflow', {
        taskQueue,
        workflowId,
        args: [{ ref: { ...ref, namespace: stack.namespace, name: uniq('mcr'), uid: uniq('uid') } }],
      });
      return handle.result().then(
        () => undefined,
        (err: Error & { cause?: Error & { cause?: Error } }) => err,
      );
    });
    await client.connection.close();
    // The client decodes the failure chain down to the activity's message.
    const chain: string[] = [];
    for (let e: (Error & { cause?: unknown }) | undefined = failure; e; e = e.cause as typeof e) chain.push(e.message);
    expect(chain).toContain(`get ${marker}: forbidden`);
    const raw = await historyText(workflowId);
    expect(raw).toContain('Encoded failure');
    expect(raw).not.toContain(marker);
    expect(await decodedText(workflowId)).toContain(marker);
  });
});

describe('the codec server', () => {
  it('refuses /decode and /encode without a valid token, answers CORS preflights for the UI only', async () => {
    const payloads = await encryptedPayloads(sandboxWorkflowId(stack.namespace, sandboxName));
    const attempts: Record<string, string>[] = [{}, { authorization: 'Bearer wrong' }, { authorization: codecToken }];
    for (const headers of attempts) {
      const res = await codecCall('decode', payloads, headers);
      expect(res.status, JSON.stringify(headers)).toBe(401);
      expect(await res.text()).not.toContain('plain-arg');
      expect((await codecCall('encode', [], headers)).status).toBe(401);
    }
    // The token as the endpoint's first path segment (a Web UI without login; switched on here).
    const res = await fetch(`${codec.url}/${codecToken}/decode`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-namespace': 'default' },
      body: JSON.stringify({ payloads }),
    });
    expect(res.status).toBe(200);
    expect((await fetch(`${codec.url}/not-the-token/decode`, { method: 'POST', body: '{}' })).status).toBe(401);

    const preflight = (origin: string) =>
      fetch(`${codec.url}/decode`, {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'x-namespace' },
      });
    const ui = await preflight(UI_ORIGIN);
    expect(ui.status).toBe(204);
    expect(ui.headers.get('access-control-allow-origin')).toBe(UI_ORIGIN);
    expect(ui.headers.get('access-control-allow-headers')).toContain('x-namespace');
    expect((await preflight('http://elsewhere.example')).headers.get('access-control-allow-origin')).toBeNull();
  });

  it('encodes what it decodes (the UI sending a signal), under the newest key', async () => {
    const plain = {
      metadata: { encoding: Buffer.from('json/plain').toString('base64') },
      data: Buffer.from('"hi"').toString('base64'),
    };
    const res = await codecCall('encode', [plain], { authorization: `Bearer ${codecToken}` });
    const [sealed] = ((await res.json()) as { payloads: JsonPayload[] }).payloads;
    expect(Buffer.from(sealed!.metadata['encryption-key-id']!, 'base64').toString()).toBe('2026-01');
    const back = await codecCall('decode', [sealed!], { authorization: `Bearer ${codecToken}` });
    expect(((await back.json()) as { payloads: JsonPayload[] }).payloads).toEqual([plain]);
  });
});

describe('key rotation', () => {
  it('new payloads use the newest key; histories under the old key stay readable', async () => {
    const oldPayloads = await encryptedPayloads(captureWorkflowId);
    await writeFile(path.join(keysDir, '2026-02'), newKey());
    // A role restarted after the rotation: the newest key encrypts, the old one still decrypts.
    const rotated = new PayloadKeyRing({ dir: keysDir });
    expect(rotated.encryptKeyId).toBe('2026-02');
    encryptPayloads(rotated);
    const after = uniq('enc-rotated');
    const client = await connectClient(testConfig('unused').temporal);
    const handle = await client.workflow.start('noSuchWorkflow', {
      taskQueue: uniq('nobody'),
      workflowId: uniq('rotated-input'),
      args: [{ marker: after }],
    });
    const keyIds = (await encryptedPayloads(handle.workflowId)).map((p) =>
      Buffer.from(p.metadata['encryption-key-id']!, 'base64').toString(),
    );
    expect(keyIds).toContain('2026-02');
    await handle.terminate();
    await client.connection.close();
    // The codec server started before the rotation reads both: it reads the directory again for the new ID.
    expect(await decodedText(handle.workflowId)).toContain(after);
    expect(
      oldPayloads.every((p) => Buffer.from(p.metadata['encryption-key-id']!, 'base64').toString() === '2026-01'),
    ).toBe(true);
    expect(await decodedText(captureWorkflowId)).toContain(captureMarker);
  });
});
