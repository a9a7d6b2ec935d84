/**
 * sandbox-init as PID 1 of every containerd sandbox — cold and warm, runc and gVisor — with real
 * agent processes against the stack's containerd: orphans (of the sandbox's process and of
 * `exec`, which re-parent to PID 1) are reaped, so they neither stay zombies nor hold the pids
 * limit; a delete's SIGTERM reaches the sandbox's process; the exit reported is the process's.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxStatusReport } from '../../src/agent/api.js';
import { ContainerdClient } from '../../src/agent/containerd/client.js';
import { INIT_PATH, LABEL } from '../../src/agent/containerd/runtime.js';
import { AgentClient, type AgentExecEvent } from '../../src/fastpath/agent-client.js';
import { ManagedProcess, getFreePort } from '../../src/infra/process.js';
import { REPO_ROOT, eventually, stackInfo, uniq } from '../support/env.js';

const passes = (check: () => Promise<unknown>, timeoutMs = 60_000) =>
  eventually('the expectation', async () => (await check(), true), { timeoutMs });

const TOKEN = `token-${randomBytes(8).toString('hex')}`;
const stack = stackInfo();
const ctd = stack.containerd!;
const busybox = stack.registry!.images.busybox;
const stateDir = path.join(stack.stateDir, 'sandbox-init');
const tokenFile = path.join(stateDir, 'agent-token');
const agents = new AgentClient(TOKEN, { insecurePlainHttp: true });
let client: ContainerdClient;

/** An agent process on the stack's containerd (grace 3 s between a delete's SIGTERM and SIGKILL). */
class Agent {
  proc!: ManagedProcess;
  url = '';
  constructor(readonly extra: string[]) {}
  async start(): Promise<this> {
    const port = await getFreePort();
    const name = uniq('agent');
    this.url = `http://127.0.0.1:${port}`;
    this.proc = ManagedProcess.start({
      name,
      command: process.execPath,
      args: [
        ...['--import', 'tsx', path.join(REPO_ROOT, 'src/cli/main.ts'), 'agent'],
        ...['--host', '127.0.0.1', '--port', String(port), '--agent-id', name, '--capacity', '8'],
        ...['--token-file', tokenFile, '--kill-grace', '3000', '--insecure-plain-http'],
        ...['--runtime', 'containerd', '--containerd-socket', ctd.socket, '--containerd-namespace', ctd.namespace],
        ...['--io-dir', path.join(stateDir, 'io'), '--runtime-root', ctd.runcRoot],
        ...['--init-binary', ctd.initBinary],
        ...this.extra,
      ],
      cwd: REPO_ROOT,
      logFile: path.join(stateDir, `${name}.log`),
      env: process.env,
    });
    await passes(async () => expect((await fetch(`${this.url}/healthz`)).ok).toBe(true));
    return this;
  }
  async create(sandbox: Record<string, unknown>): Promise<string> {
    const sandboxId = uniq('sb');
    expect(await agents.create(this.url, { sandboxId, ...sandbox } as never)).toMatchObject({ status: 'ok' });
    return sandboxId;
  }
  async sandbox(id: string): Promise<SandboxStatusReport | undefined> {
    return (await agents.status(this.url)).sandboxStatuses.find((s) => s.sandboxId === id);
  }
  async exec(id: string, script: string): Promise<{ out: string; code: number | null }> {
    let out = '';
    let code: number | null = null;
    const events = agents.exec(this.url, id, ['sh', '-c', script], AbortSignal.timeout(30_000));
    for await (const ev of events as AsyncIterable<AgentExecEvent>) {
      if ('stdout' in ev) out += ev.stdout.toString();
      else if ('stderr' in ev) out += ev.stderr.toString();
      else code = ev.exitCode;
    }
    return { out, code };
  }
  async logs(id: string): Promise<string> {
    const res = await fetch(`${this.url}/api/v1/agent/logs?sandboxId=${id}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    return res.text();
  }
  /**
   * Deletes the sandbox; what its container exited with (containerd's status: the code, 128+n
   * for signal n) and its whole log, followed until its end.
   */
  async deleteWatched(id: string): Promise<{ status: number; log: string }> {
    const [container] = await client.listContainers([`labels."${LABEL.id}"==${id}`]);
    const exited = client.wait(container!.id, '', AbortSignal.timeout(60_000));
    exited.catch(() => undefined); // awaited below; a failure before that must not go unhandled
    // Its answer starts with the first output (the sandbox must have written some), so it is
    // being served before the delete removes the sandbox.
    const following = await fetch(`${this.url}/api/v1/agent/logs?sandboxId=${id}&follow=true`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    await agents.delete(this.url, id);
    const [status, log] = await Promise.all([exited, following.text()]);
    await passes(async () => expect(await this.sandbox(id)).toBeUndefined(), 30_000);
    return { status, log };
  }
  async stop(): Promise<void> {
    await this.proc?.stop(30_000);
  }
}

/** The states (R, S, Z…) of every process in the sandbox, from its own /proc. */
async function processStates(a: Agent, id: string): Promise<string[]> {
  const { out } = await a.exec(id, 'cat /proc/[0-9]*/stat 2>/dev/null');
  return [...out.matchAll(/^\d+ \(.*\) (\S) /gm)].map((m) => m[1]!);
}

/** A shell whose TERM trap says so and exits 3. */
const TRAP = ['sh', '-c', `trap 'echo got-term; exit 3' TERM; echo ready; while true; do sleep 0.1; done`];
/** `sleep`, which installs no handler, after a line of output. */
const PLAIN = ['sh', '-c', 'echo ready; exec sleep 3600'];

/**
 * 20 orphans of an exec (`sleep 1 &` in a shell that exits at once) re-parent to the sandbox's
 * PID 1; two seconds later, when they have all ended, none may be left as a zombie.
 */
async function orphansOfExecAreReaped(a: Agent, id: string): Promise<void> {
  expect(await a.exec(id, 'for i in $(seq 20); do sleep 1 & done; echo started')).toMatchObject({
    out: 'started\n',
    code: 0,
  });
  await new Promise((r) => setTimeout(r, 2000));
  const states = await processStates(a, id);
  expect(states.length).toBeGreaterThan(0);
  expect(states.filter((s) => s === 'Z')).toEqual([]);
}

beforeAll(async () => {
  await mkdir(stateDir, { recursive: true });
  await writeFile(tokenFile, TOKEN, { mode: 0o600 });
  client = new ContainerdClient(ctd.socket, ctd.namespace);
});

afterAll(() => client?.close());

describe('runc, cold containers', () => {
  let agent: Agent;
  beforeAll(async () => {
    agent = await new Agent(['--default-pids', '64']).start();
  });
  afterAll(() => agent?.stop());

  it("sandbox-init is PID 1 and the sandbox's command its child; 20 orphans of an exec leave no zombie", async () => {
    const id = await agent.create({ image: busybox, command: ['sleep', '3600'] });
    await orphansOfExecAreReaped(agent, id);
    const ps = await agent.exec(id, 'ps -o pid,ppid,args');
    expect(ps.out).toMatch(new RegExp(`^\\s*1\\s+0\\s+${INIT_PATH} -- sleep 3600$`, 'm'));
    expect(ps.out).toMatch(/^\s*\d+\s+1\s+sleep 3600$/m);
    await agents.delete(agent.url, id);
  });

  it('after a fork burst whose children all end, the sandbox forks again (pids limit 64)', async () => {
    const id = await agent.create({ image: busybox, command: ['sleep', '3600'] });
    // 40 orphans that end within a second: reaped, they give their pids back.
    expect((await agent.exec(id, 'for i in $(seq 40); do sleep 1 & done; echo burst')).out).toBe('burst\n');
    // Gone from /proc once ended and reaped (a zombie still has its entry): waited for, not slept
    // on, as a loaded machine may run the sleeps late.
    await eventually('the burst ended and reaped', async () => (await processStates(agent, id)).length < 8);
    // 40 more at once: with the first 40 still held as zombies this would pass the limit of 64.
    expect(await agent.exec(id, 'for i in $(seq 40); do sleep 0 & done; wait; echo forked')).toEqual({
      out: 'forked\n',
      code: 0,
    });
    await agents.delete(agent.url, id);
  });

  it("a delete's SIGTERM reaches the process: its TERM trap runs; a process without one ends by SIGTERM, not SIGKILL after the grace", async () => {
    const trapped = await agent.create({ image: busybox, command: TRAP });
    const plain = await agent.create({ image: busybox, command: PLAIN });
    await passes(async () => expect(await agent.logs(trapped)).toBe('ready\n'));
    await passes(async () => expect(await agent.logs(plain)).toBe('ready\n'));
    const [t, p] = await Promise.all([agent.deleteWatched(trapped), agent.deleteWatched(plain)]);
    expect(t).toEqual({ status: 3, log: 'ready\ngot-term\n' });
    // As PID 1 itself, `sleep` (no handler) was immune to SIGTERM: it lived until the SIGKILL (137).
    expect(p).toEqual({ status: 128 + 15, log: 'ready\n' });
  });

  it("the exit reported is the process's: its code, or the signal that ended it; a command the image lacks is refused", async () => {
    const coded = await agent.create({ image: busybox, command: ['sh', '-c', 'sleep 0.5; exit 7'] });
    const killed = await agent.create({ image: busybox, command: ['sh', '-c', 'sleep 0.5; kill -KILL $$'] });
    await passes(async () => {
      expect(await agent.sandbox(coded)).toMatchObject({ phase: 'failed', message: 'exited with code 7' });
      expect(await agent.sandbox(killed)).toMatchObject({ phase: 'failed', message: 'killed by signal SIGKILL' });
    });
    const sandboxId = uniq('sb');
    expect(await agents.create(agent.url, { sandboxId, image: busybox, command: ['no-such-command'] })).toMatchObject({
      status: 'refused',
      httpStatus: 400,
      message: expect.stringContaining('no-such-command'),
    });
    expect(await client.listContainers([`labels."${LABEL.id}"==${sandboxId}`])).toEqual([]);
    await Promise.all([agents.delete(agent.url, coded), agents.delete(agent.url, killed)]);
  });
});

describe('runc, warm containers', () => {
  let agent: Agent;
  const warmOne = () => passes(async () => expect((await agents.status(agent.url)).warm).toEqual({ [busybox]: 1 }));
  beforeAll(async () => {
    agent = await new Agent(['--default-pids', '64', '--warm-images', `${busybox}=1`]).start();
  });
  afterAll(() => agent?.stop());

  it("a warm sandbox's process is sandbox-init's child; orphans are reaped; a delete's SIGTERM reaches it", async () => {
    await warmOne();
    const plain = await agent.create({ image: busybox, command: PLAIN });
    const [container] = await client.listContainers([`labels."${LABEL.id}"==${plain}`]);
    expect(container!.id).toMatch(/^warm-/);
    await passes(async () => expect(await agent.logs(plain)).toBe('ready\n'));
    await orphansOfExecAreReaped(agent, plain);
    const ps = await agent.exec(plain, 'ps -o pid,ppid,args');
    expect(ps.out).toMatch(new RegExp(`^\\s*1\\s+0\\s+${INIT_PATH}$`, 'm'));
    expect(ps.out).toMatch(/^\s*\d+\s+1\s+sleep 3600$/m);
    await warmOne();
    const trapped = await agent.create({ image: busybox, command: TRAP });
    await passes(async () => expect(await agent.logs(trapped)).toBe('ready\n'));
    const [t, p] = await Promise.all([agent.deleteWatched(trapped), agent.deleteWatched(plain)]);
    expect(t).toEqual({ status: 3, log: 'ready\ngot-term\n' });
    expect(p).toEqual({ status: 128 + 15, log: 'ready\n' });
  });
});

describe('gVisor', () => {
  let agent: Agent;
  beforeAll(async () => {
    // The default pids limit (1024): under runsc the limit also counts the sandbox kernel's own
    // host threads and (ptrace platform) a stub process per guest process — at 64, the burst
    // below ends the whole gVisor sandbox instead of failing a fork in it.
    agent = await new Agent(['--runtime-type', 'gvisor', '--runsc-binary', ctd.runscBinary!]).start();
  });
  afterAll(() => agent?.stop());

  it("under runsc too: sandbox-init is PID 1, orphans are reaped, a delete's SIGTERM reaches the process", async () => {
    expect((await agents.status(agent.url)).runtime).toBe('containerd/gvisor');
    const id = await agent.create({ image: busybox, command: PLAIN });
    await passes(async () => expect(await agent.logs(id)).toBe('ready\n'));
    await orphansOfExecAreReaped(agent, id);
    expect((await agent.exec(id, 'ps -o pid,args')).out).toMatch(
      new RegExp(`^\\s*1\\s+${INIT_PATH} -- sh -c echo ready; exec sleep 3600$`, 'm'),
    );
    expect(await agent.deleteWatched(id)).toEqual({ status: 128 + 15, log: 'ready\n' });
  });
});
