/**
 * Renders the TypeScript types of the messages and services in src/api/proto with
 * @grpc/proto-loader's own generator (`proto-loader-gen-types`), given the options the runtime
 * loads those files with: the types describe exactly the plain objects proto-loader builds.
 * (ts-proto or protobuf-es types describe their own codecs' objects, not proto-loader's; and this
 * generator needs no protoc or buf binary: it parses the files with protobufjs.)
 * `npm run protos` writes them; the unit test `proto-types` fails when the checked-in files differ.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Options } from '@grpc/proto-loader';
import { CONTAINERD_LOADER_OPTIONS, CONTAINERD_PROTO_FILES } from '../agent/containerd/client.js';
import { LOADER_OPTIONS as FASTPATH_LOADER_OPTIONS } from '../fastpath/proto.js';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const PROTO_DIR = path.join(SRC, 'api/proto');

/** Each set of .proto files, where its types go and the loader options its runtime uses. */
export const PROTO_TYPE_SETS = [
  {
    outDir: path.join(SRC, 'agent/containerd/gen'),
    options: CONTAINERD_LOADER_OPTIONS,
    // The services the client loads, and the messages it decodes from an Any (runc's options, task events).
    files: [...CONTAINERD_PROTO_FILES, 'containerd/runc/options/oci.proto', 'containerd/events/task.proto'],
  },
  {
    outDir: path.join(SRC, 'fastpath/gen'),
    options: FASTPATH_LOADER_OPTIONS,
    files: ['fastpath/v1/fastpath.proto', 'fastpath/v1/sandbox_io.proto'],
  },
] as const;

/** The generator's flags for the loader options the runtime passes to `loadSync`. */
function flagsOf(options: Options): string[] {
  const flags: string[] = [];
  if (options.keepCase) flags.push('--keepCase');
  if (options.longs === Number) flags.push('--longs=Number');
  else if (options.longs === String) flags.push('--longs=String');
  if (options.enums === String) flags.push('--enums=String');
  for (const b of ['defaults', 'arrays', 'objects', 'oneofs', 'json'] as const) if (options[b]) flags.push(`--${b}`);
  return flags;
}

/** Writes one set's types into `outDir` (emptied first). */
export function generateProtoTypes(set: (typeof PROTO_TYPE_SETS)[number], outDir: string = set.outDir): void {
  rmSync(outDir, { recursive: true, force: true });
  const bin = createRequire(import.meta.url).resolve('@grpc/proto-loader/build/bin/proto-loader-gen-types.js');
  const args = [
    ...flagsOf(set.options),
    '--includeComments',
    '--grpcLib=@grpc/grpc-js',
    '--importFileExtension=.js',
    // Relative to PROTO_DIR, so each file names its .proto the same on every checkout.
    '--includeDirs=.',
    `--outDir=${outDir}`,
    ...set.files,
  ];
  const run = spawnSync(process.execPath, [bin, ...args], { cwd: PROTO_DIR, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`proto-loader-gen-types failed: ${run.stderr || run.stdout}`);
}

/** Relative path → content of every file under `dir`. */
export function readTree(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const f of readdirSync(dir, { recursive: true, withFileTypes: true }))
    if (f.isFile()) {
      const full = path.join(f.parentPath, f.name);
      files.set(path.relative(dir, full), readFileSync(full, 'utf8'));
    }
  return files;
}

/** A set's types as `npm run protos` would write them, rendered in a temporary directory. */
export function renderProtoTypes(set: (typeof PROTO_TYPE_SETS)[number]): Map<string, string> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'proto-types-'));
  try {
    generateProtoTypes(set, tmp);
    return readTree(tmp);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  for (const set of PROTO_TYPE_SETS) {
    generateProtoTypes(set);
    console.log(`wrote ${readTree(set.outDir).size} files to ${path.relative(process.cwd(), set.outDir)}`);
  }
}
