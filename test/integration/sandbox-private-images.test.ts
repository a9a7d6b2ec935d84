/**
 * A private image in the node's containerd store is not every pool's (review N5): the store is
 * shared, so an image pool A pulled with its credentials is present for pool B too. Pool B's agent
 * must ask the registry with its own credentials (none) before running it, and be refused. Real
 * containerd, a real registry requiring basic auth (docker-registry with htpasswd), two agent
 * processes on the same containerd: A with an image pull Secret, B without.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderHostsToml } from '../../src/infra/containerd.js';
import { requireHostTools } from '../../src/infra/host-tools.js';
import { ManagedProcess, getFreePort } from '../../src/infra/process.js';
import { ImageRegistry } from '../../src/infra/registry.js';
import { AgentClient } from '../../src/fastpath/agent-client.js';
import { REPO_ROOT, eventually, stackInfo, uniq } from '../support/env.js';

const run = promisify(execFile);
const TOKEN = `token-${randomBytes(8).toString('hex')}`;
const stack = stackInfo();
const ctd = stack.containerd!;
const stateDir = path.join(stack.stateDir, 'sandbox-private-images');
const agents = new AgentClient(TOKEN, { insecurePlainHttp: true });

// A test-only account: bcrypt (cost 4) of PASSWORD, as htpasswd writes it.
const USER = 'pool-a';
const PASSWORD = 'n5-private-registry';
const HTPASSWD = `${USER}:$2b$04$yW5RPhXQByOPta0Hl50NeuXKx71C7sCGfPL7RlPLjKGcPC74dmvdu\n`;

let registry: ImageRegistry;
let privateRef: string;
const started: ManagedProcess[] = [];

async function startAgent(name: string, extra: string[]): Promise<string> {
  const port = await getFreePort();
  const proc = ManagedProcess.start({
    name: `agent-${name}`,
    command: process.execPath,
    args: [
      ...['--import', 'tsx', path.join(REPO_ROOT, 'src/cli/main.ts'), 'agent'],
      ...['--host', '127.0.0.1', '--port', String(port), '--agent-id', name, '--capacity', '4'],
      ...['--token-file', path.join(stateDir, 'agent-token'), '--kill-grace', '500', '--insecure-plain-http'],
      ...['--runtime', 'containerd', '--containerd-socket', ctd.socket, '--containerd-namespace', ctd.namespace],
      ...['--io-dir', path.join(stateDir, 'io'), '--init-binary', ctd.initBinary],
      ...(ctd.runcRoot ? ['--runtime-root', ctd.runcRoot] : []),
      ...extra,
    ],
    cwd: REPO_ROOT,
    logFile: path.join(stateDir, `agent-${name}.log`),
    env: process.env,
  });
  started.push(proc);
  const url = `http://127.0.0.1:${port}`;
  await eventually(`agent ${name} up`, async () => (await fetch(`${url}/healthz`).catch(() => undefined))?.ok, {
    timeoutMs: 60_000,
  });
  return url;
}

beforeAll(async () => {
  await mkdir(stateDir, { recursive: true });
  await writeFile(path.join(stateDir, 'agent-token'), TOKEN, { mode: 0o600 });
  const htpasswd = path.join(stateDir, 'htpasswd');
  await writeFile(htpasswd, HTPASSWD);
  const tools = requireHostTools();
  registry = await ImageRegistry.start({
    binary: tools['docker-registry'],
    dir: path.join(stateDir, 'registry'),
    port: await getFreePort(),
    logFile: path.join(stateDir, 'registry.log'),
    htpasswd,
  });
  // The stack's containerd pulls from it over plain HTTP, like from the stack's own registry.
  const hostsDir = path.join(stack.stateDir, 'containerd', 'certs.d', registry.host);
  await mkdir(hostsDir, { recursive: true });
  await writeFile(path.join(hostsDir, 'hosts.toml'), renderHostsToml(registry.host));
  // A private copy of the demo image, under a name only this test uses.
  privateRef = `${registry.host}/${uniq('private')}/busybox:1`;
  await run(tools.skopeo, [
    '--insecure-policy',
    'copy',
    '--quiet',
    '--src-tls-verify=false',
    '--dest-tls-verify=false',
    '--dest-creds',
    `${USER}:${PASSWORD}`,
    `docker://${stack.registry!.images.busybox}`,
    `docker://${privateRef}`,
  ]);
}, 240_000);

afterAll(async () => {
  await Promise.all(started.map((p) => p.stop(30_000)));
  await registry?.stop();
});

describe('a private image cached on the node (review N5)', () => {
  it('runs for the pool whose Secret can pull it, and is refused to a pool without credentials', async () => {
    const secrets = path.join(stateDir, 'pull-secrets', 'regcred');
    await mkdir(secrets, { recursive: true });
    const auth = Buffer.from(`${USER}:${PASSWORD}`).toString('base64');
    await writeFile(path.join(secrets, '.dockerconfigjson'), JSON.stringify({ auths: { [registry.host]: { auth } } }), {
      mode: 0o600,
    });
    const poolA = await startAgent(uniq('agent-a'), ['--pull-secrets-dir', path.dirname(secrets)]);
    const poolB = await startAgent(uniq('agent-b'), []);

    // Pool A pulls it with its Secret: now it is in the node's store.
    const a = await agents.create(poolA, { sandboxId: uniq('sb'), image: privateRef, command: ['sleep', '3600'] });
    expect(a).toMatchObject({ status: 'ok' });

    // Pool B has no credentials: the registry is asked, and says no — every time.
    for (let i = 0; i < 2; i++) {
      const b = await agents.create(poolB, { sandboxId: uniq('sb'), image: privateRef, command: ['sleep', '3600'] });
      expect(b).toMatchObject({ status: 'refused', httpStatus: 400 });
      expect(b.status === 'refused' && b.message).toMatch(
        /is on this node, but this pool's image pull credentials cannot pull it/,
      );
    }
    expect((await agents.status(poolB)).sandboxStatuses).toEqual([]);

    // A public image present on the node still runs for pool B (its check passes without credentials).
    const pub = await agents.create(poolB, {
      sandboxId: uniq('sb'),
      image: stack.registry!.images.busybox,
      command: ['sleep', '3600'],
    });
    expect(pub).toMatchObject({ status: 'ok' });
  });
});
