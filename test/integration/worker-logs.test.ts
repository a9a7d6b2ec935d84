/**
 * The worker's warnings mean something: capture requests, whose target reads run as local
 * activities, leave no `Activity heartbeat failed … UnknownActivity` warning in the worker role's
 * log (`npx tsx bench/requests.ts 200 300 10` printed hundreds). (Local activities cannot heartbeat: the SDK forwards the call to Temporal's core, which
 * knows no such activity and warns once per heartbeat.)
 */
import { readFileSync } from 'node:fs';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { ManifestCaptureRequest } from '../../src/api/manifests.js';
import type { ManagedProcess } from '../../src/infra/process.js';
import type { RunningWatcher } from '../../src/watcher/main.js';
import { kube, spawnRole, startTestWatcher, uniq } from '../support/env.js';
import { waitTerminal } from '../support/requests.js';

const TASK_QUEUE = uniq('tq-logs');
const k = kube();
const ns = uniq('logs');
let worker: ManagedProcess;
let watcher: RunningWatcher;

beforeAll(async () => {
  worker = spawnRole('worker', TASK_QUEUE, `worker-logs-${TASK_QUEUE}`);
  watcher = await startTestWatcher(TASK_QUEUE);
  await watcher.watcher.waitForSync();
  await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
});

afterAll(async () => {
  await watcher?.stop();
  await worker?.stop();
  await k.delete({ apiVersion: 'v1', kind: 'Namespace', name: ns }).catch(() => undefined);
});

it('capture requests leave no heartbeat warning in the worker log', async () => {
  const targets: { apiVersion: string; kind: string; name: string }[] = [];
  for (let i = 0; i < 5; i++) {
    const cm = await k.create<V1ConfigMap>({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `cm-${i}`, namespace: ns },
      data: { i: String(i) },
    });
    targets.push({ apiVersion: 'v1', kind: 'ConfigMap', name: cm.metadata!.name! });
  }
  const requests = await Promise.all(
    Array.from({ length: 10 }, () =>
      k.create<ManifestCaptureRequest>({
        apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1',
        kind: 'ManifestCaptureRequest',
        metadata: { name: uniq('mcr'), namespace: ns },
        spec: { targets },
      }),
    ),
  );
  for (const r of requests) expect((await waitTerminal(k, r)).ready.status).toBe('True');
  // Temporal's core writes its own warnings to the role's stderr (its own format, not pino's).
  const log = readFileSync(worker.spec.logFile, 'utf8');
  expect(log).toContain('"msg":"worker running"'); // the log read is the worker's
  expect(log.split('\n').filter((line) => /heartbeat failed/i.test(line))).toEqual([]);
  expect(worker.running).toBe(true);
});
