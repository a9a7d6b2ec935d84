/**
 * What a sandbox may do with the kernel (issue 31; review N1, N10, N14, N15), with real agent
 * processes on the stack's containerd and runc:
 * - the default capability set has no NET_RAW: packet and raw sockets fail with EPERM, and
 *   io_uring is refused by the seccomp profile;
 * - an agent given NET_RAW by its pool (SANDBOX_CAPABILITIES_ADD, as agentPod() sets it) opens
 *   them; one given Kubernetes' restricted set (drop ALL, add NET_BIND_SERVICE) holds only that;
 * - the agent's own port is refused as an exposed port;
 * - a restarted agent re-adopts only the containers labelled with its own Pod UID and namespace.
 * The probe (test/fixtures/probes/sandbox-probe.c) is built static here and handed to each
 * sandbox on an exec's stdin: the busybox images have no libc and no raw-socket tool.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ContainerdClient } from '../../src/agent/containerd/client.js';
import { LABEL } from '../../src/agent/containerd/runtime.js';
import { CAPABILITY_NAMES, DEFAULT_CAPABILITY_NAMES } from '../../src/domain/sandbox-capabilities.js';
import { AgentClient } from '../../src/fastpath/agent-client.js';
import { ManagedProcess, getFreePort } from '../../src/infra/process.js';
import { REPO_ROOT, eventually, stackInfo, uniq } from '../support/env.js';

const passes = (check: () => Promise<unknown>, timeoutMs = 60_000) =>
  eventually('the expectation', async () => (await check(), true), { timeoutMs });

const TOKEN = `token-${randomBytes(8).toString('hex')}`;
const stack = stackInfo();
const ctd = stack.containerd!;
const images = stack.registry!.images;
const stateDir = path.join(stack.stateDir, 'sandbox-capabilities');
const tokenFile = path.join(stateDir, 'agent-token');
const probeFile = path.join(stateDir, 'sandbox-probe');
const agents = new AgentClient(TOKEN, { insecurePlainHttp: true });

/** An agent process; `env` is what its Pod would give it (the pool's settings, POD_UID, …). */
class Agent {
  proc!: ManagedProcess;
  url!: string;
  port!: number;
  constructor(
    readonly name: string,
    readonly env: Record<string, string> = {},
  ) {}
  async start(port?: number): Promise<this> {
    this.port = port ?? (await getFreePort());
    this.url = `http://127.0.0.1:${this.port}`;
    this.proc = ManagedProcess.start({
      name: `agent-${this.name}`,
      command: process.execPath,
      args: [
        ...['--import', 'tsx', path.join(REPO_ROOT, 'src/cli/main.ts'), 'agent'],
        ...['--host', '127.0.0.1', '--port', String(this.port), '--agent-id', this.name, '--capacity', '8'],
        ...['--token-file', tokenFile, '--kill-grace', '1000', '--insecure-plain-http'],
        ...['--runtime', 'containerd', '--containerd-socket', ctd.socket, '--containerd-namespace', ctd.namespace],
        ...['--io-dir', path.join(stateDir, 'io'), '--init-binary', ctd.initBinary],
        ...(ctd.runcRoot ? ['--runtime-root', ctd.runcRoot] : []),
      ],
      cwd: REPO_ROOT,
      logFile: path.join(stateDir, `agent-${this.name}.log`),
      env: { ...process.env, ...this.env },
    });
    await passes(async () => expect((await fetch(`${this.url}/healthz`)).ok).toBe(true));
    return this;
  }
  async sandboxIds(): Promise<string[]> {
    return (await agents.status(this.url)).sandboxStatuses.map((s) => s.sandboxId);
  }
  async run(): Promise<string> {
    const sandboxId = uniq('sb');
    expect(await agents.create(this.url, { sandboxId, image: images.busybox } as never)).toMatchObject({
      status: 'ok',
    });
    return sandboxId;
  }
  /** One exec at the agent's HTTP API: stdout, and stdin when given. */
  async exec(sandboxId: string, command: string[], stdin?: Buffer): Promise<string> {
    const res = await fetch(`${this.url}/api/v1/agent/exec`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ sandboxId, command, ...(stdin ? { stdin: stdin.toString('base64') } : {}) }),
      signal: AbortSignal.timeout(30_000),
    });
    expect(res.status).toBe(200);
    let out = '';
    let code: number | null | undefined;
    for (const line of (await res.text()).trim().split('\n')) {
      const o = JSON.parse(line) as { stdout?: string; stderr?: string; exitCode?: number | null };
      if (o.stdout) out += Buffer.from(o.stdout, 'base64').toString();
      if (o.stderr) out += Buffer.from(o.stderr, 'base64').toString();
      if ('exitCode' in o) code = o.exitCode;
    }
    expect(code, out).toBe(0);
    return out;
  }
  async stop(): Promise<void> {
    await this.proc?.stop(30_000);
  }
}

/** The probe's verdicts in a sandbox: `{packet: 'EPERM', raw: 'ok', io_uring: 'EPERM'}`. */
async function probe(agent: Agent, sandboxId: string): Promise<Record<string, string>> {
  const out = await agent.exec(
    sandboxId,
    ['/bin/sh', '-c', 'cat > /tmp/probe && chmod 755 /tmp/probe && /tmp/probe'],
    await readFile(probeFile),
  );
  return Object.fromEntries(
    out
      .trim()
      .split('\n')
      .map((l) => l.split(' ') as [string, string]),
  );
}

/** The capabilities the sandbox's process holds (CapEff of /proc/self/status), by name. */
async function effective(agent: Agent, sandboxId: string): Promise<string[]> {
  const out = await agent.exec(sandboxId, ['/bin/grep', 'CapEff', '/proc/self/status']);
  const mask = BigInt(`0x${/CapEff:\s*([0-9a-f]+)/.exec(out)![1]}`);
  return CAPABILITY_NAMES.filter((_, bit) => (mask >> BigInt(bit)) & 1n);
}

const started: Agent[] = [];
const startAgent = async (env: Record<string, string> = {}) => {
  const a = new Agent(uniq('agent'), env);
  started.push(a);
  return a.start();
};

beforeAll(async () => {
  await mkdir(stateDir, { recursive: true });
  await writeFile(tokenFile, TOKEN, { mode: 0o600 });
  await promisify(execFile)('gcc', [
    ...['-static', '-Os', '-s', '-Wall', '-o', probeFile],
    path.join(REPO_ROOT, 'test/fixtures/probes/sandbox-probe.c'),
  ]);
});

afterAll(async () => {
  await Promise.all(started.map((a) => a.stop()));
});

describe('capabilities', () => {
  it('a default sandbox holds the default set, without NET_RAW: packet and raw sockets fail with EPERM, io_uring too', async () => {
    const agent = await startAgent();
    const id = await agent.run();
    expect(await effective(agent, id)).toEqual(CAPABILITY_NAMES.filter((n) => DEFAULT_CAPABILITY_NAMES.includes(n)));
    expect(await probe(agent, id)).toEqual({ packet: 'EPERM', raw: 'EPERM', io_uring: 'EPERM' });
  });

  it('a pool that adds NET_RAW gets it: the same sockets open (io_uring stays refused by seccomp)', async () => {
    const agent = await startAgent({ SANDBOX_CAPABILITIES_ADD: 'NET_RAW', SANDBOX_CAPABILITIES_DROP: '' });
    const id = await agent.run();
    expect(await effective(agent, id)).toContain('NET_RAW');
    expect(await probe(agent, id)).toEqual({ packet: 'ok', raw: 'ok', io_uring: 'EPERM' });
  });

  it("Kubernetes' restricted set (drop ALL, add NET_BIND_SERVICE) leaves only NET_BIND_SERVICE", async () => {
    const agent = await startAgent({ SANDBOX_CAPABILITIES_ADD: 'NET_BIND_SERVICE', SANDBOX_CAPABILITIES_DROP: 'ALL' });
    const id = await agent.run();
    expect(await effective(agent, id)).toEqual(['NET_BIND_SERVICE']);
    expect(await probe(agent, id)).toEqual({ packet: 'EPERM', raw: 'EPERM', io_uring: 'EPERM' });
  });
});

describe('the agent', () => {
  it("refuses its own port as a sandbox's exposed port (review N15)", async () => {
    const agent = await startAgent();
    const sandboxId = uniq('sb');
    const r = await agents.create(agent.url, { sandboxId, image: images.busybox, exposedPorts: [agent.port] } as never);
    expect(r).toMatchObject({
      status: 'refused',
      httpStatus: 400,
      message: `sandbox.exposedPorts: port ${agent.port} is the agent's own port; a sandbox may not expose it`,
    });
    expect(await agent.sandboxIds()).toEqual([]);
  });

  it('re-adopts only the containers of its own Pod: a namesake with another UID or namespace takes none (review N14)', async () => {
    const client = new ContainerdClient(ctd.socket, ctd.namespace);
    try {
      const pod = { POD_UID: randomBytes(8).toString('hex'), POD_NAMESPACE: 'team-a' };
      const owner = await startAgent(pod);
      const id = await owner.run();
      await owner.proc.kill(); // as a crash: its sandboxes keep running in containerd
      // Another pool's Pod with the same name: another UID, or the same UID string in another namespace.
      for (const other of [
        { ...pod, POD_UID: randomBytes(8).toString('hex') },
        { ...pod, POD_NAMESPACE: 'team-b' },
      ]) {
        const namesake = await new Agent(owner.name, other).start();
        try {
          expect(await namesake.sandboxIds()).toEqual([]);
        } finally {
          await namesake.stop();
        }
      }
      // Left where it was: the owner's restart finds it running.
      expect(await client.listContainers([`labels."${LABEL.id}"==${id}`])).toHaveLength(1);
      await owner.start(owner.port);
      expect(await owner.sandboxIds()).toEqual([id]);
    } finally {
      client.close();
    }
  });
});
