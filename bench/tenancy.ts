/**
 * Tenant provider benchmarks, on a private real etcd (same binary and flags as the local
 * stack's tenant etcd):
 *   1. load: TENANTS tenants × 6 keys written to etcd, then TenantProvider.start() timed (paged
 *      read + parse + indexes) and the heap the snapshot retains.
 *   2. getter and resolution throughput on one core (Node runs them on one thread), against the
 *      loaded provider.
 *   3. etcd put → visible to readers: a meta put, timed until the provider's snapshot shows it,
 *      one put at a time, with TENANTS tenants loaded (every change rebuilds the indexes).
 * Usage: npx tsx bench/tenancy.ts [TENANTS=10000] [PUTS=1000]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { Etcd3 } from 'etcd3';
import { findBinary } from '../src/infra/binaries.js';
import { Etcd } from '../src/infra/components.js';
import { getFreePort } from '../src/infra/process.js';
import { logger } from '../src/log.js';
import { createEtcdClient, listPrefix } from '../src/tenancy/etcd.js';
import { TenantProvider } from '../src/tenancy/provider.js';
import { resolveHttpTenant, type HttpRequestLike } from '../src/tenancy/resolve.js';
import { buildSnapshot, type TenantSnapshot } from '../src/tenancy/snapshot.js';
import { machine, pool, summary } from './support.js';

const TENANTS = Number(process.argv[2] ?? 10_000);
const PUTS = Number(process.argv[3] ?? 1000);
const PREFIX = 'jxt/';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;
const quiet = logger.child({ component: 'tenancy', bench: true });
quiet.level = 'error';

function heapAfterGc(): number {
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed;
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

/** The 6 keys of tenant `id`. */
function tenantKeys(id: number): Array<[string, string]> {
  const code = `t${id}`;
  return [
    [`tenants/${id}/meta`, JSON.stringify({ id, code, name: `Tenant ${id}`, status: 'active', billingPlan: 'pro' })],
    [
      `tenants/${id}/database/evidence-command`,
      JSON.stringify({
        tenantId: id,
        serviceCode: 'evidence-command',
        driver: 'postgres',
        host: `db-${id % 16}.internal`,
        port: 5432,
        database: `ev_${id}`,
        username: `u${id}`,
        password: 'c2VjcmV0LXBhc3N3b3Jk',
        sslMode: 'require',
        maxOpenConns: 20,
        maxIdleConns: 5,
        passwordEncrypted: true,
      }),
    ],
    [
      `tenants/${id}/ftp/${code}-ftp`,
      JSON.stringify({
        tenantId: id,
        username: `${code}-ftp`,
        passwordHash: '$2a$10$abcdefghijklmnopqrstuv',
        description: 'uploads',
        status: 'active',
        homeDirectory: `/data/${code}`,
        writePermission: true,
      }),
    ],
    [
      `tenants/${id}/storage`,
      JSON.stringify({ tenantId: id, quotaBytes: 10 * 2 ** 30, maxFileSizeBytes: 2 ** 29, maxConcurrentUploads: 4 }),
    ],
    [`tenants/${id}/domain/primary`, `${code}.example.com`],
    [`tenants/${id}/domain/aliases`, JSON.stringify([`www.${code}.example.com`, `${code}.example.org`])],
  ];
}

/** ops/s of `fn` over `iterations` calls, after a warm-up; `sink` keeps the work from being optimized away. */
function throughput(label: string, iterations: number, fn: (i: number) => number): string {
  let sink = 0;
  for (let i = 0; i < Math.min(iterations, 200_000); i++) sink += fn(i);
  const t0 = performance.now();
  for (let i = 0; i < iterations; i++) sink += fn(i);
  const seconds = (performance.now() - t0) / 1000;
  if (sink === 0.5) console.log('unreachable'); // observable use of the sink
  return `${label}: ${(iterations / seconds / 1e6).toFixed(1)} M/s (${Math.round((seconds * 1e9) / iterations)} ns/op)`;
}

async function writeTenants(client: Etcd3, count: number): Promise<void> {
  // etcd allows 128 operations per transaction by default: 21 tenants × 6 keys per transaction.
  const batches: number[][] = [];
  for (let id = 1; id <= count; id += 21)
    batches.push(Array.from({ length: Math.min(21, count - id + 1) }, (_, i) => id + i));
  await pool(batches, 4, async (ids) => {
    const ops = ids.flatMap((id) => tenantKeys(id).map(([k, v]) => client.put(PREFIX + k).value(v)));
    await client
      .if(`${PREFIX}bench/none`, 'Version', '==', 0)
      .then(...ops)
      .commit();
  });
}

const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-tenancy-'));
const binary = findBinary('etcd');
if (!binary) throw new Error('etcd not provisioned: run `npm run infra`');
const etcd = await Etcd.start({
  name: 'bench-tenancy',
  binary: binary.path,
  dataDir: path.join(dir, 'data'),
  clientPort: await getFreePort(),
  peerPort: await getFreePort(),
  logFile: path.join(dir, 'etcd.log'),
});
const client = createEtcdClient(etcd.endpoint);
let provider: TenantProvider | undefined;
try {
  console.log(`machine: ${machine()}; etcd ${binary.version ?? '?'} (--unsafe-no-fsync, as the local stack runs it)`);
  console.log(`command: npx tsx bench/tenancy.ts ${TENANTS} ${PUTS}`);

  // 1. Load.
  let t = performance.now();
  await writeTenants(client, TENANTS);
  console.log(
    `\n1. load — wrote ${TENANTS} tenants × 6 keys in ${((performance.now() - t) / 1000).toFixed(1)} s (setup, not measured)`,
  );
  const listTimes: number[] = [];
  for (let i = 0; i < 3; i++) {
    t = performance.now();
    const listing = await listPrefix(client, PREFIX);
    listTimes.push(performance.now() - t);
    if (listing.kvs.length !== TENANTS * 6) throw new Error(`listed ${listing.kvs.length} keys`);
  }
  console.log(summary(`   paged prefix read alone (${TENANTS * 6} keys)`, listTimes));
  const startTimes: number[] = [];
  let retained = 0;
  for (let i = 0; i < 3; i++) {
    await provider?.stop();
    provider = undefined;
    const before = heapAfterGc();
    t = performance.now();
    provider = await TenantProvider.start({ endpoints: etcd.endpoint, prefix: PREFIX, logger: quiet });
    startTimes.push(performance.now() - t);
    retained = heapAfterGc() - before;
    if (provider.snapshot.tenantCount !== TENANTS) throw new Error(`loaded ${provider.snapshot.tenantCount} tenants`);
  }
  console.log(summary(`   TenantProvider.start(): read + parse + indexes`, startTimes));
  console.log(
    `   heap retained by the provider (snapshot + indexes + client): ${mib(retained)} (${Math.round(retained / TENANTS)} B/tenant)`,
  );
  const p = provider!;
  const snapshot: TenantSnapshot = p.snapshot;

  // 2. Throughput.
  console.log(`\n2. throughput on one core, ${TENANTS} tenants loaded`);
  const N = 20_000_000;
  const ids = Int32Array.from({ length: 4096 }, (_, i) => 1 + ((i * 2654435761) % TENANTS));
  const domains = Array.from(ids, (id) => `t${id}.example.com`);
  const codes = Array.from(ids, (id) => `t${id}`);
  console.log(`   ${throughput('provider.getTenantMeta(id)', N, (i) => p.getTenantMeta(ids[i & 4095]!)!.id)}`);
  console.log(
    `   ${throughput('provider.isTenantEnabled(id)', N, (i) => (p.isTenantEnabled(ids[i & 4095]!) ? 1 : 0))}`,
  );
  console.log(
    `   ${throughput('provider.getDatabaseConfig(id, service)', N, (i) => p.getDatabaseConfig(ids[i & 4095]!, 'evidence-command')!.port)}`,
  );
  console.log(
    `   ${throughput('provider.getTenantIdByDomain(domain)', N, (i) => p.getTenantIdByDomain(domains[i & 4095]!)!)}`,
  );
  console.log(`   ${throughput('provider.getTenantIdByCode(code)', N, (i) => p.getTenantIdByCode(codes[i & 4095]!)!)}`);
  const requests = (make: (id: number, i: number) => HttpRequestLike) => Array.from(ids, (id, i) => make(id, i));
  const resolution = (label: string, resolver: object, reqs: HttpRequestLike[]) => {
    const s = buildSnapshot([...tenantKeysOf(snapshot), ['common/resolver', JSON.stringify(resolver)]], {
      revision: 1,
    }).snapshot;
    return throughput(label, N, (i) => {
      const r = resolveHttpTenant(reqs[i & 4095]!, s);
      return r.ok ? r.tenantId : -1;
    });
  };
  const headerReqs = requests((id) => ({ url: '/', headers: { 'x-tenant-id': String(id) } }));
  const missingReqs = requests((_, i) => ({ url: '/', headers: { 'x-tenant-id': String(TENANTS + 1 + i) } }));
  console.log(
    `   ${throughput('resolveHttpTenant, header (default config)', N, (i) => {
      const r = resolveHttpTenant(headerReqs[i & 4095]!, snapshot);
      return r.ok ? r.tenantId : -1;
    })}`,
  );
  console.log(
    `   ${resolution(
      'resolveHttpTenant, host/domain',
      { httpType: 'host', httpHostMode: 'domain' },
      requests((id) => ({ url: '/', headers: { host: `t${id}.example.com:8443` } })),
    )}`,
  );
  console.log(
    `   ${resolution(
      'resolveHttpTenant, host/code',
      { httpType: 'host', httpHostMode: 'code' },
      requests((id) => ({ url: '/', headers: { host: `t${id}.platform.example` } })),
    )}`,
  );
  console.log(
    `   ${resolution(
      'resolveHttpTenant, query',
      { httpType: 'query', httpQueryParam: 'tenant' },
      requests((id) => ({ url: `/api/items?page=2&tenant=${id}`, headers: {} })),
    )}`,
  );
  console.log(
    `   ${resolution(
      'resolveHttpTenant, path',
      { httpType: 'path', httpPathIndex: 1 },
      requests((id) => ({ url: `/api/${id}/items`, headers: {} })),
    )}`,
  );
  console.log(
    `   ${throughput('resolveHttpTenant, header, unknown tenant (error path)', N / 10, (i) => {
      const r = resolveHttpTenant(missingReqs[i & 4095]!, snapshot);
      return r.ok ? r.tenantId : -1;
    })}`,
  );

  // 3. put → visible.
  console.log(`\n3. etcd put → visible to readers (${PUTS} puts, one at a time, ${TENANTS} tenants loaded)`);
  const fromSend: number[] = [];
  const fromAck: number[] = [];
  for (let n = 0; n < PUTS; n++) {
    const id = ids[n & 4095]!;
    const name = `renamed ${n}`;
    const visible = new Promise<number>((resolve) => {
      const onSnapshot = () => {
        if (p.getTenantMeta(id)?.name === name) {
          p.off('snapshot', onSnapshot);
          resolve(performance.now());
        }
      };
      p.on('snapshot', onSnapshot);
    });
    const sent = performance.now();
    await client
      .put(`${PREFIX}tenants/${id}/meta`)
      .value(JSON.stringify({ id, code: `t${id}`, name, status: 'active', billingPlan: 'pro' }));
    const acked = performance.now();
    const seen = await visible;
    fromSend.push(seen - sent);
    fromAck.push(seen - acked);
  }
  console.log(`   ${summary('put sent → visible', fromSend)}`);
  console.log(`   ${summary('put acknowledged → visible', fromAck)}`);
} finally {
  await provider?.stop();
  client.close();
  await etcd.stop();
  await rm(dir, { recursive: true, force: true });
}

function tenantKeysOf(s: TenantSnapshot): Array<[string, string]> {
  return s.entryIds.flatMap((id) => tenantKeys(id));
}
