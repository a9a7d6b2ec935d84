/**
 * Builds `sandbox-netd` (src/agent/netd: the agent's long-lived helper that wires its sandboxes'
 * network namespaces and nftables elements) with the Go toolchain, static, into the cache keyed by
 * a hash of its source, so a rebuild happens only when the source changes. Its modules come from
 * the Go module proxy, pinned by its go.sum. The Dockerfile builds the same source.
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

function sourceDir(): string {
  for (const c of ['../agent/netd', '../../src/agent/netd']) {
    const p = fileURLToPath(new URL(c, import.meta.url));
    if (existsSync(path.join(p, 'main.go'))) return p;
  }
  throw new Error('sandbox-netd sources not found (src/agent/netd/main.go)');
}

/** DO_SANDBOX_NETD when set, otherwise sandbox-netd built from this checkout (buildSandboxNetd). */
export async function ensureSandboxNetd(): Promise<string> {
  return process.env.DO_SANDBOX_NETD || buildSandboxNetd();
}

/**
 * sandbox-netd built from this checkout's source, cached by its hash (built first when the cache
 * has none), whatever DO_SANDBOX_NETD says: what an image ships.
 */
export async function buildSandboxNetd(): Promise<string> {
  const src = sourceDir();
  const hash = createHash('sha256');
  for (const f of readdirSync(src)
    .filter((f) => f.endsWith('.go') || f === 'go.mod' || f === 'go.sum')
    .sort())
    hash.update(f).update(readFileSync(path.join(src, f)));
  const out = path.join(cacheRoot(), 'bin', `sandbox-netd-${hash.digest('hex').slice(0, 12)}`, 'sandbox-netd');
  if (existsSync(out)) return out;
  await mkdir(path.dirname(out), { recursive: true });
  const tmp = `${out}.tmp-${process.pid}`;
  try {
    await run('go', ['build', '-trimpath', '-ldflags=-s -w', '-o', tmp, '.'], {
      cwd: src,
      env: { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-mod=readonly', GOWORK: 'off' },
      maxBuffer: 16 << 20,
    });
  } catch (err) {
    throw new Error(
      `cannot build sandbox-netd (needs Go and the Go module proxy): ${(err as { stderr?: string }).stderr || (err as Error).message}`,
      { cause: err },
    );
  }
  await rename(tmp, out);
  return out;
}
