/**
 * The project's Go programs, built static with the Go toolchain into the cache, keyed by a hash of
 * their source so a rebuild happens only when it changes: `sandbox-init` (src/agent/init, PID 1 of
 * every sandbox container) and `sandbox-netd` (src/agent/netd, the agent's long-lived helper that
 * wires its sandboxes' network namespaces and nftables elements; its modules come from the Go
 * module proxy, pinned by its go.sum). The Dockerfile builds the same sources.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { mkdir, rename } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { cacheRoot } from './binaries.js';

const run = promisify(execFile);

interface GoProgram {
  name: string;
  /** Its directory under src/agent. */
  dir: string;
  /** A prebuilt binary to use instead (an image sets it). */
  envVar: string;
  /** What building it needs besides Go, said when it fails. */
  needs: string;
}

const SANDBOX_INIT: GoProgram = { name: 'sandbox-init', dir: 'init', envVar: 'DO_SANDBOX_INIT', needs: 'Go' };
const SANDBOX_NETD: GoProgram = {
  name: 'sandbox-netd',
  dir: 'netd',
  envVar: 'DO_SANDBOX_NETD',
  needs: 'Go and the Go module proxy',
};

function sourceDir(p: GoProgram): string {
  for (const c of [`../agent/${p.dir}`, `../../src/agent/${p.dir}`]) {
    const dir = fileURLToPath(new URL(c, import.meta.url));
    if (existsSync(path.join(dir, 'main.go'))) return dir;
  }
  throw new Error(`${p.name} sources not found (src/agent/${p.dir}/main.go)`);
}

/**
 * The program built from this checkout's source, cached by its hash (built first when the cache
 * has none), whatever its environment variable says: what an image ships.
 */
async function buildGoProgram(p: GoProgram): Promise<string> {
  const src = sourceDir(p);
  const files = readdirSync(src)
    .filter((f) => f.endsWith('.go') || f === 'go.mod' || f === 'go.sum')
    .sort();
  const hash = createHash('sha256');
  for (const f of files) hash.update(f).update(readFileSync(path.join(src, f)));
  const out = path.join(cacheRoot(), 'bin', `${p.name}-${hash.digest('hex').slice(0, 12)}`, p.name);
  if (existsSync(out)) return out;
  await mkdir(path.dirname(out), { recursive: true });
  const tmp = `${out}.tmp-${process.pid}`;
  try {
    await run('go', ['build', '-trimpath', '-ldflags=-s -w', '-o', tmp, '.'], {
      cwd: src,
      // A program with dependencies builds exactly what its go.sum pins.
      env: {
        ...process.env,
        CGO_ENABLED: '0',
        GOFLAGS: files.includes('go.sum') ? '-mod=readonly' : '-mod=mod',
        GOWORK: 'off',
      },
      maxBuffer: 16 << 20,
    });
  } catch (err) {
    throw new Error(
      `cannot build ${p.name} (needs ${p.needs}): ${(err as { stderr?: string }).stderr || (err as Error).message}`,
      { cause: err },
    );
  }
  await rename(tmp, out);
  return out;
}

/** sandbox-init built from this checkout (cached by its source's hash). */
export const buildSandboxInit = (): Promise<string> => buildGoProgram(SANDBOX_INIT);
/** sandbox-netd built from this checkout (cached by its source's hash). */
export const buildSandboxNetd = (): Promise<string> => buildGoProgram(SANDBOX_NETD);
/** DO_SANDBOX_INIT when set, otherwise sandbox-init built from this checkout. */
export const ensureSandboxInit = async (): Promise<string> => process.env.DO_SANDBOX_INIT || buildSandboxInit();
/** DO_SANDBOX_NETD when set, otherwise sandbox-netd built from this checkout. */
export const ensureSandboxNetd = async (): Promise<string> => process.env.DO_SANDBOX_NETD || buildSandboxNetd();
