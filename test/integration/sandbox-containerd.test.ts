/**
 * The agent on its containerd runtime, as a real agent process (the CLI role `agent`) against the
 * stack's containerd, runc and image registry: images, isolation, limits, delete, exec, and an
 * agent SIGKILL + restart that must not lose a sandbox.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentStatusReport, SandboxStatusReport } from '../../src/agent/api.js';
import { ContainerdClient } from '../../src/agent/containerd/client.js';
import { INIT_PATH, LABEL } from '../../src/agent/containerd/runtime.js';
import { AgentClient, type AgentExecEvent } from '../../src/fastpath/agent-client.js';
import { getFreePort } from '../../src/infra/process.js';
import { ManagedProcess } from '../../src/infra/process.js';
import { REPO_ROOT, eventually, stackInfo, uniq } from '../support/env.js';

/** Retries `check` (assertions) until it passes: hang protection only, not a speed assertion. */
const passes = (check: () => Promise<unknown>, timeoutMs = 60_000) =>
  eventually('the expectation', async () => (await check(), true), { timeoutMs });

const TOKEN = `token-${randomBytes(8).toString('hex')}`;
const stack = stackInfo();
const ctd = stack.containerd!;
const images = stack.registry!.images;
const stateDir = path.join(stack.stateDir, 'sandbox-containerd');
const tokenFile = path.join(stateDir, 'agent-token');
// Plain HTTP on loopback, opted into: these tests are about the runtime's isolation, not the TLS hop.
const agents = new AgentClient(TOKEN, { insecurePlainHttp: true });

/** One agent process; `restart` SIGKILLs it and starts it again under the same name and port. */
class AgentProcess {
  proc!: ManagedProcess;
  readonly url: string;
  constructor(
    readonly name: string,
    readonly port: number,
    readonly extra: string[] = [],
  ) {
    this.url = `http://127.0.0.1:${port}`;
  }
  async start(): Promise<this> {
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
        ...this.extra,
      ],
      cwd: REPO_ROOT,
      logFile: path.join(stateDir, `agent-${this.name}.log`),
      env: process.env,
    });
    await passes(async () => expect((await fetch(`${this.url}/healthz`)).ok).toBe(true), 60_000);
    return this;
  }
  status(): Promise<AgentStatusReport> {
    return agents.status(this.url);
  }
  async sandbox(id: string): Promise<SandboxStatusReport | undefined> {
    return (await this.status()).sandboxStatuses.find((s) => s.sandboxId === id);
  }
  async exec(id: string, command: string[]): Promise<{ out: string; code: number | null }> {
    let out = '';
    let code: number | null = null;
    for await (const ev of agents.exec(
      this.url,
      id,
      command,
      AbortSignal.timeout(30_000),
    ) as AsyncIterable<AgentExecEvent>) {
      if ('stdout' in ev) out += ev.stdout.toString();
      else if ('stderr' in ev) out += ev.stderr.toString();
      else code = ev.exitCode;
    }
    return { out, code };
  }
  /** One exec at the agent's HTTP API with `stdin`: stdout and stderr apart, and the exit code. */
  async execWithStdin(
    id: string,
    command: string[],
    stdin?: Buffer,
  ): Promise<{ stdout: string; stderr: string; code: number | null }> {
    const res = await fetch(`${this.url}/api/v1/agent/exec`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ sandboxId: id, command, ...(stdin ? { stdin: stdin.toString('base64') } : {}) }),
      signal: AbortSignal.timeout(30_000), // a command left waiting for EOF fails here instead of hanging
    });
    expect(res.status).toBe(200);
    const out = { stdout: '', stderr: '', code: null as number | null };
    for (const line of (await res.text()).trim().split('\n')) {
      const o = JSON.parse(line) as { stdout?: string; stderr?: string; exitCode?: number | null };
      if (o.stdout) out.stdout += Buffer.from(o.stdout, 'base64').toString();
      if (o.stderr) out.stderr += Buffer.from(o.stderr, 'base64').toString();
      if ('exitCode' in o) out.code = o.exitCode ?? null;
    }
    return out;
  }
  async logs(id: string): Promise<string> {
    const res = await fetch(`${this.url}/api/v1/agent/logs?sandboxId=${id}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    return res.text();
  }
  async kill(): Promise<void> {
    await this.proc.kill();
  }
  async stop(): Promise<void> {
    await this.proc.stop(30_000);
  }
}

let agent: AgentProcess;
let client: ContainerdClient;

beforeAll(async () => {
  await mkdir(stateDir, { recursive: true });
  await writeFile(tokenFile, TOKEN, { mode: 0o600 });
  client = new ContainerdClient(ctd.socket, ctd.namespace);
  agent = await new AgentProcess(uniq('agent'), await getFreePort(), ['--default-pids', '64']).start();
});

afterAll(async () => {
  await agent?.stop();
  client?.close();
});

const create = (a: AgentProcess, sandbox: Record<string, unknown>) =>
  agents.create(a.url, { sandboxId: uniq('sb'), ...sandbox } as never);

async function createRunning(a: AgentProcess, sandbox: Record<string, unknown>): Promise<string> {
  const sandboxId = uniq('sb');
  const r = await agents.create(a.url, { sandboxId, ...sandbox } as never);
  expect(r, JSON.stringify(r)).toMatchObject({ status: 'ok' });
  return sandboxId;
}

async function deleted(a: AgentProcess, id: string): Promise<void> {
  await agents.delete(a.url, id);
  await passes(async () => expect(await a.sandbox(id)).toBeUndefined(), 30_000);
}

/**
 * A sandbox's cgroup file as the node has it: cgroup v2 when the root is unified (one tree,
 * `/sys/fs/cgroup/<path>/<v2>`), else v1 (a tree per controller, `/sys/fs/cgroup/<ctl>/<path>/<v1>`)
 * — runc uses v1 on a hybrid node, whose `unified` mount has no controllers (review N19).
 */
function cgroupFile(id: string, v1: [controller: string, file: string], v2: string): string {
  const unified = existsSync('/sys/fs/cgroup/cgroup.controllers');
  return readFileSync(
    unified ? `/sys/fs/cgroup/fast-sandbox/${id}/${v2}` : `/sys/fs/cgroup/${v1[0]}/fast-sandbox/${id}/${v1[1]}`,
    'utf8',
  ).trim();
}
const memoryLimit = (id: string) => Number(cgroupFile(id, ['memory', 'memory.limit_in_bytes'], 'memory.max'));
/** The CFS quota in µs per 100 ms period. */
const cpuQuota = (id: string) => Number(cgroupFile(id, ['cpu', 'cpu.cfs_quota_us'], 'cpu.max').split(' ')[0]);

/**
 * Host processes whose command line starts with `marker` (sandboxes share the host's kernel under
 * runc) — not sandbox-init, whose own command line holds the sandbox's after `--`.
 */
function hostProcessesWith(marker: string): number[] {
  const found: number[] = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      if (readFileSync(`/proc/${p}/cmdline`, 'utf8').replaceAll('\0', ' ').startsWith(marker)) found.push(Number(p));
    } catch {
      // gone
    }
  }
  return found;
}

describe('images', () => {
  it("an image-only create runs the image's entrypoint and cmd; the agent reports the runtime and the image", async () => {
    const id = await createRunning(agent, { image: images.busybox });
    await passes(async () => expect(await agent.logs(id)).toContain('hello from the image'));
    const status = await agent.status();
    expect(status.runtime).toBe('containerd/runc');
    expect(status.images).toContain(images.busybox);
    expect(await agent.sandbox(id)).toMatchObject({ phase: 'running' });
    await deleted(agent, id);
  });

  it("command, args, env and workingDir are honoured; the image's user, env and working dir otherwise", async () => {
    const own = await createRunning(agent, {
      image: images.busyboxUser,
      command: ['/bin/sh', '-c'],
      args: ['echo "uid=$(id -u) dir=$(pwd) greeting=$GREETING extra=$EXTRA"; sleep 3600'],
      env: { EXTRA: 'set-by-request', GREETING: 'overridden' },
      workingDir: '/tmp',
    });
    await passes(async () =>
      expect(await agent.logs(own)).toContain('uid=1000 dir=/tmp greeting=overridden extra=set-by-request'),
    );
    const plain = await createRunning(agent, { image: images.busyboxUser });
    const seen = await agent.exec(plain, ['/bin/sh', '-c', 'echo "$(id -u):$(id -g) $(pwd) $GREETING"']);
    expect(seen).toEqual({ out: '1000:1000 /home/app from-image\n', code: 0 });
    await Promise.all([deleted(agent, own), deleted(agent, plain)]);
  });

  it('an image that cannot be pulled is refused with 400 naming it, and nothing is left behind', async () => {
    const missing = `${stack.registry!.host}/sandbox/no-such-image:1`;
    const sandboxId = uniq('sb');
    const r = await agents.create(agent.url, { sandboxId, image: missing } as never);
    expect(r).toMatchObject({ status: 'refused', httpStatus: 400, message: expect.stringContaining(missing) });
    expect(await agent.sandbox(sandboxId)).toBeUndefined();
    expect(await client.listContainers([`labels."${LABEL.id}"==${sandboxId}`])).toEqual([]);
  });
});

describe('isolation', () => {
  it("a sandbox sees only its image: not the agent's token, not the agent's files, not other processes", async () => {
    const id = await createRunning(agent, { image: images.busybox });
    const token = await agent.exec(id, ['cat', tokenFile]);
    expect(token.code).not.toBe(0);
    expect(token.out).not.toContain(TOKEN);
    expect((await agent.exec(id, ['ls', REPO_ROOT])).code).not.toBe(0);
    const env = await agent.exec(id, ['cat', '/proc/1/environ']);
    expect(env.out).not.toContain('DO_AGENT');
    const ps = await agent.exec(id, ['ps', '-o', 'pid,args']);
    const pids = ps.out
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => Number(l.trim().split(/\s+/)[0]));
    // Its own PID namespace: its init is PID 1, and the agent is nowhere.
    expect(pids).toContain(1);
    expect(ps.out).not.toContain('main.ts');
    expect(pids.length).toBeLessThanOrEqual(3);
    const caps = await agent.exec(id, ['grep', '-E', '^(NoNewPrivs|Seccomp):', '/proc/self/status']);
    expect(caps.out).toMatch(/NoNewPrivs:\s+1/);
    expect(caps.out).toMatch(/Seccomp:\s+2/);
    // containerd's masked paths (oci-defaults.json): the node's per-CPU interrupt counts read empty.
    expect((await agent.exec(id, ['sh', '-c', 'wc -c < /proc/interrupts'])).out.trim()).toBe('0');
    await deleted(agent, id);
  });

  it('kill -9 -1 in one sandbox leaves its neighbour and the agent running', async () => {
    const a = await createRunning(agent, { image: images.busybox });
    const b = await createRunning(agent, { image: images.busybox });
    // Only once the same sandbox has shown it has its own PID namespace (its init is PID 1 and
    // the agent is not among its processes): in the host's, as root, this would end every process.
    // The runtime first (never the process runtime), then the namespace itself: a handful of
    // processes, PID 1 among them, the agent not.
    expect((await agent.status()).runtime).toBe('containerd/runc');
    const ps = await agent.exec(a, ['ps', '-o', 'pid,args']);
    expect(ps.out).toMatch(/^\s*1\s/m);
    expect(ps.out).not.toContain('main.ts');
    expect(ps.out.trim().split('\n').length - 1).toBeLessThanOrEqual(3);
    await agent.exec(a, ['sh', '-c', 'kill -9 -1; sleep 1']).catch(() => undefined);
    expect(await agent.sandbox(b)).toMatchObject({ phase: 'running' });
    expect((await agent.exec(b, ['true'])).code).toBe(0);
    expect(agent.proc.running).toBe(true);
    await Promise.all([deleted(agent, a), deleted(agent, b)]);
  });

  it("an agent's sandboxes share one runc shim (the host side), each in namespaces of its own; it outlives the sandbox that started it", async () => {
    const a = await createRunning(agent, { image: images.busybox });
    const b = await createRunning(agent, { image: images.busybox });
    const initPid = async (id: string) => (await client.getTask(id)).pid;
    /** The parent of a sandbox's init on the host: the shim that serves its container. */
    const shimOf = async (id: string) => {
      const stat = readFileSync(`/proc/${await initPid(id)}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    };
    const nsOf = async (id: string, ns: string) => readlinkSync(`/proc/${await initPid(id)}/ns/${ns}`);
    const shim = await shimOf(a);
    expect(path.basename(readFileSync(`/proc/${shim}/cmdline`, 'utf8').split('\0')[0]!)).toBe(
      'containerd-shim-runc-v2',
    );
    expect(await shimOf(b)).toBe(shim);
    for (const ns of ['pid', 'mnt', 'net', 'ipc', 'uts']) expect(await nsOf(a, ns)).not.toBe(await nsOf(b, ns));
    // The shim came with `a`'s container (its bundle is its working directory): it serves on without it.
    await deleted(agent, a);
    expect((await agent.exec(b, ['echo', 'ok'])).out).toBe('ok\n');
    const c = await createRunning(agent, { image: images.busybox });
    expect(await shimOf(c)).toBe(shim);
    expect((await agent.exec(c, ['echo', 'ok'])).out).toBe('ok\n');
    await Promise.all([deleted(agent, b), deleted(agent, c)]);
  });
});

describe('delete and limits', () => {
  it('delete ends every process of the sandbox, daemonized or not, and removes container and snapshot', async () => {
    const marker = String(40_000 + Math.floor(Math.random() * 9999));
    const id = await createRunning(agent, {
      image: images.busybox,
      command: ['sh', '-c', `setsid sleep ${marker} & (sleep ${marker}1 &); sleep 3600`],
    });
    await passes(async () => expect(hostProcessesWith(`sleep ${marker}`).length).toBe(2));
    await deleted(agent, id);
    expect(hostProcessesWith(`sleep ${marker}`)).toEqual([]);
    await expect(client.getContainer(id)).rejects.toMatchObject({ code: 5 });
    await expect(client.snapshotMounts('overlayfs', id)).rejects.toMatchObject({ code: 5 });
  });

  it('a sandbox whose command exits leaves nothing running and reports its exit code', async () => {
    const id = await createRunning(agent, {
      image: images.busybox,
      command: ['sh', '-c', 'setsid sleep 777 & exit 3'],
    });
    await passes(async () =>
      expect(await agent.sandbox(id)).toMatchObject({ phase: 'failed', message: 'exited with code 3' }),
    );
    await deleted(agent, id);
  });

  it('a fork bomb is held by the pids limit: the agent and other sandboxes keep working', async () => {
    const bomb = await createRunning(agent, {
      image: images.busybox,
      command: ['sh', '-c', 'f(){ f | f & }; f; sleep 3600'],
    });
    await new Promise((r) => setTimeout(r, 2000));
    const other = await createRunning(agent, { image: images.busybox });
    expect((await agent.exec(other, ['echo', 'ok'])).out).toBe('ok\n');
    await Promise.all([deleted(agent, bomb), deleted(agent, other)]);
  });

  it('going over the memory limit ends the sandbox as OOMKilled; cpu and memory are applied', async () => {
    const hog = await createRunning(agent, {
      image: images.busybox,
      memory: '16Mi',
      command: ['sh', '-c', 'x=0123456789abcdef; while true; do x=$x$x; done'],
    });
    await passes(
      async () => expect(await agent.sandbox(hog)).toMatchObject({ phase: 'failed', reason: 'OOMKilled' }),
      30_000,
    );
    const limited = await createRunning(agent, { image: images.busybox, cpu: '250m', memory: '32Mi' });
    const cg = await agent.exec(limited, ['cat', '/proc/self/cgroup']);
    expect(cg.code).toBe(0);
    expect(memoryLimit(limited)).toBe(32 * 2 ** 20);
    expect(cpuQuota(limited)).toBe(25_000);
    await Promise.all([deleted(agent, hog), deleted(agent, limited)]);
  });

  it('a sandbox that sets no limits, of a pool that sets none, gets the defaults: 1 CPU, 512Mi (review N3)', async () => {
    const plain = await createRunning(agent, { image: images.busybox });
    expect(memoryLimit(plain)).toBe(512 * 2 ** 20);
    expect(cpuQuota(plain)).toBe(100_000);
    await deleted(agent, plain);
  });

  it('the OOM killer takes a sandbox before its agent: its oom_score_adj is 1000 (review N3)', async () => {
    const id = await createRunning(agent, {
      image: images.busybox,
      command: ['sh', '-c', 'cat /proc/self/oom_score_adj; sleep 3600'],
    });
    const agentScore = Number(readFileSync(`/proc/${agent.proc.pid}/oom_score_adj`, 'utf8'));
    await passes(async () => expect((await agent.logs(id)).trim()).toBe('1000'), 30_000);
    expect(1000).toBeGreaterThan(agentScore);
    // An exec into it is the sandbox too.
    expect((await agent.exec(id, ['cat', '/proc/self/oom_score_adj'])).out.trim()).toBe('1000');
    await deleted(agent, id);
  });

  it('a sandbox whose writable layer grows past the ephemeral-storage limit is killed, EphemeralStorageExceeded; its neighbour runs on (review N3)', async () => {
    const a = await new AgentProcess(uniq('agent'), await getFreePort(), [
      '--default-ephemeral-storage',
      '8Mi',
    ]).start();
    try {
      const filler = await createRunning(a, {
        image: images.busybox,
        command: ['sh', '-c', 'dd if=/dev/zero of=/big bs=1M count=20 && sync && sleep 3600'],
      });
      const small = await createRunning(a, {
        image: images.busybox,
        command: ['sh', '-c', 'dd if=/dev/zero of=/small bs=1M count=1 && sync && sleep 3600'],
      });
      await passes(
        async () =>
          expect(await a.sandbox(filler)).toMatchObject({
            phase: 'failed',
            reason: 'EphemeralStorageExceeded',
            message: expect.stringContaining('ephemeral-storage limit'),
          }),
        60_000,
      );
      expect(await a.logs(filler)).toMatch(
        /killed: its writable layer takes \d+ bytes, over its ephemeral-storage limit of 8388608/,
      );
      expect(await a.sandbox(small)).toMatchObject({ phase: 'running' });
      await Promise.all([deleted(a, filler), deleted(a, small)]);
    } finally {
      await a.stop();
    }
  });

  it('a limit that is not a quantity is refused before anything is made', async () => {
    const r = await create(agent, { image: images.busybox, memory: 'lots' });
    expect(r).toMatchObject({ status: 'refused', httpStatus: 400, message: expect.stringContaining('memory "lots"') });
  });
});

describe('agent restart', () => {
  it('an agent SIGKILLed and restarted keeps its sandboxes: same IDs, still running, exec and logs work', async () => {
    const a = await new AgentProcess(uniq('agent'), await getFreePort()).start();
    try {
      const id = await createRunning(a, {
        image: images.busybox,
        command: ['sh', '-c', 'i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.2; done'],
        exposedPorts: [18080],
      });
      const before = await a.sandbox(id);
      await a.kill();
      await a.start();
      const after = await a.status();
      expect(after.sandboxStatuses).toEqual([{ ...before!, phase: 'running' }]);
      expect(after.allocated).toBe(1);
      expect((await a.exec(id, ['echo', 'still here'])).out).toBe('still here\n');
      await passes(async () => expect(await a.logs(id)).toMatch(/tick \d+/));
      // Its port is still its own: another create on it is refused.
      expect(await create(a, { image: images.busybox, exposedPorts: [18080] })).toMatchObject({ reason: 'PortInUse' });
      await deleted(a, id);
    } finally {
      await a.stop();
    }
  });
});

describe('warm containers', () => {
  it('a create of a warm image takes a warm container: the sandbox gets its own command, env and dir, and the pool refills', async () => {
    const a = await new AgentProcess(uniq('agent'), await getFreePort(), [
      ...['--warm-images', `${images.busybox}=1`],
    ]).start();
    try {
      await passes(async () => expect((await a.status()).warm).toEqual({ [images.busybox]: 1 }));
      const id = await createRunning(a, {
        image: images.busybox,
        command: ['sh', '-c', 'echo "warm $WHO in $(pwd)"; sleep 3600'],
        env: { WHO: 'me' },
        workingDir: '/tmp/work',
      });
      // The sandbox is the container that waited: its record now names the sandbox.
      const [container] = await client.listContainers([`labels."${LABEL.id}"==${id}`]);
      expect(container!.id).toMatch(/^warm-/);
      expect(container!.labels[LABEL.warm]).toBeUndefined();
      await passes(async () => expect(await a.logs(id)).toBe('warm me in /tmp/work\n'));
      const ps = await a.exec(id, ['sh', '-c', 'echo $WHO; ps -o pid,args']);
      expect(ps.out).toMatch(/^me\n/);
      // sandbox-init stays PID 1 (it reaps orphans, forwards signals); the sandbox's command is
      // its child (sh ran its last command in place).
      expect(ps.out).toMatch(new RegExp(`^\\s*1 ${INIT_PATH}$`, 'm'));
      expect(ps.out).toMatch(/^\s*\d+ sleep 3600$/m);
      await passes(async () => expect((await a.status()).warm).toEqual({ [images.busybox]: 1 }));
      // A command the image does not have: refused with the reason, and the warm container is not reused.
      const bad = await create(a, { image: images.busybox, command: ['no-such-command'] });
      expect(bad).toMatchObject({
        status: 'refused',
        httpStatus: 400,
        message: expect.stringContaining('no-such-command'),
      });
      await deleted(a, id);
      expect(await client.listContainers([`labels."${LABEL.id}"==${id}`])).toEqual([]);
    } finally {
      await a.stop();
    }
    // Stopping the agent (its Pod deleted) removes its warm containers too.
    expect(await client.listContainers([`labels."${LABEL.agentName}"==${JSON.stringify(a.name)}`])).toEqual([]);
  });
});

describe('gVisor', () => {
  it('runtimeType gvisor runs sandboxes under runsc: the kernel they see is gVisor', async () => {
    const a = await new AgentProcess(uniq('agent'), await getFreePort(), [
      ...['--runtime-type', 'gvisor', '--runsc-binary', ctd.runscBinary!],
    ]).start();
    try {
      expect((await a.status()).runtime).toBe('containerd/gvisor');
      const id = await createRunning(a, { image: images.busybox, command: ['sh', '-c', 'dmesg; sleep 3600'] });
      // gVisor's kernel log starts with its own banner; the host's kernel would refuse dmesg here.
      await passes(async () => expect(await a.logs(id)).toContain('Starting gVisor'));
      await deleted(a, id);
    } finally {
      await a.stop();
    }
  });
});

describe('streams at the client’s pace', () => {
  it('an exec whose client stops reading is paused, not buffered; it finishes once the client reads again', async () => {
    const id = await createRunning(agent, { image: images.busybox });
    // 64 MiB of output, then a marker: the marker appears only once every byte was taken.
    const res = await fetch(`${agent.url}/api/v1/agent/exec`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        sandboxId: id,
        command: ['sh', '-c', 'head -c 67108864 /dev/zero; touch /tmp/all-written'],
      }),
    });
    expect(res.status).toBe(200);
    await new Promise((r) => setTimeout(r, 3000)); // nobody reads
    expect((await agent.exec(id, ['test', '-e', '/tmp/all-written'])).code).toBe(1);
    let bytes = 0;
    let exit: unknown;
    let pending = '';
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      pending += Buffer.from(chunk).toString('utf8');
      let nl: number;
      while ((nl = pending.indexOf('\n')) >= 0) {
        const o = JSON.parse(pending.slice(0, nl)) as { stdout?: string; exitCode?: number };
        pending = pending.slice(nl + 1);
        if (o.stdout) bytes += Buffer.from(o.stdout, 'base64').length;
        if ('exitCode' in o) exit = o.exitCode;
      }
    }
    expect({ bytes, exit }).toEqual({ bytes: 64 * 2 ** 20, exit: 0 });
    expect((await agent.exec(id, ['test', '-e', '/tmp/all-written'])).code).toBe(0);
    await deleted(agent, id);
  });
});

describe('exec with stdin', () => {
  it('the command reads the input, then EOF; its stdout, stderr and exit code come back; no input is EOF at once', async () => {
    const id = await createRunning(agent, { image: images.busybox });
    expect(await agent.execWithStdin(id, ['sh', '-c', 'cat; echo done >&2; exit 3'], Buffer.from('hello\n'))).toEqual({
      stdout: 'hello\n',
      stderr: 'done\n',
      code: 3,
    });
    // Larger than a pipe's buffer: all of it arrives, and the end of it (wc prints only at EOF).
    const big = Buffer.alloc(200 * 1024, 'x');
    expect(await agent.execWithStdin(id, ['wc', '-c'], big)).toEqual({ stdout: '204800\n', stderr: '', code: 0 });
    // Without input the command's stdin is empty: cat ends rather than waiting.
    expect(await agent.execWithStdin(id, ['cat'])).toEqual({ stdout: '', stderr: '', code: 0 });
    // Input the command never reads does not hold the exec open.
    expect(await agent.execWithStdin(id, ['sh', '-c', 'exit 5'], big)).toEqual({ stdout: '', stderr: '', code: 5 });
    await deleted(agent, id);
  });
});
