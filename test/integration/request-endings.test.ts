/**
 * A request's workflow is not live work once the request is done: it ends with the request's
 * terminal condition (the TTL is the sweep's, as the original's scanner), so the Web UI shows it
 * Completed — not Running on a day-long timer, which stayed behind when the request or its
 * namespace was deleted while no watcher saw it.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { ManifestCaptureRequest } from '../../src/api/manifests.js';
import { requestWorkflowId } from '../../src/domain/requests.js';
import type { RunningWatcher } from '../../src/watcher/main.js';
import { eventually, kube, startTestWatcher, startTestWorker, temporal, uniq } from '../support/env.js';
import { waitTerminal } from '../support/requests.js';

const TASK_QUEUE = uniq('tq-endings');
const k = kube();
let worker: { stop(): Promise<void> };
let watcher: RunningWatcher;

beforeAll(async () => {
  worker = await startTestWorker(TASK_QUEUE);
  watcher = await startTestWatcher(TASK_QUEUE);
  await watcher.watcher.waitForSync();
});

afterAll(async () => {
  await watcher?.stop();
  await worker?.stop();
});

it("a terminal request's workflow ends with it: no TTL timer, nothing left when its namespace goes", async () => {
  const ns = uniq('endings');
  await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  const mcr = await k.create<ManifestCaptureRequest>({
    apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1',
    kind: 'ManifestCaptureRequest',
    metadata: { name: 'missing', namespace: ns },
    spec: { targets: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'absent' }] },
  });
  const done = await waitTerminal<ManifestCaptureRequest>(k, mcr);
  expect(done.ready).toMatchObject({ status: 'False', reason: 'NotFound' });
  const handle = (await temporal()).workflow.getHandle(
    requestWorkflowId({ kind: 'ManifestCaptureRequest', namespace: ns, name: 'missing', uid: mcr.metadata!.uid! }),
  );
  await eventually(
    'the workflow of the terminal request to end',
    async () => (await handle.describe()).status.name === 'COMPLETED',
    {
      timeoutMs: 30_000,
    },
  );
  expect(await handle.result()).toMatch(/^NotFound: /);
  const history = await handle.fetchHistory();
  expect((history.events ?? []).filter((e) => e.timerStartedEventAttributes)).toEqual([]);

  // The watcher is stopped, so nothing would tell a waiting workflow; none waits.
  await watcher.stop();
  await k.delete({ apiVersion: 'v1', kind: 'Namespace', name: ns });
  expect((await handle.describe()).status.name).toBe('COMPLETED');
});
