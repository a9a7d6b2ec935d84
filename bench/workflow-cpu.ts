/**
 * CPU of the sandbox workflow's own code per sandbox life, by replaying recorded histories
 * (test/fixtures/histories) with the fast path's workflow bundle — no server, no agent: what the
 * worker's workflow thread spends on a create → hand-off → delete, which on the create path is
 * CPU the answer waits behind. Replays measure CPU, not a wait, so the figures hold up on a shared
 * machine better than a latency does; rounds alternate between the cases.
 *
 * Usage: npx tsx bench/workflow-cpu.ts [lives=100] [rounds=3]
 *
 * Cases, each the Fast and the Strong recorded life:
 *   - traced: runs that make OpenTelemetry spans (recorded before runs without a trace context
 *     stopped making them, which replay on that path — as a traced run does);
 *   - untraced: runs started without a trace context (tracing off);
 *   - lean: untraced runs recorded on the lean life (one patch marker, one search-attribute upsert
 *     per task, no read after a write that answered with the record, one-step removal; issue 35);
 *   - lean2: its second step (no hint echoing the run's own doing, the quota release sent with the
 *     completion): a Fast life in three workflow tasks.
 */
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DefaultLogger, Runtime, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { bundleWorkflows } from '../src/workers/bundle.js';
import { REPO_ROOT, machine, replayCost } from './support.js';

const LIVES = Number(process.argv[2] ?? 100);
const ROUNDS = Number(process.argv[3] ?? 3);

const CASES = {
  traced: ['sandbox-fast-deleted', 'sandbox-strong-deleted'],
  untraced: ['sandbox-fast-deleted-untraced', 'sandbox-strong-deleted-untraced'],
  lean: ['sandbox-fast-deleted-lean', 'sandbox-strong-deleted-lean'],
  lean2: ['sandbox-fast-deleted-lean-2', 'sandbox-strong-deleted-lean-2'],
} as const;

Runtime.install({ logger: new DefaultLogger('ERROR') });

async function histories(names: readonly string[]): Promise<unknown[]> {
  return Promise.all(
    names.map(async (n) =>
      JSON.parse(await readFile(path.join(REPO_ROOT, 'test/fixtures/histories', `${n}.json`), 'utf8')),
    ),
  );
}

/** CPU and wall time per replayed life. */
const replay = (bundle: WorkflowBundleWithSourceMap, lives: unknown[]) => replayCost(bundle, lives, LIVES);

const bundle = await bundleWorkflows('sandbox');
const loaded = {
  traced: await histories(CASES.traced),
  untraced: await histories(CASES.untraced),
  lean: await histories(CASES.lean),
  lean2: await histories(CASES.lean2),
};
console.log(
  `machine: ${machine()}; load average at start: ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
console.log(`command: npx tsx bench/workflow-cpu.ts ${LIVES} ${ROUNDS}`);
await replay(bundle, loaded.untraced); // warm-up: the bundle's first contexts, the JIT
const results: Record<keyof typeof CASES, number[]> = { traced: [], untraced: [], lean: [], lean2: [] };
for (let round = 0; round < ROUNDS; round++)
  for (const name of ['traced', 'untraced', 'lean', 'lean2'] as const) {
    const r = await replay(bundle, loaded[name]);
    results[name].push(r.cpuMs);
    console.log(
      `round ${round + 1}, ${name}: ${r.cpuMs.toFixed(1)} ms CPU, ${r.wallMs.toFixed(1)} ms wall per sandbox life`,
    );
  }
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const traced = median(results.traced);
const untraced = median(results.untraced);
const lean = median(results.lean);
const lean2 = median(results.lean2);
console.log(
  `median CPU per sandbox life: traced ${traced.toFixed(1)} ms, untraced ${untraced.toFixed(1)} ms (${(untraced / traced).toFixed(2)} × traced), lean ${lean.toFixed(1)} ms (${(lean / untraced).toFixed(2)} × untraced), lean2 ${lean2.toFixed(1)} ms (${(lean2 / lean).toFixed(2)} × lean)`,
);
console.log(
  `load average at end: ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
