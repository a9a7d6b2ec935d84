/**
 * Each sandbox in a network namespace of its own, under its pool's egress policy (real agents,
 * containerd, runc and runsc, CNI plugins and nftables).
 *
 * Traffic goes only to addresses this file makes: a "world" namespace joined to the node by a veth
 * holds a public-looking host (198.51.100.2, a documentation range), a fake metadata endpoint
 * (169.254.169.254) and a private host (10.123.45.6), each routed by a /32 through that veth —
 * never the machine's default route. A listener on the node stands for the control plane (etcd,
 * Temporal, the apiserver: what the old shared namespace let sandboxes reach).
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ContainerdClient } from '../../src/agent/containerd/client.js';
import { LABEL } from '../../src/agent/containerd/runtime.js';
import { agentTable, networkTagOf } from '../../src/agent/containerd/setup.js';
import { cleanupContainerd, containerdSocketPath } from '../../src/infra/containerd.js';
import { getFreePort } from '../../src/infra/process.js';
import { AgentProcess } from '../support/agent-process.js';
import { REPO_ROOT, eventually, stackInfo, uniq } from '../support/env.js';

const stack = stackInfo();
const ctd = stack.containerd!;
const images = stack.registry!.images;
const stateDir = path.join(stack.stateDir, 'sandbox-network');
const TOKEN = `token-${randomBytes(8).toString('hex')}`;
const tag = randomBytes(3).toString('hex');
const world = `fsbtest-world-${tag}`;
const hostIf = `fsbw${tag}`; // ≤ 15 characters
const PUBLIC = '198.51.100.2';
const METADATA = '169.254.169.254';
const PRIVATE = '10.123.45.6';

// Synchronous, so never waiting on stdin (EOF at once) and bounded: nothing else runs meanwhile.
const sh = (...args: string[]) =>
  execFileSync(args[0]!, args.slice(1), { input: '', stdio: 'pipe', timeout: 15_000 }).toString();
const listeners: ChildProcess[] = [];
let controlPlane: net.Server;
let controlPlanePort: number;
const agents: AgentProcess[] = [];
let containerd: ContainerdClient;

/** A TCP server in the world namespace answering `name` on every address of it, port 80. */
function worldListener(): ChildProcess {
  const code = `require('net').createServer((s) => s.end('world\\n')).listen(80, '0.0.0.0')`;
  const child = spawn('ip', ['netns', 'exec', world, process.execPath, '-e', code], { stdio: 'ignore' });
  listeners.push(child);
  return child;
}

async function agent(name: string, extra: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<AgentProcess> {
  // Each agent on its own loopback "Pod IP", as the stack's fleet does.
  const host = `127.0.${Math.floor(Math.random() * 200) + 20}.${Math.floor(Math.random() * 200) + 20}`;
  const a = await new AgentProcess(uniq(name), host, await getFreePort(), stateDir, TOKEN, extra, env).start();
  agents.push(a);
  return a;
}

async function sandbox(a: AgentProcess, spec: Record<string, unknown> = {}): Promise<string> {
  const sandboxId = uniq('sb');
  const r = await a.client.create(a.url, {
    sandboxId,
    image: images.busybox,
    command: ['/bin/sh', '-c', 'sleep 3600'],
    ...spec,
  } as never);
  expect(r).toMatchObject({ status: 'ok' });
  return sandboxId;
}

/** Whether a TCP connection from the sandbox to `host:port` opens (busybox nc, 2 s). */
async function connects(a: AgentProcess, id: string, host: string, port: number): Promise<boolean> {
  const r = await a.exec(id, ['/bin/sh', '-c', `nc -w 2 ${host} ${port} </dev/null && echo CONNECTED`]);
  return r.out.includes('CONNECTED');
}

/** What a TCP server at `host:port` sends, from this (the node's) side. */
async function readFrom(host: string, port: number): Promise<string> {
  const s = net.connect(port, host);
  const chunks: Buffer[] = [];
  await new Promise<void>((resolve, reject) => {
    s.setTimeout(5000, () => s.destroy(new Error(`${host}:${port}: no answer in 5 s`)));
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('end', resolve);
    s.on('error', reject);
    s.end();
  });
  return Buffer.concat(chunks).toString();
}

async function sandboxIp(id: string): Promise<string> {
  const [c] = await containerd.listContainers([`labels."${LABEL.id}"==${JSON.stringify(id)}`]);
  return c!.labels[LABEL.ip]!;
}

/** A world an earlier run of this file left (killed before its afterAll): its routes would shadow ours. */
function removeStaleWorlds(): void {
  for (const ns of readdirSync('/run/netns').filter((n) => n.startsWith('fsbtest-world-'))) {
    const link = `fsbw${ns.slice('fsbtest-world-'.length)}`;
    for (const cmd of [
      ['ip', 'link', 'del', link],
      ['ip', 'netns', 'delete', ns],
    ])
      try {
        sh(...cmd);
      } catch {
        /* gone */
      }
  }
}

beforeAll(async () => {
  removeStaleWorlds();
  containerd = new ContainerdClient(ctd.socket, ctd.namespace);
  // The world: a veth from the node, and /32 routes through it for the three hosts only.
  sh('ip', 'netns', 'add', world);
  sh('ip', 'link', 'add', hostIf, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', world);
  sh('ip', 'addr', 'add', '198.51.100.1/32', 'dev', hostIf);
  sh('ip', 'link', 'set', hostIf, 'up');
  sh('ip', '-n', world, 'addr', 'add', `${PUBLIC}/32`, 'dev', 'eth0');
  sh('ip', '-n', world, 'link', 'set', 'eth0', 'up');
  sh('ip', '-n', world, 'link', 'set', 'lo', 'up');
  for (const a of [METADATA, PRIVATE]) sh('ip', '-n', world, 'addr', 'add', `${a}/32`, 'dev', 'lo');
  sh('ip', '-n', world, 'route', 'add', '198.51.100.1/32', 'dev', 'eth0');
  sh('ip', '-n', world, 'route', 'add', 'default', 'via', '198.51.100.1', 'dev', 'eth0', 'onlink');
  for (const a of [PUBLIC, METADATA, PRIVATE]) sh('ip', 'route', 'add', `${a}/32`, 'dev', hostIf);
  worldListener();
  // The control plane's stand-in: on every address of the node.
  controlPlane = net.createServer((s) => s.end('control-plane\n'));
  await new Promise<void>((r) => controlPlane.listen(0, '0.0.0.0', r));
  controlPlanePort = (controlPlane.address() as net.AddressInfo).port;
});

afterAll(async () => {
  await Promise.all(agents.map((a) => a.stop()));
  for (const l of listeners) l.kill('SIGKILL');
  controlPlane?.close();
  for (const a of [PUBLIC, METADATA, PRIVATE]) {
    try {
      sh('ip', 'route', 'del', `${a}/32`, 'dev', hostIf);
    } catch {
      /* gone with the link */
    }
  }
  try {
    sh('ip', 'link', 'del', hostIf);
  } catch {
    /* already gone */
  }
  sh('ip', 'netns', 'delete', world);
  containerd?.close();
});

describe('runc: a namespace per sandbox, policy internet', () => {
  let a: AgentProcess;
  let one: string;
  let two: string;

  beforeAll(async () => {
    a = await agent('net-internet', ['--egress', JSON.stringify({ allow: [{ cidr: `${PRIVATE}/32`, ports: [80] }] })]);
    one = await sandbox(a);
    two = await sandbox(a, {
      command: ['/bin/sh', '-c', 'while true; do echo from-two | nc -l -p 8080; done'],
      exposedPorts: [8080],
    });
    // The world answers the node itself (the routes work), so a refusal below is the policy's.
    await eventually('the world listener', async () => (await readFrom(PUBLIC, 80)).includes('world'));
  });

  it('reaches a public address, and an allow-listed private one', async () => {
    expect(await connects(a, one, PUBLIC, 80)).toBe(true);
    expect(await connects(a, one, PRIVATE, 80)).toBe(true);
  });

  it('never reaches the metadata endpoint, the node, its agent or the control plane', async () => {
    expect(await connects(a, one, METADATA, 80)).toBe(false);
    const gateway = (await a.exec(one, ['/bin/sh', '-c', "ip route | awk '/default/ {print $3}'"])).out.trim();
    expect(gateway).toMatch(/^198\.18\.\d+\.1$/);
    for (const target of [gateway, '127.0.0.1', a.host])
      for (const port of [controlPlanePort, a.port])
        expect(await connects(a, one, target, port), `${target}:${port}`).toBe(false);
    // …which the node itself does reach: the refusals are the sandbox's.
    expect(await readFrom(gateway, controlPlanePort)).toContain('control-plane');
  });

  it('has its own loopback and an address of its own, and never reaches another sandbox', async () => {
    const lo = await a.exec(two, ['/bin/sh', '-c', 'echo local | nc -l -p 9999 & sleep 0.3; nc -w 2 127.0.0.1 9999']);
    expect(lo.out).toContain('local');
    expect(await connects(a, one, '127.0.0.1', 9999)).toBe(false);
    const [ipOne, ipTwo] = await Promise.all([sandboxIp(one), sandboxIp(two)]);
    expect(ipOne).not.toBe(ipTwo);
    expect(await connects(a, one, ipTwo, 8080)).toBe(false);
  });

  it("an exposed port is reached at the agent's address, forwarded into the sandbox", async () => {
    expect(await eventually('the forwarded port', () => readFrom(a.host, 8080))).toContain('from-two');
  });

  it('resolv.conf names the DNS servers the policy lets through', async () => {
    const conf = (await a.exec(one, ['cat', '/etc/resolv.conf'])).out;
    expect(conf).toMatch(/^nameserver \d+\.\d+\.\d+\.\d+$/m);
  });
});

describe('what a sandbox sees of the network', () => {
  it("with NET_RAW opted in, a capture sees the sandbox's own traffic, never its agent's calls or token", async () => {
    const capture = path.join(stateDir, 'packet-capture');
    await promisify(execFile)('gcc', [
      ...['-static', '-Os', '-s', '-Wall', '-o', capture],
      path.join(REPO_ROOT, 'test/fixtures/probes/packet-capture.c'),
    ]);
    const a = await agent('net-capture', ['--capabilities-add', 'NET_RAW']);
    const id = await sandbox(a);
    const marker = `marker-${randomBytes(4).toString('hex')}`;
    const installed = await a.exec(
      id,
      ['/bin/sh', '-c', 'cat > /tmp/capture && chmod 755 /tmp/capture && echo ok'],
      30_000,
      await readFile(capture),
    );
    expect(installed.out).toContain('ok');
    // While it captures: the fast path's side calls the agent with its token, and the sandbox
    // sends the marker out of its own interface — again and again, as on a loaded machine the
    // capture may start a second or two after its exec was sent.
    const seen = a.exec(id, ['/tmp/capture', '8', 'Bearer', TOKEN, marker], 60_000);
    const until = Date.now() + 7000;
    const sent = a.exec(
      id,
      [
        '/bin/sh',
        '-c',
        `for i in 1 2 3 4 5 6 7 8 9 10; do echo ${marker} | nc -w 1 ${PUBLIC} 80 >/dev/null; sleep 0.5; done`,
      ],
      60_000,
    );
    while (Date.now() < until) {
      await a.status();
      await new Promise((r) => setTimeout(r, 100));
    }
    await sent;
    const { out } = await seen;
    expect(out).toContain('capture ok');
    expect(out).toContain(`saw ${marker}`);
    expect(out).not.toContain('saw Bearer');
    expect(out).not.toContain(`saw ${TOKEN}`);
  });

  it('any user may bind a low port and ping inside its own namespace, with no capability for it', async () => {
    const a = agents[0]!;
    const id = await sandbox(a, { image: images.busyboxUser });
    const r = await a.exec(id, ['/bin/sh', '-c', 'id -u; (echo low | nc -l -p 80 &); sleep 0.3; nc -w 2 127.0.0.1 80']);
    expect(r.out).toBe('1000\nlow\n');
    const sysctls = await a.exec(id, [
      'cat',
      '/proc/sys/net/ipv4/ping_group_range',
      '/proc/sys/net/ipv4/ip_unprivileged_port_start',
    ]);
    expect(sysctls.out.split(/\s+/).filter(Boolean)).toEqual(['0', '2147483647', '0']);
  });
});

describe('policy none', () => {
  it('reaches nothing but what its allow-list names', async () => {
    const a = await agent('net-none', [
      '--egress',
      JSON.stringify({ policy: 'none', allow: [{ cidr: `${PRIVATE}/32` }] }),
    ]);
    const id = await sandbox(a);
    expect(await connects(a, id, PUBLIC, 80)).toBe(false);
    expect(await connects(a, id, METADATA, 80)).toBe(false);
    expect(await connects(a, id, PRIVATE, 80)).toBe(true);
  });
});

describe('gVisor in its own namespace', () => {
  it('has network by its policy, and its agent stays reachable while it runs', async () => {
    const a = await agent('net-gvisor', ['--runtime-type', 'gvisor', '--runsc-binary', ctd.runscBinary!]);
    const id = await sandbox(a);
    expect((await a.exec(id, ['dmesg'])).out).toMatch(/gVisor/i);
    expect(await connects(a, id, PUBLIC, 80)).toBe(true);
    expect(await connects(a, id, METADATA, 80)).toBe(false);
    expect(await connects(a, id, a.host, a.port)).toBe(false);
    expect((await a.status()).sandboxStatuses.map((s) => s.sandboxId)).toContain(id);
  });
});

describe('the wiring', () => {
  it('runs no ip, nft or shell per sandbox: a create and a delete are wired and unwired by sandbox-netd', async () => {
    // Each tool on the agent's PATH logs its name and runs the real one.
    const shims = path.join(stateDir, `exec-log-${randomBytes(3).toString('hex')}`);
    const log = path.join(shims, 'log');
    await mkdir(shims, { recursive: true });
    for (const tool of ['ip', 'nft', 'sh']) {
      const real = sh('sh', '-c', `command -v ${tool}`).trim();
      await writeFile(path.join(shims, tool), `#!/bin/sh\necho ${tool} >>'${log}'\nexec ${real} "$@"\n`, {
        mode: 0o755,
      });
    }
    const ran = () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []);
    const a = await agent('net-no-exec', [], { PATH: `${shims}:${process.env.PATH}` });
    // The agent's start loads its table (nft -f) once: before the sandbox.
    const atStart = ran().length;
    const id = await sandbox(a, { exposedPorts: [8080] });
    expect(readdirSync('/run/netns').filter((n) => n.endsWith(id))).toHaveLength(1);
    await a.client.delete(a.url, id);
    await eventually('the sandbox unwired', async () => readdirSync('/run/netns').every((n) => !n.endsWith(id)));
    expect(ran().slice(atStart)).toEqual([]);
    await a.stop();
  });
});

describe('cleanup', () => {
  it("the stack's containerd cleanup (at stop, and at the next start after a crash) removes what its agents left", async () => {
    // As a SIGKILLed stack leaves them: a namespace and a table named by its containerd's tag.
    const dir = path.join(stateDir, `crashed-${randomBytes(3).toString('hex')}`);
    const leftTag = networkTagOf(containerdSocketPath(dir));
    const ns = `fsb-${leftTag}-left-behind`;
    const table = agentTable(leftTag, undefined, 'agent-left-behind');
    sh('ip', 'netns', 'add', ns);
    sh('nft', 'add', 'table', 'inet', table);
    const other = `fsb-${tag}00-not-this-stack`; // another stack's: kept
    sh('ip', 'netns', 'add', other);
    try {
      await cleanupContainerd(dir);
      expect(readdirSync('/run/netns')).not.toContain(ns);
      expect(sh('nft', 'list', 'tables')).not.toContain(table);
      expect(readdirSync('/run/netns')).toContain(other);
    } finally {
      sh('ip', 'netns', 'delete', other);
    }
  });

  it('an agent that stops leaves no namespace or table of its sandboxes behind', async () => {
    const a = await agent('net-cleanup');
    const ids = [await sandbox(a), await sandbox(a)];
    const before = readdirSync('/run/netns').filter((n) => ids.some((id) => n.endsWith(id)));
    expect(before).toHaveLength(2);
    expect(sh('nft', 'list', 'tables')).toContain(agentTable(networkTagOf(ctd.socket), undefined, a.name));
    await a.stop();
    expect(readdirSync('/run/netns').filter((n) => ids.some((id) => n.endsWith(id)))).toEqual([]);
    const table = agentTable(networkTagOf(ctd.socket), undefined, a.name);
    expect(sh('nft', 'list', 'tables')).not.toContain(table);
  });
});
