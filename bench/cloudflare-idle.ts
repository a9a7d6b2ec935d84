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
import { randomBytes } from 'node:crypto';
import { CLOUDFLARE_API_VERSION } from '../src/api/cloudflare.js';
import { cloudflareBench, machine, until } from './support.js';

const [N = 500, WINDOW_S = 30, WINDOWS = 3] = process.argv.slice(2).map(Number);
const hex = () => randomBytes(16).toString('hex');
console.log(`# bench/cloudflare-idle.ts N=${N} WINDOW_S=${WINDOW_S} WINDOWS=${WINDOWS}`);
console.log(`# machine: ${machine()}`);

const TOKEN = `op-${hex()}`;
const bench = await cloudflareBench('cloudflare-idle', {
  tokens: [{ token: TOKEN, id: 'operator' }],
  cloudflare: {
    observeIntervalMs: WINDOW_S * 1000,
    // Creating N records fast; the idle windows do not come near this throttle.
    activitiesPerSecond: 50,
  },
});
const { kube, emulator, admin } = bench;
const ns = 'bench-cfi';

try {
  await kube.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  const { accountId, credentials } = await bench.account(TOKEN);
  const zoneName = `z${hex().slice(0, 10)}.example.com`;
  const { zones } = await admin.seed({ zones: [{ name: zoneName, account_id: accountId }] });
  const zoneId = zones[0]!.id;
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
        cloudflare: { credentialsRef: { name: credentials }, domain: zoneName },
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
  await bench.stop();
}
