/**
 * Writes src/agent/containerd/seccomp-default.json and oci-defaults.json from containerd's own Go
 * packages (./main.go, built with the host's Go). oci-defaults.json is containerd's default OCI
 * spec of a Linux container, the same on every GOARCH. For the seccomp profile, `npm run seccomp`
 * refreshes the host's GOARCH, `npm run seccomp --
 * arm64 …` the GOARCHes named, each built for its architecture and run with qemu-user
 * (`qemu-<arch>-static`, Debian's qemu-user-static) when it is not the host's: containerd picks
 * its rules by the GOARCH it was built for. Entries not named are kept. The unit test
 * containerd-seccomp fails when the host's entry differs from what containerd produces here.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { CAPABILITY_NAMES } from '../../../api/capabilities.js';

const run = promisify(execFile);
const HERE = path.dirname(fileURLToPath(import.meta.url));
export const SECCOMP_DATA_FILE = path.resolve(HERE, '../seccomp-default.json');
export const OCI_DATA_FILE = path.resolve(HERE, '../oci-defaults.json');

const GO_ENV = { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-mod=mod', GOWORK: 'off' };
/** qemu-user's name of a GOARCH. */
const QEMU_ARCH: Readonly<Record<string, string>> = { amd64: 'x86_64', arm64: 'aarch64' };

/** ./main.go run with `args` (built for `goarch`, run under qemu-user when not the host's): its stdout, parsed. */
async function generator(args: string[], goarch?: string): Promise<unknown> {
  try {
    let stdout: string;
    const host = (await run('go', ['env', 'GOARCH'], { env: GO_ENV })).stdout.trim();
    if (!goarch || goarch === host) {
      ({ stdout } = await run('go', ['run', '-trimpath', '.', ...args], {
        cwd: HERE,
        env: GO_ENV,
        maxBuffer: 16 << 20,
      }));
    } else {
      const dir = await mkdtemp(path.join(tmpdir(), 'seccomp-gen-'));
      try {
        const bin = path.join(dir, 'seccomp-gen');
        await run('go', ['build', '-trimpath', '-o', bin, '.'], { cwd: HERE, env: { ...GO_ENV, GOARCH: goarch } });
        ({ stdout } = await run(`qemu-${QEMU_ARCH[goarch] ?? goarch}-static`, [bin, ...args], { maxBuffer: 16 << 20 }));
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }
    return JSON.parse(stdout) as unknown;
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr;
    throw new Error(`the containerd data generator failed (needs Go): ${stderr || (err as Error).message}`, {
      cause: err,
    });
  }
}

/** The GOARCH's entry (the host's by default), as containerd's DefaultProfile gives its pieces. */
export function generatedParts(goarch?: string): Promise<Record<string, unknown>> {
  return generator(['parts', ...CAPABILITY_NAMES.map((n) => `CAP_${n}`)], goarch) as Promise<Record<string, unknown>>;
}

/** containerd's DefaultProfile for a container whose bounding set is `capabilities` (OCI names). */
export function containerdDefaultProfile(capabilities: readonly string[]): Promise<unknown> {
  return generator(['profile', capabilities.join(',')]);
}

/** containerd's default OCI spec of a Linux container, as oci-defaults.json holds it (./oci.go). */
export function generatedOciDefaults(): Promise<unknown> {
  return generator(['oci']);
}

/** oci-defaults.json's text for these defaults. */
export const renderOciData = (defaults: unknown): string => `${JSON.stringify(defaults, null, 2)}\n`;

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
  const goarches = process.argv.slice(2);
  let parts: Record<string, unknown> = {};
  for (const goarch of goarches.length ? goarches : [undefined])
    parts = { ...parts, ...(await generatedParts(goarch)) };
  await writeFile(SECCOMP_DATA_FILE, await renderSeccompData(parts));
  console.log(`wrote ${Object.keys(parts).join(', ')} to ${path.relative(process.cwd(), SECCOMP_DATA_FILE)}`);
  await writeFile(OCI_DATA_FILE, renderOciData(await generatedOciDefaults()));
  console.log(`wrote ${path.relative(process.cwd(), OCI_DATA_FILE)}`);
}
