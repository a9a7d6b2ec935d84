/**
 * Warm provisioning (every binary already cached) and local stack start/stop times.
 * Cold provisioning needs empty caches and ~10 min: see bench/infra-cold.sh.
 * Usage: npx tsx bench/infra.ts [runs=3]
 */
import path from 'node:path';
import { ensureAllBinaries } from '../src/infra/binaries.js';
import { LocalStack } from '../src/infra/stack.js';
import { REPO_ROOT, machine, summary } from './support.js';

const runs = Number(process.argv[2] ?? 3);
console.log(`machine: ${machine()}`);

const warm: number[] = [];
for (let i = 0; i < runs; i++) {
  const t = performance.now();
  await ensureAllBinaries(() => {});
  warm.push(performance.now() - t);
}
console.log(summary('provisioning, warm cache (resolve all 4 binaries)', warm));

const start: number[] = [];
const stop: number[] = [];
for (let i = 0; i < runs; i++) {
  let t = performance.now();
  const stack = await LocalStack.start({
    stateDir: path.join(REPO_ROOT, '.state/bench-infra'),
    mode: 'test',
    log: () => {},
  });
  start.push(performance.now() - t);
  t = performance.now();
  await stack.stop();
  stop.push(performance.now() - t);
}
console.log(summary('stack start (etcd x2, kube-apiserver, controller-manager, Temporal, CRDs ready)', start));
console.log(summary('stack stop (no process left)', stop));
