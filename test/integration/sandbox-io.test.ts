/**
 * A sandbox's output and commands run in it, through the fast path: gRPC
 * (fastpath.v1.SandboxIOService, server-streaming), HTTP, and the CLI. Real Temporal, apiserver,
 * agents as real processes running real sandbox processes.
 */
import { execFile } from 'node:child_process';
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
        env: {
          ...process.env,
          DO_FASTPATH_ENDPOINT: stack.grpcAddress,
          DO_TENANT: String(stack.tenantId),
          DO_LOG_LEVEL: 'silent',
        },
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
});
