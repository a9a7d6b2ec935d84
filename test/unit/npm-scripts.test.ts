/**
 * `npm run dev` (and the other long-running scripts) end gracefully on SIGTERM even on a loaded
 * machine. The tsx CLI, as a parent process, relays a signal and SIGKILLs its child when the
 * child has not acknowledged it within 30 ms — on two busy cores `dev` was killed before it could
 * stop its stack, so the stack's lifeline had to clean up and `stopped.` was never printed.
 * The scripts run Node with tsx as a loader instead: one process, which gets the signal itself.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { REPO_ROOT } from '../support/env.js';

const scripts = (
  JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
).scripts;
/** The scripts that run a process until it is stopped: `exec <runner> <entry>.ts ...`. */
const longRunning = Object.entries(scripts).filter(([, command]) => command.startsWith('exec '));
const fixture = path.join(REPO_ROOT, 'test/fixtures/scripts/busy-until-sigterm.ts');

it('the long-running scripts are the four that run the CLI and the emulator', () => {
  expect(longRunning.map(([name]) => name).sort()).toEqual(['cli', 'cloudflare-emulator', 'dev', 'infra']);
});

it.each(longRunning)(
  '`npm run %s`: SIGTERM reaches the entry even while its event loop is busy',
  async (_, command) => {
    const runner = command.slice(0, command.search(/\S+\.ts\b/)); // `exec node --import tsx `
    const child = spawn('sh', ['-c', `${runner}${fixture}`], {
      cwd: REPO_ROOT,
      env: { ...process.env, PATH: `${path.join(REPO_ROOT, 'node_modules/.bin')}:${process.env.PATH}` },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await expect.poll(() => out, { timeout: 20_000, interval: 50 }).toContain('ready');
    child.kill('SIGTERM'); // the shell exec'd the runner: this is what npm forwards to it
    expect(await exited).toBe(0);
    expect(out).toContain('graceful');
  },
);
