/**
 * The Cloudflare aggregation when things go wrong: a worker killed between the GET and the PUT
 * or between the PUT and the status write, a storm of 429s, a permanent error from Cloudflare
 * (a malformed expression), and bad input (an invalid CIDR, an unknown phase, missing
 * credentials, a token Cloudflare does not know). Real Temporal, kube-apiserver and etcd;
 * Cloudflare is the emulator, read and seeded only through the official SDK, its hooks used only
 * for the request log, faults and tokens.
 */
import { describe, expect, it } from 'vitest';
import { CLOUDFLARE_API_VERSION, type CloudflareSyncState } from '../../src/api/cloudflare.js';
import type { LoggedRequest } from '../emulators/cloudflare/index.js';
import { syncStateName } from '../../src/domain/cloudflare/targets.js';
import type { ManagedProcess } from '../../src/infra/process.js';
import { apiMessage } from '../../src/kube/client.js';
import { eventually, spawnRole, uniq, waitForWorker } from '../support/env.js';
import {
  cloudflareSuite,
  createCredentials,
  deleteCreatedCredentials,
  entrypointRules,
  hexId,
  includeList,
  sourceObject,
  type ReadyCondition,
} from '../support/cloudflare.js';

const PHASE = 'http_request_firewall_custom';
const children: ManagedProcess[] = [];
/** The in-process worker starts only when a test needs it (the crash tests run child-process workers first). */
const suite = cloudflareSuite({
  taskQueue: 'cf-fail',
  namespace: 'cff',
  configOverrides: { debounceMs: 200 },
  inProcessWorker: false,
  afterWorkerStop: async () => {
    for (const p of children) await p.stop();
  },
});
const { k, taskQueue, namespace, readyOf } = suite;

type Ready = ReadyCondition;

/** Waits for the source's Ready condition to match, and returns it. */
function readyWhen(kind: string, name: string, ns: string | undefined, ok: (r: Ready) => boolean, timeoutMs?: number) {
  return eventually(
    `${kind} ${name} Ready as expected`,
    async () => {
      const r = await readyOf(kind, name, ns);
      return r && ok(r) ? r : undefined;
    },
    timeoutMs ? { timeoutMs } : {},
  );
}

const syncState = (name: string) =>
  k.get<CloudflareSyncState>({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'CloudflareSyncState', name });

const startInProcessWorker = (): Promise<void> => suite.startWorker();
const stopInProcessWorker = (): Promise<void> => suite.stopWorker();

/** A zone of its own (in a fresh account with its own credentials) for one test. */
async function freshZone(opts: { token?: string } = {}) {
  const accountId = hexId();
  const credentials = uniq('cf-creds');
  const zoneName = `${uniq('z')}.example.com`;
  const { zones } = await suite.fx.admin.seed({
    accounts: [{ id: accountId }],
    zones: [{ name: zoneName, account_id: accountId }],
  });
  await createCredentials(k, { name: credentials, namespace, accountId, ...opts });
  return { accountId, credentials, zoneName, zoneId: zones[0]!.id };
}

const ruleset = (zone: string, credentials: string, expression: string) => ({
  zone,
  phase: PHASE,
  credentialsRef: { name: credentials },
  rules: [{ expression, action: 'block' }],
});

const marker = (name: string) => `[managed-by:default:ZoneRuleset/${namespace}/${name}]`;
const entrypointPath = (zoneId: string) => `^/zones/${zoneId}/rulesets/phases/${PHASE}/entrypoint$`;

describe('a worker killed in the middle of a sync', () => {
  for (const point of ['cloudflare-read', 'cloudflare-write'] as const) {
    it(`converges after a SIGKILL at ${point}: the rule in Cloudflare exactly once, the source Ready`, async () => {
      await stopInProcessWorker(); // only the doomed child may run the sync
      const { zoneName, zoneId, credentials, accountId } = await freshZone();
      const manual = { action: 'block', expression: 'ip.src eq 203.0.113.7', description: 'Manual rule by admin' };
      await suite.fx.cf.rulesets.phases.update(PHASE as never, { zone_id: zoneId, rules: [manual as never] });
      const [manualRule] = await entrypointRules(suite.fx.cf, zoneId, PHASE);

      const doomed = spawnRole('worker', taskQueue, `cf-failures-${point}`, {
        CLOUDFLARE_API_BASE_URL: suite.fx.emulator.baseURL,
        DO_CLUSTER_ID: 'default', // as the in-process worker (test/support/cloudflare.ts)
        DO_FAULT_KILL_AT: point,
        DO_CLOUDFLARE_DEBOUNCE: '200ms',
      });
      children.push(doomed);
      await waitForWorker(taskQueue, doomed);

      const name = uniq(`crash-${point}`);
      await k.apply(
        sourceObject('ZoneRuleset', name, ruleset(zoneName, credentials, 'ip.src in {198.51.100.0/24}'), namespace),
      );
      const code = await Promise.race([
        doomed.exited,
        new Promise<'alive'>((r) => setTimeout(() => r('alive'), 120_000)),
      ]);
      expect(code, doomed.logTail()).not.toBe('alive');
      expect(doomed.logTail(50)).toContain(`fault injection: SIGKILL at ${point}`);

      const puts = async () =>
        (await suite.fx.admin.requests({ method: 'PUT', path: entrypointPath(zoneId) })).filter(
          (r) => r.status === 200,
        );
      // The PUT of the manual rule is the first one; the crashed attempt wrote (write) or did not (read).
      expect((await puts()).length).toBe(point === 'cloudflare-write' ? 2 : 1);

      const t0 = Date.now();
      await startInProcessWorker();
      await readyWhen('ZoneRuleset', name, namespace, (r) => r.status === 'True', 150_000);
      const recoveredMs = Date.now() - t0;

      const rules = await entrypointRules(suite.fx.cf, zoneId, PHASE);
      expect(rules[0]).toEqual(manualRule);
      expect(rules.filter((r) => r.description === marker(name))).toHaveLength(1);
      expect(rules).toHaveLength(2);
      expect(rules[1]!.expression).toBe('ip.src in {198.51.100.0/24}');
      // One write of the rule in all: the retry after the crash GETs and writes only what is missing.
      expect((await puts()).length).toBe(2);

      const state = await eventually('the SyncState status written', async () => {
        const s = await syncState(syncStateName({ resourceType: 'ZoneRuleset', accountId, zoneId, phase: PHASE }));
        return s?.status?.syncStatus === 'Synced' ? s : undefined;
      });
      expect(state.status?.aggregatedConfig).toMatchObject({ managedItems: 1, externalItems: 1, sources: 1 });
      // The heartbeat timeout, not the 2-minute start-to-close, bounds the wait for the retry.
      expect(recoveredMs).toBeLessThan(100_000);
    });
  }
});

describe('a worker killed right after a zone setting is written', () => {
  it('the value from before the operator survives: it was recorded before the write, and is restored on delete', async () => {
    await stopInProcessWorker(); // only the doomed child may run the sync
    const { zoneName, zoneId, credentials } = await freshZone();
    const minTls = async () =>
      ((await suite.fx.cf.zones.settings.get('min_tls_version', { zone_id: zoneId })) as { value?: unknown }).value;
    await suite.fx.cf.zones.settings.edit('min_tls_version', { zone_id: zoneId, value: '1.1' }); // set by hand

    const doomed = spawnRole('worker', taskQueue, 'cf-failures-settings', {
      CLOUDFLARE_API_BASE_URL: suite.fx.emulator.baseURL,
      DO_CLUSTER_ID: 'default', // as the in-process worker (test/support/cloudflare.ts)
      DO_FAULT_KILL_AT: 'cloudflare-write',
      DO_CLOUDFLARE_DEBOUNCE: '200ms',
    });
    children.push(doomed);
    await waitForWorker(taskQueue, doomed);
    const name = uniq('crash-settings');
    const ref = { apiVersion: CLOUDFLARE_API_VERSION, kind: 'CloudflareDomain', name };
    await k.apply(
      sourceObject('CloudflareDomain', name, {
        domain: zoneName,
        credentialsRef: { name: credentials },
        restoreOnDelete: true,
        ssl: { minTLSVersion: '1.3' },
      }),
    );
    const code = await Promise.race([
      doomed.exited,
      new Promise<'alive'>((r) => setTimeout(() => r('alive'), 120_000)),
    ]);
    expect(code, doomed.logTail()).not.toBe('alive');
    expect(await minTls()).toBe('1.3'); // the crashed attempt wrote it

    await startInProcessWorker();
    await readyWhen('CloudflareDomain', name, undefined, (r) => r.reason === 'Synced', 150_000);
    // The retry saw 1.3 live; had the earlier value not been recorded before the write, 1.3 would be "previous".
    await k.delete(ref);
    await eventually('restored to the value set by hand', async () => (await minTls()) === '1.1', {
      timeoutMs: 120_000,
    });
  });
});

describe('a worker killed between recording the settings it holds and writing them', () => {
  it('a sync that takes one setting and releases another with restoreOnDelete still restores the released one', async () => {
    if (!suite.worker) await startInProcessWorker();
    const { zoneName, zoneId, credentials } = await freshZone();
    const value = async (id: string) =>
      ((await suite.fx.cf.zones.settings.get(id as never, { zone_id: zoneId })) as { value?: unknown }).value;
    // Set by hand before the operator: the values to restore.
    await suite.fx.cf.zones.settings.edit('always_use_https', { zone_id: zoneId, value: 'off' } as never);
    await suite.fx.cf.zones.settings.edit('min_tls_version', { zone_id: zoneId, value: '1.1' } as never);
    const name = uniq('release-and-take');
    const ref = { apiVersion: CLOUDFLARE_API_VERSION, kind: 'CloudflareDomain', name };
    const domain = (ssl: Record<string, unknown>) =>
      sourceObject('CloudflareDomain', name, {
        domain: zoneName,
        credentialsRef: { name: credentials },
        restoreOnDelete: true,
        ssl,
      });
    await k.apply(domain({ alwaysUseHttps: true }));
    await eventually('always_use_https taken', async () => (await value('always_use_https')) === 'on');
    await readyWhen('CloudflareDomain', name, undefined, (r) => r.reason === 'Synced');

    await stopInProcessWorker(); // only the doomed child may run the next sync
    const doomed = spawnRole('worker', taskQueue, 'cf-failures-settings-recorded', {
      CLOUDFLARE_API_BASE_URL: suite.fx.emulator.baseURL,
      DO_CLUSTER_ID: 'default', // as the in-process worker (test/support/cloudflare.ts)
      DO_FAULT_KILL_AT: 'cloudflare-settings-recorded',
      DO_CLOUDFLARE_DEBOUNCE: '200ms',
    });
    children.push(doomed);
    await waitForWorker(taskQueue, doomed);
    // One sync: min_tls_version taken for the first time (recorded before any write), always_use_https released.
    await k.apply(domain({ minTLSVersion: '1.3' }));
    const code = await Promise.race([
      doomed.exited,
      new Promise<'alive'>((r) => setTimeout(() => r('alive'), 120_000)),
    ]);
    expect(code, doomed.logTail()).not.toBe('alive');
    expect(doomed.logTail(50)).toContain('fault injection: SIGKILL at cloudflare-settings-recorded');
    expect([await value('always_use_https'), await value('min_tls_version')]).toEqual(['on', '1.1']); // nothing written

    await startInProcessWorker();
    await eventually('the new setting taken', async () => (await value('min_tls_version')) === '1.3', {
      timeoutMs: 150_000,
    });
    await readyWhen('CloudflareDomain', name, undefined, (r) => r.reason === 'Synced');
    // Had the record before the write left the released setting out, nothing would know what to restore.
    expect(await value('always_use_https'), 'the released setting restored').toBe('off');
    await k.delete(ref);
    await eventually('min_tls_version restored on delete', async () => (await value('min_tls_version')) === '1.1', {
      timeoutMs: 120_000,
    });
  });
});

describe('429s from Cloudflare', () => {
  it('survives a storm of 429s: both rulesets end up in Cloudflare, retried after Retry-After, not hammered', async () => {
    if (!suite.worker) await startInProcessWorker();
    const { zoneName, zoneId, credentials } = await freshZone();
    await suite.fx.admin.addFault({
      method: 'PUT',
      path: entrypointPath(zoneId),
      status: 429,
      retryAfter: 1,
      times: 5,
    });

    const a = uniq('storm-a');
    const b = uniq('storm-b');
    await k.apply(
      sourceObject('ZoneRuleset', a, ruleset(zoneName, credentials, 'ip.src in {192.0.2.0/24}'), namespace),
    );
    await k.apply(
      sourceObject('ZoneRuleset', b, ruleset(zoneName, credentials, 'ip.src in {198.18.0.0/15}'), namespace),
    );

    // Waits on the sources' status, not by polling Cloudflare: the request log is then the operator's alone.
    for (const n of [a, b]) await readyWhen('ZoneRuleset', n, namespace, (r) => r.status === 'True');
    const log = await suite.fx.admin.requests({ path: entrypointPath(zoneId) });
    const rules = await entrypointRules(suite.fx.cf, zoneId, PHASE);
    expect(rules.map((r) => r.description).sort()).toEqual([marker(a), marker(b)].sort());

    const limited = log.filter((r) => r.method === 'PUT' && r.status === 429);
    const written = log.filter((r) => r.method === 'PUT' && r.status === 200);
    expect(limited).toHaveLength(5);
    expect(written.length).toBeGreaterThanOrEqual(1);
    expect(written.length).toBeLessThanOrEqual(2); // one sync for both, or one each
    // Each 429 was followed by a wait of Retry-After (1 s) before the next call on the entrypoint.
    for (const r of limited) {
      const next = log.find((x) => x.seq > r.seq) as LoggedRequest;
      expect(Date.parse(next.at) - Date.parse(r.at), `after 429 #${r.seq}`).toBeGreaterThanOrEqual(900);
    }
    // Not hammered: a GET and a PUT per attempt, nothing more.
    expect(log.length).toBeLessThanOrEqual(2 * (limited.length + written.length) + 2);
  });
});

describe('a permanent error from Cloudflare', () => {
  it('one source Cloudflare refuses is frozen with its message; the others keep syncing and their deletions complete (D3)', async () => {
    if (!suite.worker) await startInProcessWorker();
    const { zoneName, zoneId, credentials, accountId } = await freshZone();
    const good = uniq('perm-good');
    const other = uniq('perm-other');
    const bad = uniq('perm-bad');
    await k.apply(
      sourceObject('ZoneRuleset', good, ruleset(zoneName, credentials, 'ip.src in {192.0.2.0/24}'), namespace),
    );
    await k.apply(sourceObject('ZoneRuleset', other, ruleset(zoneName, credentials, 'ip.src eq 192.0.2.8'), namespace));
    await k.apply(sourceObject('ZoneRuleset', bad, ruleset(zoneName, credentials, 'ip.src eq 192.0.2.9'), namespace));
    for (const n of [good, other, bad]) await readyWhen('ZoneRuleset', n, namespace, (r) => r.status === 'True');

    // The bad source's change is refused by Cloudflare: it alone shows Cloudflare's message.
    await k.apply(sourceObject('ZoneRuleset', bad, ruleset(zoneName, credentials, '(ip.src eq 192.0.2.9'), namespace));
    const r = await readyWhen('ZoneRuleset', bad, namespace, (c) => c.status === 'False' && c.reason !== 'Syncing');
    expect(r.reason).toBe('CloudflareInvalid');
    expect(r.message).toContain('filter parsing error');
    expect(r.message).toContain('[20021]');
    const stateName = syncStateName({ resourceType: 'ZoneRuleset', accountId, zoneId, phase: PHASE });
    const state = await eventually('SyncState lists the refused source', async () => {
      const st = await syncState(stateName);
      return st?.status?.rejectedSources?.length ? st : undefined;
    });
    expect(state.status?.syncStatus).toBe('Synced');
    expect(state.status?.rejectedSources?.[0]).toMatchObject({ source: `ZoneRuleset/${namespace}/${bad}` });
    // Its last good rule stays in Cloudflare, as it was.
    const before = await entrypointRules(suite.fx.cf, zoneId, PHASE);
    expect(before.find((x) => x.description === marker(bad))?.expression).toBe('ip.src eq 192.0.2.9');

    // Another team changes its rule: written, and it stays Ready.
    await k.apply(
      sourceObject('ZoneRuleset', good, ruleset(zoneName, credentials, 'ip.src in {198.51.100.0/24}'), namespace),
    );
    await eventually('the good change is in Cloudflare', async () =>
      (await entrypointRules(suite.fx.cf, zoneId, PHASE)).some((x) => x.expression === 'ip.src in {198.51.100.0/24}'),
    );
    await readyWhen('ZoneRuleset', good, namespace, (c) => c.status === 'True');

    // Another team deletes its source: its rule goes, its finalizer is released.
    await k.delete({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'ZoneRuleset', namespace, name: other });
    await eventually(
      'the deleted source is gone from Kubernetes',
      async () => !(await k.get({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'ZoneRuleset', namespace, name: other })),
      { timeoutMs: 30_000 },
    );
    const after = await entrypointRules(suite.fx.cf, zoneId, PHASE);
    expect(after.map((x) => x.description).sort()).toEqual([marker(good), marker(bad)].sort());
    expect(after.find((x) => x.description === marker(bad))?.expression).toBe('ip.src eq 192.0.2.9');

    // Fixed: written, and the record of the refusal is gone.
    await k.apply(
      sourceObject('ZoneRuleset', bad, ruleset(zoneName, credentials, '(ip.src eq 192.0.2.10)'), namespace),
    );
    await readyWhen('ZoneRuleset', bad, namespace, (c) => c.status === 'True');
    const rules = await entrypointRules(suite.fx.cf, zoneId, PHASE);
    expect(rules.find((x) => x.description === marker(bad))?.expression).toBe('(ip.src eq 192.0.2.10)');
    await eventually('SyncState without refused sources', async () => {
      const st = await syncState(stateName);
      return st?.status?.syncStatus === 'Synced' && !st.status.rejectedSources?.length;
    });
  });
});

describe('deletion policy Orphan (issue 23, D3)', () => {
  it('releases a source at once even when its credentials are gone, and its rule stays in Cloudflare through later syncs', async () => {
    if (!suite.worker) await startInProcessWorker();
    const { zoneName, zoneId, credentials, accountId } = await freshZone();
    const keep = uniq('orphan');
    const peer = uniq('orphan-peer');
    const kept = sourceObject('ZoneRuleset', keep, ruleset(zoneName, credentials, 'ip.src eq 192.0.2.61'), namespace);
    await k.apply({
      ...kept,
      metadata: { ...kept.metadata, annotations: { 'cloudflare-operator.io/deletion-policy': 'Orphan' } },
    });
    await k.apply(sourceObject('ZoneRuleset', peer, ruleset(zoneName, credentials, 'ip.src eq 192.0.2.62'), namespace));
    for (const n of [keep, peer]) await readyWhen('ZoneRuleset', n, namespace, (r) => r.status === 'True');

    // The credentials' token is deleted first (an uninstall in the wrong order): nothing can be written.
    await k.delete({ apiVersion: 'v1', kind: 'Secret', namespace, name: `${credentials}-token` });
    await k.delete({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'ZoneRuleset', namespace, name: keep });
    await eventually(
      'the orphaned source is released',
      async () => !(await k.get({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'ZoneRuleset', namespace, name: keep })),
      { timeoutMs: 30_000 },
    );

    // The token is back and the other source changes: its rule is written, the orphan's stays.
    await createCredentials(k, { name: credentials, namespace, accountId });
    await k.apply(sourceObject('ZoneRuleset', peer, ruleset(zoneName, credentials, 'ip.src eq 192.0.2.63'), namespace));
    await eventually('the peer change is in Cloudflare', async () =>
      (await entrypointRules(suite.fx.cf, zoneId, PHASE)).some((x) => x.expression === 'ip.src eq 192.0.2.63'),
    );
    const rules = await entrypointRules(suite.fx.cf, zoneId, PHASE);
    expect(rules.find((x) => x.description === marker(keep))?.expression).toBe('ip.src eq 192.0.2.61');
    const stateName = syncStateName({ resourceType: 'ZoneRuleset', accountId, zoneId, phase: PHASE });
    // The SyncState is recorded after the write the loop above saw.
    await eventually(
      'the orphan recorded on the SyncState',
      async () => (await syncState(stateName))?.spec.sources?.find((x) => x.ref.name === keep)?.orphaned === true,
      { timeoutMs: 10_000 },
    );
  });
});

describe('deletion policy Orphan on a deletion already stuck (issue 33, N6a)', () => {
  const policy = { 'cloudflare-operator.io/deletion-policy': 'Orphan' };

  it('a source whose token was deleted first is released within seconds of the annotation; its rule stays in Cloudflare', async () => {
    if (!suite.worker) await startInProcessWorker();
    const { zoneName, zoneId, credentials, accountId } = await freshZone();
    const name = uniq('stuck');
    await k.apply(sourceObject('ZoneRuleset', name, ruleset(zoneName, credentials, 'ip.src eq 192.0.2.64'), namespace));
    await readyWhen('ZoneRuleset', name, namespace, (r) => r.status === 'True');

    // The documented way out: the token went first, the deletion cannot write Cloudflare and waits.
    await k.delete({ apiVersion: 'v1', kind: 'Secret', namespace, name: `${credentials}-token` });
    const ref = { apiVersion: CLOUDFLARE_API_VERSION, kind: 'ZoneRuleset', namespace, name };
    await k.delete(ref);
    await readyWhen('ZoneRuleset', name, namespace, (r) => r.status === 'False');
    await new Promise((r) => setTimeout(r, 3_000));
    expect(await k.get(ref), 'stuck: nothing can remove its rule').toBeDefined();
    await k.mergePatch(ref, { metadata: { annotations: policy } });
    await eventually('the stuck source released', async () => !(await k.get(ref)), { timeoutMs: 15_000 });

    // Left in Cloudflare as it is, also once the token is back and the target syncs again.
    await createCredentials(k, { name: credentials, namespace, accountId });
    const peer = uniq('stuck-peer');
    await k.apply(sourceObject('ZoneRuleset', peer, ruleset(zoneName, credentials, 'ip.src eq 192.0.2.65'), namespace));
    await readyWhen('ZoneRuleset', peer, namespace, (r) => r.status === 'True');
    const rules = await entrypointRules(suite.fx.cf, zoneId, PHASE);
    expect(rules.find((x) => x.description === marker(name))?.expression).toBe('ip.src eq 192.0.2.64');
  });

  it('a Tunnel whose tunnel Cloudflare will not delete is released by the annotation, and its tunnel left in place', async () => {
    if (!suite.worker) await startInProcessWorker();
    const { zoneName, credentials, accountId } = await freshZone();
    const name = uniq('stuck-tunnel');
    const cfName = uniq('cf-stuck');
    await k.apply(
      sourceObject(
        'Tunnel',
        name,
        { newTunnel: { name: cfName }, cloudflare: { credentialsRef: { name: credentials }, domain: zoneName } },
        namespace,
      ),
    );
    const ref = { apiVersion: CLOUDFLARE_API_VERSION, kind: 'Tunnel', namespace, name };
    const tunnelId = await eventually(
      'the tunnel',
      async () => ((await k.get(ref)) as { status?: { tunnelId?: string } } | undefined)?.status?.tunnelId,
    );
    await readyWhen('Tunnel', name, namespace, (r) => r.status === 'True');
    // Cloudflare keeps refusing the tunnel's deletion (a 5xx the workflow retries for ever).
    await suite.fx.admin.addFault({
      method: 'DELETE',
      path: `^/accounts/${accountId}/cfd_tunnel/${tunnelId}$`,
      status: 503,
    });
    try {
      await k.delete(ref);
      await eventually('the deletion reaches the tunnel', async () =>
        (await suite.fx.admin.faults()).some((f) => f.path?.includes(tunnelId) && f.hits > 0),
      );
      await k.mergePatch(ref, { metadata: { annotations: policy } });
      await eventually('the stuck Tunnel released', async () => !(await k.get(ref)), { timeoutMs: 15_000 });
    } finally {
      await suite.fx.admin.clearFaults();
    }
    const left = await suite.fx.cf.zeroTrust.tunnels.cloudflared.get(tunnelId, { account_id: accountId });
    expect((left as { deleted_at?: string | null }).deleted_at ?? null).toBeNull();
  });
});

describe('who may use credentials (issue 23, D2)', () => {
  it('the workflow refuses what the credentials do not allow even when admission could not check it; allowed, it syncs', async () => {
    if (!suite.worker) await startInProcessWorker();
    const accountId = hexId();
    const credentials = uniq('cf-late');
    const zoneName = `${uniq('z')}.example.com`;
    const { zones } = await suite.fx.admin.seed({
      accounts: [{ id: accountId }],
      zones: [{ name: zoneName, account_id: accountId }],
    });
    const zoneId = zones[0]!.id;
    const name = uniq('early');
    // Admitted: its credentials do not exist yet, so the webhook has nothing to check against.
    await k.apply(
      sourceObject(
        'ZoneRuleset',
        name,
        { ...ruleset(zoneName, credentials, 'ip.src eq 192.0.2.77'), priority: 0 },
        namespace,
      ),
    );
    await readyWhen('ZoneRuleset', name, namespace, (c) => c.reason === 'CredentialsNotFound');

    const use = (u: { allowedNamespaces: string[]; priorityNamespaces?: string[] }) =>
      createCredentials(k, { name: credentials, namespace, accountId, use: u });
    await use({ allowedNamespaces: ['elsewhere'] });
    const notAllowed = await readyWhen('ZoneRuleset', name, namespace, (c) => c.reason === 'CredentialsNotAllowed');
    expect(notAllowed.message).toContain(`may not be used from namespace "${namespace}"`);

    await use({ allowedNamespaces: ['elsewhere', namespace] });
    const ahead = await readyWhen('ZoneRuleset', name, namespace, (c) => c.reason === 'PriorityNotAllowed');
    expect(ahead.message).toContain('priority 0');
    expect(await suite.fx.admin.requests({ method: 'PUT', path: entrypointPath(zoneId) })).toEqual([]);

    await use({ allowedNamespaces: ['elsewhere', namespace], priorityNamespaces: [namespace] });
    await readyWhen('ZoneRuleset', name, namespace, (c) => c.status === 'True');
    expect((await entrypointRules(suite.fx.cf, zoneId, PHASE)).map((r) => r.description)).toEqual([marker(name)]);
  });
});

describe('bad input', () => {
  it('an invalid CIDR: InvalidSpec naming the field, nothing written to Cloudflare', async () => {
    if (!suite.worker) await startInProcessWorker();
    const accountId = hexId();
    const credentials = uniq('cf-cidr');
    await suite.fx.admin.seed({ accounts: [{ id: accountId }] });
    await createCredentials(k, { name: credentials, namespace, accountId });
    const name = uniq('bad-cidr');
    await k.apply(
      sourceObject('DeviceSettingsPolicy', name, {
        splitTunnelMode: 'include',
        splitTunnelInclude: [{ address: '10.0.0.0/33', description: 'too long a prefix' }],
        cloudflare: { credentialsRef: { name: credentials } },
      }),
    );
    const r = await readyWhen('DeviceSettingsPolicy', name, undefined, (c) => c.status === 'False');
    expect(r.reason).toBe('InvalidSpec');
    expect(r.message).toContain('splitTunnelInclude[0].address');
    expect(r.message).toContain('10.0.0.0/33');
    await new Promise((res) => setTimeout(res, 1500));
    expect(await suite.fx.admin.requests({ method: 'PUT', path: `^/accounts/${accountId}/` })).toEqual([]);
    expect(await includeList(suite.fx.cf, accountId)).toEqual([]);
  });

  it('a spec that becomes invalid keeps what it wrote in Cloudflare while others change, until it is fixed', async () => {
    if (!suite.worker) await startInProcessWorker();
    const accountId = hexId();
    const credentials = uniq('cf-freeze');
    await suite.fx.admin.seed({ accounts: [{ id: accountId }] });
    await createCredentials(k, { name: credentials, namespace, accountId });
    const policy = (address: string) => ({
      splitTunnelMode: 'include',
      splitTunnelInclude: [{ address, description: 'team' }],
      cloudflare: { credentialsRef: { name: credentials } },
    });
    const typo = uniq('typo');
    const other = uniq('other');
    await k.apply(sourceObject('DeviceSettingsPolicy', typo, policy('10.40.0.0/16')));
    await k.apply(sourceObject('DeviceSettingsPolicy', other, policy('10.41.0.0/16')));
    const addresses = async () => (await includeList(suite.fx.cf, accountId)).map((e) => e.address).sort();
    await eventually('both entries', async () => (await addresses()).length === 2);

    // A typo: the source says so, and its entry stays while the other source changes.
    await k.apply(sourceObject('DeviceSettingsPolicy', typo, policy('10.40.0.0/33')));
    const r = await readyWhen('DeviceSettingsPolicy', typo, undefined, (c) => c.reason === 'InvalidSpec');
    expect(r.message).toContain('stays in Cloudflare');
    await k.apply(sourceObject('DeviceSettingsPolicy', other, policy('10.42.0.0/16')));
    await eventually('the other source changed', async () => (await addresses()).includes('10.42.0.0/16'));
    expect(await addresses()).toEqual(['10.40.0.0/16', '10.42.0.0/16']);

    // Fixed: its new entry replaces the old one.
    await k.apply(sourceObject('DeviceSettingsPolicy', typo, policy('10.43.0.0/16')));
    await eventually('the fixed entry', async () => (await addresses()).join() === '10.42.0.0/16,10.43.0.0/16');
    await readyWhen('DeviceSettingsPolicy', typo, undefined, (c) => c.status === 'True');
    for (const name of [typo, other])
      await k.delete({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'DeviceSettingsPolicy', name });
    await eventually('both removed', async () => (await addresses()).length === 0);
  });

  it('an unknown ruleset phase: refused by the apiserver at create', async () => {
    const { zoneName, credentials } = await freshZone();
    const err = await k
      .apply(
        sourceObject(
          'ZoneRuleset',
          uniq('bad-phase'),
          { ...ruleset(zoneName, credentials, 'ip.src eq 192.0.2.1'), phase: 'http_request_everything' },
          namespace,
        ),
      )
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeDefined();
    const message = apiMessage(err);
    expect(message).toContain('spec.phase');
    expect(message).toContain('http_request_everything');
    expect(message).toMatch(/Unsupported value/);
  });

  it('credentials whose Secret does not exist: the source says which Secret', async () => {
    if (!suite.worker) await startInProcessWorker();
    const accountId = hexId();
    const credentials = uniq('cf-nosecret');
    const secretName = uniq('missing-secret');
    await suite.fx.admin.seed({ accounts: [{ id: accountId }] });
    await k.apply({
      apiVersion: CLOUDFLARE_API_VERSION,
      kind: 'CloudflareCredentials',
      metadata: { name: credentials },
      spec: { accountId, authType: 'apiToken', secretRef: { name: secretName, namespace }, isDefault: false },
    });
    const name = uniq('no-secret');
    await k.apply(
      sourceObject('DeviceSettingsPolicy', name, {
        splitTunnelMode: 'include',
        splitTunnelInclude: [{ address: '10.20.0.0/16', description: 'lab' }],
        cloudflare: { credentialsRef: { name: credentials } },
      }),
    );
    const r = await readyWhen(
      'DeviceSettingsPolicy',
      name,
      undefined,
      (c) => c.status === 'False' && c.reason !== 'Syncing',
    );
    expect(r.reason).toBe('CredentialsSecretInvalid');
    expect(r.message).toContain(`Secret ${namespace}/${secretName}`);
    expect(r.message).toContain('does not exist');
    expect(await suite.fx.admin.requests({ path: `^/accounts/${accountId}/` })).toEqual([]);
  });

  it('two default credentials: the source says they are ambiguous instead of picking one', async () => {
    if (!suite.worker) await startInProcessWorker();
    const accountA = hexId();
    const accountB = hexId();
    const first = uniq('cf-default-a');
    const second = uniq('cf-default-b');
    await suite.fx.admin.seed({ accounts: [{ id: accountA }, { id: accountB }] });
    await createCredentials(k, { name: first, namespace, accountId: accountA, isDefault: true });
    await createCredentials(k, { name: second, namespace, accountId: accountB, isDefault: true });
    try {
      const name = uniq('no-creds-ref');
      await k.apply(
        sourceObject(
          'ZoneRuleset',
          name,
          { zone: 'example.com', phase: PHASE, rules: [{ expression: 'ip.src eq 192.0.2.3', action: 'block' }] },
          namespace,
        ),
      );
      const r = await readyWhen('ZoneRuleset', name, namespace, (c) => c.status === 'False' && c.reason !== 'Syncing');
      expect(r.reason).toBe('AmbiguousDefaultCredentials');
      expect(r.message).toContain(first);
      expect(r.message).toContain(second);
      expect(await suite.fx.admin.requests({ path: `^/accounts/(${accountA}|${accountB})/` })).toEqual([]);
      await k.delete({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'ZoneRuleset', namespace, name });
    } finally {
      await deleteCreatedCredentials(k);
    }
  });

  it('a token Cloudflare does not know: CloudflareAuth with code 10000, nothing touched', async () => {
    if (!suite.worker) await startInProcessWorker();
    const { zoneName, zoneId, credentials } = await freshZone({ token: `unknown-${hexId()}` });
    const manual = { action: 'block', expression: 'ip.src eq 203.0.113.7', description: 'Manual rule by admin' };
    await suite.fx.cf.rulesets.phases.update(PHASE as never, { zone_id: zoneId, rules: [manual as never] });
    const before = await suite.fx.cf.rulesets.phases.get(PHASE as never, { zone_id: zoneId });

    const name = uniq('wrong-token');
    await k.apply(sourceObject('ZoneRuleset', name, ruleset(zoneName, credentials, 'ip.src eq 192.0.2.1'), namespace));
    const r = await readyWhen('ZoneRuleset', name, namespace, (c) => c.status === 'False' && c.reason !== 'Syncing');
    expect(r.reason).toBe('CloudflareAuth');
    expect(r.message).toContain('[10000] Authentication error');
    expect(r.message).not.toContain('unknown-'); // never the token

    expect(await suite.fx.cf.rulesets.phases.get(PHASE as never, { zone_id: zoneId })).toEqual(before);
    const writes = await suite.fx.admin.requests({ method: 'PUT', path: entrypointPath(zoneId) });
    expect(writes).toHaveLength(1); // the seeding of the manual rule, nothing since
  });
});
