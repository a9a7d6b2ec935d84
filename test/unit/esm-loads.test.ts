/**
 * Every module under src/ loads under Node's own ESM loader, as the roles run (`node
 * bin/durable-operators.js`, `tsx` in dev). Vitest's loader is kinder: it gives a CommonJS
 * package (e.g. `@temporalio/proto`) named exports that Node does not, so a named import of one
 * passes every test in-process and stops the worker at start.
 */
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { REPO_ROOT } from '../support/env.js';

const run = promisify(execFile);

function modules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return modules(full);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [full] : [];
  });
}

it('every module of src/ loads under Node (no named import Node cannot give)', async () => {
  // Entry scripts (the CLI, the stack's watchdog) parse argv and run at import; the rest only define things.
  const entries = [path.join('cli', 'main.ts'), path.join('infra', 'lifeline-watchdog.ts')];
  const files = modules(path.join(REPO_ROOT, 'src')).filter((f) => !entries.some((e) => f.endsWith(e)));
  expect(files.length).toBeGreaterThan(100);
  const script = `
    const failed = [];
    for (const f of ${JSON.stringify(files)}) {
      try { await import(f); } catch (err) { failed.push(f + ': ' + err.message); }
    }
    console.log(JSON.stringify(failed));
    process.exit(0);`;
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: REPO_ROOT,
    maxBuffer: 16 << 20,
    env: { ...process.env, DO_LOG_LEVEL: 'silent' },
  });
  const failed = JSON.parse(stdout.trim().split('\n').at(-1)!) as string[];
  expect(failed.map((f) => path.relative(REPO_ROOT, f))).toEqual([]);
}, 120_000);
