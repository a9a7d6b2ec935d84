/**
 * The workflow bundles share what their workflows need not evaluate again (src/workers/bundle.ts):
 * every src/domain module a bundle holds is preloaded — evaluated once per worker thread, not once
 * per workflow (bench/shared-modules.ts measures the difference). A domain module a bundle starts
 * to use without it being preloaded fails here, as does a preload that stopped reaching the bundle.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  BUNDLE_ENV,
  bundleWorkflows,
  preloadedModules,
  workflowSource,
  type WorkflowSet,
} from '../../src/workers/bundle.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** The src/domain modules a bundle holds, as paths from the repository's root. */
function domainModulesIn(code: string): string[] {
  return [...code.matchAll(/\/\*\*\*\/ "\.\/(src\/domain\/[^"]+)"\n/g)].map((m) => m[1]!).sort();
}

/** The modules a bundle preloads, as its generated preloadModules() requires them. */
function preloadedIn(code: string): string[] {
  const body = /exports\.preloadModules = function preloadModules\(\) \{\n([\s\S]*?)\n\}/.exec(code)?.[1] ?? '';
  return [...body.matchAll(/__webpack_require__\([^)]*"\.\/([^"]+)"\)/g)].map((m) => m[1]!).sort();
}

describe.each<WorkflowSet>(['all', 'sandbox'])('the %s workflow bundle', (set) => {
  it('preloads every src/domain module it holds, and nothing else', { timeout: 60_000 }, async () => {
    const { code } = await bundleWorkflows(set);
    const held = domainModulesIn(code);
    expect(held.length).toBeGreaterThan(5);
    expect(preloadedIn(code)).toEqual(held);
    expect(
      preloadedModules(set)
        .map((file) => path.relative(ROOT, file))
        .sort(),
    ).toEqual(held);
  });

  it('is preloaded the same when a worker bundles its sources at start-up (no pre-built bundle)', () => {
    const saved = process.env[BUNDLE_ENV[set]];
    delete process.env[BUNDLE_ENV[set]];
    try {
      expect(workflowSource(undefined, set)).toEqual({
        workflowsPath: path.join(ROOT, set === 'all' ? 'src/workflows/index.ts' : 'src/workflows/sandbox/contract.ts'),
        bundlerOptions: { preloadModules: preloadedModules(set) },
      });
    } finally {
      if (saved !== undefined) process.env[BUNDLE_ENV[set]] = saved;
    }
  });

  it('builds without the preload too (bench/shared-modules.ts: the baseline)', { timeout: 60_000 }, async () => {
    const { code } = await bundleWorkflows(set, { preload: false });
    expect(preloadedIn(code)).toEqual([]);
    expect(domainModulesIn(code).length).toBeGreaterThan(5);
  });
});
