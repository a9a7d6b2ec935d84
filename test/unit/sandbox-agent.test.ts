/** The sandbox agent's pure parts: body validation, the log ring buffer, the token check. */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  MAX_EXEC_STDIN_BYTES,
  decodeBase64,
  parseCreateRequest,
  parseDeleteRequest,
  parseDrainRequest,
  parseExecRequest,
  parseReapRequest,
  specFingerprint,
} from '../../src/agent/api.js';
import { REAP_MARGIN_MS, SandboxAgent, exitMessage } from '../../src/agent/agent.js';
import { ProcessRuntime } from '../../src/agent/process-runtime.js';
import type { SandboxExit, SandboxRuntime } from '../../src/agent/runtime.js';
import { bearerChecker, loadAgentToken } from '../../src/agent/auth.js';
import { LogBuffer } from '../../src/agent/log-buffer.js';

describe('agent request bodies', () => {
  const ok = { sandboxId: 'sb-1', image: 'img', command: ['sleep', '1'], exposedPorts: [80, 443] };

  it('accepts the original fields', () => {
    const r = parseCreateRequest({
      sandbox: {
        ...ok,
        claimUid: 'u',
        claimName: 'n',
        cpu: '1',
        memory: '1Gi',
        args: [],
        env: { A: 'b' },
        workingDir: '/',
      },
    });
    expect(r.ok).toBe(true);
  });

  it.each([
    [null, 'body must be a JSON object {"sandbox":{...}}'],
    [{}, 'sandbox is required (an object)'],
    [{ sandbox: { ...ok, sandboxId: '' } }, 'sandbox.sandboxId is required'],
    [{ sandbox: { ...ok, image: undefined } }, 'sandbox.image is required'],
    [{ sandbox: { ...ok, exposedPorts: 80 } }, 'sandbox.exposedPorts must be an array of ports'],
    [{ sandbox: { ...ok, exposedPorts: [65536] } }, 'sandbox.exposedPorts: 65536 is not a port (an integer 1–65535)'],
    [{ sandbox: { ...ok, exposedPorts: [1.5] } }, 'sandbox.exposedPorts: 1.5 is not a port (an integer 1–65535)'],
    [{ sandbox: { ...ok, exposedPorts: [22, 22] } }, 'sandbox.exposedPorts: port 22 is listed twice'],
  ])('refuses %j: %s', (body, message) => {
    expect(parseCreateRequest(body)).toEqual({ ok: false, message });
  });

  it('names the field TypeBox finds wrong', () => {
    const r = parseCreateRequest({ sandbox: { ...ok, command: 'sleep 1' } });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.message).toMatch(/^sandbox\.command: /);
  });

  it('delete needs a sandboxId string', () => {
    expect(parseDeleteRequest({ sandboxId: 'x' })).toEqual({ ok: true, value: { sandboxId: 'x' } });
    expect(parseDeleteRequest({})).toEqual({ ok: false, message: 'sandboxId is required' });
    expect(parseDeleteRequest({ sandboxId: 3 })).toMatchObject({
      ok: false,
      message: expect.stringMatching(/^sandboxId: /),
    });
  });

  it('exec: stdin is base64, decoded whole or refused, at most 1 MiB; empty or absent is no input', () => {
    const exec = { sandboxId: 's', command: ['cat'] };
    expect(parseExecRequest({ ...exec, stdin: Buffer.from('hi\n').toString('base64') })).toEqual({
      ok: true,
      value: { ...exec, stdin: Buffer.from('hi\n') },
    });
    expect(parseExecRequest(exec)).toEqual({ ok: true, value: exec });
    expect(parseExecRequest({ ...exec, stdin: '' })).toEqual({ ok: true, value: exec });
    const max = Buffer.alloc(MAX_EXEC_STDIN_BYTES, 1);
    expect(parseExecRequest({ ...exec, stdin: max.toString('base64') })).toMatchObject({ ok: true });
    expect(parseExecRequest({ ...exec, stdin: Buffer.concat([max, Buffer.from('x')]).toString('base64') })).toEqual({
      ok: false,
      message: `stdin is ${MAX_EXEC_STDIN_BYTES + 1} bytes; at most ${MAX_EXEC_STDIN_BYTES} are accepted`,
    });
    // Buffer.from would silently skip the characters it cannot read.
    for (const bad of ['aGk=!', 'aGk', 'a GkK', 'aGk=aGk='])
      expect(parseExecRequest({ ...exec, stdin: bad }), bad).toEqual({
        ok: false,
        message: 'stdin is not base64 (standard alphabet, padded)',
      });
    expect(parseExecRequest({ ...exec, stdin: 42 })).toEqual({ ok: false, message: 'stdin must be a base64 string' });
    expect(parseExecRequest({ sandboxId: 's', command: [] })).toEqual({
      ok: false,
      message: 'command must be a non-empty array of strings',
    });
    expect(parseExecRequest({ command: ['x'] })).toEqual({ ok: false, message: 'sandboxId is required' });
    // Binary survives the round trip; a megabyte-long string is checked without a regular expression's stack.
    const bytes = Buffer.from([0, 255, 10, 13, 128]);
    expect(decodeBase64(bytes.toString('base64'))).toEqual(bytes);
    expect(decodeBase64(`${Buffer.alloc(4 * MAX_EXEC_STDIN_BYTES).toString('base64')}!`)).toBeUndefined();
  });

  it('fingerprints ignore env and port order, not content', () => {
    const a = { ...ok, env: { A: '1', B: '2' } };
    expect(specFingerprint(a)).toBe(specFingerprint({ ...ok, env: { B: '2', A: '1' }, exposedPorts: [443, 80] }));
    expect(specFingerprint(a)).not.toBe(specFingerprint({ ...a, image: 'other' }));
  });

  it('exit messages', () => {
    expect(exitMessage({ code: 2, signal: null, stopped: false })).toBe('exited with code 2');
    expect(exitMessage({ code: null, signal: 'SIGSEGV', stopped: false })).toBe('killed by signal SIGSEGV');
    expect(exitMessage({ code: null, signal: 'SIGKILL', stopped: true })).toBe('stopped by the agent');
  });
});

describe('LogBuffer', () => {
  it('keeps the last `limit` bytes, cutting the oldest chunk', () => {
    const b = new LogBuffer(10);
    b.append(Buffer.from('0123456'));
    b.append(Buffer.from('789ab'));
    expect(b.snapshot().toString()).toBe('23456789ab');
    expect(b.dropped).toBe(2);
    b.append(Buffer.from('cdefghijklmn'));
    expect(b.snapshot().toString()).toBe('efghijklmn');
  });

  it('readers pull from a position: a slow reader falls behind and is told what it missed, memory stays bounded', () => {
    const b = new LogBuffer(10);
    b.append(Buffer.from('abc'));
    expect(b.read(0)).toEqual({ data: Buffer.from('abc'), next: 3, missed: 0 });
    expect(b.read(3)).toEqual({ data: Buffer.alloc(0), next: 3, missed: 0 });
    b.append(Buffer.from('defghijklmnop')); // 16 bytes written, 10 kept
    expect(b.read(3)).toEqual({ data: Buffer.from('ghijklmnop'), next: 16, missed: 3 });
    expect(b.read(12, 2)).toEqual({ data: Buffer.from('mn'), next: 14, missed: 0 });
    expect(b.written).toBe(16);
  });

  it('wakes waiting readers on new output and at the end; ends ignore later writes', async () => {
    const b = new LogBuffer(100);
    const waiting = b.changed();
    b.append(Buffer.from('a'));
    await waiting;
    const atEnd = b.changed();
    b.end();
    await atEnd;
    b.append(Buffer.from('ignored'));
    expect(b.snapshot().toString()).toBe('a');
    await b.changed(); // ended: at once
    const abort = new AbortController();
    const c = new LogBuffer(10).changed(abort.signal);
    abort.abort();
    await c;
  });
});

describe('agent token', () => {
  it('checks the bearer header', () => {
    const check = bearerChecker('s3cret');
    expect(check('Bearer s3cret')).toBe(true);
    expect(check('bearer  s3cret ')).toBe(true);
    expect(check('Bearer s3cre')).toBe(false);
    expect(check('s3cret')).toBe(false);
    expect(check(undefined)).toBe(false);
    expect(check('Bearer ')).toBe(false);
  });

  it('reads the file first, then the literal; none is an error', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'agent-token-'));
    try {
      const f = path.join(dir, 'token');
      await writeFile(f, 'from-file\n');
      expect(loadAgentToken({ tokenFile: f, token: 'literal' })).toBe('from-file');
      expect(loadAgentToken({ token: 'literal' })).toBe('literal');
      expect(() => loadAgentToken({})).toThrow(/no agent token/);
      await writeFile(f, '  \n');
      expect(() => loadAgentToken({ tokenFile: f })).toThrow(/is empty/);
      expect(() => loadAgentToken({ tokenFile: path.join(dir, 'missing') })).toThrow(
        /cannot read the agent token file/,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('agent drain', () => {
  const runtime = {
    name: 'fake',
    validate: () => undefined,
    start: () => Promise.resolve(),
    stop: () => Promise.resolve(),
    remove: () => undefined,
    stopAll: () => Promise.resolve(),
  } as unknown as SandboxRuntime;
  const spec = (sandboxId: string) => ({ sandboxId, image: 'img', command: ['sleep', '1'] });

  it('refuses new sandboxes while draining, keeps replays of held ones, and undrains', async () => {
    const agent = new SandboxAgent({ agentId: 'a', nodeName: 'n', capacity: 3, runtime, killGraceMs: 10 });
    expect((await agent.create(spec('one'))).status).toBe(200);
    const report = agent.drain(true);
    expect(report).toMatchObject({ draining: true, allocated: 1 });
    const refused = await agent.create(spec('two'));
    expect(refused).toMatchObject({ status: 409, body: { success: false, reason: 'Draining' } });
    expect((await agent.create(spec('one'))).status).toBe(200);
    expect(agent.drain(false)).toMatchObject({ draining: false, allocated: 1 });
    expect((await agent.create(spec('two'))).status).toBe(200);
    expect(agent.status().draining).toBe(false);
  });

  it('drain bodies', () => {
    expect(parseDrainRequest({})).toEqual({ ok: true, value: {} });
    expect(parseDrainRequest({ drain: false })).toEqual({ ok: true, value: { drain: false } });
    expect(parseDrainRequest({ drain: 'yes' })).toMatchObject({ ok: false });
    expect(parseDrainRequest([])).toMatchObject({ ok: false });
  });
});

describe('agent reap (review N4)', () => {
  it('gives the runtime the live UIDs and a cutoff before the listing, less the margin', async () => {
    const calls: { live: string[]; createdBefore: number }[] = [];
    const runtime = {
      name: 'fake',
      reapDeadAgents: (live: ReadonlySet<string>, createdBefore: number) => {
        calls.push({ live: [...live], createdBefore });
        return Promise.resolve({ removed: [] });
      },
    } as unknown as SandboxRuntime;
    const agent = new SandboxAgent({ agentId: 'a', nodeName: 'n', capacity: 1, runtime, killGraceMs: 10 });
    const before = Date.now();
    await agent.reap({ liveAgentUids: ['u1', 'u2'], listedMsAgo: 2_000 });
    expect(calls[0]!.live).toEqual(['u1', 'u2']);
    expect(calls[0]!.createdBefore).toBeLessThanOrEqual(before + 10 - 2_000 - REAP_MARGIN_MS);
    expect(calls[0]!.createdBefore).toBeGreaterThanOrEqual(before - 2_000 - REAP_MARGIN_MS - 1_000);
  });

  it('the process runtime has nothing to reap, and says so', async () => {
    const agent = new SandboxAgent({
      agentId: 'a',
      nodeName: 'n',
      capacity: 1,
      runtime: new ProcessRuntime({}),
      killGraceMs: 10,
    });
    expect(await agent.reap({ liveAgentUids: [], listedMsAgo: 0 })).toEqual({
      removed: [],
      skipped: 'the process runtime leaves nothing behind a dead agent',
    });
  });

  it('reap bodies', () => {
    expect(parseReapRequest({ liveAgentUids: ['u'], listedMsAgo: 5 })).toMatchObject({ ok: true });
    expect(parseReapRequest({ liveAgentUids: [''], listedMsAgo: 5 })).toMatchObject({ ok: false });
    expect(parseReapRequest({ liveAgentUids: ['u'], listedMsAgo: -1 })).toMatchObject({ ok: false });
    expect(parseReapRequest({ liveAgentUids: ['u'] })).toMatchObject({ ok: false });
  });
});

describe('the process runtime never serves a pool asking for isolation (review N6)', () => {
  it('refuses runtimeType container unless --allow-unisolated; gvisor always', () => {
    expect(new ProcessRuntime({ runtimeType: 'container' }).unsupported).toMatch(
      /^runtimeType container needs the containerd runtime; this agent runs the process runtime, which isolates nothing .*--allow-unisolated/,
    );
    expect(new ProcessRuntime({ runtimeType: 'container', allowUnisolated: true }).unsupported).toBeUndefined();
    expect(new ProcessRuntime({ runtimeType: 'gvisor', allowUnisolated: true }).unsupported).toMatch(/runsc/);
  });

  it('an agent given the pool’s limits does not start on the process runtime', async () => {
    const run = promisify(execFile);
    const err = (await run(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', 'agent', '--runtime', 'process', '--port', '0', '--insecure-plain-http'],
      { env: { ...process.env, DO_AGENT_TOKEN: 't', SANDBOX_DEFAULT_MEMORY: '512Mi' }, timeout: 25_000 },
    ).then(
      () => undefined,
      (e: unknown) => e,
    )) as { code?: number; stderr?: string } | undefined;
    expect(err?.code).not.toBe(0);
    expect(err?.stderr).toMatch(
      /the process runtime cannot enforce --default-memory \(SANDBOX_DEFAULT_MEMORY\) .*not starting rather than running sandboxes without them/,
    );
  }, 30_000);
});

describe('agent delete when the runtime refuses', () => {
  it('reports the failure on the sandbox instead of throwing, and the next delete tries again', async () => {
    const stops: string[] = [];
    const runtime = {
      name: 'fake',
      validate: () => undefined,
      start: () => Promise.resolve(),
      // The first stop fails as runsc does when its control server is gone.
      stop: (id: string) => {
        stops.push(id);
        return stops.length === 1
          ? Promise.reject(new Error('unknown error after kill: connecting to control server: connection refused'))
          : Promise.resolve();
      },
      status: () => ({ running: true }),
      remove: () => undefined,
    } as unknown as SandboxRuntime;
    const failed: string[] = [];
    const agent = new SandboxAgent({
      agentId: 'a',
      nodeName: 'n',
      capacity: 3,
      runtime,
      killGraceMs: 10,
      onDeleteFailed: (id) => failed.push(id),
    });
    expect((await agent.create({ sandboxId: 's', image: 'img', command: ['x'] })).status).toBe(200);
    expect(agent.delete('s').body).toMatchObject({ success: true, message: 'terminating' });
    await new Promise((r) => setTimeout(r, 20));
    expect(failed).toEqual(['s']);
    expect(agent.status().sandboxStatuses).toEqual([
      expect.objectContaining({
        sandboxId: 's',
        phase: 'terminating',
        message: expect.stringMatching(/^delete failed, retried/),
      }),
    ]);
    expect(agent.delete('s').body).toMatchObject({ message: 'terminating' });
    await new Promise((r) => setTimeout(r, 20));
    expect(stops).toEqual(['s', 's']);
    expect(agent.status().sandboxStatuses).toEqual([]);
  });
});

describe('agent delete, between the exit and the release', () => {
  /**
   * A runtime whose sandbox's removal (its container, its network) is held until `release()`;
   * `killOnStop`: the process dies the moment the delete stops it.
   */
  async function agentWithSlowRemoval(killOnStop: boolean) {
    const held: { exited?: (exit: SandboxExit) => void; release?: () => void } = {};
    const runtime = {
      name: 'fake',
      validate: () => undefined,
      start: (_spec: unknown, exited: (exit: SandboxExit) => void) => {
        held.exited = exited;
        return Promise.resolve();
      },
      stop: () => {
        if (killOnStop) held.exited!({ code: null, signal: 'SIGKILL', stopped: true });
        return new Promise<void>((r) => (held.release = r));
      },
      remove: () => undefined,
    } as unknown as SandboxRuntime;
    const agent = new SandboxAgent({ agentId: 'a', nodeName: 'n', capacity: 1, runtime, killGraceMs: 10 });
    expect((await agent.create({ sandboxId: 's', image: 'img', command: ['x'] })).status).toBe(200);
    return { agent, held };
  }
  const tick = () => new Promise((r) => setTimeout(r, 10));

  it('reports the sandbox terminating, never stopped: the kill is the delete, not the sandbox ending', async () => {
    const { agent, held } = await agentWithSlowRemoval(true);
    agent.delete('s');
    await tick();
    expect(held.release).toBeDefined();
    expect(agent.status().sandboxStatuses).toEqual([
      expect.objectContaining({ sandboxId: 's', phase: 'terminating', message: 'stopped by the agent' }),
    ]);
    held.release!();
    await tick();
    expect(agent.status().sandboxStatuses).toEqual([]);
  });

  it('one that ended by itself and is then deleted: terminating until gone, too', async () => {
    const { agent, held } = await agentWithSlowRemoval(false);
    held.exited!({ code: 3, signal: null, stopped: false });
    expect(agent.status().sandboxStatuses).toEqual([expect.objectContaining({ phase: 'failed' })]);
    agent.delete('s');
    await tick();
    expect(agent.status().sandboxStatuses).toEqual([expect.objectContaining({ phase: 'terminating' })]);
    held.release!();
    await tick();
    expect(agent.status().sandboxStatuses).toEqual([]);
  });

  it('a delete with waitMs answers once the sandbox is gone, or when the wait ends with it still terminating', async () => {
    const { agent, held } = await agentWithSlowRemoval(true);
    // Still removing after the wait: answered, not gone, and the removal goes on.
    expect((await agent.deleteAndWait('s', 30)).body).toEqual({ success: true, message: 'terminating', gone: false });
    expect(agent.status().sandboxStatuses).toEqual([expect.objectContaining({ phase: 'terminating' })]);
    // Asked again while it is removed: answered the moment it is gone, long before the wait ends.
    const started = Date.now();
    const answer = agent.deleteAndWait('s', 4000);
    await tick();
    held.release!();
    expect((await answer).body).toEqual({ success: true, message: 'gone', gone: true });
    expect(Date.now() - started).toBeLessThan(2000);
    expect(agent.status().sandboxStatuses).toEqual([]);
    // One the agent does not hold is gone at once.
    expect((await agent.deleteAndWait('s', 4000)).body).toMatchObject({ success: true, gone: true });
  });
});

describe('agent request bodies: the delete', () => {
  it('takes waitMs up to 4 s, and refuses more, naming the field', () => {
    expect(parseDeleteRequest({ sandboxId: 's', waitMs: 3000 })).toEqual({
      ok: true,
      value: { sandboxId: 's', waitMs: 3000 },
    });
    const r = parseDeleteRequest({ sandboxId: 's', waitMs: 60_000 });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.message).toMatch(/^waitMs: /);
  });
});

describe('what a runtime cannot do is refused, never ignored', () => {
  it('an agent whose node cannot run its pool’s runtimeType refuses every create with the reason and reports it', async () => {
    const why = 'runtimeType gvisor needs runsc on the node (--runsc-binary is not set)';
    const runtime = { name: 'containerd', unsupported: why, validate: () => undefined } as unknown as SandboxRuntime;
    const agent = new SandboxAgent({ agentId: 'a', nodeName: 'n', capacity: 3, runtime, killGraceMs: 10 });
    expect(await agent.create({ sandboxId: 's', image: 'img' })).toMatchObject({
      status: 409,
      body: { success: false, reason: 'RuntimeUnsupported', message: why },
    });
    expect(agent.status()).toMatchObject({ allocated: 0, runtimeUnsupported: why });
  });

  it('the process runtime refuses limits and gvisor, which it cannot enforce', () => {
    expect(new ProcessRuntime().validate({ sandboxId: 's', image: 'i', command: ['x'], memory: '64Mi' })).toMatch(
      /cannot be enforced by the process runtime/,
    );
    expect(new ProcessRuntime({ runtimeType: 'gvisor' }).unsupported).toMatch(/isolates nothing/);
    expect(new ProcessRuntime().unsupported).toBeUndefined();
  });
});
