/**
 * Writes src/agent/containerd/seccomp-default.json from containerd's own Go package (./main.go,
 * built with the host's Go for the host's GOARCH): `npm run seccomp`. The entries of other
 * GOARCHes already in the file are kept; run it on such a machine to add or refresh one. The
 * unit test containerd-seccomp fails when the file differs from what containerd produces here.
 */
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { CAPABILITY_NAMES } from '../../../api/capabilities.js';

const run = promisify(execFile);
const HERE = path.dirname(fileURLToPath(import.meta.url));
export const SECCOMP_DATA_FILE = path.resolve(HERE, '../seccomp-default.json');

/** `go run .` in this directory: its stdout, parsed. */
async function generator(args: string[]): Promise<unknown> {
  try {
    const { stdout } = await run('go', ['run', '-trimpath', '.', ...args], {
      cwd: HERE,
      env: { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-mod=mod', GOWORK: 'off' },
      maxBuffer: 16 << 20,
    });
    return JSON.parse(stdout) as unknown;
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr;
    throw new Error(`the seccomp generator failed (needs Go): ${stderr || (err as Error).message}`, { cause: err });
  }
}

/** This GOARCH's entry, as containerd's DefaultProfile gives its pieces. */
export function generatedParts(): Promise<Record<string, unknown>> {
  return generator(['parts', ...CAPABILITY_NAMES.map((n) => `CAP_${n}`)]) as Promise<Record<string, unknown>>;
}

/** containerd's DefaultProfile for a container whose bounding set is `capabilities` (OCI names). */
export function containerdDefaultProfile(capabilities: readonly string[]): Promise<unknown> {
  return generator(['profile', capabilities.join(',')]);
}

/** The file's text with this GOARCH's entry replaced by `parts`. */
export async function renderSeccompData(parts: Record<string, unknown>): Promise<string> {
  const current = JSON.parse(await readFile(SECCOMP_DATA_FILE, 'utf8').catch(() => '{}')) as Record<string, unknown>;
  const merged = { ...current, ...parts };
  const sorted = Object.fromEntries(
    Object.keys(merged)
      .sort()
      .map((k) => [k, merged[k]]),
  );
  return `${JSON.stringify(sorted, null, 2)}\n`;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await writeFile(SECCOMP_DATA_FILE, await renderSeccompData(await generatedParts()));
  console.log(`wrote ${path.relative(process.cwd(), SECCOMP_DATA_FILE)}`);
}
