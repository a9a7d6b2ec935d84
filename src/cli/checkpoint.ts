/**
 * `durable-operators checkpoint export <name>`: reads a ManifestCheckpoint's chunks back, verifies
 * them against the checkpoint's chunk table, and prints the captured objects as YAML or JSON (or
 * writes one file per object), optionally cleaned up so they can be `kubectl apply`'d elsewhere.
 *
 * Exit codes: 0 exported; 1 the checkpoint does not exist, is not Ready, or anything else failed
 * (bad flags, apiserver errors); 2 the checkpoint exists but its content cannot be trusted: a chunk
 * is missing, corrupt, or disagrees with the checkpoint status. Scripts can tell "wrong name / not
 * yet" (1) from "this backup is damaged" (2).
 */
import { Buffer } from 'node:buffer';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { KubernetesObject } from '@kubernetes/client-node';
import { Option, type CommandUnknownOpts } from '@commander-js/extra-typings';
import { stringify } from 'yaml';
import {
  CHECKPOINT_LABEL,
  checkpointRef,
  chunkRef,
  ManifestCheckpointContentChunkKind,
  type ManifestCheckpoint,
  type ManifestCheckpointContentChunk,
} from '../api/manifests.js';
import { READY_CONDITION } from '../api/requests.js';
import { mapLimited } from '../concurrency.js';
import { ChunkCorruptError, decodeChunk, reassemble, type StoredChunk } from '../codec/manifest-chunks.js';
import { apiMessage, KubeClient } from '../kube/client.js';

export const EXIT_FAILURE = 1;
export const EXIT_CORRUPT = 2;

export type ExportFormat = 'yaml' | 'json';
export const EXPORT_FORMATS: readonly ExportFormat[] = ['yaml', 'json'];

export interface ExportOptions {
  /** Export a checkpoint that is not Ready=True (a capture in progress or one that failed). */
  allowIncomplete?: boolean;
  /** Strip server-populated fields (see stripForApply). */
  forApply?: boolean;
  /** Rewrite metadata.namespace of namespaced objects. */
  namespace?: string;
}

export interface ExportResult {
  checkpoint: ManifestCheckpoint;
  objects: KubernetesObject[];
  /** Chunks read. */
  chunks: number;
  /** gzip bytes of those chunks (what the checkpoint stores, before base64). */
  compressedBytes: number;
  /** Things the user should know about an incomplete export. */
  warnings: string[];
}

/** A refusal or failure that is not about damaged content (exit code 1). */
export class CheckpointExportError extends Error {
  override readonly name = 'CheckpointExportError';
  constructor(
    message: string,
    readonly exitCode: number = EXIT_FAILURE,
  ) {
    super(message);
  }
}

/** The process exit code for an error thrown by exportCheckpoint. */
export function exitCodeOf(err: unknown): number {
  if (err instanceof ChunkCorruptError) return EXIT_CORRUPT;
  if (err instanceof CheckpointExportError) return err.exitCode;
  return EXIT_FAILURE;
}

// Chunks are up to ~1 MiB each: a few reads in flight hide the round trips without holding many
// responses in memory at once beyond what the export keeps anyway.
const CHUNK_READ_CONCURRENCY = 4;

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

async function read<T extends KubernetesObject>(
  kube: KubeClient,
  ref: { apiVersion: string; kind: string; name: string },
): Promise<T | undefined> {
  try {
    return await kube.get<T>(ref);
  } catch (err) {
    throw new CheckpointExportError(`cannot read ${ref.kind} ${ref.name}: ${apiMessage(err)}`);
  }
}

/** Why a checkpoint is not Ready=True, or undefined when it is. */
function notReadyReason(mcp: ManifestCheckpoint): string | undefined {
  const ready = mcp.status?.conditions?.find((c) => c.type === READY_CONDITION);
  if (!ready) return 'it has no Ready condition yet: the capture is still in progress';
  if (ready.status === 'True') return undefined;
  const detail = [ready.reason, ready.message].filter(Boolean).join(': ');
  return `it is Ready=${ready.status}${detail ? ` (${detail})` : ''}`;
}

function stored(chunk: ManifestCheckpointContentChunk): StoredChunk {
  return { name: chunk.metadata!.name!, ...chunk.spec };
}

/**
 * The chunks of a checkpoint that has no chunk table yet (a capture in progress), found by their
 * label. Each is verified against its own checksum and count; nothing says whether all are there.
 */
async function exportWithoutTable(
  kube: KubeClient,
  name: string,
): Promise<{ objects: unknown[]; chunks: number; compressedBytes: number }> {
  const found: ManifestCheckpointContentChunk[] = [];
  let continueToken: string | undefined;
  try {
    do {
      const page = await kube.listPage<ManifestCheckpointContentChunk>(
        ManifestCheckpointContentChunkKind.apiVersion,
        ManifestCheckpointContentChunkKind.kind,
        { labelSelector: `${CHECKPOINT_LABEL}=${name}`, limit: 100, continueToken },
      );
      found.push(...page.items);
      continueToken = page.continueToken;
    } while (continueToken);
  } catch (err) {
    throw new CheckpointExportError(`cannot list the chunks of ManifestCheckpoint ${name}: ${apiMessage(err)}`);
  }
  found.sort((a, b) => a.spec.index - b.spec.index);
  const objects: unknown[] = [];
  for (const chunk of found) objects.push(...decodeChunk(stored(chunk)));
  const compressedBytes = found.reduce((n, c) => n + Buffer.byteLength(c.spec.data, 'base64'), 0);
  return { objects, chunks: found.length, compressedBytes };
}

/**
 * Reads checkpoint `name` and every chunk its status lists, verifies them with reassemble(), and
 * returns the objects in checkpoint order. Throws CheckpointExportError (not found, not Ready, API
 * failure) or ChunkCorruptError (a chunk missing, corrupt or inconsistent); see exitCodeOf.
 */
export async function exportCheckpoint(
  kube: KubeClient,
  name: string,
  opts: ExportOptions = {},
): Promise<ExportResult> {
  if (opts.namespace !== undefined && !DNS_LABEL.test(opts.namespace)) {
    throw new CheckpointExportError(`--namespace ${JSON.stringify(opts.namespace)} is not a valid namespace name`);
  }
  const checkpoint = await read<ManifestCheckpoint>(kube, checkpointRef(name));
  if (!checkpoint) throw new CheckpointExportError(`ManifestCheckpoint ${name} not found`);
  const warnings: string[] = [];
  const notReady = notReadyReason(checkpoint);
  if (notReady) {
    if (!opts.allowIncomplete) {
      throw new CheckpointExportError(
        `ManifestCheckpoint ${name} is not Ready: ${notReady}. Its content may be incomplete; ` +
          'pass --allow-incomplete to export what it holds anyway',
      );
    }
    warnings.push(`ManifestCheckpoint ${name} is not Ready (${notReady}); the export may be incomplete`);
  }

  const table = checkpoint.status?.chunks;
  let raw: unknown[];
  let chunkCount: number;
  let compressedBytes: number;
  if (table === undefined && notReady) {
    // Only reachable with --allow-incomplete: the chunk table is written when the capture ends.
    warnings.push(`ManifestCheckpoint ${name} has no chunk table yet; exporting the chunks found by label`);
    const found = await exportWithoutTable(kube, name);
    raw = found.objects;
    chunkCount = found.chunks;
    compressedBytes = found.compressedBytes;
  } else {
    const infos = table ?? [];
    const chunks = await mapLimited(infos, CHUNK_READ_CONCURRENCY, async (info) => {
      const chunk = await read<ManifestCheckpointContentChunk>(kube, chunkRef(info.name));
      if (!chunk) {
        throw new ChunkCorruptError(
          info.index,
          info.name,
          `not found: the checkpoint status lists it, but the apiserver has no such ManifestCheckpointContentChunk`,
        );
      }
      // reassemble() checks index, checksum, size and count, but not which checkpoint a chunk
      // claims: a chunk of another checkpoint under the listed name is just as wrong.
      if (chunk.spec.checkpointName !== name) {
        throw new ChunkCorruptError(
          info.index,
          info.name,
          `spec.checkpointName is ${chunk.spec.checkpointName}, not ${name}: it belongs to another checkpoint`,
        );
      }
      return stored(chunk);
    });
    raw = reassemble(infos, chunks);
    // Every chunk agreed with its table entry; the table must also agree with the total, or a
    // table that lost entries (or a Ready checkpoint without one) would pass as a smaller capture.
    const total = checkpoint.status?.totalObjects;
    if (total !== undefined && total !== raw.length) {
      throw new CheckpointExportError(
        `ManifestCheckpoint ${name} records ${total} objects, but its chunk table lists chunks holding ${raw.length}`,
        EXIT_CORRUPT,
      );
    }
    chunkCount = infos.length;
    compressedBytes = infos.reduce((n, c) => n + c.sizeBytes, 0);
  }

  const objects = (raw as KubernetesObject[]).map((obj) => {
    let out = opts.forApply ? stripForApply(obj) : obj;
    if (opts.namespace !== undefined && out.metadata?.namespace) {
      out = { ...out, metadata: { ...out.metadata, namespace: opts.namespace } };
    }
    return out;
  });
  return { checkpoint, objects, chunks: chunkCount, compressedBytes, warnings };
}

/** metadata fields the apiserver sets; applying them to another cluster fails or misleads. */
const SERVER_METADATA = [
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'managedFields',
  'selfLink',
  'ownerReferences',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
] as const;

/**
 * A copy of `obj` without server-populated fields and `status`, so that `kubectl apply` creates it
 * afresh in another cluster or namespace: a stale uid or resourceVersion makes the apply fail, and
 * ownerReferences would point at owners that do not exist there (the garbage collector would
 * delete the object at once).
 */
export function stripForApply(obj: KubernetesObject): KubernetesObject {
  const copy = structuredClone(obj) as KubernetesObject & { status?: unknown };
  delete copy.status;
  if (copy.metadata) {
    const meta = copy.metadata as Record<string, unknown>;
    for (const field of SERVER_METADATA) delete meta[field];
  }
  return copy;
}

/**
 * YAML 1.1, because kubectl's parser is YAML 1.1: strings such as `yes`, `on` or `0755` are then
 * quoted, where YAML 1.2 output would leave them bare and kubectl would read booleans and numbers.
 * No line folding, so long values (certificates, base64) stay on one line as they were.
 */
function toYaml(obj: unknown): string {
  return stringify(obj, { version: '1.1', lineWidth: 0, aliasDuplicateObjects: false });
}

/**
 * All objects as one text: multi-document YAML, or for JSON a `v1 List` (what `kubectl get -o json`
 * prints for several objects and `kubectl apply -f` accepts; a bare JSON array is not accepted).
 */
export function renderObjects(objects: KubernetesObject[], format: ExportFormat): string {
  if (format === 'json') return `${JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }, null, 2)}\n`;
  return objects.map(toYaml).join('---\n');
}

/**
 * Where an object goes under --output-dir: `<namespace>/<kind>[.<group>]-<name>.<ext>`, kind
 * lower-cased, `_cluster/` for cluster-scoped objects. The group keeps two kinds of the same name
 * from different API groups apart; the version is left out so that the path of an object does not
 * change with the version it was captured at. Throws for names that are not valid Kubernetes names:
 * the content comes from the cluster, and must not be able to write outside the directory.
 */
export function objectFilePath(obj: KubernetesObject, format: ExportFormat): string {
  const kind = obj.kind ?? '';
  const name = obj.metadata?.name ?? '';
  const namespace = obj.metadata?.namespace;
  const apiVersion = obj.apiVersion ?? '';
  const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
  const describe = `${kind || '<no kind>'} ${namespace ? `${namespace}/` : ''}${name || '<no name>'}`;
  if (!/^[A-Za-z][A-Za-z0-9]*$/.test(kind) || !DNS_SUBDOMAIN.test(name) || (group && !DNS_SUBDOMAIN.test(group))) {
    throw new CheckpointExportError(
      `${describe} (${apiVersion}) cannot be written to a file: invalid kind, name or group`,
    );
  }
  if (namespace !== undefined && !DNS_LABEL.test(namespace)) {
    throw new CheckpointExportError(`${describe} cannot be written to a file: invalid namespace`);
  }
  const file = `${kind.toLowerCase()}${group ? `.${group}` : ''}-${name}.${format}`;
  return path.join(namespace ?? '_cluster', file);
}

/** Writes one file per object under `dir` (created as needed); returns the paths written. */
export async function writeObjectFiles(
  dir: string,
  objects: KubernetesObject[],
  format: ExportFormat,
): Promise<string[]> {
  const files = new Map<string, KubernetesObject>();
  for (const obj of objects) {
    const rel = objectFilePath(obj, format);
    const other = files.get(rel);
    if (other) {
      throw new CheckpointExportError(
        `${other.apiVersion} and ${obj.apiVersion} ${obj.kind} ${obj.metadata?.name} would both be written to ${rel}`,
      );
    }
    files.set(rel, obj);
  }
  const written: string[] = [];
  for (const [rel, obj] of files) {
    const file = path.join(dir, rel);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, format === 'json' ? `${JSON.stringify(obj, null, 2)}\n` : toYaml(obj));
    written.push(file);
  }
  return written;
}

/** The one line printed to stderr after an export. */
export function summaryLine(name: string, result: ExportResult, destination: string): string {
  return (
    `exported ${result.objects.length} objects from ManifestCheckpoint ${name} ` +
    `(${result.chunks} chunks, ${result.compressedBytes} bytes compressed) to ${destination}`
  );
}

export function registerCheckpointCommands(program: CommandUnknownOpts): CommandUnknownOpts {
  const checkpoint = program.command('checkpoint').description('Read ManifestCheckpoints (captured manifests).');

  checkpoint
    .command('export')
    .description(
      'Print the objects captured in a ManifestCheckpoint, after verifying every chunk against the ' +
        'checkpoint status (checksums, sizes, counts, order).',
    )
    .argument('<name>', 'ManifestCheckpoint name (status.checkpointName of the ManifestCaptureRequest)')
    .addOption(new Option('--format <format>', 'output format').choices(EXPORT_FORMATS).default('yaml'))
    .option(
      '--output-dir <dir>',
      'write one file per object, <dir>/<namespace>/<kind>[.<group>]-<name>.<format>, instead of printing',
    )
    .option(
      '--for-apply',
      'strip status and server-set metadata (uid, resourceVersion, generation, creationTimestamp, ' +
        'managedFields, selfLink, ownerReferences, deletion*) so the output can be applied to another cluster',
    )
    .option('--namespace <ns>', 'rewrite metadata.namespace of namespaced objects to <ns>')
    .option('--allow-incomplete', 'export even if the checkpoint is not Ready=True')
    .addOption(new Option('--kubeconfig <path>', 'kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)'))
    .addHelpText(
      'after',
      [
        '',
        'Exit codes:',
        '  0  exported',
        '  1  the checkpoint does not exist or is not Ready, or another failure',
        '  2  the checkpoint content is damaged: a chunk is missing, corrupt, or inconsistent with the checkpoint status',
      ].join('\n'),
    )
    .action(async (name, flags) => {
      const kube = KubeClient.fromKubeconfig(flags.kubeconfig);
      try {
        const result = await exportCheckpoint(kube, name, {
          allowIncomplete: flags.allowIncomplete,
          forApply: flags.forApply,
          namespace: flags.namespace,
        });
        for (const w of result.warnings) console.error(`warning: ${w}`);
        if (flags.outputDir) {
          const files = await writeObjectFiles(flags.outputDir, result.objects, flags.format);
          for (const f of files) console.log(f);
          console.error(summaryLine(name, result, `${files.length} files in ${flags.outputDir}`));
        } else {
          const text = renderObjects(result.objects, flags.format);
          process.stdout.write(text);
          console.error(summaryLine(name, result, `stdout (${Buffer.byteLength(text)} bytes)`));
        }
      } catch (err) {
        if (!(err instanceof CheckpointExportError || err instanceof ChunkCorruptError)) throw err;
        // Handled here rather than thrown to main's catch, which knows only exit code 1.
        console.error(
          err instanceof ChunkCorruptError
            ? `ManifestCheckpoint ${name} cannot be exported: ${err.message}`
            : err.message,
        );
        process.exitCode = exitCodeOf(err);
      }
    });

  return checkpoint;
}
