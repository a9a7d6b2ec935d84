/**
 * `durable-operators dev` as a user runs it: it starts everything, Ctrl-C stops everything, and
 * running it again picks up the same cluster state and the same running workflows.
 */
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { KubernetesObject } from '@kubernetes/client-node';
import Cloudflare from 'cloudflare';
import { afterAll, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import type { ObjectKeeper } from '../../src/api/objectkeeper.js';
import { SandboxKind, SandboxPoolKind, type Sandbox, type SandboxPool } from '../../src/api/sandbox.js';
import { DEV_CLOUDFLARE } from '../../src/cli/dev.js';
import { loadConfig } from '../../src/config.js';
import { objectKeeperWorkflowId } from '../../src/domain/objectkeeper.js';
import { ManagedProcess, isAlive } from '../../src/infra/process.js';
import { readStackInfo } from '../../src/infra/stack.js';
import { KubeClient } from '../../src/kube/client.js';
import { defaultClusterId } from '../../src/kube/cluster-identity.js';
import { connectClient } from '../../src/temporal/connection.js';
import { REPO_ROOT, eventually, uniq } from '../support/env.js';

const stateDir = path.join(REPO_ROOT, '.state', 'test-dev');
let dev: ManagedProcess | undefined;

function startDev(run: number): ManagedProcess {
  const logFile = path.join(REPO_ROOT, '.state', `test-dev-run${run}.log`);
  rmSync(logFile, { force: true }); // logs append; a previous run's "is running" must not count
  return ManagedProcess.start({
    name: 'dev',
    command: process.execPath,
    args: ['--import', 'tsx', path.join(REPO_ROOT, 'src/cli/main.ts'), 'dev', '--state-dir', stateDir],
    cwd: REPO_ROOT,
    logFile,
  });
}

/** Every descendant of `pid` (children, grandchildren, …). */
function descendants(pid: number): number[] {
  const parentOf = new Map<number, number>();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      parentOf.set(Number(e), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      /* gone */
    }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const [child, parent] of parentOf) {
      if (parent !== p) continue;
      out.push(child);
      walk(child);
    }
  };
  walk(pid);
  return out;
}

async function untilRunning(proc: ManagedProcess): Promise<void> {
  await eventually(
    'dev to report it is running',
    async () => {
      if (!proc.running) throw new Error(`dev exited:\n${proc.logTail(30)}`);
      return readFileSync(proc.spec.logFile, 'utf8').includes('durable-operators dev is running');
    },
    { timeoutMs: 180_000, intervalMs: 500 },
  );
}

/** Ctrl-C as a terminal sends it: SIGINT to the foreground process group. */
async function ctrlC(proc: ManagedProcess): Promise<number[]> {
  const tree = descendants(proc.pid);
  expect(tree.length).toBeGreaterThanOrEqual(11); // 5 servers + worker + watcher + fastpath + 2 agents + emulator (+ tsx)
  process.kill(-proc.pid, 'SIGINT');
  await proc.exited;
  return tree;
}

afterAll(async () => {
  await dev?.stop();
});

it('starts everything, stops everything on Ctrl-C, and a second run resumes the same state', async () => {
  await rm(stateDir, { recursive: true, force: true });
  dev = startDev(1);
  await untilRunning(dev);
  const info = (await readStackInfo(stateDir))!;
  const kube = KubeClient.fromKubeconfig(info.kubeconfig);
  const temporal = await connectClient(loadConfig({ temporalAddress: info.temporal.address }, {}).temporal);
  const keeper = await kube.create<ObjectKeeper>({
    apiVersion: 'deckhouse.io/v1alpha1',
    kind: 'ObjectKeeper',
    metadata: { name: uniq('dev') },
    spec: { mode: 'TTL', ttl: '1h' },
  });
  const handle = temporal.workflow.getHandle(objectKeeperWorkflowId(keeper.metadata!.name!, keeper.metadata!.uid!));
  await eventually(
    'keeper WaitingTTL',
    async () =>
      (await kube.get<ObjectKeeper>({ apiVersion: keeper.apiVersion, kind: keeper.kind, name: keeper.metadata!.name! }))
        ?.status?.phase === 'WaitingTTL',
    { timeoutMs: 120_000 },
  );
  const { runId } = await handle.describe();
  await temporal.connection.close();

  // The fast path and its default pool: the curl dev prints creates a sandbox that runs.
  const httpBase = /HTTP {2}(http:\/\/127\.0\.0\.1:\d+)\/api\/v1\/sandboxes/.exec(
    readFileSync(dev.spec.logFile, 'utf8'),
  )?.[1];
  expect(httpBase, 'dev prints the fast path’s HTTP address').toBeDefined();
  // Sandboxes are containers of the stack's containerd, from the demo image dev pushed to its registry.
  const demoImage = /runtime containerd\/runc .*demo image (\S+),/.exec(readFileSync(dev.spec.logFile, 'utf8'))?.[1];
  expect(demoImage, 'dev says it runs containerd and prints the demo image').toBeDefined();
  // The demo tenant has an API key (dev prints it): without it the fast path refuses.
  const apiKey = /API key of tenant 1001: (\S+)/.exec(readFileSync(dev.spec.logFile, 'utf8'))?.[1];
  expect(apiKey, 'dev prints the demo tenant’s API key').toBeDefined();
  const name = uniq('dev-sb');
  const created = await eventually('a sandbox created through the printed HTTP face', async () => {
    const res = await fetch(`${httpBase}/api/v1/sandboxes`, {
      method: 'POST',
      headers: { 'x-tenant-id': '1001', authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({ name, image: demoImage, poolRef: 'default-pool' }), // the image's own entrypoint
    }).catch(() => undefined);
    return res?.status === 201 ? ((await res.json()) as { agentPod: string }) : undefined;
  });
  // (The fast path serves by now.)
  const keyless = await fetch(`${httpBase}/api/v1/namespaces/default/sandboxes`, {
    headers: { 'x-tenant-id': '1001' },
  });
  expect(keyless.status).toBe(401);
  await eventually('the sandbox Running on a default-pool agent', async () => {
    const sb = await kube.get<Sandbox>({
      apiVersion: SandboxKind.apiVersion,
      kind: SandboxKind.kind,
      namespace: 'default',
      name,
    });
    // `kubectl get sandboxes -o wide` shows what runs it.
    return (
      sb?.status?.phase === 'Running' &&
      sb.status.assignedPod === created.agentPod &&
      sb.status.runtime === 'containerd/runc'
    );
  });

  // Any other pool's agent Pods run too (dev plays the kubelet for every pool): its size is real.
  const teamPool = uniq('team-pool');
  await kube.create({
    apiVersion: SandboxPoolKind.apiVersion,
    kind: SandboxPoolKind.kind,
    metadata: { name: teamPool, namespace: 'default' },
    spec: {
      capacity: { poolMin: 1, poolMax: 2, bufferMin: 0, bufferMax: 2 },
      maxSandboxesPerPod: 2,
      agentTemplate: {},
    },
  } as never);
  await eventually(
    `pool ${teamPool} has a ready agent`,
    async () =>
      (
        await kube.get<SandboxPool>({
          apiVersion: SandboxPoolKind.apiVersion,
          kind: SandboxPoolKind.kind,
          namespace: 'default',
          name: teamPool,
        })
      )?.status?.readyPods === 1,
    { timeoutMs: 120_000 },
  );

  // Cloudflare: the example ZoneRulesets, applied as they ship, reach the printed emulator.
  const printed = readFileSync(dev.spec.logFile, 'utf8');
  const baseURL = /API base URL {2}(\S+)/.exec(printed)?.[1];
  const apiToken = /API token {5}(\S+)/.exec(printed)?.[1];
  expect(baseURL && apiToken, 'dev prints the emulator’s base URL and token').toBeTruthy();
  for (const example of ['zone-rulesets.yaml', 'dns-records.yaml'])
    for (const doc of parseAllDocuments(
      readFileSync(path.join(REPO_ROOT, 'deploy/examples/cloudflare', example), 'utf8'),
    ))
      await kube.apply(doc.toJS() as KubernetesObject);
  const cf = new Cloudflare({ apiToken: apiToken!, baseURL: baseURL!, maxRetries: 2 });
  const rules = await eventually('both example teams’ rules in the emulator', async () => {
    const rs = (await cf.rulesets.phases
      .get('http_request_firewall_custom', { zone_id: DEV_CLOUDFLARE.zoneId })
      .catch(() => undefined)) as { rules?: { description?: string }[] } | undefined;
    return rs?.rules?.length === 2 ? rs.rules : undefined;
  });
  // The cluster's id in ownership markers: derived from kube-system's UID (DO_CLUSTER_ID unset, as dev runs).
  const cluster = await defaultClusterId(kube);
  expect(rules.map((r) => r.description)).toEqual([
    `Team A blocks 1.2.3.0/24 [managed-by:${cluster}:ZoneRuleset/default/waf-rules-team-a]`,
    `Team B blocks 5.6.7.0/24 [managed-by:${cluster}:ZoneRuleset/default/waf-rules-team-b]`,
  ]);
  const records = await eventually('the example DNS records in the emulator', async () => {
    const out: string[] = [];
    for await (const r of cf.dns.records.list({ zone_id: DEV_CLOUDFLARE.zoneId }))
      out.push(`${r.type} ${r.name} ${r.comment ?? ''}`.trim());
    return out.length === 4 ? out.sort() : undefined;
  });
  expect(records).toEqual([
    `CNAME www.example.com Managed by durable-operators [managed-by:${cluster}:DNSRecord/default/www]`,
    `MX example.com [managed-by:${cluster}:DNSRecord/default/mail]`,
    `SRV _sip._tcp.example.com [managed-by:${cluster}:DNSRecord/default/sip]`,
    `TXT example.com [managed-by:${cluster}:DNSRecord/default/spf]`,
  ]);

  const tree = await ctrlC(dev);
  expect(readFileSync(dev.spec.logFile, 'utf8')).toContain('stopped.');
  expect(tree.filter(isAlive)).toEqual([]);

  // Second run: same state dir, so the same cluster objects and the same running workflow.
  dev = startDev(2);
  await untilRunning(dev);
  const info2 = (await readStackInfo(stateDir))!;
  const kube2 = KubeClient.fromKubeconfig(info2.kubeconfig);
  const again = await kube2.get<ObjectKeeper>({
    apiVersion: keeper.apiVersion,
    kind: keeper.kind,
    name: keeper.metadata!.name!,
  });
  expect(again?.metadata?.uid).toBe(keeper.metadata!.uid);
  const temporal2 = await connectClient(loadConfig({ temporalAddress: info2.temporal.address }, {}).temporal);
  const desc = await temporal2.workflow.getHandle(handle.workflowId).describe();
  expect(desc.runId).toBe(runId);
  expect(desc.status.name).toBe('RUNNING');
  await temporal2.connection.close();

  const tree2 = await ctrlC(dev);
  dev = undefined;
  expect(tree2.filter(isAlive)).toEqual([]);
});
