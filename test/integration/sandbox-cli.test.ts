/**
 * The `sandbox` commands of the CLI, end to end, as a user runs them: each is a real process of
 * `durable-operators sandbox …` talking gRPC to a running fast path (real Temporal, apiserver,
 * agents as real processes). run → list → get → update → reset → delete, and a server error
 * printed as its status and message.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { REPO_ROOT, eventually } from '../support/env.js';
import { SandboxStack, sandboxImage } from '../support/fastpath.js';

const run = promisify(execFile);
let stack: SandboxStack;
const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

beforeAll(async () => {
  stack = await new SandboxStack({ agents: 1, capacity: 2 }).start();
}, 240_000);

afterAll(async () => {
  await stack?.stop();
});

/** One CLI invocation; resolves with its output and exit code (never throws on a non-zero exit). */
async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const argv = ['--import', 'tsx', path.join(REPO_ROOT, 'src/cli/main.ts'), 'sandbox', ...args];
  const env = {
    ...process.env,
    DO_FASTPATH_ENDPOINT: stack.grpcAddress,
    DO_TENANT: String(stack.tenantId),
    DO_LOG_LEVEL: 'silent',
  };
  try {
    const { stdout, stderr } = await run(process.execPath, argv, { cwd: REPO_ROOT, env });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('durable-operators sandbox', () => {
  it('run → list → get → update → reset → delete', async () => {
    const ns = ['-n', stack.namespace];
    const created = await cli(
      'run',
      'hello',
      ...ns,
      '--image',
      sandboxImage(),
      '--pool',
      stack.pool,
      '--mode',
      'strong',
      '--',
      'sleep',
      '3600',
    );
    expect(created.code, created.stderr).toBe(0);
    const answer = parseYaml(created.stdout) as { sandboxId: string; sandboxName: string; agentPod: string };
    expect(answer.sandboxName).toBe('hello');
    expect(answer.sandboxId).toMatch(/\S/);

    await eventually('Running', async () => (await stack.sandbox('hello'))?.status?.phase === 'Running');
    const listed = await cli('ls', ...ns);
    expect(listed.code, listed.stderr).toBe(0);
    const [header, row] = listed.stdout.trim().split('\n');
    expect(header).toMatch(/^NAME\s+PHASE\s+IMAGE\s+POOL\s+AGENT\s+ENDPOINTS\s+AGE$/);
    expect(row).toMatch(
      new RegExp(`^hello\\s+Running\\s+${escapeRegExp(sandboxImage())}\\s+${stack.pool}\\s+${answer.agentPod}\\s`),
    );

    const got = await cli('get', 'hello', ...ns, '-o', 'json');
    expect(got.code, got.stderr).toBe(0);
    expect(JSON.parse(got.stdout)).toMatchObject({
      sandboxName: 'hello',
      phase: 'Running',
      sandboxId: answer.sandboxId,
    });

    const at = new Date(Date.now() + 3_600_000);
    const updated = await cli(
      'update',
      'hello',
      ...ns,
      '--expire-time',
      '1h',
      '--failure-policy',
      'AutoRecreate',
      '--labels',
      'team=a',
    );
    expect(updated.code, updated.stderr).toBe(0);
    const sb = await stack.sandbox('hello');
    expect(Math.abs(Date.parse(sb!.spec.expireTime!) - at.getTime())).toBeLessThan(60_000);
    expect(sb!.spec.failurePolicy).toBe('AutoRecreate');
    expect(sb!.metadata!.labels).toMatchObject({ team: 'a' });

    const reset = await cli('reset', 'hello', ...ns);
    expect(reset.code, reset.stderr).toBe(0);
    const again = await eventually('placed again under a new ID', async () => {
      const s = await stack.sandbox('hello');
      return s?.status?.phase === 'Running' && s.status.sandboxID && s.status.sandboxID !== answer.sandboxId
        ? s
        : undefined;
    });
    expect(again.status!.acceptedResetRevision).toBeTruthy();

    const deleted = await cli('rm', 'hello', ...ns);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout.trim()).toBe(`sandbox ${stack.namespace}/hello deleted`);
    await eventually('gone', async () => !(await stack.sandbox('hello')));
  });

  it("errors are the server's status and message, not a stack trace; bad flags are named", async () => {
    const missing = await cli('get', 'no-such-sandbox', '-n', stack.namespace);
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim()).toMatch(/^NOT_FOUND: .*no-such-sandbox/);
    expect(missing.stderr).not.toMatch(/\n\s+at /);

    const noTenant = await cli('ls', '-n', stack.namespace, '--tenant', '');
    expect(noTenant.code).toBe(1);
    expect(noTenant.stderr.trim()).toMatch(/^UNAUTHENTICATED: /);

    const badPort = await cli('run', 'x', '-n', stack.namespace, '--image', 'i', '--ports', '70000');
    expect(badPort.code).toBe(1);
    expect(badPort.stderr.trim()).toBe('--ports: "70000" is not a port');

    const nothing = await cli('update', 'x', '-n', stack.namespace);
    expect(nothing.stderr.trim()).toBe(
      'nothing to update: give --expire-time, --failure-policy, --recovery-timeout or --labels',
    );
  });
});
