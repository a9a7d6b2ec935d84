/**
 * Cloudflare aggregation figures: API calls per sync, a burst of source changes to one target,
 * aggregating many sources into one ruleset, and many targets converging under a 429-limited
 * token — on a private local stack (real Temporal, apiserver, etcd), the worker and watcher in
 * this process, Cloudflare = the emulator in this process, counted through its request log.
 *
 * 1. Calls per sync: ROUNDS changes of one ZoneRuleset's expression, each waited for → GETs and
 *    writes per sync; then ROUNDS `reaggregate` signals with nothing changed → writes per no-op.
 *    1b. The same for DNSRecord, CloudflareDomain, GatewayConfiguration, AccessGroup and
 *    VirtualNetwork: GETs and writes on the kind's API path per change and per no-op.
 * 2. Burst: BURST spec updates of one ZoneRuleset as fast as the apiserver takes them, ROUNDS
 *    times → writes per burst; time from the last update to Cloudflare showing it (p50/p99).
 * 3. Aggregation (in process, pure): SOURCES sources × ITEMS rules into one entrypoint next to
 *    20 external rules — time of the aggregation and merge, bytes of the write — side by side
 *    with a JSON round trip of the same rules (the floor any implementation pays).
 * 4. Convergence: TARGETS zones with one ZoneRuleset each, created at once, until every rule is
 *    in Cloudflare — with Cloudflare's own budget (1,200 requests / 5 min) and then with a token
 *    limited to 20 requests / 10 s (429 + Retry-After), each on its own account; the operator's
 *    own throttle is the default call budget of each credentials' owner (0.8 × 1,200 per 5 min).
 *
 * Usage: npx tsx bench/cloudflare.ts [BURST=100] [ROUNDS=5] [SOURCES=1000] [ITEMS=10] [TARGETS=50]
 */
import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import { CLOUDFLARE_API_VERSION } from '../src/api/cloudflare.js';
import { desiredRules, type RegisteredSource } from '../src/domain/cloudflare/aggregate.js';
import { rulesetRuleCodec, type RulesetRule } from '../src/domain/cloudflare/items.js';
import { planWrite } from '../src/domain/cloudflare/merge.js';
import { syncWorkflowId, type SyncTarget } from '../src/domain/cloudflare/targets.js';
import { connectClient } from '../src/temporal/connection.js';
import { cloudflareBench, machine, percentile, prng, until } from './support.js';

const [BURST = 100, ROUNDS = 5, SOURCES = 1000, ITEMS = 10, TARGETS = 50] = process.argv.slice(2).map(Number);
const PHASE = 'http_request_firewall_custom';
const hex = () => randomBytes(16).toString('hex');
const ms = (n: number) => `${n.toFixed(1)} ms`;

console.log(
  `# bench/cloudflare.ts BURST=${BURST} ROUNDS=${ROUNDS} SOURCES=${SOURCES} ITEMS=${ITEMS} TARGETS=${TARGETS}`,
);
console.log(`# machine: ${machine()}`);

// --- 3. Aggregation, pure (first: no stack running) --------------------------------------------
{
  const rand = prng(7);
  const sources: RegisteredSource[] = Array.from({ length: SOURCES }, (_, i) => ({
    ref: { kind: 'ZoneRuleset', namespace: `team-${i % 50}`, name: `rules-${i}` },
    uid: `uid-${i}`,
    generation: 1,
    createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
    priority: [10, 50, 100, 200][Math.floor(rand() * 4)]!,
    config: {
      rules: Array.from({ length: ITEMS }, (_, j) => ({
        action: 'block',
        expression: `ip.src in {10.${i % 256}.${j}.0/24} and http.host eq "app-${i}.example.com"`,
        description: `rule ${j} of source ${i}`,
        enabled: true,
      })),
    },
  }));
  const external: RulesetRule[] = Array.from({ length: 20 }, (_, i) => ({
    id: hex(),
    action: 'block',
    expression: `ip.src eq 192.0.2.${i}`,
    description: `Manual rule ${i} by admin`,
    enabled: true,
  }));
  const opts = { clusterId: 'default', adoptLegacy: false };
  // Live = what the previous sync wrote (ours, with ids) + external: the steady-state merge.
  const first = planWrite(external, desiredRules(sources, 'default'), rulesetRuleCodec, opts);
  const live = first.items.map((r) => ({ ...r, id: r.id ?? hex(), version: '1' }));
  const times: number[] = [];
  const floor: number[] = [];
  let bytes = 0;
  let writes = 0;
  for (let round = 0; round < 7; round++) {
    // One source changed, as after an edit: the merge must find and write it.
    const changed = sources.map((s, i) =>
      i === round ? { ...s, config: { rules: [{ action: 'block', expression: `ip.src eq 198.51.100.${round}` }] } } : s,
    );
    const t0 = performance.now();
    const plan = planWrite(live, desiredRules(changed, 'default'), rulesetRuleCodec, opts);
    const body = JSON.stringify({ rules: plan.items });
    times.push(performance.now() - t0);
    bytes = body.length;
    writes += plan.write ? 1 : 0;
    const t1 = performance.now();
    JSON.parse(JSON.stringify({ rules: live }));
    floor.push(performance.now() - t1);
  }
  const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
  console.log(
    `aggregation ${SOURCES}×${ITEMS} (+20 external): ${ms(med(times))} per sync (median of 7), ` +
      `write body ${(bytes / 1024).toFixed(0)} KiB, ${writes}/7 wrote; JSON round trip of the same rules ${ms(med(floor))} ` +
      `→ ratio ${(med(times) / med(floor)).toFixed(1)}×`,
  );
}

// --- the stack -----------------------------------------------------------------------------------
const OP_TOKEN = `op-${hex()}`;
const LIMITED_TOKEN = `limited-${hex()}`;
// The default throttle: the call budget of each credentials' owner.
const bench = await cloudflareBench('cloudflare', {
  tokens: [
    { token: OP_TOKEN, id: 'operator' },
    { token: LIMITED_TOKEN, id: 'limited' },
  ],
});
const { kube, emulator, admin, cfg } = bench;
const temporal = await connectClient(cfg.temporal);
const ns = 'bench-cf';
await kube.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });

async function zone(accountId: string): Promise<{ zoneId: string; zoneName: string }> {
  const zoneName = `z${hex().slice(0, 10)}.example.com`;
  const { zones } = await admin.seed({ zones: [{ name: zoneName, account_id: accountId }] });
  return { zoneId: zones[0]!.id, zoneName };
}

const ruleset = (name: string, zoneName: string, credentials: string, expression: string) => ({
  apiVersion: CLOUDFLARE_API_VERSION,
  kind: 'ZoneRuleset',
  metadata: { name, namespace: ns },
  spec: {
    zone: zoneName,
    phase: PHASE,
    credentialsRef: { name: credentials },
    rules: [{ expression, action: 'block' }],
  },
});

/**
 * The entrypoint's expressions, read from the emulator's memory: the bench's own polling must not
 * spend the token budgets it measures nor appear in the request log.
 */
async function expressions(zoneId: string): Promise<string[]> {
  return (emulator.store.getEntrypoint('zones', zoneId, PHASE)?.rules ?? []).map((r) => r.expression);
}

const operatorCalls = (log: { method: string; tokenId?: string }[]) => {
  const mine = log.filter((r) => r.tokenId === 'operator');
  return { gets: mine.filter((r) => r.method === 'GET').length, writes: mine.filter((r) => r.method !== 'GET').length };
};

try {
  const main = await bench.account(OP_TOKEN);

  // --- 1. calls per sync -----------------------------------------------------------------------
  {
    const { zoneId, zoneName } = await zone(main.accountId);
    const name = 'calls';
    await kube.apply(ruleset(name, zoneName, main.credentials, 'ip.src eq 198.51.100.0'));
    await until('first sync', async () => (await expressions(zoneId)).includes('ip.src eq 198.51.100.0'));
    await new Promise((r) => setTimeout(r, 1500)); // let the first round's status writes settle
    const path = `^/zones/${zoneId}/rulesets`;
    const perChange: string[] = [];
    for (let i = 1; i <= ROUNDS; i++) {
      await admin.clearRequests();
      const expr = `ip.src eq 198.51.100.${i}`;
      await kube.mergePatch(
        { apiVersion: CLOUDFLARE_API_VERSION, kind: 'ZoneRuleset', namespace: ns, name },
        { spec: { rules: [{ expression: expr, action: 'block' }] } },
      );
      await until('change synced', async () => (await expressions(zoneId)).includes(expr));
      await new Promise((r) => setTimeout(r, 1000));
      const c = operatorCalls(await admin.requests({ path }));
      perChange.push(`${c.gets} GET + ${c.writes} write`);
    }
    const handle = temporal.workflow.getHandle(
      syncWorkflowId({ resourceType: 'ZoneRuleset', accountId: main.accountId, zoneId, phase: PHASE }),
    );
    const perNoop: string[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      await admin.clearRequests();
      await handle.signal('reaggregate');
      await until('re-aggregation GET', async () => operatorCalls(await admin.requests({ path })).gets > 0, 30_000, 20);
      await new Promise((r) => setTimeout(r, 1000));
      const c = operatorCalls(await admin.requests({ path }));
      perNoop.push(`${c.gets} GET + ${c.writes} write`);
    }
    console.log(`calls per sync after a change: ${perChange.join(', ')}`);
    console.log(`calls per no-op re-aggregation: ${perNoop.join(', ')}`);
  }

  // --- 1b. calls per sync, every other kind -------------------------------------------------------
  {
    const { zoneId, zoneName } = await zone(main.accountId);
    const acct = main.accountId;
    const creds = { name: main.credentials };
    type Case = {
      kind: string;
      namespaced: boolean;
      spec: (i: number) => Record<string, unknown>;
      target: SyncTarget;
      path: string;
    };
    const cases: Case[] = [
      {
        kind: 'DNSRecord',
        namespaced: true,
        spec: (i) => ({
          name: 'www',
          type: 'A',
          content: `192.0.2.${i + 1}`,
          cloudflare: { credentialsRef: creds, domain: zoneName },
        }),
        target: {
          resourceType: 'DNSRecord',
          accountId: acct,
          zoneId,
          zone: zoneName,
          name: `www.${zoneName}`,
          type: 'A',
        },
        path: `^/zones/${zoneId}/dns_records`,
      },
      {
        kind: 'CloudflareDomain',
        namespaced: false,
        spec: (i) => ({
          domain: zoneName,
          credentialsRef: creds,
          ssl: { minTLSVersion: i % 2 ? '1.2' : '1.3' },
          security: { level: 'high' },
        }),
        target: { resourceType: 'CloudflareDomain', accountId: acct, zoneId },
        path: `^/zones/${zoneId}/settings`,
      },
      {
        kind: 'GatewayConfiguration',
        namespaced: false,
        spec: (i) => ({ settings: { tlsDecrypt: { enabled: i % 2 === 0 } }, cloudflare: { credentialsRef: creds } }),
        target: { resourceType: 'GatewayConfiguration', accountId: acct },
        path: `^/accounts/${acct}/gateway`,
      },
      {
        kind: 'AccessGroup',
        namespaced: false,
        spec: (i) => ({
          name: 'bench-group',
          include: [{ emailDomain: { domain: `d${i}.example.com` } }],
          cloudflare: { credentialsRef: creds },
        }),
        target: { resourceType: 'AccessGroup', accountId: acct, name: 'bench-group' },
        path: `^/accounts/${acct}/access/groups`,
      },
      {
        kind: 'VirtualNetwork',
        namespaced: false,
        spec: (i) => ({ name: 'bench-net', comment: `round ${i}`, cloudflare: { credentialsRef: creds } }),
        target: { resourceType: 'VirtualNetwork', accountId: acct, name: 'bench-net' },
        path: `^/accounts/${acct}/teamnet/virtual_networks`,
      },
    ];
    for (const c of cases) {
      const ref = {
        apiVersion: CLOUDFLARE_API_VERSION,
        kind: c.kind,
        name: `calls-${c.kind.toLowerCase()}`,
        ...(c.namespaced ? { namespace: ns } : {}),
      };
      const object = (i: number) => ({
        apiVersion: ref.apiVersion,
        kind: ref.kind,
        metadata: { name: ref.name, ...(c.namespaced ? { namespace: ns } : {}) },
        spec: c.spec(i),
      });
      // Synced for the current generation, as the source's own status says (read from the apiserver, not Cloudflare).
      const synced = async () => {
        const o = (await kube.get(ref)) as
          | {
              metadata?: { generation?: number };
              status?: { conditions?: { type: string; reason: string; observedGeneration?: number }[] };
            }
          | undefined;
        const ready = o?.status?.conditions?.find((x) => x.type === 'Ready');
        return ready?.reason === 'Synced' && ready.observedGeneration === o?.metadata?.generation;
      };
      await kube.apply(object(0));
      await until(`${c.kind} first sync`, synced);
      await new Promise((r) => setTimeout(r, 1500));
      const perChange: string[] = [];
      for (let i = 1; i <= ROUNDS; i++) {
        await admin.clearRequests();
        await kube.apply(object(i));
        await new Promise((r) => setTimeout(r, 300)); // the new generation before Synced is looked for
        await until(`${c.kind} change synced`, synced);
        await new Promise((r) => setTimeout(r, 1000));
        const n = operatorCalls(await admin.requests({ path: c.path }));
        perChange.push(`${n.gets}+${n.writes}`);
      }
      const handle = temporal.workflow.getHandle(syncWorkflowId(c.target));
      const perNoop: string[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        await admin.clearRequests();
        await handle.signal('reaggregate');
        await until(
          're-aggregation GET',
          async () => operatorCalls(await admin.requests({ path: c.path })).gets > 0,
          30_000,
          20,
        );
        await new Promise((r) => setTimeout(r, 1000));
        const n = operatorCalls(await admin.requests({ path: c.path }));
        perNoop.push(`${n.gets}+${n.writes}`);
      }
      console.log(
        `${c.kind}: GET+write per sync after a change: ${perChange.join(', ')}; per no-op re-aggregation: ${perNoop.join(', ')}`,
      );
      await kube.delete(ref);
    }
  }

  // --- 2. burst -----------------------------------------------------------------------------------
  {
    const { zoneId, zoneName } = await zone(main.accountId);
    const name = 'burst';
    await kube.apply(ruleset(name, zoneName, main.credentials, 'ip.src eq 203.0.113.0'));
    await until('first sync', async () => (await expressions(zoneId)).includes('ip.src eq 203.0.113.0'));
    await new Promise((r) => setTimeout(r, 1500));
    const reflect: number[] = [];
    const writes: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      await admin.clearRequests();
      let last = '';
      for (let i = 0; i < BURST; i++) {
        last = `ip.src eq 203.0.${round + 1}.${i % 256} and http.request.uri.path eq "/${i}"`;
        await kube.mergePatch(
          { apiVersion: CLOUDFLARE_API_VERSION, kind: 'ZoneRuleset', namespace: ns, name },
          { spec: { rules: [{ expression: last, action: 'block' }] } },
        );
      }
      const t0 = performance.now();
      await until('last change in Cloudflare', async () => (await expressions(zoneId)).includes(last), 120_000, 5);
      reflect.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, 1500));
      writes.push(operatorCalls(await admin.requests({ path: `^/zones/${zoneId}/rulesets` })).writes);
    }
    const s = [...reflect].sort((a, b) => a - b);
    console.log(
      `burst of ${BURST} updates × ${ROUNDS}: writes per burst ${writes.join(', ')}; last update → in Cloudflare ` +
        `p50 ${ms(percentile(s, 50))} p99 ${ms(percentile(s, 99))}`,
    );
  }

  // --- 4. convergence of many targets -------------------------------------------------------------
  for (const [label, token, budget] of [
    ['Cloudflare budget (1200/300s)', OP_TOKEN, undefined],
    [
      '429-limited token (20/10s, below the operator’s own throttle)',
      LIMITED_TOKEN,
      { requests: 20, windowSeconds: 10 },
    ],
  ] as const) {
    const acct = await bench.account(token);
    const zones = await Promise.all(Array.from({ length: TARGETS }, () => zone(acct.accountId)));
    await admin.setRateLimit(budget ?? { requests: 1200, windowSeconds: 300 });
    await admin.clearRequests();
    const t0 = performance.now();
    await Promise.all(
      zones.map((z, i) =>
        kube.apply(ruleset(`conv-${label.length}-${i}`, z.zoneName, acct.credentials, `ip.src eq 192.0.2.${i % 256}`)),
      ),
    );
    let done = 0;
    await until(
      'every target converged',
      async () => {
        const results = await Promise.all(zones.map(async (z) => (await expressions(z.zoneId)).length === 1));
        done = results.filter(Boolean).length;
        return done === zones.length;
      },
      900_000,
      250,
    );
    const elapsed = performance.now() - t0;
    const log = await admin.requests();
    const tag = budget ? 'limited' : 'operator';
    const mine = log.filter((r) => r.tokenId === tag);
    console.log(
      `${TARGETS} targets at once, ${label}: converged in ${(elapsed / 1000).toFixed(1)} s; ` +
        `${mine.length} operator calls, ${mine.filter((r) => r.status === 429).length} answered 429`,
    );
    await admin.setRateLimit({ requests: 1_000_000, windowSeconds: 1 });
  }
} finally {
  await temporal.connection.close();
  await bench.stop();
}
