/**
 * What an idle installation costs in Cloudflare API calls (issue 23, D6): N DNSRecords (N
 * targets, one source each) created and synced, then left alone for WINDOWS windows; the
 * emulator's request log counts the operator's calls in each window. A window is one observation
 * interval (DO_CLOUDFLARE_OBSERVE_INTERVAL), shortened to WINDOW_S seconds so that it stands for
 * Cloudflare's 5-minute window at the default 5-minute interval: the idle work per interval —
 * each target's observation, each source's re-registration after an interval of silence (the
 * watcher passes the interval) — is what happens in 5 minutes. The baseline, in the same run, is
 * the number of targets: one observation GET each per interval.
 *
 * Private local stack (real Temporal, apiserver, etcd), worker and watcher in this process,
 * Cloudflare = the emulator in this process.
 *
 * Usage: npx tsx bench/cloudflare-idle.ts [N=500] [WINDOW_S=30] [WINDOWS=3]
 */
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { CLOUDFLARE_API_VERSION } from '../src/api/cloudflare.js';
import { EmulatorAdmin, startCloudflareEmulator } from '../test/emulators/cloudflare/index.js';
import { loadCloudflareConfig, loadConfig } from '../src/config.js';
import { KubeClient } from '../src/kube/client.js';
import { logger } from '../src/log.js';
import { startWatcher } from '../src/watcher/main.js';
import { writeWorkflowBundle } from '../src/workers/bundle.js';
import { createWorker } from '../src/workers/worker.js';
import { benchStack, machine, until } from './support.js';

const [N = 500, WINDOW_S = 30, WINDOWS = 3] = process.argv.slice(2).map(Number);
const hex = () => randomBytes(16).toString('hex');
console.log(`# bench/cloudflare-idle.ts N=${N} WINDOW_S=${WINDOW_S} WINDOWS=${WINDOWS}`);
console.log(`# machine: ${machine()}`);

const stack = await benchStack('cloudflare-idle');
const kube = KubeClient.fromKubeconfig(stack.info.kubeconfig);
const TOKEN = `op-${hex()}`;
const emulator = await startCloudflareEmulator({
  tokens: [{ token: TOKEN, id: 'operator' }],
  rateLimit: { requests: 1_000_000, windowSeconds: 1 },
});
const admin = new EmulatorAdmin(emulator.url, emulator.adminToken);
const taskQueue = `bench-cfi-${hex().slice(0, 8)}`;
const base = loadConfig(
  {
    temporalAddress: stack.info.temporal.address,
    namespace: stack.info.temporal.namespace,
    taskQueue,
    kubeconfig: stack.info.kubeconfig,
  },
  {},
);
const cfg = {
  ...base,
  cloudflare: {
    ...loadCloudflareConfig({}),
    baseURL: emulator.baseURL,
    observeIntervalMs: WINDOW_S * 1000,
    // Creating N records fast; the idle windows do not come near this throttle.
    activitiesPerSecond: 50,
  },
};
const bundle = path.join(stack.info.stateDir, 'workflow-bundle.js');
await writeWorkflowBundle(bundle);
logger.level = 'warn';
process.env.DO_TEMPORAL_LOG_LEVEL = 'WARN';
const worker = await createWorker(cfg, { workflowBundlePath: bundle });
const running = worker.run();
const watcher = await startWatcher(cfg, { log: logger.child({ role: 'watcher' }) });
const ns = 'bench-cfi';

try {
  await kube.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  const accountId = hex();
  await admin.seed({ accounts: [{ id: accountId }] });
  const zoneName = `z${hex().slice(0, 10)}.example.com`;
  const { zones } = await admin.seed({ zones: [{ name: zoneName, account_id: accountId }] });
  const zoneId = zones[0]!.id;
  await kube.apply({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'cf', namespace: ns },
    stringData: { CLOUDFLARE_API_TOKEN: TOKEN },
  } as never);
  await kube.apply({
    apiVersion: CLOUDFLARE_API_VERSION,
    kind: 'CloudflareCredentials',
    metadata: { name: 'bench-idle' },
    spec: { accountId, authType: 'apiToken', secretRef: { name: 'cf', namespace: ns } },
  });
  const t0 = Date.now();
  for (let i = 0; i < N; i++)
    await kube.apply({
      apiVersion: CLOUDFLARE_API_VERSION,
      kind: 'DNSRecord',
      metadata: { name: `r${i}`, namespace: ns },
      spec: {
        name: `r${i}`,
        type: 'A',
        content: `192.0.2.${(i % 250) + 1}`,
        cloudflare: { credentialsRef: { name: 'bench-idle' }, domain: zoneName },
      },
    });
  // Read from the emulator's memory: the bench's polling must not show in the request log.
  await until(`${N} records in Cloudflare`, () => emulator.store.dnsRecordsOf(zoneId).length >= N, 30 * 60_000, 1000);
  console.log(`${N} DNSRecords created and synced in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  // Settle: the first registrations' reports and status writes, then one whole window unmeasured.
  await new Promise((r) => setTimeout(r, WINDOW_S * 1000));
  const perWindow: number[] = [];
  for (let w = 0; w < WINDOWS; w++) {
    await admin.clearRequests();
    await new Promise((r) => setTimeout(r, WINDOW_S * 1000));
    const log = (await admin.requests()).filter((r) => r.tokenId === 'operator');
    perWindow.push(log.length);
    const byKind = new Map<string, number>();
    for (const r of log) {
      const k = `${r.method} ${r.path.replace(/[0-9a-f]{32}/g, ':id')}`;
      byKind.set(k, (byKind.get(k) ?? 0) + 1);
    }
    console.log(
      `window ${w + 1}: ${log.length} calls (${log.filter((r) => r.status === 429).length} answered 429): ` +
        [...byKind].map(([k, n]) => `${n}× ${k}`).join(', '),
    );
  }
  const mean = perWindow.reduce((a, b) => a + b, 0) / perWindow.length;
  console.log(
    `idle: ${mean.toFixed(0)} calls per window (${N} targets) → ratio ${(mean / N).toFixed(2)} calls per target per ` +
      `observation interval; Cloudflare's budget: 1,200 per 5 min`,
  );
} finally {
  await watcher.stop();
  worker.worker.shutdown();
  await running.catch(() => undefined);
  await emulator.close();
  await stack.stop();
}
