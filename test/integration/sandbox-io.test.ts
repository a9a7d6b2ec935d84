/**
 * A sandbox's output and commands run in it, through the fast path: gRPC
 * (fastpath.v1.SandboxIOService, server-streaming), HTTP, and the CLI. Real Temporal, apiserver,
 * agents as real processes running real sandbox processes.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxIoClient } from '../../src/fastpath/grpc-client.js';
import { REPO_ROOT, eventually } from '../support/env.js';
import { SandboxStack } from '../support/fastpath.js';

let stack: SandboxStack;

/** The CLI's environment: this stack's fast path, as the test tenant. */
const cliEnv = () => ({
  ...process.env,
  DO_FASTPATH_ENDPOINT: stack.grpcAddress,
  DO_TENANT: String(stack.tenantId),
  DO_LOG_LEVEL: 'silent',
});
beforeAll(async () => {
  stack = await new SandboxStack({ agents: 1, capacity: 4, runtime: 'process' }).start();
}, 240_000);
afterAll(async () => {
  await stack?.stop();
});

const NODE = process.execPath;

async function running(name: string, script: string, extra: Record<string, unknown> = {}) {
  await stack.grpc.call('CreateSandbox', {
    name,
    namespace: stack.namespace,
    image: 'node:22',
    poolRef: stack.pool,
    command: [NODE, '-e', script],
    ...extra,
  });
  await eventually(`${name} Running`, async () => (await stack.sandbox(name))?.status?.phase === 'Running');
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const m of it) out.push(m);
  return out;
}

describe('logs', () => {
  it('follows a running process to its end over gRPC; without follow, what is there now; HTTP the same', async () => {
    await running('talker', "console.log('hello'); setTimeout(() => { console.log('bye'); process.exit(0); }, 3000)");
    const io = sandboxIoClient(stack.grpcAddress, String(stack.tenantId));
    try {
      const now = await eventually('hello logged', async () => {
        const chunks = await collect(
          io.stream<{ data: Buffer }>('StreamLogs', { sandboxName: 'talker', namespace: stack.namespace }),
        );
        const text = Buffer.concat(chunks.map((c) => c.data)).toString();
        return text.includes('hello') ? text : undefined;
      });
      expect(now).toBe('hello\n'); // not following: the call ends with what there is
      const followed = await collect(
        io.stream<{ data: Buffer }>('StreamLogs', { sandboxName: 'talker', namespace: stack.namespace, follow: true }),
      );
      // The stream ended by itself when the process did, with everything it wrote.
      expect(Buffer.concat(followed.map((c) => c.data)).toString()).toBe('hello\nbye\n');
    } finally {
      io.close();
    }
    const res = await fetch(`${stack.httpBase}/api/v1/namespaces/${stack.namespace}/sandboxes/talker/logs`, {
      headers: { 'x-tenant-id': String(stack.tenantId) },
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('hello\nbye\n');
  });
});

describe('exec', () => {
  it("runs in the sandbox's env and working directory; output and exit code over gRPC, HTTP and the CLI", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'sbx-exec-'));
    await running('worker', 'setInterval(() => {}, 1 << 30)', {
      envs: { GREETING: 'from-the-sandbox' },
      workingDir: dir,
    });
    const script = "console.log(process.env.GREETING, process.cwd()); console.error('oops'); process.exit(3)";
    const io = sandboxIoClient(stack.grpcAddress, String(stack.tenantId));
    try {
      const events = await collect(
        io.stream<{ output: string; stdout?: Buffer; stderr?: Buffer; exitCode?: number }>('Exec', {
          sandboxName: 'worker',
          namespace: stack.namespace,
          command: [NODE, '-e', script],
        }),
      );
      const text = (k: 'stdout' | 'stderr') =>
        Buffer.concat(events.filter((e) => e.output === k).map((e) => e[k]!)).toString();
      expect(text('stdout')).toBe(`from-the-sandbox ${dir}\n`);
      expect(text('stderr')).toBe('oops\n');
      expect(events.at(-1)).toMatchObject({ output: 'exitCode', exitCode: 3 });
    } finally {
      io.close();
    }

    const res = await fetch(`${stack.httpBase}/api/v1/namespaces/${stack.namespace}/sandboxes/worker/exec`, {
      method: 'POST',
      headers: { 'x-tenant-id': String(stack.tenantId), 'content-type': 'application/json' },
      body: JSON.stringify({ command: [NODE, '-e', script] }),
    });
    expect(res.status).toBe(200);
    const lines = (await res.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toContainEqual({ stdout: `from-the-sandbox ${dir}\n` });
    expect(lines.at(-1)).toEqual({ exitCode: 3 });

    const cli = await promisify(execFile)(
      NODE,
      [
        '--import',
        'tsx',
        path.join(REPO_ROOT, 'src/cli/main.ts'),
        'sandbox',
        'exec',
        'worker',
        '-n',
        stack.namespace,
        '--',
        NODE,
        '-e',
        "console.log('via cli'); process.exit(4)",
      ],
      {
        cwd: REPO_ROOT,
        env: cliEnv(),
      },
    ).then(
      () => ({ code: 0, stdout: '' }),
      (e: { code: number; stdout: string }) => ({ code: e.code, stdout: e.stdout }),
    );
    expect(cli).toEqual({ code: 4, stdout: 'via cli\n' });
  });

  it("another tenant can neither read a sandbox's output nor run anything in it; a command that cannot start is named", async () => {
    await eventually('worker Running', async () => (await stack.sandbox('worker'))?.status?.phase === 'Running');
    const other = sandboxIoClient(stack.grpcAddress, String(stack.otherTenantId));
    try {
      for (const [method, req] of [
        ['StreamLogs', { sandboxName: 'worker', namespace: stack.namespace }],
        ['Exec', { sandboxName: 'worker', namespace: stack.namespace, command: ['true'] }],
      ] as const) {
        const err = (await collect(other.stream(method, req)).catch((e: unknown) => e)) as grpc.ServiceError;
        expect(err.code, method).toBe(grpc.status.NOT_FOUND);
      }
    } finally {
      other.close();
    }
    const io = sandboxIoClient(stack.grpcAddress, String(stack.tenantId));
    try {
      const err = (await collect(
        io.stream('Exec', { sandboxName: 'worker', namespace: stack.namespace, command: ['/no/such/program'] }),
      ).catch((e: unknown) => e)) as grpc.ServiceError;
      expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err.details).toContain('/no/such/program');
    } finally {
      io.close();
    }
  });

  it('stdin reaches the command, then EOF, over gRPC (bytes), HTTP (text or base64) and the CLI (-i); none is EOF at once; over 1 MiB is refused', async () => {
    await running('reader', 'setInterval(() => {}, 1 << 30)');
    // Echoes its stdin once it ends, then its length on stderr, exits 3 (exitCode, not exit(): that
    // would cut output still queued for the pipe).
    const echo = [
      NODE,
      '-e',
      "const c = []; process.stdin.on('data', (d) => c.push(d)); process.stdin.on('end', () => { const b = Buffer.concat(c); process.stdout.write(b); console.error(b.length); process.exitCode = 3; })",
    ];
    const at = { sandboxName: 'reader', namespace: stack.namespace };
    const io = sandboxIoClient(stack.grpcAddress, String(stack.tenantId));
    type Out = { output: string; stdout?: Buffer; stderr?: Buffer; exitCode?: number };
    const grpcExec = async (req: Record<string, unknown>) => {
      const events = await collect(io.stream<Out>('Exec', { ...at, command: echo, ...req }));
      const bytes = (k: 'stdout' | 'stderr') => Buffer.concat(events.filter((e) => e.output === k).map((e) => e[k]!));
      return { stdout: bytes('stdout'), stderr: bytes('stderr').toString(), exitCode: events.at(-1)?.exitCode };
    };
    try {
      expect(await grpcExec({ stdin: Buffer.from('hello\n') })).toEqual({
        stdout: Buffer.from('hello\n'),
        stderr: '6\n',
        exitCode: 3,
      });
      const big = Buffer.alloc(200 * 1024, 'z');
      const bigOut = await grpcExec({ stdin: big });
      expect({ equal: bigOut.stdout.equals(big), stderr: bigOut.stderr }).toEqual({ equal: true, stderr: '204800\n' });
      // No stdin: the command reads EOF at once instead of waiting.
      expect(await grpcExec({})).toEqual({ stdout: Buffer.alloc(0), stderr: '0\n', exitCode: 3 });
      const over = (await grpcExec({ stdin: Buffer.alloc(1024 * 1024 + 1) }).catch(
        (e: unknown) => e,
      )) as grpc.ServiceError;
      expect(over.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(over.details).toBe('stdin is 1048577 bytes; at most 1048576 are accepted');
    } finally {
      io.close();
    }

    const httpExec = async (body: Record<string, unknown>) => {
      const res = await fetch(`${stack.httpBase}/api/v1/namespaces/${stack.namespace}/sandboxes/reader/exec`, {
        method: 'POST',
        headers: { 'x-tenant-id': String(stack.tenantId), 'content-type': 'application/json' },
        body: JSON.stringify({ command: echo, ...body }),
      });
      const text = await res.text();
      if (res.status !== 200) return { status: res.status, ...(JSON.parse(text) as object) };
      return {
        status: 200,
        lines: text
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as Record<string, unknown>),
      };
    };
    const text = await httpExec({ stdin: 'héllo, wörld\n' });
    expect(text.lines).toContainEqual({ stdout: 'héllo, wörld\n' });
    expect(text.lines).toContainEqual({ stderr: '15\n' }); // UTF-8 bytes, not characters
    expect(text.lines?.at(-1)).toEqual({ exitCode: 3 });
    // Bytes that are not UTF-8 go as stdinBase64; the command gets them unaltered.
    const binary = Buffer.from([0xff, 0x00, 0xfe]);
    const viaBase64 = await httpExec({
      command: [NODE, '-e', "process.stdin.on('data', (d) => process.stdout.write(d.toString('hex')))"],
      stdinBase64: binary.toString('base64'),
    });
    expect(viaBase64.lines).toEqual([{ stdout: 'ff00fe' }, { exitCode: 0 }]);
    expect(await httpExec({ stdin: 'x'.repeat(1024 * 1024 + 1) })).toEqual({
      status: 400,
      error: 'InvalidArgument',
      message: 'stdin is 1048577 bytes; at most 1048576 are accepted',
    });
    expect(await httpExec({ stdin: 'a', stdinBase64: 'YQ==' })).toMatchObject({
      status: 400,
      error: 'InvalidArgument',
    });
    expect(await httpExec({ stdinBase64: 'not base64' })).toMatchObject({
      status: 400,
      message: 'stdinBase64 must be base64 (standard alphabet, padded)',
    });

    // The CLI sends its own stdin with -i (and, without it, leaves the command EOF at once).
    const cli = (args: string[], input: string) =>
      new Promise<{ code: number | null; stdout: string }>((resolve, reject) => {
        const child = spawn(
          NODE,
          ['--import', 'tsx', path.join(REPO_ROOT, 'src/cli/main.ts'), 'sandbox', 'exec', ...args],
          {
            cwd: REPO_ROOT,
            env: cliEnv(),
          },
        );
        let stdout = '';
        child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
        child.once('error', reject);
        child.once('close', (code) => resolve({ code, stdout }));
        child.stdin.end(input);
      });
    const where = ['reader', '-n', stack.namespace];
    expect(await cli(['-i', ...where, '--', ...echo], 'via the cli\n')).toEqual({ code: 3, stdout: 'via the cli\n' });
    expect(await cli([...where, '--', ...echo], 'not sent\n')).toEqual({ code: 3, stdout: '' });
  });
});
