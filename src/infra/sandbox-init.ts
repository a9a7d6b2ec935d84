/**
 * Builds `sandbox-init` (src/agent/init, PID 1 of every sandbox container) with the Go
 * toolchain, static, into the cache keyed by a hash of its source, so a rebuild happens only when
 * the source changes. The agent image builds the same source in its Dockerfile.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rename } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { cacheRoot } from './binaries.js';

const run = promisify(execFile);

function sourceDir(): string {
  for (const c of ['../agent/init', '../../src/agent/init']) {
    const p = fileURLToPath(new URL(c, import.meta.url));
    if (existsSync(path.join(p, 'main.go'))) return p;
  }
  throw new Error('sandbox-init sources not found (src/agent/init/main.go)');
}

/** DO_SANDBOX_INIT when set, otherwise sandbox-init built from this checkout (buildSandboxInit). */
export async function ensureSandboxInit(): Promise<string> {
  return process.env.DO_SANDBOX_INIT || buildSandboxInit();
}

/**
 * sandbox-init built from this checkout's source, cached by its hash (built first when the cache
 * has none), whatever DO_SANDBOX_INIT says: what an image ships.
 */
export async function buildSandboxInit(): Promise<string> {
  const src = sourceDir();
  const hash = createHash('sha256')
    .update(readFileSync(path.join(src, 'main.go')))
    .update(readFileSync(path.join(src, 'go.mod')))
    .digest('hex')
    .slice(0, 12);
  const out = path.join(cacheRoot(), 'bin', `sandbox-init-${hash}`, 'sandbox-init');
  if (existsSync(out)) return out;
  await mkdir(path.dirname(out), { recursive: true });
  const tmp = `${out}.tmp-${process.pid}`;
  try {
    await run('go', ['build', '-trimpath', '-ldflags=-s -w', '-o', tmp, '.'], {
      cwd: src,
      env: { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-mod=mod', GOWORK: 'off' },
    });
  } catch (err) {
    throw new Error(
      `cannot build sandbox-init (needs Go): ${(err as { stderr?: string }).stderr || (err as Error).message}`,
      {
        cause: err,
      },
    );
  }
  await rename(tmp, out);
  return out;
}
