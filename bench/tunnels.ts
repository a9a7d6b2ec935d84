/**
 * Tunnel configuration figures: a tunnel fed by HOSTNAMES Ingresses (one host each) through a
 * TunnelIngressClassConfig, next to a tunnel with one Ingress as the baseline, on a private local
 * stack (real Temporal, apiserver, etcd), the worker and watcher in this process, Cloudflare = the
 * emulator in this process, counted through its request log.
 *
 * 1. Creation: HOSTNAMES Ingresses created at once → time until the configuration holds every
 *    rule, and how many configuration PUTs that took (one per burst is the goal).
 * 2. One Ingress change: ROUNDS times, one Ingress's backend port changed → time until the
 *    configuration in Cloudflare shows it (p50/p99), and the configuration GETs and PUTs per change;
 *    the same on the baseline tunnel in the same run → ratio.
 * 3. A burst: BURST Ingresses changed at once → configuration PUTs for the burst.
 *
 * Usage: npx tsx bench/tunnels.ts [HOSTNAMES=500] [ROUNDS=10] [BURST=50]
 */
import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import { cloudflareBench, hostIngress, machine, percentile, pool, until } from './support.js';

const [HOSTNAMES = 500, ROUNDS = 10, BURST = 50] = process.argv.slice(2).map(Number);
const hex = () => randomBytes(16).toString('hex');
const ms = (n: number) => `${n.toFixed(0)} ms`;

console.log(`# bench/tunnels.ts HOSTNAMES=${HOSTNAMES} ROUNDS=${ROUNDS} BURST=${BURST}`);
console.log(`# machine: ${machine()}`);

const TOKEN = `op-${hex()}`;
const bench = await cloudflareBench('tunnels', { tokens: [{ token: TOKEN, id: 'operator' }] });
const { kube, emulator, admin } = bench;

const rules = (tunnelId: string) => bench.tunnelRules(tunnelId);

const configCalls = async (tunnelId: string) => {
  const log = await admin.requests({ path: `/cfd_tunnel/${tunnelId}/configurations$` });
  return { gets: log.filter((r) => r.method === 'GET').length, puts: log.filter((r) => r.method === 'PUT').length };
};

/** ROUNDS changes of one Ingress's port, each waited for in Cloudflare: latencies and calls per change. */
async function changes(ns: string, tunnelId: string, zoneName: string, count: number) {
  const times: number[] = [];
  const calls: string[] = [];
  for (let r = 1; r <= ROUNDS; r++) {
    const i = r % count;
    const port = 8000 + r;
    await admin.clearRequests();
    const t0 = performance.now();
    await kube.apply(hostIngress(ns, i, zoneName, port));
    await until('the change in Cloudflare', () => rules(tunnelId).some((x) => x.service.endsWith(`svc:${port}`)));
    times.push(performance.now() - t0);
    await new Promise((res) => setTimeout(res, 1500)); // the sync's status writes and any straggler
    const c = await configCalls(tunnelId);
    calls.push(`${c.gets}+${c.puts}`);
  }
  return { times: times.sort((a, b) => a - b), calls };
}

try {
  const { accountId, credentials } = await bench.account(TOKEN);
  const zoneName = `t${hex().slice(0, 8)}.example.com`;
  await admin.seed({ zones: [{ name: zoneName, account_id: accountId }] });

  // The baseline: one Ingress.
  const small = await bench.ingressTunnel('small', credentials, zoneName);
  await kube.apply(hostIngress(small.ns, 0, `small.${zoneName}`));
  await until('the baseline rule', () => rules(small.tunnelId).length === 2);

  // 1. HOSTNAMES Ingresses at once.
  const big = await bench.ingressTunnel('big', credentials, zoneName);
  await admin.clearRequests();
  const t0 = performance.now();
  await pool(
    Array.from({ length: HOSTNAMES }, (_, i) => i),
    8,
    (i) => kube.apply(hostIngress(big.ns, i, zoneName)),
  );
  const applied = performance.now() - t0;
  await until('every rule in Cloudflare', () => rules(big.tunnelId).length === HOSTNAMES + 1, 600_000);
  const converged = performance.now() - t0;
  const created = await configCalls(big.tunnelId);
  await until(
    'every CNAME',
    () =>
      [...emulator.store.dnsRecords.values()]
        .flat()
        .filter((r) => (r as { content?: string }).content === `${big.tunnelId}.cfargotunnel.com`).length === HOSTNAMES,
  ).catch(() => undefined);
  const dnsDone = performance.now() - t0;
  console.log(
    `${HOSTNAMES} Ingresses applied in ${ms(applied)}; every rule in Cloudflare after ${ms(converged)} ` +
      `(${created.puts} configuration PUTs, ${created.gets} GETs); every CNAME after ${ms(dnsDone)}`,
  );

  // 2. One Ingress change, on the big tunnel and on the baseline.
  const onBig = await changes(big.ns, big.tunnelId, zoneName, HOSTNAMES);
  const onSmall = await changes(small.ns, small.tunnelId, `small.${zoneName}`, 1);
  const p = (a: number[], q: number) => percentile(a, q);
  console.log(
    `one Ingress change → Cloudflare, ${HOSTNAMES} hostnames: p50 ${ms(p(onBig.times, 50))} p99 ${ms(p(onBig.times, 99))}; ` +
      `configuration GET+PUT per change ${onBig.calls.join(', ')}`,
  );
  console.log(
    `one Ingress change → Cloudflare, 1 hostname (baseline, same run): p50 ${ms(p(onSmall.times, 50))} p99 ${ms(p(onSmall.times, 99))}; ` +
      `GET+PUT ${onSmall.calls.join(', ')} → ratio p50 ${(p(onBig.times, 50) / p(onSmall.times, 50)).toFixed(2)}×`,
  );

  // 3. A burst of BURST changes.
  await admin.clearRequests();
  const port = 9000;
  const t1 = performance.now();
  await pool(
    Array.from({ length: BURST }, (_, i) => i),
    8,
    (i) => kube.apply(hostIngress(big.ns, i, zoneName, port)),
  );
  await until(
    'the burst in Cloudflare',
    () => rules(big.tunnelId).filter((x) => x.service.endsWith(`svc:${port}`)).length === BURST,
  );
  const burstMs = performance.now() - t1;
  await new Promise((res) => setTimeout(res, 2000));
  const burst = await configCalls(big.tunnelId);
  console.log(
    `burst of ${BURST} Ingress changes: ${burst.puts} configuration PUTs, in Cloudflare after ${ms(burstMs)}`,
  );
} finally {
  await bench.stop();
}
