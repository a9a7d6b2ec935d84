/**
 * What an idle installation costs in Cloudflare API calls (issue 23, D6), per observation
 * interval, against the operator's call budget (issue 23, D7):
 *
 * - DNS: N DNSRecords (N targets, one source each) in one zone;
 * - tunnel: one Tunnel fed by HOSTNAMES Ingresses (one host each) through a
 *   TunnelIngressClassConfig: one configuration target, one CNAME target for the zone.
 *
 * Each on its own Cloudflare account, token and user, so each has its own budget and its calls
 * are counted apart (the emulator's request log, by token). Both are created and synced, one
 * window is left unmeasured, then WINDOWS windows are counted.
 *
 * A window is one observation interval (DO_CLOUDFLARE_OBSERVE_INTERVAL) of WINDOW_S seconds; the
 * sources' silence before they register again follows it (the watcher passes the interval). At
 * WINDOW_S=300 it is Cloudflare's 5-minute window with the default settings. A shorter window
 * compresses time by 300/WINDOW_S, and the budget with it: Cloudflare's 1,200 requests then stand
 * per WINDOW_S seconds, both in the emulator's limit and in the operator's
 * (DO_CLOUDFLARE_API_LIMIT), so the operator's share (DO_CLOUDFLARE_API_SHARE, 0.8) is 960 calls
 * per window either way.
 *
 * Setup is counted apart: records and Ingresses are created 8 at a time, with the operator's
 * budget and the emulator's limit lifted (creating 500 records costs ~3 calls each, ~9 minutes
 * at the real budget); the worker is then started again with the real budget, and the emulator
 * given Cloudflare's limit, before the windows.
 *
 * Private local stack (real Temporal, apiserver, etcd), worker and watcher in this process,
 * Cloudflare = the emulator in this process.
 *
 * Usage: npx tsx bench/cloudflare-idle.ts [N=500] [HOSTNAMES=1500] [WINDOW_S=300] [WINDOWS=1]
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { CLOUDFLARE_API_VERSION } from '../src/api/cloudflare.js';
import type { LoggedRequest } from '../test/emulators/cloudflare/index.js';
import { cloudflareBench, hostIngress, machine, pool, until } from './support.js';

const [N = 500, HOSTNAMES = 1500, WINDOW_S = 300, WINDOWS = 1] = process.argv.slice(2).map(Number);
const hex = () => randomBytes(16).toString('hex');
const LIMIT = 1200;
const SHARE = 0.8;
const seconds = (t0: number) => `${((Date.now() - t0) / 1000).toFixed(0)} s`;
const load = () =>
  os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
console.log(`# bench/cloudflare-idle.ts N=${N} HOSTNAMES=${HOSTNAMES} WINDOW_S=${WINDOW_S} WINDOWS=${WINDOWS}`);
console.log(`# machine: ${machine()}; load average ${load()}`);

const users = {
  dns: { token: `dns-${hex()}`, user: 'dns@bench.example' },
  tunnel: { token: `tun-${hex()}`, user: 'tunnel@bench.example' },
} as const;
const bench = await cloudflareBench('cloudflare-idle', {
  tokens: Object.entries(users).map(([id, u]) => ({ token: u.token, id, user: u.user })),
  // Setup: no budget to speak of (the real one is set before the windows).
  cloudflare: {
    observeIntervalMs: WINDOW_S * 1000,
    apiLimit: { requests: 1_000_000, windowMs: WINDOW_S * 1000 },
  },
});
const { kube, emulator, admin } = bench;

/** Calls of one token: count, 429s, and by endpoint (IDs replaced). */
function calls(log: LoggedRequest[], tokenId: string) {
  const mine = log.filter((r) => r.tokenId === tokenId);
  const byKind = new Map<string, number>();
  for (const r of mine) {
    const k = `${r.method} ${r.path.replace(/[0-9a-f]{32}|[0-9a-f-]{36}/g, ':id')}`;
    byKind.set(k, (byKind.get(k) ?? 0) + 1);
  }
  const kinds = [...byKind].map(([k, n]) => `${n}× ${k}`).join(', ');
  return { n: mine.length, limited: mine.filter((r) => r.status === 429).length, kinds, requests: mine };
}

try {
  const dns = await bench.account(users.dns.token, users.dns.user);
  const tun = await bench.account(users.tunnel.token, users.tunnel.user);
  const dnsZone = `z${hex().slice(0, 10)}.example.com`;
  const tunZone = `t${hex().slice(0, 10)}.example.com`;
  const { zones } = await admin.seed({
    zones: [
      { name: dnsZone, account_id: dns.accountId },
      { name: tunZone, account_id: tun.accountId },
    ],
  });
  const dnsZoneId = zones[0]!.id;
  const tunZoneId = zones[1]!.id;
  const ns = 'bench-cfi';
  await kube.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });

  // --- setup, counted apart ------------------------------------------------------------------------
  const t0 = Date.now();
  const tunnel = await bench.ingressTunnel('idle', tun.credentials, tunZone);
  await Promise.all([
    pool(
      Array.from({ length: N }, (_, i) => i),
      8,
      (i) =>
        kube.apply({
          apiVersion: CLOUDFLARE_API_VERSION,
          kind: 'DNSRecord',
          metadata: { name: `r${i}`, namespace: ns },
          spec: {
            name: `r${i}`,
            type: 'A',
            content: `192.0.2.${(i % 250) + 1}`,
            cloudflare: { credentialsRef: { name: dns.credentials }, domain: dnsZone },
          },
        }),
    ),
    pool(
      Array.from({ length: HOSTNAMES }, (_, i) => i),
      8,
      (i) => kube.apply(hostIngress(tunnel.ns, i, tunZone)),
    ),
  ]);
  console.log(`setup: ${N} DNSRecords and ${HOSTNAMES} Ingresses applied in ${seconds(t0)}`);
  const cnames = () =>
    emulator.store
      .dnsRecordsOf(tunZoneId)
      .filter((r) => (r as { content?: string }).content === `${tunnel.tunnelId}.cfargotunnel.com`).length;
  // Progress from the emulator's memory: the bench's polling shows in no request log.
  const progress = setInterval(() => {
    console.log(
      `setup ${seconds(t0)}: ${emulator.store.dnsRecordsOf(dnsZoneId).length}/${N} records, ` +
        `${bench.tunnelRules(tunnel.tunnelId).length - 1}/${HOSTNAMES} tunnel rules, ${cnames()}/${HOSTNAMES} CNAMEs; load ${load()}`,
    );
  }, 30_000);
  await until(
    'every record, rule and CNAME in Cloudflare',
    () =>
      emulator.store.dnsRecordsOf(dnsZoneId).length >= N &&
      bench.tunnelRules(tunnel.tunnelId).length === HOSTNAMES + 1 &&
      cnames() === HOSTNAMES,
    30 * 60_000,
    1000,
  );
  clearInterval(progress);
  const setup = await admin.requests();
  for (const [id, what] of [
    ['dns', `${N} DNSRecords`],
    ['tunnel', `a tunnel of ${HOSTNAMES} hostnames`],
  ] as const) {
    const c = calls(setup, id);
    console.log(`setup, ${what}: ${c.n} calls (${c.limited} answered 429): ${c.kinds}`);
  }
  console.log(`setup: all in Cloudflare after ${seconds(t0)}; load ${load()}`);

  // --- the real budget, then the windows -----------------------------------------------------------
  const t1 = Date.now();
  await bench.restartWorker({ apiLimit: { requests: LIMIT, windowMs: WINDOW_S * 1000 } });
  await admin.setRateLimit({ requests: LIMIT, windowSeconds: WINDOW_S });
  console.log(
    `worker started again with the budget ${LIMIT}/${WINDOW_S}s × ${SHARE} = ${LIMIT * SHARE} calls per window ` +
      `(in ${seconds(t1)}); one window unmeasured`,
  );
  await new Promise((r) => setTimeout(r, WINDOW_S * 1000));
  const budget = bench.worker.cloudflareAccounts.budget;
  for (let w = 1; w <= WINDOWS; w++) {
    await admin.clearRequests();
    await new Promise((r) => setTimeout(r, WINDOW_S * 1000));
    const log = await admin.requests();
    const d = calls(log, 'dns');
    const observed = new Set(d.requests.filter((r) => r.method === 'GET').map((r) => `${r.path}?${r.query}`)).size;
    console.log(
      `window ${w}, ${N} DNSRecords: ${d.n} calls (${d.limited} answered 429): ${d.kinds}; ` +
        `${observed} distinct reads; ratio ${(d.n / N).toFixed(2)} per target; ${d.n}/${LIMIT * SHARE} of the budget; ` +
        `calls waiting in the budget now ${budget.waiting(`user:${users.dns.user}`)}; load ${load()}`,
    );
    const t = calls(log, 'tunnel');
    console.log(
      `window ${w}, tunnel of ${HOSTNAMES} hostnames: ${t.n} calls (${t.limited} answered 429): ${t.kinds}; ` +
        `ratio ${(t.n / HOSTNAMES).toFixed(4)} per hostname; ${t.n}/${LIMIT * SHARE} of the budget; ` +
        `calls waiting in the budget now ${budget.waiting(`user:${users.tunnel.user}`)}`,
    );
  }
} finally {
  await bench.stop();
}
