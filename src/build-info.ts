/**
 * `durable_operators_build_info{version,role,node_version} 1`: which version runs where, the
 * metric every role serves on its /metrics (as kube-state-metrics and external-dns serve theirs).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Gauge, type Registry } from 'prom-client';

/** The prefix of every metric of ours (the fast path's create latency keeps the original's name). */
export const METRIC_PREFIX = 'durable_operators_';

/** The version in package.json, found upwards from this file (src/ in development, dist/ in the image). */
function packageVersion(): string {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'durable-operators' && pkg.version) return pkg.version;
    } catch {
      // not here: look further up
    }
    if (path.dirname(dir) === dir) return 'unknown';
  }
}

export const VERSION = packageVersion();

export function registerBuildInfo(registry: Registry, role: string): Gauge<'version' | 'role' | 'node_version'> {
  const gauge = new Gauge({
    name: `${METRIC_PREFIX}build_info`,
    help: 'Always 1: the version of durable-operators this process runs, its role and its Node.js.',
    labelNames: ['version', 'role', 'node_version'] as const,
    registers: [registry],
  });
  gauge.set({ version: VERSION, role, node_version: process.version }, 1);
  return gauge;
}
