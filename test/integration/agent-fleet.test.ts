/**
 * AgentFleet, the kubelet stand-in: real agent processes on their own loopback addresses, and
 * Pods on the real apiserver that a user (the sandbox fast path) finds by label and reaches at
 * podIP:containerPort. Every fleet is stopped in afterAll, failed tests included.
 */
import { readFile, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentStatusReport } from '../../src/agent/api.js';
import { AGENT_APP_LABEL, AGENT_APP_VALUE, AGENT_POOL_LABEL } from '../../src/api/sandbox.js';
import { AgentFleet } from '../../src/infra/agent-fleet.js';
import { eventually, kube, stackInfo, uniq } from '../support/env.js';
import { processesInGroups } from '../support/processes.js';
import { agentFetch } from '../support/agent-tls.js';

const TOKEN = `fleet-token-${uniq('t')}`;
const k = kube();
const ns = uniq('fleet');
const fleets: AgentFleet[] = [];

async function startFleet(pool: string, count: number): Promise<AgentFleet> {
  const fleet = await AgentFleet.start({
    kube: k,
    namespace: ns,
    pool,
    count,
    capacity: 3,
    agentKey: TOKEN,
    stateDir: stackInfo().stateDir,
  });
  fleets.push(fleet);
  return fleet;
}

async function poolPods(pool: string): Promise<V1Pod[]> {
  const page = await k.listPage<V1Pod>('v1', 'Pod', {
    namespace: ns,
    labelSelector: `${AGENT_APP_LABEL}=${AGENT_APP_VALUE},${AGENT_POOL_LABEL}=${pool}`,
  });
  return page.items;
}

/** What the fast path does: the URL from the Pod alone. */
function urlOf(pod: V1Pod): string {
  const port = pod.spec!.containers.flatMap((c) => c.ports ?? []).find((p) => p.name === 'agent')?.containerPort;
  return `https://${pod.status!.podIP}:${port ?? 5758}`;
}

const ready = (pod: V1Pod | undefined) => pod?.status?.conditions?.find((c) => c.type === 'Ready')?.status;

async function agentStatus(url: string, token: string | null = TOKEN) {
  const res = await agentFetch(TOKEN)(`${url}/api/v1/agent/status`, {
    headers: token === null ? {} : { authorization: `Bearer ${token}` },
  });
  return { status: res.status, body: (await res.json()) as AgentStatusReport };
}

/** A sandbox on the agent that writes its pid to a file and runs until killed. */
async function startSandbox(url: string): Promise<number> {
  const pidFile = path.join(stackInfo().stateDir, `${uniq('sandbox')}.pid`);
  const script = `require('fs').writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); setInterval(() => {}, 1000)`;
  const res = await agentFetch(TOKEN)(`${url}/api/v1/agent/create`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      sandbox: { sandboxId: uniq('sb'), image: 'node:test', command: [process.execPath, '-e', script] },
    }),
  });
  expect(res.status).toBe(200);
  const pid = await eventually('the sandbox pid', async () => Number(await readFile(pidFile, 'utf8')) || undefined);
  await rm(pidFile, { force: true });
  return pid;
}

beforeAll(async () => {
  await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
});

afterAll(async () => {
  for (const f of fleets) await f.stop();
  await k.delete({ apiVersion: 'v1', kind: 'Namespace', name: ns });
});

describe('AgentFleet', () => {
  it('runs each agent as a process behind a Running, Ready Pod the fast path can find and call', async () => {
    const fleet = await startFleet('alpha', 2);
    const pods = await poolPods('alpha');
    expect(pods.map((p) => p.metadata!.name).sort()).toEqual(fleet.agents.map((a) => a.podName).sort());
    const ips = new Set<string>();
    for (const pod of pods) {
      expect(pod.metadata!.labels).toMatchObject({ app: 'sandbox-agent', 'fast-sandbox.io/pool': 'alpha' });
      expect(pod.spec!.nodeName).toBe('local-node');
      expect(pod.status!.phase).toBe('Running');
      expect(pod.status!.podIP).toMatch(/^127\.\d+\.\d+\.\d+$/);
      expect(ready(pod)).toBe('True');
      expect(pod.status!.containerStatuses?.[0]).toMatchObject({ name: 'agent', ready: true, started: true });
      ips.add(pod.status!.podIP!);

      const url = urlOf(pod);
      const ok = await agentStatus(url);
      expect(ok.status).toBe(200);
      expect(ok.body).toMatchObject({ agentId: pod.metadata!.name, nodeName: 'local-node', capacity: 3 });
      expect((await agentStatus(url, null)).status).toBe(401);
      expect((await agentStatus(url, 'wrong')).status).toBe(401);
    }
    expect(ips.size).toBe(2);

    // The token is in a 0600 file only: not on a command line, not in a log.
    for (const a of fleet.agents) {
      const cmdline = await readFile(`/proc/${a.process.pid}/cmdline`, 'utf8');
      expect(cmdline).not.toContain(TOKEN);
      const tokenFile = cmdline.split('\0')[cmdline.split('\0').indexOf('--token-file') + 1]!;
      expect((await stat(tokenFile)).mode & 0o777).toBe(0o600);
      expect(await readFile(a.process.spec.logFile, 'utf8')).not.toContain(TOKEN);
    }
  });

  it('crash() kills the agent and its sandboxes; the Pod stays Running but is no longer Ready', async () => {
    const fleet = await startFleet('crash', 1);
    const agent = fleet.agents[0]!;
    const sandboxPid = await startSandbox(agent.url);
    await fleet.crash(agent.podName);

    expect(agent.process.running).toBe(false);
    expect(processesInGroups([agent.process.pid, sandboxPid])).toEqual([]);
    const pod = await k.get<V1Pod>({ apiVersion: 'v1', kind: 'Pod', namespace: ns, name: agent.podName });
    expect(pod?.status?.phase).toBe('Running');
    expect(ready(pod)).toBe('False');
    expect(pod?.status?.containerStatuses?.[0]).toMatchObject({
      ready: false,
      state: { terminated: { exitCode: 137 } },
    });
    await expect(agentStatus(agent.url)).rejects.toThrow();
  });

  it('addAgent() and remove(): a new Pod appears; a removed agent leaves no Pod and no process', async () => {
    const fleet = await startFleet('grow', 1);
    const added = await fleet.addAgent();
    expect((await poolPods('grow')).map((p) => p.metadata!.name)).toContain(added.podName);
    expect((await agentStatus(added.url)).body.agentId).toBe(added.podName);

    await fleet.remove(added.podName);
    expect((await poolPods('grow')).map((p) => p.metadata!.name)).not.toContain(added.podName);
    expect(processesInGroups([added.process.pid])).toEqual([]);
    expect(fleet.agents.map((a) => a.podName)).not.toContain(added.podName);
  });

  it('stop() leaves no agent, no sandbox process and no Pod', async () => {
    const fleet = await startFleet('stop', 2);
    const sandboxPids = await Promise.all(fleet.agents.map((a) => startSandbox(a.url)));
    const agentPids = fleet.agents.map((a) => a.process.pid);
    expect(processesInGroups([...agentPids, ...sandboxPids]).length).toBeGreaterThan(0);

    await fleet.stop();
    expect(processesInGroups([...agentPids, ...sandboxPids])).toEqual([]);
    expect(await poolPods('stop')).toEqual([]);
    expect(fleet.agents).toEqual([]);
  });
});
