/** The fast path's pool hints: one per pool per poll of the agents (src/fastpath/pool-hints.ts). */
import { setImmediate as tick } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { PoolHints } from '../../src/fastpath/pool-hints.js';

it('sends one hint per pool for every change recorded in one tick, and a new one for the next tick', async () => {
  const sent: [string, string][] = [];
  const hints = new PoolHints(async (id, event) => void sent.push([id, event]));
  for (let i = 0; i < 50; i++) hints.add('ns', 'a', `sandbox s${i} running on agent x`);
  hints.add('ns', 'b', 'agents changed');
  expect(sent).toEqual([]);
  await tick();
  expect(sent).toEqual([
    ['sandbox-pool/ns/a', 'sandbox s0 running on agent x (and 49 more)'],
    ['sandbox-pool/ns/b', 'agents changed'],
  ]);
  hints.add('ns', 'a', 'sandbox s0 missing on agent x');
  await tick();
  expect(sent.at(-1)).toEqual(['sandbox-pool/ns/a', 'sandbox s0 missing on agent x']);
});
