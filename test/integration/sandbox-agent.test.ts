/**
 * The sandbox agent with its process runtime: real HTTP on 127.0.0.1, real child processes.
 * Needs neither Temporal nor the apiserver (it lives with the integration tests because it
 * starts processes). Every test stops its agent, and with it every process it started.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentSandboxSpec, AgentStatusReport } from '../../src/agent/api.js';
import { ProcessRuntime } from '../../src/agent/process-runtime.js';
import type { SandboxExit } from '../../src/agent/runtime.js';
import { startAgentServer, type RunningAgent } from '../../src/agent/server.js';
import { isAlive } from '../../src/infra/process.js';
import { logger } from '../../src/log.js';
import { REPO_ROOT, eventually, uniq } from '../support/env.js';
import { processesInGroups } from '../support/processes.js';

const TOKEN = 'test-token-0123456789';
const quiet = logger.child({ test: 'sandbox-agent' });
quiet.level = process.env.DO_TEST_LOG_LEVEL ?? 'warn';

/** Remembers how every sandbox ended (the agent forgets a deleted one). */
class RecordingRuntime extends ProcessRuntime {
  readonly exits = new Map<string, SandboxExit>();
  readonly pids = new Map<string, number>();
  override async start(spec: AgentSandboxSpec, onExit: (exit: SandboxExit) => void): Promise<void> {
    await super.start(spec, (exit) => {
      this.exits.set(spec.sandboxId, exit);
      onExit(exit);
    });
    this.pids.set(spec.sandboxId, this.status(spec.sandboxId)!.pid!);
  }
}

const agents: { running: RunningAgent; runtime: RecordingRuntime }[] = [];

async function startAgent(opts: { capacity?: number; killGraceMs?: number } = {}) {
  const runtime = new RecordingRuntime();
  const running = await startAgentServer({
    token: TOKEN,
    host: '127.0.0.1',
    port: 0,
    agentId: uniq('agent'),
    nodeName: 'node-a',
    capacity: opts.capacity ?? 5,
    killGraceMs: opts.killGraceMs ?? 500,
    runtime,
    logger: quiet,
    // The agent's routes and runtime over plain HTTP (opted into); TLS: test/unit/agent-tls.test.ts.
    insecurePlainHttp: true,
  });
  const a = { running, runtime };
  agents.push(a);
  return a;
}

afterEach(async () => {
  for (const { running, runtime } of agents.splice(0)) {
    await running.close();
    for (const pid of runtime.pids.values()) expect(processesInGroups([pid])).toEqual([]);
  }
});

interface Reply {
  status: number;
  body: Record<string, unknown> & AgentStatusReport;
}

async function call(
  agent: RunningAgent,
  method: 'GET' | 'POST',
  route: string,
  body?: unknown,
  token: string | null = TOKEN,
): Promise<Reply> {
  const res = await fetch(`${agent.url}${route}`, {
    method,
    headers: {
      ...(token === null ? {} : { authorization: `Bearer ${token}` }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // text (logs)
  }
  return { status: res.status, body: parsed as Reply['body'] };
}

const NODE = process.execPath;
/** A sandbox running `node -e <script>`. */
function nodeSandbox(script: string, extra: Partial<AgentSandboxSpec> = {}): AgentSandboxSpec {
  return { sandboxId: uniq('sb'), claimUid: uniq('uid'), image: 'node:test', command: [NODE, '-e', script], ...extra };
}
const FOREVER = 'setInterval(() => {}, 1000)';

const create = (a: RunningAgent, sandbox: unknown, token?: string) =>
  call(a, 'POST', '/api/v1/agent/create', { sandbox }, token);
const del = (a: RunningAgent, sandboxId: string) => call(a, 'POST', '/api/v1/agent/delete', { sandboxId });
const status = async (a: RunningAgent) => (await call(a, 'GET', '/api/v1/agent/status')).body;
const phaseOf = async (a: RunningAgent, id: string) =>
  (await status(a)).sandboxStatuses.find((s) => s.sandboxId === id);
/** The kept log, as text (never parsed, even when a line is JSON). */
const logsOf = async (a: RunningAgent, id: string) => {
  const res = await fetch(`${a.url}/api/v1/agent/logs?sandboxId=${id}`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  return res.text();
};

describe('sandbox agent: HTTP API', () => {
  it('refuses every route without the right bearer token (401); /healthz is open', async () => {
    const { running: a } = await startAgent();
    for (const token of [null, 'wrong-token', '']) {
      expect((await call(a, 'GET', '/api/v1/agent/status', undefined, token)).status).toBe(401);
      expect((await create(a, nodeSandbox(FOREVER), token as string)).status).toBe(401);
      expect((await call(a, 'POST', '/api/v1/agent/delete', { sandboxId: 'x' }, token)).status).toBe(401);
      expect((await call(a, 'GET', '/api/v1/agent/logs?sandboxId=x', undefined, token)).status).toBe(401);
    }
    const r = await call(a, 'GET', '/api/v1/agent/status', undefined, 'wrong-token');
    expect(r.body.message).toBe('wrong agent token');
    expect((await call(a, 'GET', '/api/v1/agent/status', undefined, null)).body.message).toBe('missing bearer token');
    expect(await (await fetch(`${a.url}/healthz`)).text()).toBe('ok');
    expect((await status(a)).allocated).toBe(0); // nothing was created by the refused calls
  });

  it('reports the original status fields', async () => {
    const { running: a } = await startAgent({ capacity: 3 });
    const sb = nodeSandbox(FOREVER);
    expect((await create(a, sb)).status).toBe(200);
    const s = await status(a);
    // The original's fields, and the extensions `draining` (the pool's scale-down, false until
    // drained), `runtime` (what runs the sandboxes: here the process runtime, not isolated) and
    // `bootId` (new at every start of the agent: a restart that took its sandboxes is told apart).
    expect(Object.keys(s).sort()).toEqual(
      [
        'agentId',
        'allocated',
        'bootId',
        'capacity',
        'draining',
        'images',
        'nodeName',
        'runtime',
        'sandboxStatuses',
      ].sort(),
    );
    expect((s as { bootId?: string }).bootId).toMatch(/^[0-9a-f-]{36}$/);
    expect(s).toMatchObject({
      nodeName: 'node-a',
      capacity: 3,
      allocated: 1,
      images: ['node:test'],
      draining: false,
      runtime: 'process',
    });
    expect(s.sandboxStatuses).toEqual([
      {
        sandboxId: sb.sandboxId,
        claimUid: sb.claimUid,
        claimName: '',
        exposedPorts: [],
        phase: 'running',
        message: '',
        createdAt: expect.any(Number),
      },
    ]);
  });

  it('create is idempotent by sandboxId: a replay returns the same sandbox and its real createdAt', async () => {
    const { running: a, runtime } = await startAgent();
    const sb = nodeSandbox(FOREVER);
    const first = await create(a, sb);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ success: true, sandboxId: sb.sandboxId });
    const createdAt = first.body.createdAt as number;
    expect(createdAt).toBeGreaterThan(1_700_000_000);
    const pid = runtime.pids.get(sb.sandboxId);
    // Replays in the same second and after it keep the first stamp and the first process.
    const replays = await Promise.all([create(a, sb), create(a, { ...sb, env: {} })]);
    await eventually('a new second', async () => Math.floor(Date.now() / 1000) > createdAt);
    replays.push(await create(a, sb));
    for (const r of replays) {
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ success: true, sandboxId: sb.sandboxId, createdAt });
    }
    expect(runtime.pids.get(sb.sandboxId)).toBe(pid);
    expect((await status(a)).allocated).toBe(1);
    expect((await phaseOf(a, sb.sandboxId))?.createdAt).toBe(createdAt);
    // The same id with another spec is refused, not silently answered with the old one.
    const other = await create(a, { ...sb, image: 'other:1' });
    expect(other.status).toBe(409);
    expect(other.body).toMatchObject({ success: false, reason: 'SandboxIdConflict' });
  });

  it('bad input → 400 with a specific message; nothing is created', async () => {
    const { running: a } = await startAgent();
    const ok = nodeSandbox(FOREVER);
    const cases: [unknown, RegExp][] = [
      [{ ...ok, sandboxId: undefined }, /^sandbox\.sandboxId is required$/],
      [{ ...ok, image: '' }, /^sandbox\.image is required$/],
      [{ ...ok, exposedPorts: [0] }, /exposedPorts: 0 is not a port/],
      [{ ...ok, exposedPorts: [70000] }, /exposedPorts: 70000 is not a port/],
      [{ ...ok, exposedPorts: ['80'] }, /exposedPorts: "80" is not a port/],
      [{ ...ok, exposedPorts: [8080, 8080] }, /port 8080 is listed twice/],
      [{ ...ok, command: [] }, /sandbox\.command is required by the process runtime/],
      [{ ...ok, env: { A: 1 } }, /^sandbox\.env\.A: /],
    ];
    for (const [sandbox, message] of cases) {
      const r = await create(a, sandbox);
      expect(r.status, JSON.stringify(sandbox)).toBe(400);
      expect(r.body.message).toMatch(message);
    }
    const notJson = await call(a, 'POST', '/api/v1/agent/create', '{"sandbox":');
    expect(notJson.status).toBe(400);
    expect(notJson.body.message).toMatch(/^body is not JSON/);
    expect((await call(a, 'POST', '/api/v1/agent/create', { sb: {} })).body.message).toBe(
      'sandbox is required (an object)',
    );
    const noId = await call(a, 'POST', '/api/v1/agent/delete', {});
    expect(noId).toMatchObject({ status: 400, body: { message: 'sandboxId is required' } });
    const noLogId = await call(a, 'GET', '/api/v1/agent/logs');
    expect(noLogId).toMatchObject({ status: 400, body: { message: 'sandboxId is required (query parameter)' } });
    expect(await call(a, 'GET', '/api/v1/agent/nope')).toMatchObject({
      status: 404,
      body: { success: false, message: 'no route GET /api/v1/agent/nope' },
    });
    expect(await call(a, 'GET', '/api/v1/agent/create')).toMatchObject({
      status: 405,
      body: { message: 'GET is not allowed on /api/v1/agent/create' },
    });
    // Bodies are JSON whatever their content type says, and none at all is named as such.
    const raw = (body?: string, type?: string) =>
      fetch(`${a.url}/api/v1/agent/delete`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, ...(type ? { 'content-type': type } : {}) },
        body,
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as { message?: string } }));
    expect(await raw()).toEqual({
      status: 400,
      body: { success: false, message: 'body is empty; a JSON object is required' },
    });
    expect(await raw('{"sandboxId":"none"}', 'text/plain')).toMatchObject({ status: 200, body: { success: true } });
    expect(await raw(`{"sandboxId":"${'x'.repeat(1024 * 1024)}"}`)).toEqual({
      status: 413,
      body: { success: false, message: 'body over 1048576 bytes' },
    });
    expect((await status(a)).allocated).toBe(0);
  });

  it('delete of an unknown sandbox succeeds (and the agent carries on)', async () => {
    const { running: a } = await startAgent();
    for (let i = 0; i < 2; i++) {
      const r = await del(a, 'never-existed');
      expect(r).toMatchObject({ status: 200, body: { success: true } });
    }
    expect((await status(a)).allocated).toBe(0);
    expect((await call(a, 'GET', '/api/v1/agent/logs?sandboxId=never-existed')).status).toBe(404);
  });
});

describe('sandbox agent: capacity and ports (the agent is the authority)', () => {
  it('refuses a create beyond capacity (409 CapacityExceeded) until a slot is freed', async () => {
    const { running: a } = await startAgent({ capacity: 2 });
    const [s1, s2, s3] = [nodeSandbox(FOREVER), nodeSandbox(FOREVER), nodeSandbox(FOREVER)];
    expect((await create(a, s1)).status).toBe(200);
    expect((await create(a, s2)).status).toBe(200);
    const full = await create(a, s3);
    expect(full.status).toBe(409);
    expect(full.body).toMatchObject({ success: false, reason: 'CapacityExceeded' });
    expect(full.body.message).toMatch(/is full: 2 of 2 sandboxes/);
    expect((await del(a, s1.sandboxId)).status).toBe(200);
    await eventually('s1 gone', async () => !(await phaseOf(a, s1.sandboxId)));
    expect((await create(a, s3)).status).toBe(200);
    expect((await status(a)).allocated).toBe(2);
  });

  it('N concurrent creates against capacity C: exactly C succeed, the rest get 409', async () => {
    const { running: a } = await startAgent({ capacity: 3 });
    const results = await Promise.all(Array.from({ length: 12 }, () => create(a, nodeSandbox(FOREVER))));
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 409);
    expect(ok).toHaveLength(3);
    expect(refused).toHaveLength(9);
    for (const r of refused) expect(r.body.reason).toBe('CapacityExceeded');
    const s = await status(a);
    expect(s.allocated).toBe(3);
    expect(s.sandboxStatuses.map((x) => x.sandboxId).sort()).toEqual(ok.map((r) => r.body.sandboxId).sort());
  });

  it('refuses an exposed port another sandbox on the agent holds (409 PortInUse), also concurrently', async () => {
    const { running: a } = await startAgent({ capacity: 10 });
    const s1 = nodeSandbox(FOREVER, { exposedPorts: [18080, 18081] });
    expect((await create(a, s1)).status).toBe(200);
    const clash = await create(a, nodeSandbox(FOREVER, { exposedPorts: [18090, 18081] }));
    expect(clash.status).toBe(409);
    expect(clash.body).toMatchObject({ success: false, reason: 'PortInUse' });
    expect(clash.body.message).toMatch(new RegExp(`port 18081 is already used by sandbox ${s1.sandboxId}`));
    const racing = await Promise.all(
      Array.from({ length: 5 }, () => create(a, nodeSandbox(FOREVER, { exposedPorts: [19000] }))),
    );
    expect(racing.filter((r) => r.status === 200)).toHaveLength(1);
    expect(racing.filter((r) => r.status === 409 && r.body.reason === 'PortInUse')).toHaveLength(4);
    // The sandbox gets its ports in its environment.
    const withEnv = nodeSandbox('console.log("ports=" + process.env.SANDBOX_PORTS); ' + FOREVER, {
      exposedPorts: [18100, 18101],
    });
    expect((await create(a, withEnv)).status).toBe(200);
    await eventually('ports in the log', async () =>
      (await logsOf(a, withEnv.sandboxId)).includes('ports=18100,18101'),
    );
    // Freed once the holder is deleted and gone.
    await del(a, s1.sandboxId);
    await eventually('s1 gone', async () => !(await phaseOf(a, s1.sandboxId)));
    expect((await create(a, nodeSandbox(FOREVER, { exposedPorts: [18081] }))).status).toBe(200);
  });
});

describe('sandbox agent: process runtime', () => {
  it('delete: SIGTERM, then SIGKILL after the grace period for a process that ignores SIGTERM', async () => {
    const { running: a, runtime } = await startAgent({ killGraceMs: 300 });
    const stubborn = nodeSandbox(
      `process.on('SIGTERM', () => console.log('ignoring SIGTERM')); console.log('ready'); ${FOREVER}`,
    );
    const polite = nodeSandbox(
      `process.on('SIGTERM', () => { console.log('bye'); process.exit(0); }); console.log('ready'); ${FOREVER}`,
    );
    for (const sb of [stubborn, polite]) {
      expect((await create(a, sb)).status).toBe(200);
      await eventually(`${sb.sandboxId} ready`, async () => (await logsOf(a, sb.sandboxId)).includes('ready'));
    }
    for (const sb of [stubborn, polite]) expect((await del(a, sb.sandboxId)).body).toMatchObject({ success: true });
    // A second delete while it terminates is a success too.
    expect((await del(a, stubborn.sandboxId)).body).toMatchObject({ success: true });
    for (const sb of [stubborn, polite])
      await eventually(`${sb.sandboxId} gone`, async () => !(await phaseOf(a, sb.sandboxId)));
    expect(runtime.exits.get(stubborn.sandboxId)).toEqual({ code: null, signal: 'SIGKILL', stopped: true });
    expect(runtime.exits.get(polite.sandboxId)).toEqual({ code: 0, signal: null, stopped: true });
    for (const sb of [stubborn, polite]) expect(isAlive(runtime.pids.get(sb.sandboxId)!)).toBe(false);
    expect((await status(a)).allocated).toBe(0);
  });

  it('delete with waitMs: answered once the sandbox is gone (gone: true), or when the wait ends first (gone: false)', async () => {
    const { running: a } = await startAgent({ killGraceMs: 1000 });
    const stubborn = nodeSandbox(`process.on('SIGTERM', () => {}); console.log('ready'); ${FOREVER}`);
    const polite = nodeSandbox(`console.log('ready'); ${FOREVER}`);
    for (const sb of [stubborn, polite]) {
      expect((await create(a, sb)).status).toBe(200);
      await eventually(`${sb.sandboxId} ready`, async () => (await logsOf(a, sb.sandboxId)).includes('ready'));
    }
    const waiting = (sandboxId: string, waitMs: number) =>
      call(a, 'POST', '/api/v1/agent/delete', { sandboxId, waitMs });
    // Ignores SIGTERM: still terminating when a 100 ms wait ends (its SIGKILL comes after 1 s).
    expect((await waiting(stubborn.sandboxId, 100)).body).toEqual({
      success: true,
      message: 'terminating',
      gone: false,
    });
    expect(await phaseOf(a, stubborn.sandboxId)).toMatchObject({ phase: 'terminating' });
    // Asked again with a longer wait: the answer comes when it is gone, and the status agrees.
    expect((await waiting(stubborn.sandboxId, 4000)).body).toMatchObject({ success: true, gone: true });
    expect(await phaseOf(a, stubborn.sandboxId)).toBeUndefined();
    expect((await waiting(polite.sandboxId, 4000)).body).toEqual({ success: true, message: 'gone', gone: true });
    expect(await phaseOf(a, polite.sandboxId)).toBeUndefined();
    expect((await waiting(polite.sandboxId, 60_000)).status).toBe(400);
  });

  it('records exits as phases: exit 0 → stopped, non-zero or a signal → failed with the reason', async () => {
    const { running: a } = await startAgent();
    const cases: [string, string, string][] = [
      ['process.exit(0)', 'stopped', 'exited with code 0'],
      ['process.exit(3)', 'failed', 'exited with code 3'],
      ["process.kill(process.pid, 'SIGKILL')", 'failed', 'killed by signal SIGKILL'],
    ];
    const ids: string[] = [];
    for (const [script, phase, message] of cases) {
      const sb = nodeSandbox(script);
      ids.push(sb.sandboxId);
      expect((await create(a, sb)).status).toBe(200);
      const got = await eventually(`${phase} for ${script}`, async () => {
        const s = await phaseOf(a, sb.sandboxId);
        return s && s.phase !== 'running' && s.phase !== 'creating' ? s : undefined;
      });
      expect(got).toMatchObject({ phase, message });
    }
    // An exited sandbox keeps its slot until deleted.
    expect((await status(a)).allocated).toBe(3);
    for (const id of ids) await del(a, id);
    await eventually('all released', async () => (await status(a)).allocated === 0);
    // A command that cannot start: 500, nothing held.
    const broken = await create(a, { ...nodeSandbox(''), command: ['/nonexistent/sandbox-binary'] });
    expect(broken.status).toBe(500);
    expect(broken.body.message).toMatch(/cannot start \/nonexistent\/sandbox-binary: .*ENOENT/);
    expect((await status(a)).allocated).toBe(0);
    // One the OS call refuses outright (a NUL byte): 500 too, the slot not leaked.
    const nul = await create(a, { ...nodeSandbox(''), command: ['node\u0000x'] });
    expect(nul.status).toBe(500);
    expect((await status(a)).allocated).toBe(0);
  });

  it('runs with the spec env and workingDir, not the agent environment', async () => {
    const { running: a } = await startAgent();
    const dir = await mkdtemp(path.join(tmpdir(), 'agent-wd-'));
    try {
      process.env.DO_AGENT_TOKEN_LEAK_CHECK = 'secret';
      const sb = nodeSandbox(
        'console.log(JSON.stringify({cwd: process.cwd(), greeting: process.env.GREETING, id: process.env.SANDBOX_ID, leak: process.env.DO_AGENT_TOKEN_LEAK_CHECK ?? null}))',
        { env: { GREETING: 'hi' }, workingDir: dir, args: [] },
      );
      expect((await create(a, sb)).status).toBe(200);
      const line = await eventually('output', async () => (await logsOf(a, sb.sandboxId)).trim() || undefined);
      expect(JSON.parse(line)).toEqual({ cwd: dir, greeting: 'hi', id: sb.sandboxId, leak: null });
    } finally {
      delete process.env.DO_AGENT_TOKEN_LEAK_CHECK;
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('logs: the kept output, and follow streams until the process exits', async () => {
    const { running: a } = await startAgent();
    const sb = nodeSandbox(
      "let i = 0; const t = setInterval(() => { console.log('line ' + i); console.error('err ' + i); if (++i === 5) clearInterval(t); }, 150)",
    );
    expect((await create(a, sb)).status).toBe(200);
    const res = await fetch(`${a.url}/api/v1/agent/logs?sandboxId=${sb.sandboxId}&follow=true`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const streamed = await res.text(); // ends when the process exits
    for (let i = 0; i < 5; i++) {
      expect(streamed).toContain(`line ${i}\n`);
      expect(streamed).toContain(`err ${i}\n`);
    }
    expect((await phaseOf(a, sb.sandboxId))?.phase).toBe('stopped');
    const kept = await logsOf(a, sb.sandboxId);
    expect(kept).toContain('line 4\n');
    // follow on an exited sandbox: what is kept, then the end.
    const again = await fetch(`${a.url}/api/v1/agent/logs?sandboxId=${sb.sandboxId}&follow=1`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(await again.text()).toBe(kept);
  });

  it('logs: a follower that goes away is let go; the sandbox and the agent carry on', async () => {
    const { running: a } = await startAgent();
    const sb = nodeSandbox("setInterval(() => console.log('tick'), 100)");
    expect((await create(a, sb)).status).toBe(200);
    const ctl = new AbortController();
    const res = await fetch(`${a.url}/api/v1/agent/logs?sandboxId=${sb.sandboxId}&follow=true`, {
      headers: { authorization: `Bearer ${TOKEN}` },
      signal: ctl.signal,
    });
    const reader = res.body!.getReader();
    let seen = '';
    while (!seen.includes('tick')) seen += new TextDecoder().decode((await reader.read()).value);
    ctl.abort();
    await reader.read().catch(() => undefined);
    await eventually('more ticks after the follower left', async () => {
      const n = (await logsOf(a, sb.sandboxId)).split('tick').length;
      return n > seen.split('tick').length + 2;
    });
    expect((await phaseOf(a, sb.sandboxId))?.phase).toBe('running');
  });

  it('exec: stdin (base64) reaches the command, then EOF; none is EOF at once; more than 1 MiB is a 400, not cut', async () => {
    const { running: a } = await startAgent();
    const sb = nodeSandbox(FOREVER);
    expect((await create(a, sb)).status).toBe(200);
    /** One exec: its stdout, stderr and exit code, from the NDJSON answer. */
    const exec = async (body: Record<string, unknown>) => {
      const res = await fetch(`${a.url}/api/v1/agent/exec`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ sandboxId: sb.sandboxId, ...body }),
        signal: AbortSignal.timeout(20_000), // a command left waiting for EOF fails here, not by hanging
      });
      if (res.status !== 200) return { status: res.status, ...((await res.json()) as { message: string }) };
      const out = { status: 200, stdout: '', stderr: '', exitCode: undefined as unknown };
      for (const l of (await res.text()).trim().split('\n')) {
        const o = JSON.parse(l) as { stdout?: string; stderr?: string; exitCode?: number };
        if (o.stdout) out.stdout += Buffer.from(o.stdout, 'base64').toString();
        if (o.stderr) out.stderr += Buffer.from(o.stderr, 'base64').toString();
        if ('exitCode' in o) out.exitCode = o.exitCode;
      }
      return out;
    };
    const cat = ['sh', '-c', 'cat; echo done >&2; exit 3'];
    expect(await exec({ command: cat, stdin: Buffer.from('hello\n').toString('base64') })).toEqual({
      status: 200,
      stdout: 'hello\n',
      stderr: 'done\n',
      exitCode: 3,
    });
    expect(await exec({ command: cat })).toEqual({ status: 200, stdout: '', stderr: 'done\n', exitCode: 3 });
    // Larger than a pipe's buffer: written as the command reads it, all of it, then EOF.
    const big = Buffer.alloc(1024 * 1024, 'abcdefgh');
    expect(await exec({ command: ['wc', '-c'], stdin: big.toString('base64') })).toMatchObject({
      stdout: expect.stringMatching(/^\s*1048576\n$/),
      exitCode: 0,
    });
    // Input the command does not read is dropped with it, as in a pipeline.
    expect(await exec({ command: ['true'], stdin: big.toString('base64') })).toMatchObject({ exitCode: 0 });
    const over = await exec({
      command: ['wc', '-c'],
      stdin: Buffer.concat([big, Buffer.from('!')]).toString('base64'),
    });
    expect(over).toEqual({
      status: 400,
      success: false,
      message: 'stdin is 1048577 bytes; at most 1048576 are accepted',
    });
    // Far more than fits the body: refused while it is read, and the refusal says why.
    expect(await exec({ command: ['wc', '-c'], stdin: Buffer.alloc(3 * 1024 * 1024).toString('base64') })).toEqual({
      status: 413,
      success: false,
      message: `body over ${1024 * 1024 + Math.ceil((1024 * 1024) / 3) * 4} bytes: stdin is at most 1048576 bytes`,
    });
    expect(await exec({ command: ['wc', '-c'], stdin: 'not base64!' })).toMatchObject({
      status: 400,
      message: 'stdin is not base64 (standard alphabet, padded)',
    });
  });

  it('a command that daemonizes a child (setsid) still ends its sandbox when it exits, and the delete completes', async () => {
    const { running: a } = await startAgent({ killGraceMs: 300 });
    // A duration nothing else on the machine sleeps: how the test finds the daemon it must reap.
    const seconds = `${900 + Math.floor(Math.random() * 1e6) / 1e3}`;
    const sb = { sandboxId: uniq('sb'), image: 'sh', command: ['sh', '-c', `setsid sleep ${seconds} & echo started`] };
    try {
      expect((await create(a, sb)).status).toBe(200);
      // The daemon left the group and holds the output pipes; the sandbox ends with its command anyway.
      const ended = await eventually('the sandbox ended with its command', async () => {
        const p = await phaseOf(a, sb.sandboxId);
        return p && p.phase !== 'running' ? p : undefined;
      });
      expect(ended).toMatchObject({ phase: 'stopped' });
      expect(await logsOf(a, sb.sandboxId)).toBe('started\n');
      expect((await del(a, sb.sandboxId)).status).toBe(200);
      await eventually('the sandbox gone', async () => !(await phaseOf(a, sb.sandboxId)));
    } finally {
      for (const pid of await processesWith(seconds)) process.kill(pid, 'SIGKILL');
    }
  });

  it('stopping the agent stops every process group (also children and SIGTERM-ignorers)', async () => {
    const { running: a, runtime } = await startAgent({ killGraceMs: 300 });
    const sbs = [
      nodeSandbox(FOREVER),
      nodeSandbox(`process.on('SIGTERM', () => {}); console.log('ready'); ${FOREVER}`),
      { sandboxId: uniq('sb'), image: 'sh', command: ['sh', '-c', 'sleep 300 & sleep 300 & wait'] },
    ];
    for (const sb of sbs) expect((await create(a, sb)).status).toBe(200);
    await eventually('ignorer ready', async () => (await logsOf(a, sbs[1]!.sandboxId)).includes('ready'));
    const shGroup = runtime.pids.get(sbs[2]!.sandboxId)!;
    await eventually('sh started its sleeps', async () => processesInGroups([shGroup]).length >= 3);
    const pids = [...runtime.pids.values()];
    await a.close();
    agents.splice(0);
    for (const pid of pids) {
      expect(isAlive(pid)).toBe(false);
      expect(processesInGroups([pid])).toEqual([]);
    }
    // Closed: no more requests.
    await expect(fetch(`${a.url}/healthz`)).rejects.toThrow();
  });
});

describe('sandbox agent: the CLI role', () => {
  it('reads the token from a file, never logs it, and leaves no process behind on SIGTERM', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'agent-cli-'));
    const tokenFile = path.join(dir, 'token');
    const token = `file-token-${uniq('t')}`;
    await writeFile(tokenFile, `${token}\n`);
    const marker = uniq('marker');
    const child = spawn(
      process.execPath,
      [
        ...['--import', 'tsx', path.join(REPO_ROOT, 'src/cli/main.ts'), 'agent'],
        ...[
          '--port',
          '0',
          '--host',
          '127.0.0.1',
          '--runtime',
          'process',
          '--allow-unisolated',
          '--insecure-plain-http',
        ],
      ],
      {
        cwd: REPO_ROOT,
        env: {
          ...process.env,
          DO_AGENT_TOKEN_FILE: tokenFile,
          DO_AGENT_TOKEN: 'not-this-one',
          DO_AGENT_KILL_GRACE_MS: '300',
          AGENT_CAPACITY: '2',
          POD_NAME: 'agent-pod-0',
          NODE_NAME: 'node-0',
          DO_LOG_LEVEL: 'debug',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const port = await eventually(
        'agent listening',
        async () => {
          if (child.exitCode !== null) throw new Error(`agent exited: ${out}`);
          const m = /"port":(\d+).*sandbox agent listening/.exec(out);
          return m ? Number(m[1]) : undefined;
        },
        { timeoutMs: 60_000 },
      );
      const url = `http://127.0.0.1:${port}`;
      const auth = (t: string) => ({ authorization: `Bearer ${t}`, 'content-type': 'application/json' });
      expect((await fetch(`${url}/api/v1/agent/status`, { headers: auth('not-this-one') })).status).toBe(401);
      const st = (await (
        await fetch(`${url}/api/v1/agent/status`, { headers: auth(token) })
      ).json()) as AgentStatusReport;
      expect(st).toMatchObject({ agentId: 'agent-pod-0', nodeName: 'node-0', capacity: 2, allocated: 0 });
      const sandbox = nodeSandbox(`process.on('SIGTERM', () => {}); ${FOREVER}`, { args: [marker] });
      const r = await fetch(`${url}/api/v1/agent/create`, {
        method: 'POST',
        headers: auth(token),
        body: JSON.stringify({ sandbox }),
      });
      expect(r.status).toBe(200);
      const pids = await eventually('the sandbox process', async () => {
        const found = await processesWith(marker);
        return found.length ? found : undefined;
      });
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      for (const pid of pids) expect(processesInGroups([pid])).toEqual([]);
      expect(await processesWith(marker)).toEqual([]);
      expect(out).not.toContain(token);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/** Live processes whose command line contains `marker`. */
async function processesWith(marker: string): Promise<number[]> {
  const out: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const cmd = await readFile(`/proc/${name}/cmdline`, 'utf8');
      if (cmd.includes(marker) && isAlive(Number(name))) out.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}
