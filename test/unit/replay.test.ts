/**
 * Determinism guard: histories recorded from real runs (see objectkeeper.e2e.test.ts,
 * DO_RECORD_HISTORIES=1) must replay against the current workflow code. A change that would
 * break executions already running in a cluster fails here; use `patched()` for such changes.
 */
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, expect, it } from 'vitest';
import { bundleWorkflows } from '../../src/workers/bundle.js';

const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/histories');
let bundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  bundle = await bundleWorkflows();
}, 120_000);

const files = (await readdir(dir)).filter((f) => f.endsWith('.json')).sort();

it('has recorded histories to replay', () => {
  expect(files.length).toBeGreaterThanOrEqual(5);
});

it.each(files)('%s replays deterministically', async (file) => {
  // The worker decodes the CLI's proto-JSON itself (event IDs as strings mark that format).
  const history: unknown = JSON.parse(await readFile(path.join(dir, file), 'utf8'));
  await expect(Worker.runReplayHistory({ workflowBundle: bundle, replayName: file }, history)).resolves.toBeUndefined();
});
