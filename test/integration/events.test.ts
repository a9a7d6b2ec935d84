/**
 * Kubernetes Events on the transitions a user looks for, as `kubectl describe` shows them: the
 * Events whose involved object is the object (core/v1, field selector on its kind, name and UID,
 * which is the query kubectl describe makes). A request that completes, a Cloudflare source that
 * syncs and a sandbox the fast path places each get theirs, from their role's reporting
 * controller; a resync (the watcher restarted, every workflow hinted again by a label change)
 * adds none; a retried activity counts once, a repeat in the series.
 * Real Temporal, kube-apiserver and etcd; an agent as a real process; Cloudflare is the emulator.
 */
import type { CoreV1Event, KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sourceWorkflowId } from '../../src/domain/cloudflare/targets.js';
import { sandboxWorkflowId } from '../../src/domain/sandbox.js';
import { EventRecorder, REPORTING_CONTROLLERS } from '../../src/kube/events.js';
import { cloudflareSuite, hexId, sourceObject } from '../support/cloudflare.js';
import { eventually, historyText, startTestWatcher, startTestWorker, uniq } from '../support/env.js';
import { SandboxStack, sandboxImage } from '../support/fastpath.js';
import { waitTerminal } from '../support/requests.js';

const account = hexId();
const creds = uniq('cf-ev-acct');
const zoneName = `${uniq('ev')}.example`;
const suite = cloudflareSuite({
  taskQueue: 'events',
  namespace: 'events',
  account: { id: account, name: 'events' },
  zone: zoneName,
  credentials: { name: creds },
  configOverrides: { debounceMs: 200 },
  // One watcher and one task queue for every kind: the sandbox stack's (two watchers of all
  // kinds would race to start each object's workflow on their own queue).
  inProcessWorker: false,
  watcher: false,
});
const { k } = suite;

let stack: SandboxStack;
let worker: { stop(): Promise<void> } | undefined;

beforeAll(async () => {
  stack = await new SandboxStack({ agents: 1, capacity: 2, runtime: 'process' }).start();
  worker = await startTestWorker(stack.taskQueue, { cloudflare: suite.cloudflareConfig() }, { cloudflare: true });
}, 240_000);

afterAll(async () => {
  await worker?.stop();
  await stack?.stop();
});

/** What `kubectl describe` lists under Events: the core/v1 Events involving exactly this object. */
async function describedEvents(obj: KubernetesObject): Promise<CoreV1Event[]> {
  const { kind, metadata } = obj;
  const fieldSelector = [
    `involvedObject.kind=${kind}`,
    `involvedObject.name=${metadata!.name}`,
    `involvedObject.uid=${metadata!.uid}`,
  ].join(',');
  const list = await k.core.listNamespacedEvent({ namespace: metadata!.namespace ?? 'default', fieldSelector });
  return list.items;
}

const summary = (events: CoreV1Event[]) =>
  events.map((e) => ({
    type: e.type,
    reason: e.reason,
    reportingComponent: e.reportingComponent,
    count: e.series?.count ?? 1,
  }));

const objects: Record<'request' | 'source' | 'sandbox', KubernetesObject | undefined> = {
  request: undefined,
  source: undefined,
  sandbox: undefined,
};

describe('Kubernetes Events', () => {
  it('a request that completes: Normal Completed from the worker', async () => {
    const ns = suite.namespace;
    await k.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: ns }, data: {} });
    const request = await k.create({
      apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1',
      kind: 'ManifestCaptureRequest',
      metadata: { name: uniq('capture'), namespace: ns },
      spec: { targets: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'settings' }] },
    });
    const done = await waitTerminal(k, request);
    expect(done.ready.status).toBe('True');
    objects.request = request;
    const events = await eventually('the request Event', async () => {
      const e = await describedEvents(request);
      return e.length ? e : undefined;
    });
    expect(summary(events)).toEqual([
      { type: 'Normal', reason: 'Completed', reportingComponent: REPORTING_CONTROLLERS.worker, count: 1 },
    ]);
    expect(events[0]!.message).toBe(done.ready.message);
  });

  it('a Cloudflare source that syncs: Normal Synced from the worker', async () => {
    const name = uniq('app');
    const source = await k.create(
      sourceObject(
        'DNSRecord',
        name,
        {
          name: 'app',
          type: 'A',
          content: '192.0.2.1',
          cloudflare: { credentialsRef: { name: creds }, domain: zoneName },
        },
        suite.namespace,
      ),
    );
    objects.source = source;
    await eventually(
      'Ready Synced',
      async () => (await suite.readyOf('DNSRecord', name, suite.namespace))?.reason === 'Synced',
    );
    const events = await eventually('the source Event', async () => {
      const e = await describedEvents(source);
      return e.length ? e : undefined;
    });
    // Registering (Ready=False Syncing) is progress, not an Event.
    expect(summary(events)).toEqual([
      { type: 'Normal', reason: 'Synced', reportingComponent: REPORTING_CONTROLLERS.worker, count: 1 },
    ]);
  });

  it('a sandbox the fast path places: Normal Placed from the fast path', async () => {
    const name = uniq('sb');
    await stack.grpc.call('CreateSandbox', {
      namespace: stack.namespace,
      name,
      image: sandboxImage(),
      poolRef: stack.pool,
      command: ['sleep', '3600'],
    });
    const sandbox = await eventually('Sandbox Running', async () => {
      const sb = await stack.sandbox(name);
      return sb?.status?.phase === 'Running' ? sb : undefined;
    });
    objects.sandbox = sandbox;
    const events = await eventually('the sandbox Event', async () => {
      const e = await describedEvents(sandbox);
      return e.length ? e : undefined;
    });
    expect(summary(events)).toEqual([
      { type: 'Normal', reason: 'Placed', reportingComponent: REPORTING_CONTROLLERS.fastpath, count: 1 },
    ]);
    expect(events[0]!.message).toContain(sandbox.status!.assignedPod!);
  });

  it('a resync adds no Event: the watcher restarted, every workflow hinted again', async () => {
    const all = Object.values(objects) as KubernetesObject[];
    expect(all.every(Boolean)).toBe(true);
    const before = await Promise.all(all.map(describedEvents));
    const sourceWorkflow = sourceWorkflowId({
      kind: 'DNSRecord',
      namespace: suite.namespace,
      name: objects.source!.metadata!.name!,
    });
    const sandboxWorkflow = sandboxWorkflowId(stack.namespace, objects.sandbox!.metadata!.name!);
    const hints = async (workflowId: string, signal: string) =>
      (await historyText(workflowId)).split(signal).length - 1;
    const hintsBefore = [await hints(sourceWorkflow, 'sourceChanged'), await hints(sandboxWorkflow, 'sandboxChanged')];

    // A restarted watcher lists everything again; a label changed on each object (nothing its
    // workflow acts on) hints the workflow again, which reads it and finds nothing to do.
    await stack.watcher!.stop();
    stack.watcher = await startTestWatcher(stack.taskQueue);
    for (const obj of all)
      await k.mergePatch(
        { apiVersion: obj.apiVersion!, kind: obj.kind!, namespace: obj.metadata!.namespace, name: obj.metadata!.name! },
        { metadata: { labels: { 'events-test/resync': '1' } } },
      );
    await eventually('the source and sandbox workflows hinted again', async () => {
      const now = [await hints(sourceWorkflow, 'sourceChanged'), await hints(sandboxWorkflow, 'sandboxChanged')];
      return now[0]! > hintsBefore[0]! && now[1]! > hintsBefore[1]!;
    });
    await new Promise((r) => setTimeout(r, 3_000)); // the sandbox's and request's workflows too

    const after = await Promise.all(all.map(describedEvents));
    expect(after.map(summary)).toEqual(before.map(summary));
    expect(after.map((es) => es.map((e) => e.metadata?.resourceVersion))).toEqual(
      before.map((es) => es.map((e) => e.metadata?.resourceVersion)),
    );
  });

  it('one Event per object and reason: a retried occurrence counts once, a repeat in its series', async () => {
    const recorder = new EventRecorder(k, 'worker');
    const cm = await k.create<KubernetesObject>({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: uniq('cm'), namespace: suite.namespace },
    });
    const regarding = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace: suite.namespace,
      name: cm.metadata!.name!,
      uid: cm.metadata!.uid!,
    };
    const event = { type: 'Normal', reason: 'Tested', action: 'Test', note: 'first' } as const;
    await recorder.record(regarding, event, 'occurrence-1');
    await recorder.record(regarding, event, 'occurrence-1'); // the same activity, retried
    expect(summary(await describedEvents(cm))).toEqual([
      { type: 'Normal', reason: 'Tested', reportingComponent: REPORTING_CONTROLLERS.worker, count: 1 },
    ]);
    await recorder.record(regarding, { ...event, note: 'again' }, 'occurrence-2');
    await recorder.record(regarding, { ...event, note: 'and again' }, 'occurrence-3');
    await recorder.record(regarding, { ...event, note: 'and again' }, 'occurrence-3');
    const events = await describedEvents(cm);
    expect(summary(events)).toEqual([
      { type: 'Normal', reason: 'Tested', reportingComponent: REPORTING_CONTROLLERS.worker, count: 3 },
    ]);
    // Another reason is another Event.
    await recorder.record(regarding, { ...event, reason: 'Other' }, 'occurrence-4');
    expect((await describedEvents(cm)).map((e) => e.reason).sort()).toEqual(['Other', 'Tested']);
  });
});
