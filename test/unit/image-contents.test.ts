/**
 * What the image's build compiles (tsconfig.build.json, as the Dockerfile runs it): the sources
 * under src/ and nothing else — in particular not the Cloudflare API emulator, a test tool that
 * answers any token it was given and exposes fault-injection hooks.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { REPO_ROOT } from '../support/env.js';

const run = promisify(execFile);

it('the build compiles src/ only: no test tool (the Cloudflare emulator) reaches the image', async () => {
  const tsc = path.join(REPO_ROOT, 'node_modules/typescript/bin/tsc');
  const { stdout } = await run(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--listFilesOnly'], {
    cwd: REPO_ROOT,
    maxBuffer: 64 << 20,
  });
  const ours = stdout
    .split('\n')
    .filter(Boolean)
    .map((f) => path.relative(REPO_ROOT, f))
    // node_modules may be a symlink (a worktree's): its files then resolve outside the repository.
    .filter((f) => !f.split(path.sep).includes('node_modules'));
  expect(ours.length).toBeGreaterThan(100);
  expect(ours.filter((f) => !f.startsWith('src/'))).toEqual([]);
  expect(ours.filter((f) => /emulator/i.test(f))).toEqual([]);
}, 120_000);
