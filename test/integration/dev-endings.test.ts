/**
 * However `dev` ends — SIGTERM to `npm run dev` (what `kill`, a supervisor or a CI timeout
 * sends), SIGKILL of the dev process, Ctrl-C — no process of its stack survives, and the next
 * start finds a clean slate. The same lifeline guards the test harness's stack: a killed owner
 * of a test-mode stack takes it along.
 */
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { ManagedProcess } from '../../src/infra/process.js';
import { LocalStack } from '../../src/infra/stack.js';
import { REPO_ROOT, eventually } from '../support/env.js';
import { processesOfStack } from '../support/processes.js';

const stateDir = path.join(REPO_ROOT, '.state', 'test-dev-endings');
let current: ManagedProcess | undefined;

function start(run: string, command: string, args: string[]): ManagedProcess {
  const logFile = path.join(REPO_ROOT, '.state', `test-dev-endings-${run}.log`);
  rmSync(logFile, { force: true });
  current = ManagedProcess.start({ name: run, command, args, cwd: REPO_ROOT, logFile });
  return current;
}

const devArgs = ['--import', 'tsx', path.join(REPO_ROOT, 'src/cli/main.ts'), 'dev', '--state-dir', stateDir];

async function untilLogged(proc: ManagedProcess, text: string): Promise<string> {
  return eventually(
    `${proc.spec.name}: "${text}"`,
    async () => {
      const log = readFileSync(proc.spec.logFile, 'utf8');
      if (!proc.running) throw new Error(`${proc.spec.name} exited:\n${proc.logTail(30)}`);
      return log.includes(text) && log;
    },
    { timeoutMs: 240_000, intervalMs: 500 },
  );
}

/** The whole stack runs: servers, roles, agents, their containers (at least 11 processes). */
function expectStackRunning(): void {
  expect(processesOfStack(stateDir).length).toBeGreaterThanOrEqual(11);
}

async function expectNothingLeft(): Promise<void> {
  await eventually('no process of the stack left', async () => processesOfStack(stateDir).length === 0, {
    timeoutMs: 60_000,
    intervalMs: 500,
  }).catch((err: Error) => {
    const left = processesOfStack(stateDir).map((p) => `${p.pid} ${p.cmdline.slice(0, 160)}`);
    throw new Error(`${err.message}\nstill running:\n${left.join('\n')}`);
  });
}

afterAll(async () => {
  await current?.stop();
});

it('SIGTERM to `npm run dev` stops the whole stack', async () => {
  rmSync(stateDir, { recursive: true, force: true });
  const npm = start('npm', 'npm', ['run', 'dev', '--', '--state-dir', stateDir]);
  await untilLogged(npm, 'durable-operators dev is running');
  expectStackRunning();
  process.kill(npm.pid, 'SIGTERM'); // npm alone, as `kill <pid>` does
  await expectNothingLeft();
  expect(readFileSync(npm.spec.logFile, 'utf8')).toContain('stopped.');
});

it('SIGKILL of the dev process: its lifeline kills the stack', async () => {
  const dev = start('sigkill', process.execPath, devArgs);
  await untilLogged(dev, 'durable-operators dev is running');
  expectStackRunning();
  process.kill(dev.pid, 'SIGKILL'); // dev alone, not its group
  await expectNothingLeft();
});

it('Ctrl-C stops the whole stack, and a start after each ending finds a clean slate', async () => {
  const dev = start('ctrl-c', process.execPath, devArgs);
  const log = await untilLogged(dev, 'durable-operators dev is running');
  expect(log).not.toContain('reaped'); // the SIGKILLed run left nothing to reap
  expectStackRunning();
  process.kill(-dev.pid, 'SIGINT'); // the terminal's foreground group
  await dev.exited;
  await expectNothingLeft();
});

it('a killed owner of a test-mode stack (the test harness) takes the stack along', async () => {
  const owner = start('harness', process.execPath, [
    '--import',
    'tsx',
    '--eval',
    `import { LocalStack } from './src/infra/stack.ts';
     await LocalStack.start({ stateDir: ${JSON.stringify(stateDir)}, mode: 'test' });
     console.log('stack ready');
     setInterval(() => {}, 1 << 30);`,
  ]);
  await untilLogged(owner, 'stack ready');
  expect(processesOfStack(stateDir).length).toBeGreaterThanOrEqual(6); // 2 etcds, apiserver, kcm, Temporal, webhook
  process.kill(owner.pid, 'SIGKILL');
  await expectNothingLeft();
  // The next start (what the next test run does) works on the same directory.
  const stack = await LocalStack.start({ stateDir, mode: 'test', log: () => {} });
  await stack.stop();
  await expectNothingLeft();
});
