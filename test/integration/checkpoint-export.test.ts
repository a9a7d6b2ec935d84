/**
 * `checkpoint export` against the real apiserver: checkpoints and chunks are written directly with
 * the KubeClient, as the capture activities write them, including damaged ones no controller would
 * write, and read back through the exported function and (for exit codes and stdout) the real CLI.
 */
import { Buffer } from 'node:buffer';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import type { KubernetesObject, V1ConfigMap } from '@kubernetes/client-node';
import { parse, parseAllDocuments, type Document } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CHECKPOINT_LABEL,
  ManifestCheckpointKind,
  type ChunkInfo,
  type ManifestCheckpoint,
  type ManifestCheckpointContentChunk,
} from '../../src/api/manifests.js';
import {
  CheckpointExportError,
  EXIT_CORRUPT,
  EXIT_FAILURE,
  exitCodeOf,
  exportCheckpoint,
  objectFilePath,
  type ExportOptions,
  renderObjects,
  writeObjectFiles,
} from '../../src/cli/checkpoint.js';
import {
  ChunkCorruptError,
  checksumOf,
  decodeChunk,
  packChunks,
  type PackedChunk,
} from '../../src/codec/manifest-chunks.js';
import { chunkNameFor } from '../../src/domain/requests.js';
import { REPO_ROOT, kube, stackInfo, uniq } from '../support/env.js';

const execFileAsync = promisify(execFile);
const k = kube();
const SOURCE_NS = uniq('mcp-src');
const created: string[] = [];
const namespaces: string[] = [];
let dir: string;

const mcpRef = (name: string) => ({ apiVersion: ManifestCheckpointKind.apiVersion, kind: 'ManifestCheckpoint', name });

/** A captured object as plain JSON (the client's types want Dates where the wire has strings). */
interface Captured {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string } & Record<string, unknown>;
  data?: Record<string, string>;
  [field: string]: unknown;
}

/**
 * Objects as the capture activity stores them: full apiserver objects (uid, resourceVersion,
 * ownerReferences, status...) without managedFields. The ConfigMaps carry random base64, which
 * gzip cannot shrink below ~75%, so 28 of them (~80 KB each) need more than one 1 MiB chunk.
 */
function capturedObjects(): Captured[] {
  const meta = (name: string, i: number) => ({
    name,
    namespace: SOURCE_NS,
    uid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    resourceVersion: String(1000 + i),
    creationTimestamp: '2026-01-25T12:00:00Z',
    labels: { app: 'shop' },
    annotations: { 'example.com/note': 'kept' },
  });
  const configMaps: Captured[] = Array.from({ length: 28 }, (_, i) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: meta(`blob-${String(i).padStart(2, '0')}`, i),
    data: { payload: randomBytes(60_000).toString('base64') },
  }));
  // Values YAML 1.1 (kubectl) would read as booleans, numbers or null unless quoted.
  configMaps.push({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      ...meta('tricky', 99),
      ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'owner', uid: 'u-owner' }],
    },
    data: { a: 'yes', b: 'on', c: '0755', d: '1e3', e: '12:30', f: 'null', g: '~', h: 'two\nlines\n', i: '' },
  });
  const deployment: Captured = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { ...meta('web', 100), generation: 3, selfLink: '/apis/apps/v1/x' },
    spec: {
      replicas: 0,
      selector: { matchLabels: { app: 'web' } },
      template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'nginx' }] } },
    },
    status: { observedGeneration: 3, replicas: 0 },
  };
  return [...configMaps, deployment];
}

interface CheckpointSetup {
  /** Status to write instead of Ready=True with the real chunk table; undefined writes none. */
  status?: (table: ChunkInfo[]) => Record<string, unknown> | undefined;
  /** Replaces a chunk's spec before it is created; undefined leaves the chunk out. */
  chunk?: (
    c: PackedChunk,
    spec: ManifestCheckpointContentChunk['spec'],
  ) => ManifestCheckpointContentChunk['spec'] | undefined;
}

/** Creates a checkpoint and its chunks the way the capture activities do. */
async function makeCheckpoint(
  objects: object[],
  setup: CheckpointSetup = {},
): Promise<{ name: string; packed: PackedChunk[]; table: ChunkInfo[] }> {
  const name = uniq('mcp-export');
  const packed = packChunks(objects);
  const mcp = await k.create<ManifestCheckpoint>({
    apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1',
    kind: 'ManifestCheckpoint',
    metadata: { name },
    spec: {
      sourceNamespace: SOURCE_NS,
      manifestCaptureRequestRef: { name: 'capture', namespace: SOURCE_NS, uid: 'u-request' },
    },
  });
  created.push(name);
  const owner = { apiVersion: mcp.apiVersion, kind: mcp.kind, name, uid: mcp.metadata!.uid!, controller: true };
  const table: ChunkInfo[] = [];
  for (const c of packed) {
    const chunkName = chunkNameFor(name, c.index);
    const spec = {
      checkpointName: name,
      index: c.index,
      data: c.data,
      objectsCount: c.objectsCount,
      checksum: c.checksum,
    };
    const written = setup.chunk ? setup.chunk(c, spec) : spec;
    if (written) {
      await k.create<ManifestCheckpointContentChunk>({
        apiVersion: 'state-snapshotter.deckhouse.io/v1alpha1',
        kind: 'ManifestCheckpointContentChunk',
        metadata: { name: chunkName, labels: { [CHECKPOINT_LABEL]: name }, ownerReferences: [owner] },
        spec: written,
      });
    }
    table.push({
      name: chunkName,
      index: c.index,
      objectsCount: c.objectsCount,
      sizeBytes: c.sizeBytes,
      checksum: c.checksum,
    });
  }
  const status = setup.status
    ? setup.status(table)
    : {
        chunks: table,
        totalObjects: table.reduce((n, c) => n + c.objectsCount, 0),
        totalSizeBytes: table.reduce((n, c) => n + c.sizeBytes, 0),
        conditions: [ready('True', 'Completed', 'captured')],
      };
  if (status) await k.patchCustomStatus({ ...mcpRef(name), plural: ManifestCheckpointKind.plural }, status);
  return { name, packed, table };
}

function ready(status: 'True' | 'False', reason: string, message: string) {
  return { type: 'Ready', status, reason, message, lastTransitionTime: '2026-01-25T12:00:08Z' };
}

/** The export's error, or a test failure if the export succeeded. */
async function exportError(name: string, opts: ExportOptions = {}): Promise<Error> {
  try {
    await exportCheckpoint(k, name, opts);
  } catch (err) {
    return err as Error;
  }
  throw new Error(`export of ${name} succeeded`);
}

/** Runs the real CLI as a child process; returns its exit code and output. */
async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await execFileAsync(
      process.execPath,
      ['--import', 'tsx', path.join(REPO_ROOT, 'src/cli/main.ts'), ...args],
      { cwd: REPO_ROOT, env: { ...process.env, KUBECONFIG: stackInfo().kubeconfig }, maxBuffer: 64 * 1024 * 1024 },
    );
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof e.code !== 'number') throw err;
    return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** A chunk spec whose data holds `objects` (validly gzipped and encoded) under `checksum`. */
function reencoded(spec: ManifestCheckpointContentChunk['spec'], objects: unknown[]) {
  return { ...spec, data: gzipSync(Buffer.from(JSON.stringify(objects))).toString('base64') };
}

let objects: Captured[];
/** The objects in checkpoint order: (apiVersion, kind, namespace, name). */
let expected: Captured[];

const fixture = (name: string) => objects.find((o) => o.metadata.name === name)!;
let good: { name: string; packed: PackedChunk[]; table: ChunkInfo[] };

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'checkpoint-export-'));
  objects = capturedObjects();
  expected = [objects.at(-1)!, ...objects.slice(0, -1)]; // apps/v1 sorts before v1
  good = await makeCheckpoint(objects);
});

afterAll(async () => {
  // Chunks are owned by their checkpoint: the garbage collector removes them.
  for (const name of created) await k.delete(mcpRef(name));
  for (const ns of namespaces) await k.delete({ apiVersion: 'v1', kind: 'Namespace', name: ns });
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('checkpoint export', () => {
  it('the fixture spans several chunks', () => {
    expect(good.packed.length).toBeGreaterThanOrEqual(2);
  });

  it('CLI: prints every object, unchanged, as multi-document YAML, and a summary on stderr', async () => {
    const r = await cli('checkpoint', 'export', good.name);
    expect(r.code).toBe(0);
    const bytes = good.table.reduce((n, c) => n + c.sizeBytes, 0);
    expect(r.stderr).toBe(
      `exported ${objects.length} objects from ManifestCheckpoint ${good.name} ` +
        `(${good.packed.length} chunks, ${bytes} bytes compressed) to stdout (${Buffer.byteLength(r.stdout)} bytes)\n`,
    );
    // Parsed as YAML 1.1, as kubectl does: `yes`, `on`, `0755`... must have been quoted to stay strings.
    const docs = parseAllDocuments(r.stdout, { version: '1.1' }) as Document[];
    expect(docs.map((d) => d.toJS() as unknown)).toEqual(expected);
  });

  it('returns the objects in checkpoint order; JSON output is a v1 List of them', async () => {
    const result = await exportCheckpoint(k, good.name);
    expect(result.objects).toEqual(expected);
    expect(result).toMatchObject({ chunks: good.packed.length, warnings: [] });
    expect(JSON.parse(renderObjects(result.objects, 'json'))).toEqual({
      apiVersion: 'v1',
      kind: 'List',
      items: expected,
    });
  });

  it('--for-apply strips server-populated fields and status; --namespace moves the objects', async () => {
    const target = uniq('mcp-restore');
    const { objects: out } = await exportCheckpoint(k, good.name, { forApply: true, namespace: target });
    expect(out).toHaveLength(objects.length);
    for (const obj of out) {
      expect(obj).not.toHaveProperty('status');
      for (const field of [
        'uid',
        'resourceVersion',
        'generation',
        'creationTimestamp',
        'managedFields',
        'selfLink',
        'ownerReferences',
      ]) {
        expect(obj.metadata).not.toHaveProperty(field);
      }
      expect(obj.metadata).toMatchObject({ namespace: target, labels: { app: 'shop' } });
    }
    const tricky = out.find((o) => o.metadata!.name === 'tricky') as V1ConfigMap;
    expect(tricky.data).toEqual(fixture('tricky').data);
    const yaml = renderObjects(out, 'yaml');
    expect(yaml).not.toMatch(/\buid:|resourceVersion:|^status:/m);

    // What the flag is for: the output applies cleanly into another namespace.
    await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: target } });
    namespaces.push(target);
    const docs = (parseAllDocuments(yaml, { version: '1.1' }) as Document[]).map((d) => d.toJS() as KubernetesObject);
    for (const obj of docs) await k.apply(obj);
    const restored = await k.get<V1ConfigMap>({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace: target,
      name: 'tricky',
    });
    expect(restored!.data).toEqual(tricky.data);
    expect(restored!.metadata!.annotations).toEqual({ 'example.com/note': 'kept' });
    const blob = await k.get<V1ConfigMap>({ apiVersion: 'v1', kind: 'ConfigMap', namespace: target, name: 'blob-27' });
    expect(blob!.data).toEqual(fixture('blob-27').data);
  });

  it('--output-dir writes one file per object, <namespace>/<kind>[.<group>]-<name>.<format>', async () => {
    const { objects: out } = await exportCheckpoint(k, good.name);
    const yamlDir = path.join(dir, 'yaml');
    const files = await writeObjectFiles(yamlDir, out, 'yaml');
    expect(files).toHaveLength(objects.length);
    expect(files).toContain(path.join(yamlDir, SOURCE_NS, 'deployment.apps-web.yaml'));
    expect(files).toContain(path.join(yamlDir, SOURCE_NS, 'configmap-blob-00.yaml'));
    expect(
      parse(await readFile(path.join(yamlDir, SOURCE_NS, 'configmap-tricky.yaml'), 'utf8'), { version: '1.1' }),
    ).toEqual(fixture('tricky'));
    const jsonDir = path.join(dir, 'json');
    await writeObjectFiles(jsonDir, out, 'json');
    expect(JSON.parse(await readFile(path.join(jsonDir, SOURCE_NS, 'deployment.apps-web.json'), 'utf8'))).toEqual(
      expected[0],
    );
    // Content comes from the cluster: a name that is no Kubernetes name never becomes a path.
    expect(() =>
      objectFilePath(
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: '../../etc/passwd', namespace: 'x' } },
        'yaml',
      ),
    ).toThrow(/cannot be written to a file/);
  });

  it('CLI: --output-dir, --for-apply, --namespace and --format json together', async () => {
    const out = path.join(dir, 'cli');
    const r = await cli(
      'checkpoint',
      'export',
      good.name,
      '--output-dir',
      out,
      '--for-apply',
      '--namespace',
      'restored',
      '--format',
      'json',
    );
    expect(r.code).toBe(0);
    const files = r.stdout.trim().split('\n');
    expect(files).toHaveLength(objects.length);
    expect(files[0]).toBe(path.join(out, 'restored', 'deployment.apps-web.json'));
    expect(r.stderr).toMatch(
      new RegExp(
        `^exported ${objects.length} objects from ManifestCheckpoint ${good.name} .* to ${objects.length} files in ${out}\n$`,
      ),
    );
    const web = JSON.parse(await readFile(files[0]!, 'utf8')) as Captured;
    expect(web.metadata).toEqual({
      name: 'web',
      namespace: 'restored',
      labels: { app: 'shop' },
      annotations: { 'example.com/note': 'kept' },
    });
    expect(web).not.toHaveProperty('status');
  });

  it('a chunk whose data was changed under its old checksum: exit code 2, naming the chunk', async () => {
    const damaged = await makeCheckpoint(objects, {
      chunk: (c, spec) => {
        if (c.index !== 1) return spec;
        const inside = decodeChunk(c) as V1ConfigMap[];
        inside[0] = { ...inside[0]!, data: { payload: 'tampered' } };
        return reencoded(spec, inside);
      },
    });
    const chunk = chunkNameFor(damaged.name, 1);
    const err = await exportError(damaged.name);
    expect(err).toBeInstanceOf(ChunkCorruptError);
    expect(err.message).toContain(`manifest chunk ${chunk} (index 1): checksum mismatch`);
    expect(exitCodeOf(err)).toBe(EXIT_CORRUPT);

    const r = await cli('checkpoint', 'export', damaged.name);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(
      `ManifestCheckpoint ${damaged.name} cannot be exported: manifest chunk ${chunk} (index 1)`,
    );
  });

  it('a checksum in the checkpoint status that differs from the chunk: exit code 2, naming the chunk', async () => {
    const damaged = await makeCheckpoint(objects, {
      status: (table) => ({
        chunks: table.map((c) => (c.index === 0 ? { ...c, checksum: checksumOf(Buffer.from('other')) } : c)),
        conditions: [ready('True', 'Completed', 'captured')],
      }),
    });
    const err = await exportError(damaged.name);
    expect(err).toBeInstanceOf(ChunkCorruptError);
    expect(err.message).toMatch(
      new RegExp(
        `^manifest chunk ${chunkNameFor(damaged.name, 0)} \\(index 0\\): spec.checksum [0-9a-f]{64} differs from`,
      ),
    );
    expect(exitCodeOf(err)).toBe(EXIT_CORRUPT);
  });

  it('a chunk of another checkpoint under a listed name: exit code 2', async () => {
    const damaged = await makeCheckpoint(objects, {
      chunk: (c, spec) => (c.index === 1 ? { ...spec, checkpointName: 'someone-else' } : spec),
    });
    const err = await exportError(damaged.name);
    expect(err).toBeInstanceOf(ChunkCorruptError);
    expect(err.message).toContain(`${chunkNameFor(damaged.name, 1)} (index 1): spec.checkpointName is someone-else`);
  });

  it('a chunk table that disagrees with totalObjects: exit code 2', async () => {
    const damaged = await makeCheckpoint(objects, {
      status: (table) => ({
        chunks: table.slice(0, 1),
        totalObjects: objects.length,
        conditions: [ready('True', 'Completed', 'captured')],
      }),
    });
    const err = await exportError(damaged.name);
    expect(err.message).toBe(
      `ManifestCheckpoint ${damaged.name} records ${objects.length} objects, but its chunk table lists chunks ` +
        `holding ${damaged.packed[0]!.objectsCount}`,
    );
    expect(exitCodeOf(err)).toBe(EXIT_CORRUPT);
  });

  it('a missing chunk is an error naming it', async () => {
    const damaged = await makeCheckpoint(objects, { chunk: (c, spec) => (c.index === 1 ? undefined : spec) });
    const err = await exportError(damaged.name);
    expect(err).toBeInstanceOf(ChunkCorruptError);
    expect(err.message).toBe(
      `manifest chunk ${chunkNameFor(damaged.name, 1)} (index 1): not found: the checkpoint status lists it, ` +
        'but the apiserver has no such ManifestCheckpointContentChunk',
    );
    expect(exitCodeOf(err)).toBe(EXIT_CORRUPT);
  });

  it('a missing checkpoint: exit code 1, "ManifestCheckpoint X not found"', async () => {
    const name = uniq('mcp-absent');
    const err = await exportError(name);
    expect(err).toBeInstanceOf(CheckpointExportError);
    expect(err.message).toBe(`ManifestCheckpoint ${name} not found`);
    expect(exitCodeOf(err)).toBe(EXIT_FAILURE);

    const r = await cli('checkpoint', 'export', name, '--format', 'json');
    expect(r).toEqual({ code: 1, stdout: '', stderr: `ManifestCheckpoint ${name} not found\n` });
  });

  it('refuses a checkpoint that is not Ready=True, saying why, unless --allow-incomplete', async () => {
    const small = objects.slice(-3);
    const failed = await makeCheckpoint(small, {
      status: (table) => ({ chunks: table, conditions: [ready('False', 'Failed', 'apiserver went away')] }),
    });
    const err = await exportError(failed.name);
    expect(err).toBeInstanceOf(CheckpointExportError);
    expect(err.message).toBe(
      `ManifestCheckpoint ${failed.name} is not Ready: it is Ready=False (Failed: apiserver went away). ` +
        'Its content may be incomplete; pass --allow-incomplete to export what it holds anyway',
    );
    expect(exitCodeOf(err)).toBe(EXIT_FAILURE);
    const allowed = await exportCheckpoint(k, failed.name, { allowIncomplete: true });
    expect(allowed.objects.map((o) => o.metadata!.name)).toEqual(['web', 'blob-27', 'tricky']);
    expect(allowed.warnings).toEqual([
      `ManifestCheckpoint ${failed.name} is not Ready (it is Ready=False (Failed: apiserver went away)); the export may be incomplete`,
    ]);

    // A capture in progress: no condition and no chunk table yet, only chunks.
    const inProgress = await makeCheckpoint(small, { status: () => undefined });
    expect((await exportError(inProgress.name)).message).toContain(
      'is not Ready: it has no Ready condition yet: the capture is still in progress',
    );
    const partial = await exportCheckpoint(k, inProgress.name, { allowIncomplete: true });
    expect(partial.objects.map((o) => o.metadata!.name)).toEqual(['web', 'blob-27', 'tricky']);
    expect(partial.chunks).toBe(1);
    expect(partial.warnings[1]).toContain('has no chunk table yet; exporting the chunks found by label');

    const r = await cli('checkpoint', 'export', inProgress.name, '--allow-incomplete');
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`warning: ManifestCheckpoint ${inProgress.name} is not Ready`);
    expect((parseAllDocuments(r.stdout, { version: '1.1' }) as Document[]).map((d) => d.toJS() as unknown)).toEqual(
      partial.objects,
    );
  });
});
