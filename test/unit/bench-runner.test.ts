/**
 * `npm run bench` finds every bench by the Usage line of its header (bench/run.ts): a bench
 * without one made the runner refuse to start at all.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const bench = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bench');

it('lists every bench of bench/ with its command', () => {
  const listed = spawnSync(process.execPath, ['--import', 'tsx', path.join(bench, 'run.ts'), '--list'], {
    encoding: 'utf8',
  });
  expect(listed.stderr).toBe('');
  expect(listed.status).toBe(0);
  const benches = readdirSync(bench).filter((f) => /\.(ts|sh)$/.test(f) && !['run.ts', 'support.ts'].includes(f));
  for (const f of benches) expect(listed.stdout).toContain(`bench/${f}`);
}, 60_000);
