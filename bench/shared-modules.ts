/**
 * CPU of the workflow thread per workflow, with and without the shared (preloaded) modules of
 * src/workers/bundle.ts: recorded histories (test/fixtures/histories) replayed with each bundle —
 * no server: what a worker's workflow thread spends on one workflow, module evaluation included
 * (the SDK evaluates a bundle's modules for every new workflow, except the preloaded ones).
 * Rounds alternate between the two bundles (ABBA); medians are reported.
 *
 * Usage: npx tsx bench/shared-modules.ts [lives=100] [rounds=3]
 *
 * Cases: the worker's bundle replaying a ManifestCaptureRequest's run and its ObjectKeeper's (one
 * request's two workflows); the fast path's bundle replaying a Fast and a Strong sandbox life.
 */
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { bundleWorkflows, type WorkflowSet } from '../src/workers/bundle.js';
import { REPO_ROOT, machine, replayCost } from './support.js';

const LIVES = Number(process.argv[2] ?? 100);
const ROUNDS = Number(process.argv[3] ?? 3);

const CASES: Record<string, { set: WorkflowSet; histories: string[] }> = {
  'request + keeper (worker bundle)': {
    set: 'all',
    histories: ['manifest-capture-completed-coalesced', 'objectkeeper-follow-deleted-local'],
  },
  'Fast + Strong sandbox life (fast path bundle)': {
    set: 'sandbox',
    histories: ['sandbox-fast-deleted-lean-3', 'sandbox-strong-deleted-lean-3'],
  },
};

Runtime.install({ logger: new DefaultLogger('ERROR') });

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const loadavg = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

console.log(`machine: ${machine()}; load average at start: ${loadavg()}`);
console.log(`command: npx tsx bench/shared-modules.ts ${LIVES} ${ROUNDS}`);
for (const [name, { set, histories: names }] of Object.entries(CASES)) {
  const histories = await Promise.all(
    names.map(async (n) =>
      JSON.parse(await readFile(path.join(REPO_ROOT, 'test/fixtures/histories', `${n}.json`), 'utf8')),
    ),
  );
  const bundles = {
    shared: await bundleWorkflows(set),
    'not shared': await bundleWorkflows(set, { preload: false }),
  };
  for (const bundle of Object.values(bundles)) await replayCost(bundle, histories, LIVES); // warm-up: contexts, JIT
  const results: Record<keyof typeof bundles, number[]> = { shared: [], 'not shared': [] };
  for (let round = 0; round < ROUNDS; round++)
    // ABBA order: a drift over the rounds (the heap grows) weighs on both alike.
    for (const which of round % 2 === 0 ? (['not shared', 'shared'] as const) : (['shared', 'not shared'] as const)) {
      const { cpuMs: ms } = await replayCost(bundles[which], histories, LIVES);
      results[which].push(ms);
      console.log(`${name}, round ${round + 1}, ${which}: ${ms.toFixed(2)} ms CPU per workflow`);
    }
  const shared = median(results.shared);
  const notShared = median(results['not shared']);
  console.log(
    `${name}: median CPU per workflow ${notShared.toFixed(2)} ms not shared → ${shared.toFixed(2)} ms shared (${(shared / notShared).toFixed(2)}×)`,
  );
}
console.log(`load average at end: ${loadavg()}`);
