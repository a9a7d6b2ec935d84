/**
 * Bad ManifestCaptureRequest, ManifestCheckpoint and ManifestCheckpointContentChunk objects are
 * refused by the real apiserver (CRD schema + CEL) with a clear message, and the manifests the
 * original state-snapshotter documents apply unchanged.
 */
import { gzipSync } from 'node:zlib';
import type { KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ManifestCaptureRequestKind,
  ManifestCheckpointKind,
  type ManifestCaptureRequest,
  type ManifestCheckpoint,
  type ManifestCheckpointContentChunk,
} from '../../src/api/manifests.js';
import { checksumOf } from '../../src/codec/manifest-chunks.js';
import type { ObjectRef } from '../../src/kube/client.js';
import { kube, uniq, refusal } from '../support/env.js';

const k = kube();
const ns = uniq('request-validation');
const GROUP_VERSION = 'state-snapshotter.deckhouse.io/v1alpha1';
const clusterObjects: ObjectRef[] = [];

beforeAll(async () => {
  await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
});

afterAll(async () => {
  for (const ref of clusterObjects) await k.delete(ref);
  await k.delete({ apiVersion: 'v1', kind: 'Namespace', name: ns });
});

/** The apiserver's refusal of `write`, or a test failure if it accepted. */
const request = (spec: unknown, name = uniq('mcr')) =>
  ({
    apiVersion: GROUP_VERSION,
    kind: 'ManifestCaptureRequest',
    metadata: { name, namespace: ns },
    ...(spec === undefined ? {} : { spec }),
  }) as ManifestCaptureRequest;

function checkpoint(name = uniq('mcp')): ManifestCheckpoint {
  return {
    apiVersion: GROUP_VERSION,
    kind: 'ManifestCheckpoint',
    metadata: { name },
    spec: { sourceNamespace: ns, manifestCaptureRequestRef: { name: 'capture', namespace: ns, uid: 'u-1' } },
  };
}

function chunk(spec: Partial<ManifestCheckpointContentChunk['spec']> = {}, name = uniq('mcp-chunk')) {
  const gzip = gzipSync(
    Buffer.from(JSON.stringify([{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' } }])),
  );
  return {
    apiVersion: GROUP_VERSION,
    kind: 'ManifestCheckpointContentChunk',
    metadata: { name },
    spec: {
      checkpointName: 'mcp-x',
      index: 0,
      data: gzip.toString('base64'),
      objectsCount: 1,
      checksum: checksumOf(gzip),
      ...spec,
    },
  } as ManifestCheckpointContentChunk;
}

/** Creates a cluster-scoped object and remembers it for cleanup. */
async function createCluster<T extends KubernetesObject>(obj: T): Promise<T> {
  const made = await k.create(obj);
  clusterObjects.push({ apiVersion: obj.apiVersion!, kind: obj.kind!, name: obj.metadata!.name! });
  return made;
}

const target = (kind: string, name = 'x', apiVersion = 'v1') => ({ apiVersion, kind, name });

describe('ManifestCaptureRequest validation', () => {
  it.each([
    [
      'empty targets',
      { targets: [] },
      'spec.targets: Invalid value: 0: spec.targets in body should have at least 1 items',
    ],
    ['no targets', {}, 'spec.targets: Required value'],
    ['no spec', undefined, 'spec: Required value'],
    [
      'a Namespace target',
      { targets: [target('ConfigMap'), target('Namespace', ns)] },
      'spec.targets[1].kind: Invalid value: "string": cluster-scoped kinds cannot be captured: targets are namespaced objects in the request namespace',
    ],
    [
      'a ClusterRole target',
      { targets: [target('ClusterRole', 'admin', 'rbac.authorization.k8s.io/v1')] },
      'spec.targets[0].kind: Invalid value: "string": cluster-scoped kinds cannot be captured',
    ],
    [
      'a target name with a slash (no object of any kind can have it)',
      { targets: [target('ConfigMap', '../secrets/x')] },
      'spec.targets[0].name: Invalid value: "../secrets/x": spec.targets[0].name in body should match',
    ],
    ['a target named ..', { targets: [target('ConfigMap', '..')] }, 'an object name cannot be "." or ".."'],
    ['a lower-case kind', { targets: [target('configMap')] }, 'spec.targets[0].kind: Invalid value: "configMap"'],
    [
      'a target without apiVersion',
      { targets: [{ kind: 'ConfigMap', name: 'x' }] },
      'spec.targets[0].apiVersion: Required value',
    ],
    [
      'more than 5000 targets',
      { targets: Array.from({ length: 5001 }, (_, i) => target('ConfigMap', `cm-${i}`)) },
      'spec.targets: Too many: 5001: must have at most 5000 items',
    ],
  ])('refuses %s', async (_what, spec, expected) => {
    const r = await refusal(() => k.create(request(spec)));
    expect(r.code).toBe(422);
    expect(r.message).toContain(expected);
  });

  it('accepts target names of any kind, not only DNS-1123 ones (as the original)', async () => {
    const names = [
      'system:controller:bootstrap-signer',
      'system::leader-locking-kube-controller-manager',
      'Upper_Case',
    ];
    const mcr = await k.create(
      request({ targets: names.map((n) => target('Role', n, 'rbac.authorization.k8s.io/v1')) }),
    );
    expect(mcr.metadata?.uid).toBeTruthy();
  });

  it('refuses a request name that is no object name', async () => {
    const r = await refusal(() => k.create(request({ targets: [target('ConfigMap')] }, 'Bad_Name')));
    expect(r.code).toBe(422);
    expect(r.message).toContain('metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain');
  });

  it('refuses a spec change after creation', async () => {
    const mcr = await k.create(request({ targets: [target('ConfigMap', 'a')] }));
    const ref = { apiVersion: GROUP_VERSION, kind: 'ManifestCaptureRequest', namespace: ns, name: mcr.metadata!.name! };
    const r = await refusal(() => k.mergePatch(ref, { spec: { targets: [target('ConfigMap', 'b')] } }));
    expect(r.code).toBe(422);
    expect(r.message).toContain('spec is immutable; create a new ManifestCaptureRequest instead');
    // Metadata stays writable: labels and annotations are not the operation.
    await k.mergePatch(ref, { metadata: { labels: { team: 'a' } } });
  });

  it('completionTimestamp is written once: later changes and removal are refused', async () => {
    const mcr = await k.create(request({ targets: [target('ConfigMap', 'a')] }));
    const ref = {
      apiVersion: GROUP_VERSION,
      kind: 'ManifestCaptureRequest',
      namespace: ns,
      name: mcr.metadata!.name!,
      plural: ManifestCaptureRequestKind.plural,
    };
    const condition = (status: 'True' | 'False', reason: string) => ({
      type: 'Ready',
      status,
      reason,
      message: '',
      lastTransitionTime: '2026-01-25T12:00:00Z',
    });
    await k.patchCustomStatus(ref, { conditions: [condition('False', 'Processing')] });
    await k.patchCustomStatus(ref, {
      completionTimestamp: '2026-01-25T12:00:08Z',
      checkpointName: 'mcp-1',
      conditions: [condition('True', 'Completed')],
    });
    // Writing the same value again, or other status fields, is fine.
    await k.patchCustomStatus(ref, { completionTimestamp: '2026-01-25T12:00:08Z', checkpointName: 'mcp-2' });

    const changed = await refusal(() => k.patchCustomStatus(ref, { completionTimestamp: '2026-01-25T13:00:00Z' }));
    expect(changed.code).toBe(422);
    expect(changed.message).toContain('completionTimestamp is set once, when the request becomes terminal');
    const removed = await refusal(() => k.patchCustomStatus(ref, { completionTimestamp: null }));
    expect(removed.code).toBe(422);
    expect(removed.message).toContain('completionTimestamp is set once, when the request becomes terminal');
    const now = await k.get<ManifestCaptureRequest>(ref);
    expect(now!.status!.completionTimestamp).toBe('2026-01-25T12:00:08Z');
  });

  // A rule on the status object would not run when a patch removes the whole status
  // (`{"status": null}`), erasing completionTimestamp: the rule sits on the root object.
  it('removing the whole status is refused too', async () => {
    const mcr = await k.create(request({ targets: [target('ConfigMap', 'a')] }));
    const ref = {
      apiVersion: GROUP_VERSION,
      kind: 'ManifestCaptureRequest',
      namespace: ns,
      name: mcr.metadata!.name!,
      plural: ManifestCaptureRequestKind.plural,
    };
    await k.patchCustomStatus(ref, { completionTimestamp: '2026-01-25T12:00:08Z' });
    const r = await refusal(() => k.patchCustomStatus(ref, null as unknown as Record<string, unknown>));
    expect(r.message).toContain('completionTimestamp is set once');
  });
});

describe('ManifestCheckpoint validation', () => {
  it.each([
    [
      'a source namespace that is no namespace name',
      { sourceNamespace: 'Not_A_Namespace', manifestCaptureRequestRef: { name: 'a', namespace: 'b', uid: 'u' } },
      'spec.sourceNamespace: Invalid value: "Not_A_Namespace"',
    ],
    [
      'a request ref without uid',
      { sourceNamespace: 'a', manifestCaptureRequestRef: { name: 'a', namespace: 'a' } },
      'spec.manifestCaptureRequestRef.uid: Required value',
    ],
  ])('refuses %s', async (_what, spec, expected) => {
    const r = await refusal(() => createCluster({ ...checkpoint(), spec } as ManifestCheckpoint));
    expect(r.code).toBe(422);
    expect(r.message).toContain(expected);
  });

  it('refuses a spec change after creation', async () => {
    const mcp = await createCluster(checkpoint());
    const ref = { apiVersion: GROUP_VERSION, kind: 'ManifestCheckpoint', name: mcp.metadata!.name! };
    const r = await refusal(() => k.mergePatch(ref, { spec: { sourceNamespace: 'elsewhere' } }));
    expect(r.code).toBe(422);
    expect(r.message).toContain('spec is immutable; create a new ManifestCheckpoint instead');
  });
});

describe('ManifestCheckpointContentChunk validation', () => {
  it('takes data up to 1,048,576 characters and refuses one more', async () => {
    await createCluster(chunk({ data: 'A'.repeat(1_048_576) }));
    const r = await refusal(() => createCluster(chunk({ data: 'A'.repeat(1_048_577) })));
    expect(r.code).toBe(422);
    expect(r.message).toContain('spec.data: Too long: may not be more than 1048576 bytes');
  });

  it.each([
    ['an upper-case checksum', { checksum: 'A'.repeat(64) }, 'spec.checksum: Invalid value: "AAAAAAAA'],
    ['a short checksum', { checksum: 'abc123' }, "spec.checksum in body should match '^[0-9a-f]{64}$'"],
    [
      'a negative index',
      { index: -1 },
      'spec.index: Invalid value: -1: spec.index in body should be greater than or equal to 0',
    ],
    ['no data', { data: undefined }, 'spec.data: Required value'],
  ])('refuses %s', async (_what, spec, expected) => {
    const r = await refusal(() => createCluster(chunk(spec)));
    expect(r.code).toBe(422);
    expect(r.message).toContain(expected);
  });

  it('refuses any spec change after creation', async () => {
    const c = await createCluster(chunk());
    const ref = { apiVersion: GROUP_VERSION, kind: 'ManifestCheckpointContentChunk', name: c.metadata!.name! };
    const r = await refusal(() => k.mergePatch(ref, { spec: { objectsCount: 2 } }));
    expect(r.code).toBe(422);
    expect(r.message).toContain('a chunk is immutable');
  });
});

describe('documented manifests', () => {
  // From the original state-snapshotter's design documents (docs/.../snapshot-tree and the MCR ADR),
  // with the group the shipped CRDs serve.
  it('a ManifestCaptureRequest as the original documents it applies cleanly', async () => {
    const manifest = {
      apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1',
      kind: 'ManifestCaptureRequest',
      metadata: { name: 'demo-snapshot-k8s-mcr', namespace: ns },
      spec: {
        targets: [
          { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'my-sts' },
          { apiVersion: 'apps/v1', kind: 'Deployment', name: 'my-deploy' },
          { apiVersion: 'v1', kind: 'Pod', name: 'standalone-pod' },
          { apiVersion: 'v1', kind: 'Service', name: 'my-svc' },
          { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', name: 'my-ingress' },
        ],
      },
    } as ManifestCaptureRequest;
    const mcr = await k.apply(manifest);
    expect(mcr.spec).toEqual(manifest.spec);
    // Applying the same manifest again (kubectl apply in a loop) is a no-op, not a spec change.
    const again = await k.apply(manifest);
    expect(again.metadata!.resourceVersion).toBe(mcr.metadata!.resourceVersion);
  });

  it('a ManifestCheckpoint with its chunk table and a chunk as the original documents them apply cleanly', async () => {
    const name = uniq('mcp-3h5k2l9s');
    const gzip = gzipSync(
      Buffer.from(
        JSON.stringify(
          Array.from({ length: 10 }, (_, i) => ({
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: `cm-${i}` },
          })),
        ),
      ),
    );
    const checksum = checksumOf(gzip);
    clusterObjects.push({ apiVersion: GROUP_VERSION, kind: 'ManifestCheckpoint', name });
    const mcp = await k.apply<ManifestCheckpoint>({
      apiVersion: GROUP_VERSION,
      kind: 'ManifestCheckpoint',
      metadata: { name },
      spec: {
        sourceNamespace: ns,
        manifestCaptureRequestRef: {
          name: 'vm-snapshot-1',
          namespace: ns,
          uid: 'd5b7a6c0-1111-4e2b-9c3d-000000000001',
        },
      },
    });
    const status = {
      chunks: [
        { name: `${name}-0`, index: 0, objectsCount: 10, sizeBytes: 12345, checksum },
        { name: `${name}-1`, index: 1, objectsCount: 7, sizeBytes: 9876, checksum },
      ],
      totalObjects: 17,
      totalSizeBytes: 22221,
      conditions: [
        { type: 'Ready', status: 'True', reason: 'Completed', message: '', lastTransitionTime: '2026-01-25T12:00:08Z' },
      ],
    };
    const patched = (await k.patchCustomStatus(
      { apiVersion: GROUP_VERSION, kind: 'ManifestCheckpoint', name, plural: ManifestCheckpointKind.plural },
      status,
    )) as ManifestCheckpoint;
    expect(patched.status).toEqual(status);
    expect(mcp.metadata!.uid).toBeTruthy();

    clusterObjects.push({ apiVersion: GROUP_VERSION, kind: 'ManifestCheckpointContentChunk', name: `${name}-0` });
    const stored = await k.apply<ManifestCheckpointContentChunk>({
      apiVersion: GROUP_VERSION,
      kind: 'ManifestCheckpointContentChunk',
      metadata: {
        name: `${name}-0`,
        ownerReferences: [{ apiVersion: GROUP_VERSION, kind: 'ManifestCheckpoint', name, uid: mcp.metadata!.uid! }],
      },
      spec: { checkpointName: name, index: 0, data: gzip.toString('base64'), objectsCount: 10, checksum },
    });
    expect(stored.spec.checksum).toBe(checksum);
  });
});
