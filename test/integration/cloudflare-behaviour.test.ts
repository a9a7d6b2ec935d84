/**
 * What users rely on in the Cloudflare aggregation, beyond the seed's scenarios: priority order,
 * per-cluster markers, no-op syncs that write nothing, drift repair (and observe-only), the
 * debounce of bursts, TransformRule/RedirectRule shapes, sources' own status, and finding the
 * sync workflow in the Web UI. Real Temporal, kube-apiserver and etcd; Cloudflare is the
 * emulator, read and seeded only through the official SDK (the `/__emulator` hooks only seed
 * accounts and zones and read the request log).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { CLOUDFLARE_API_VERSION, type CloudflareSyncState } from '../../src/api/cloudflare.js';
import { cloudflareTaskQueue } from '../../src/config.js';
import { syncStateName, syncWorkflowId, type SyncTarget } from '../../src/domain/cloudflare/targets.js';
import {
  registerSourceSignal,
  type SourceRegistration,
  type SyncSettings,
  type SyncWorkflowInput,
} from '../../src/workflows/cloudflare/messages.js';
import { eventually, listWorkflows, temporal, uniq } from '../support/env.js';
import {
  cloudflareSuite,
  entrypointRules,
  hexId,
  requestMark,
  requestsSince,
  type Rule,
} from '../support/cloudflare.js';

const FIREWALL = 'http_request_firewall_custom';
const LATE_TRANSFORM = 'http_request_late_transform';
const REDIRECT = 'http_request_dynamic_redirect';
const account = hexId();
const credentials = uniq('cf-default');
/** The worker runs with the default settings (500 ms debounce, 5 min observation, repair). */
const suite = cloudflareSuite({
  taskQueue: 'cf-beh',
  namespace: 'cfb',
  account: { id: account, name: 'behaviour account' },
  credentials: { name: credentials, isDefault: true },
});
const { k, taskQueue, namespace } = suite;
const cfConfig = () => suite.cloudflareConfig();

// --- helpers ----------------------------------------------------------------------------------

type Condition = { type: string; status: string; reason: string; message: string };
type SourceObject = {
  metadata: { name: string; generation?: number; creationTimestamp?: string; uid?: string };
  status?: { conditions?: Condition[]; syncState?: string | null; observedGeneration?: number };
};

const source = (kind: string, name: string, spec: Record<string, unknown>, labels?: Record<string, string>) => ({
  apiVersion: CLOUDFLARE_API_VERSION,
  kind,
  metadata: { name, namespace, ...(labels ? { labels } : {}) },
  spec,
});

const getSource = (kind: string, name: string) =>
  k.get({ apiVersion: CLOUDFLARE_API_VERSION, kind, name, namespace }) as Promise<SourceObject | undefined>;

const deleteSource = (kind: string, name: string) =>
  k.delete({ apiVersion: CLOUDFLARE_API_VERSION, kind, namespace, name });

const getSyncState = (name: string) =>
  k.get<CloudflareSyncState>({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'CloudflareSyncState', name });

const conditionOf = (obj: { status?: { conditions?: unknown[] } } | undefined, type: string) =>
  (obj?.status?.conditions as Condition[] | undefined)?.find((c) => c.type === type);

const markerOf = (kind: string, name: string) => `[managed-by:default:${kind}/${namespace}/${name}]`;

async function freshZone(): Promise<{ zoneName: string; zoneId: string }> {
  const zoneName = `${uniq('z')}.example.com`;
  const { zones } = await suite.fx.admin.seed({ zones: [{ name: zoneName, account_id: account }] });
  return { zoneName, zoneId: zones[0]!.id };
}

const rulesetTarget = (zoneId: string, phase: string): SyncTarget => ({
  resourceType: 'ZoneRuleset',
  accountId: account,
  zoneId,
  phase,
});

const entrypointPath = (zoneId: string, phase: string) => `/zones/${zoneId}/rulesets/phases/${phase}/entrypoint`;

/** Waits until the entrypoint has exactly `n` rules and returns them. */
const rulesWhen = (zoneId: string, phase: string, what: string, ok: (rules: Rule[]) => boolean) =>
  eventually(what, async () => {
    const r = await entrypointRules(suite.fx.cf, zoneId, phase);
    return ok(r) ? r : undefined;
  });

/** Waits until the source's status says Ready/Synced for its current generation. */
async function syncedSource(kind: string, name: string): Promise<SourceObject> {
  return eventually(`${kind} ${name} Ready/Synced at its generation`, async () => {
    const obj = await getSource(kind, name);
    const ready = conditionOf(obj, 'Ready');
    return obj &&
      ready?.status === 'True' &&
      ready.reason === 'Synced' &&
      obj.status?.observedGeneration === obj.metadata.generation
      ? obj
      : undefined;
  });
}

/** Writes of the entrypoint after `mark` (PUT/PATCH/POST/DELETE). */
const writesSince = async (mark: number, zoneId: string, phase: string) =>
  (await requestsSince(suite.fx.admin, mark, { path: entrypointPath(zoneId, phase) })).filter(
    (r) => r.method !== 'GET',
  );

const zoneRuleset = (zoneName: string, rules: Record<string, unknown>[], extra: Record<string, unknown> = {}) => ({
  zone: zoneName,
  phase: FIREWALL,
  rules,
  ...extra,
});

/**
 * Starts a target's sync workflow on this file's task queue (and its account's Cloudflare task
 * queue) with other settings than the worker's, before any source registers: the sources'
 * registrations (signal-with-start) then reach this run, as they would reach one started by a
 * worker configured with these settings.
 */
async function startSyncWorkflow(target: SyncTarget, overrides: Partial<SyncSettings>): Promise<string> {
  const cfg = cfConfig();
  const settings: SyncSettings = {
    clusterId: cfg.clusterId,
    adoptLegacyMarkers: cfg.adoptLegacyMarkers,
    debounceMs: cfg.debounceMs,
    maxDebounceMs: cfg.maxDebounceMs,
    observeIntervalMs: cfg.observeIntervalMs,
    driftPolicy: cfg.driftPolicy,
    cloudflareTaskQueue: cloudflareTaskQueue(taskQueue, target.accountId),
    ...overrides,
  };
  const workflowId = syncWorkflowId(target);
  const input: SyncWorkflowInput = { target, settings };
  await (await temporal()).workflow.start('cloudflareSyncWorkflow', { workflowId, taskQueue, args: [input] });
  return workflowId;
}

/** Replaces the entrypoint's rules as a dashboard user would (the whole list, ids kept); returns what Cloudflare stored. */
async function dashboardPut(zoneId: string, phase: string, rules: Rule[]): Promise<Rule[]> {
  const rs = await suite.fx.cf.rulesets.phases.update(phase as never, {
    zone_id: zoneId,
    rules: rules.map(({ version: _v, last_updated: _l, ...r }) => r) as never,
  });
  return (rs as unknown as { rules: Rule[] }).rules;
}

// --- tests ------------------------------------------------------------------------------------

describe('priorities and tie order', () => {
  it('orders the managed rules by spec.priority, older source first on a tie, and re-orders on change', async () => {
    const { zoneName, zoneId } = await freshZone();
    const p200 = uniq('prio-200');
    const p50 = uniq('prio-50');
    const p100 = uniq('prio-100');
    const rule = (ip: string) => [{ expression: `ip.src eq ${ip}`, action: 'block' }];
    await k.apply(source('ZoneRuleset', p200, zoneRuleset(zoneName, rule('192.0.2.200'), { priority: 200 })));
    await k.apply(source('ZoneRuleset', p50, zoneRuleset(zoneName, rule('192.0.2.50'), { priority: 50 })));
    await k.apply(source('ZoneRuleset', p100, zoneRuleset(zoneName, rule('192.0.2.100'), { priority: 100 })));

    const three = await rulesWhen(zoneId, FIREWALL, 'three rulesets in the entrypoint', (r) => r.length === 3);
    expect(three.map((r) => r.description)).toEqual([
      markerOf('ZoneRuleset', p50),
      markerOf('ZoneRuleset', p100),
      markerOf('ZoneRuleset', p200),
    ]);
    expect(three.map((r) => r.expression)).toEqual([
      'ip.src eq 192.0.2.50',
      'ip.src eq 192.0.2.100',
      'ip.src eq 192.0.2.200',
    ]);

    // A tie on priority: the older source first, even when its name sorts later.
    const older = uniq('zz-tie');
    const newer = uniq('aa-tie');
    await k.apply(source('ZoneRuleset', older, zoneRuleset(zoneName, rule('198.51.100.1'), { priority: 100 })));
    const olderObj = await syncedSource('ZoneRuleset', older);
    // creationTimestamp has a resolution of one second: let the clock pass it before the newer one.
    const olderAt = Date.parse(olderObj.metadata.creationTimestamp!);
    const wait = olderAt + 1_100 - Date.now();
    if (wait > 0) await sleep(wait);
    await k.apply(source('ZoneRuleset', newer, zoneRuleset(zoneName, rule('198.51.100.2'), { priority: 100 })));
    const newerObj = await syncedSource('ZoneRuleset', newer);
    expect(Date.parse(newerObj.metadata.creationTimestamp!)).toBeGreaterThan(olderAt); // the premise of the test
    const five = await rulesWhen(zoneId, FIREWALL, 'five rulesets in the entrypoint', (r) => r.length === 5);
    expect(five.map((r) => r.description)).toEqual([
      markerOf('ZoneRuleset', p50),
      markerOf('ZoneRuleset', p100),
      markerOf('ZoneRuleset', older),
      markerOf('ZoneRuleset', newer),
      markerOf('ZoneRuleset', p200),
    ]);

    // Changing a priority re-orders: 200 → 10 puts it first.
    await k.apply(source('ZoneRuleset', p200, zoneRuleset(zoneName, rule('192.0.2.200'), { priority: 10 })));
    const reordered = await rulesWhen(
      zoneId,
      FIREWALL,
      'the re-prioritised ruleset first',
      (r) => r.length === 5 && r[0]!.description === markerOf('ZoneRuleset', p200),
    );
    expect(reordered.map((r) => r.description)).toEqual([
      markerOf('ZoneRuleset', p200),
      markerOf('ZoneRuleset', p50),
      markerOf('ZoneRuleset', p100),
      markerOf('ZoneRuleset', older),
      markerOf('ZoneRuleset', newer),
    ]);
    // The moved rule kept its Cloudflare identity.
    expect(reordered[0]!.id).toBe(five[4]!.id);

    for (const name of [p200, p50, p100, older, newer]) await deleteSource('ZoneRuleset', name);
    await rulesWhen(zoneId, FIREWALL, 'all managed rules removed', (r) => r.length === 0);
  });
});

describe('markers per cluster id', () => {
  it("never touches another cluster's rules or rules with the original's marker", async () => {
    const { zoneName, zoneId } = await freshZone();
    await suite.fx.cf.rulesets.phases.update(FIREWALL as never, {
      zone_id: zoneId,
      rules: [
        {
          action: 'block',
          expression: 'ip.src eq 203.0.113.1',
          description: `Other cluster [managed-by:other-cluster:ZoneRuleset/${namespace}/x]`,
        },
        {
          action: 'challenge',
          expression: 'ip.src eq 203.0.113.2',
          description: `Legacy [managed-by:ZoneRuleset/${namespace}/y]`,
        },
      ] as never,
    });
    const [theirs, legacy] = await entrypointRules(suite.fx.cf, zoneId, FIREWALL);
    expect(theirs && legacy).toBeTruthy();
    const untouched = async (rules: Rule[]) => {
      expect(rules.find((r) => r.id === theirs!.id)).toEqual(theirs);
      expect(rules.find((r) => r.id === legacy!.id)).toEqual(legacy);
      expect(rules.slice(0, 2)).toEqual([theirs, legacy]); // in place, too
    };

    // Even a source of ours with the same name as theirs (x) and as the legacy one (y).
    const x = 'x';
    const y = 'y';
    await k.apply(
      source('ZoneRuleset', x, zoneRuleset(zoneName, [{ expression: 'ip.src eq 198.51.100.10', action: 'block' }])),
    );
    await k.apply(
      source(
        'ZoneRuleset',
        y,
        zoneRuleset(zoneName, [{ expression: 'ip.src eq 198.51.100.20', action: 'managed_challenge' }]),
      ),
    );
    const created = await rulesWhen(zoneId, FIREWALL, 'ours next to theirs', (r) => r.length === 4);
    await untouched(created);
    expect(created.slice(2).map((r) => r.description)).toEqual([
      markerOf('ZoneRuleset', x),
      markerOf('ZoneRuleset', y),
    ]);

    // Update.
    await k.apply(
      source('ZoneRuleset', x, zoneRuleset(zoneName, [{ expression: 'ip.src eq 198.51.100.11', action: 'block' }])),
    );
    const updated = await rulesWhen(
      zoneId,
      FIREWALL,
      'x updated',
      (r) => r.some((x) => x.expression === 'ip.src eq 198.51.100.11') && r.length === 4,
    );
    await untouched(updated);

    // Delete both of ours.
    await deleteSource('ZoneRuleset', x);
    await deleteSource('ZoneRuleset', y);
    const left = await rulesWhen(zoneId, FIREWALL, 'ours removed', (r) => r.length === 2);
    await untouched(left);
    expect(left).toEqual([theirs, legacy]);
  });
});

describe('no-op syncs', () => {
  it('re-aggregation of an unchanged target is one GET and no write; a label change writes nothing', async () => {
    const { zoneName, zoneId } = await freshZone();
    const name = uniq('noop');
    const spec = zoneRuleset(zoneName, [{ expression: 'ip.src eq 192.0.2.7', action: 'block' }]);
    await k.apply(source('ZoneRuleset', name, spec));
    await rulesWhen(zoneId, FIREWALL, 'the rule in Cloudflare', (r) => r.length === 1);
    const before = await syncedSource('ZoneRuleset', name);

    const workflowId = syncWorkflowId(rulesetTarget(zoneId, FIREWALL));
    const mark = await requestMark(suite.fx.admin);
    await (await temporal()).workflow.getHandle(workflowId).signal('reaggregate');
    await eventually('the re-aggregation GET', async () => {
      const log = await requestsSince(suite.fx.admin, mark, { path: entrypointPath(zoneId, FIREWALL), method: 'GET' });
      return log.length > 0;
    });
    await sleep(2_000); // the window in which a write would show
    expect(await writesSince(mark, zoneId, FIREWALL)).toEqual([]);
    expect(
      await requestsSince(suite.fx.admin, mark, { path: entrypointPath(zoneId, FIREWALL), method: 'GET' }),
    ).toHaveLength(1);

    // The same spec again with a new label: same generation, nothing to write.
    const mark2 = await requestMark(suite.fx.admin);
    await k.apply(source('ZoneRuleset', name, spec, { team: 'blue' }));
    const relabelled = await getSource('ZoneRuleset', name);
    expect(relabelled!.metadata.generation).toBe(before.metadata.generation);
    await sleep(2_000);
    expect(await writesSince(mark2, zoneId, FIREWALL)).toEqual([]);
    expect(await entrypointRules(suite.fx.cf, zoneId, FIREWALL)).toHaveLength(1);

    await deleteSource('ZoneRuleset', name);
    await rulesWhen(zoneId, FIREWALL, 'rule removed', (r) => r.length === 0);
  });
});

describe('drift', () => {
  const rules = [
    { expression: 'ip.src eq 192.0.2.1', action: 'block' },
    { expression: 'ip.src eq 192.0.2.2', action: 'challenge' },
  ];

  async function converge(driftPolicy: 'repair' | 'observe') {
    const { zoneName, zoneId } = await freshZone();
    const target = rulesetTarget(zoneId, FIREWALL);
    await startSyncWorkflow(target, { observeIntervalMs: 2_000, driftPolicy, debounceMs: 200 });
    const name = uniq(`drift-${driftPolicy}`);
    await k.apply(source('ZoneRuleset', name, zoneRuleset(zoneName, rules)));
    const live = await rulesWhen(zoneId, FIREWALL, 'both rules in Cloudflare', (r) => r.length === 2);
    await syncedSource('ZoneRuleset', name);
    return { zoneId, name, live, stateName: syncStateName(target) };
  }

  const drifted = (stateName: string, reason: string, status = 'True') =>
    eventually(
      `Drifted ${status} ${reason} on ${stateName}`,
      async () => {
        const c = conditionOf(await getSyncState(stateName), 'Drifted');
        return c?.status === status && c.reason === reason ? c : undefined;
      },
      { intervalMs: 100 },
    );

  it('repairs a rule edited or deleted in the dashboard and says so on the SyncState', async () => {
    const { zoneId, name, live, stateName } = await converge('repair');

    // The dashboard changes the expression of one of our rules.
    const edited = await dashboardPut(zoneId, FIREWALL, [
      { ...live[0]!, expression: 'ip.src eq 192.0.2.99' },
      live[1]!,
    ]);
    expect(edited.map((r) => [r.id, r.expression])).toEqual([
      [live[0]!.id, 'ip.src eq 192.0.2.99'],
      [live[1]!.id, 'ip.src eq 192.0.2.2'],
    ]);
    const repaired = await drifted(stateName, 'DriftRepaired');
    expect(repaired.message).toContain('re-applied');
    const restored = await rulesWhen(
      zoneId,
      FIREWALL,
      'the edited rule restored',
      (r) => r.length === 2 && r[0]!.expression === 'ip.src eq 192.0.2.1',
    );
    expect(restored.map((r) => r.id)).toEqual(live.map((r) => r.id)); // same rules, not new ones
    expect(restored.map((r) => r.description)).toEqual([markerOf('ZoneRuleset', name), markerOf('ZoneRuleset', name)]);

    // The next observation finds nothing: the condition goes back to in sync.
    await drifted(stateName, 'InSync', 'False');

    // The dashboard deletes one of our rules: drift too.
    expect(await dashboardPut(zoneId, FIREWALL, [restored[0]!])).toHaveLength(1);
    await drifted(stateName, 'DriftRepaired');
    const back = await rulesWhen(
      zoneId,
      FIREWALL,
      'the deleted rule back',
      (r) => r.length === 2 && r[1]!.expression === 'ip.src eq 192.0.2.2',
    );
    expect(back.map((r) => r.description)).toEqual([markerOf('ZoneRuleset', name), markerOf('ZoneRuleset', name)]);

    await deleteSource('ZoneRuleset', name);
    await rulesWhen(zoneId, FIREWALL, 'rules removed', (r) => r.length === 0);
  });

  it('with driftPolicy observe, reports the edit and leaves it in place', async () => {
    const { zoneId, name, live, stateName } = await converge('observe');

    const mark = await requestMark(suite.fx.admin);
    await dashboardPut(zoneId, FIREWALL, [{ ...live[0]!, expression: 'ip.src eq 192.0.2.99' }, live[1]!]);
    const observed = await drifted(stateName, 'DriftObserved');
    expect(observed.message).toContain('left as is');
    // Two more observations later it is still there, and only the dashboard wrote.
    const gets = (await requestsSince(suite.fx.admin, mark, { path: entrypointPath(zoneId, FIREWALL), method: 'GET' }))
      .length;
    await eventually('two more observations', async () => {
      const n = (await requestsSince(suite.fx.admin, mark, { path: entrypointPath(zoneId, FIREWALL), method: 'GET' }))
        .length;
      return n >= gets + 2;
    });
    const now = await entrypointRules(suite.fx.cf, zoneId, FIREWALL);
    expect(now[0]!.expression).toBe('ip.src eq 192.0.2.99');
    expect(await writesSince(mark, zoneId, FIREWALL)).toHaveLength(1); // the dashboard's own PUT
    expect(conditionOf(await getSyncState(stateName), 'Drifted')?.reason).toBe('DriftObserved');

    // A user's re-aggregation is an explicit request to write: it repairs even under observe.
    await (await temporal()).workflow.getHandle(syncWorkflowId(rulesetTarget(zoneId, FIREWALL))).signal('reaggregate');
    await rulesWhen(
      zoneId,
      FIREWALL,
      'the rule restored by reaggregate',
      (r) => r[0]?.expression === rules[0]!.expression,
    );
    await drifted(stateName, 'DriftRepaired');

    await deleteSource('ZoneRuleset', name);
    await rulesWhen(zoneId, FIREWALL, 'rules removed', (r) => r.length === 0);
  });
});

describe('debounce', () => {
  it('turns 20 quick spec updates into at most a few writes, ending with the last one', async () => {
    const { zoneName, zoneId } = await freshZone();
    const name = uniq('burst');
    const spec = (i: number) => zoneRuleset(zoneName, [{ expression: `ip.src eq 10.0.0.${i}`, action: 'block' }]);
    await k.apply(source('ZoneRuleset', name, spec(0)));
    await rulesWhen(zoneId, FIREWALL, 'the first version', (r) => r[0]?.expression === 'ip.src eq 10.0.0.0');
    await syncedSource('ZoneRuleset', name);

    const mark = await requestMark(suite.fx.admin);
    for (let i = 1; i <= 20; i++) await k.apply(source('ZoneRuleset', name, spec(i)));
    await rulesWhen(
      zoneId,
      FIREWALL,
      'the last expression',
      (r) => r.length === 1 && r[0]!.expression === 'ip.src eq 10.0.0.20',
    );
    const final = await syncedSource('ZoneRuleset', name);
    expect(final.metadata.generation).toBeGreaterThanOrEqual(21);
    const puts = (await writesSince(mark, zoneId, FIREWALL)).filter((r) => r.method === 'PUT');
    expect(puts.length).toBeGreaterThanOrEqual(1);
    expect(puts.length).toBeLessThanOrEqual(3);

    await deleteSource('ZoneRuleset', name);
    await rulesWhen(zoneId, FIREWALL, 'rule removed', (r) => r.length === 0);
  });
});

describe('debounce window', () => {
  it('a stream of changes closer together than the quiet window becomes one sync after it', async () => {
    const { zoneName, zoneId } = await freshZone();
    const target = rulesetTarget(zoneId, FIREWALL);
    // A long window (1.5 s) and a long cap, so the stream below (10 hints 300 ms apart) stays inside.
    const workflowId = await startSyncWorkflow(target, { debounceMs: 1_500, maxDebounceMs: 20_000 });
    const name = uniq('window');
    await k.apply(
      source('ZoneRuleset', name, zoneRuleset(zoneName, [{ expression: 'ip.src eq 10.1.0.1', action: 'block' }])),
    );
    const obj = await syncedSource('ZoneRuleset', name);
    await sleep(2_000); // the source's own registration settled

    const registration: SourceRegistration = {
      ref: { kind: 'ZoneRuleset', namespace, name },
      uid: obj.metadata.uid!,
      generation: obj.metadata.generation!,
      anchor: `zone:${zoneName}`,
      credentials,
    };
    const handle = (await temporal()).workflow.getHandle(workflowId);
    const mark = await requestMark(suite.fx.admin);
    // Each a change (what the source reads changed): an unchanged registration is no reason to sync.
    for (let i = 0; i < 10; i++) {
      await handle.signal(registerSourceSignal, { ...registration, view: `changed-${i}` });
      await sleep(300);
    }
    const gets = () => requestsSince(suite.fx.admin, mark, { path: entrypointPath(zoneId, FIREWALL), method: 'GET' });
    expect(await gets(), 'no sync while the hints keep coming').toHaveLength(0);
    await eventually('the one sync after the quiet window', async () => (await gets()).length >= 1);
    await sleep(2_500);
    expect(await gets()).toHaveLength(1);

    await deleteSource('ZoneRuleset', name);
    await rulesWhen(zoneId, FIREWALL, 'rule removed', (r) => r.length === 0);
  });
});

describe('TransformRule and RedirectRule', () => {
  it('aggregates a TransformRule with a ZoneRuleset of its phase, and writes redirects in Cloudflare shape', async () => {
    const { zoneName, zoneId } = await freshZone();
    const transform = uniq('add-header');
    const zr = uniq('late-zr');
    const redirect = uniq('redirects');
    await k.apply(
      source('TransformRule', transform, {
        zone: zoneName,
        type: 'request_header',
        rules: [
          {
            name: 'mark requests',
            expression: 'true',
            headers: [{ name: 'X-From-Operator', operation: 'set', value: 'yes' }],
          },
        ],
      }),
    );
    await k.apply(
      source('ZoneRuleset', zr, {
        zone: zoneName,
        phase: LATE_TRANSFORM,
        priority: 200,
        rules: [
          {
            expression: 'http.request.uri.path eq "/x"',
            action: 'rewrite',
            actionParameters: { headers: { 'X-Path': { operation: 'set', value: 'x' } } },
          },
        ],
      }),
    );
    await k.apply(
      source('RedirectRule', redirect, {
        zone: zoneName,
        rules: [
          {
            name: 'old docs',
            expression: 'http.request.uri.path eq "/old"',
            target: { url: 'https://example.com/new' },
            statusCode: 301,
          },
        ],
        wildcardRules: [
          { name: 'blog', sourceUrl: 'https://example.com/blog/*', targetUrl: 'https://blog.example.com/${1}' },
        ],
      }),
    );

    const late = await rulesWhen(
      zoneId,
      LATE_TRANSFORM,
      'the transform and the ruleset in one entrypoint',
      (r) => r.length === 2,
    );
    expect(late[0]).toMatchObject({
      action: 'rewrite',
      expression: 'true',
      description: `mark requests ${markerOf('TransformRule', transform)}`,
      action_parameters: { headers: { 'X-From-Operator': { operation: 'set', value: 'yes' } } },
    });
    expect(late[1]).toMatchObject({
      action: 'rewrite',
      description: markerOf('ZoneRuleset', zr),
      action_parameters: { headers: { 'X-Path': { operation: 'set', value: 'x' } } },
    });
    const lateState = syncStateName(rulesetTarget(zoneId, LATE_TRANSFORM));
    const state = await eventually('one SyncState listing both', async () => {
      const s = await getSyncState(lateState);
      return s?.spec.sources?.length === 2 ? s : undefined;
    });
    expect(state.spec.sources!.map((s) => `${s.ref.kind}/${s.ref.namespace}/${s.ref.name}`).sort()).toEqual(
      [`TransformRule/${namespace}/${transform}`, `ZoneRuleset/${namespace}/${zr}`].sort(),
    );

    const redirects = await rulesWhen(zoneId, REDIRECT, 'the redirects', (r) => r.length === 2);
    expect(redirects[0]).toMatchObject({
      action: 'redirect',
      expression: 'http.request.uri.path eq "/old"',
      description: `old docs ${markerOf('RedirectRule', redirect)}`,
      action_parameters: {
        from_value: {
          target_url: { value: 'https://example.com/new' },
          status_code: 301,
          preserve_query_string: false,
        },
      },
    });
    expect(redirects[1]).toMatchObject({
      action: 'redirect',
      expression: 'http.request.full_uri wildcard "https://example.com/blog/*"',
      description: `blog ${markerOf('RedirectRule', redirect)}`,
      action_parameters: {
        from_value: {
          target_url: {
            expression:
              'wildcard_replace(http.request.full_uri, "https://example.com/blog/*", "https://blog.example.com/${1}")',
          },
          status_code: 301,
        },
      },
    });

    // Every source reports back on its own status.
    for (const [kind, name, phase] of [
      ['TransformRule', transform, LATE_TRANSFORM],
      ['ZoneRuleset', zr, LATE_TRANSFORM],
      ['RedirectRule', redirect, REDIRECT],
    ] as const) {
      const obj = await syncedSource(kind, name);
      expect(obj.status?.syncState).toBe(syncStateName(rulesetTarget(zoneId, phase)));
    }

    for (const [kind, name] of [
      ['TransformRule', transform],
      ['ZoneRuleset', zr],
      ['RedirectRule', redirect],
    ] as const)
      await deleteSource(kind, name);
    await rulesWhen(zoneId, LATE_TRANSFORM, 'transforms removed', (r) => r.length === 0);
    await rulesWhen(zoneId, REDIRECT, 'redirects removed', (r) => r.length === 0);
  });
});

describe('sources report back', () => {
  it('shows Ready/Synced with the SyncState and the observed generation; the SyncState shows Synced and its version', async () => {
    const { zoneName, zoneId } = await freshZone();
    const name = uniq('report');
    const stateName = syncStateName(rulesetTarget(zoneId, FIREWALL));
    await k.apply(
      source('ZoneRuleset', name, zoneRuleset(zoneName, [{ expression: 'ip.src eq 192.0.2.30', action: 'block' }])),
    );
    const first = await syncedSource('ZoneRuleset', name);
    expect(first.status?.syncState).toBe(stateName);
    expect(first.status?.observedGeneration).toBe(first.metadata.generation);
    const v1 = await eventually('the SyncState Synced', async () => {
      const s = await getSyncState(stateName);
      return s?.status?.syncStatus === 'Synced' ? s : undefined;
    });
    expect(v1.status!.configVersion).toBeGreaterThanOrEqual(1);
    expect(conditionOf(v1, 'Ready')).toMatchObject({ status: 'True', reason: 'Synced' });

    // A spec change: the next generation is reported, and the version goes up.
    await k.apply(
      source('ZoneRuleset', name, zoneRuleset(zoneName, [{ expression: 'ip.src eq 192.0.2.31', action: 'block' }])),
    );
    const second = await eventually('generation 2 reported', async () => {
      const obj = await syncedSource('ZoneRuleset', name);
      return obj.metadata.generation! > first.metadata.generation! ? obj : undefined;
    });
    expect(conditionOf(second, 'Ready')?.message).toContain(stateName);
    const v2 = await eventually('the SyncState at the next version', async () => {
      const s = await getSyncState(stateName);
      return (s?.status?.configVersion ?? 0) > v1.status!.configVersion! ? s : undefined;
    });
    expect(v2.status!.syncStatus).toBe('Synced');

    // `kubectl get cfss` shows those two fields.
    const crd = await k.get<
      {
        spec: { versions: { additionalPrinterColumns?: { name: string; jsonPath: string }[] }[] };
      } & never
    >({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      name: 'cloudflaresyncstates.networking.cloudflare-operator.io',
    });
    const columns = (
      crd as unknown as { spec: { versions: { additionalPrinterColumns?: { name: string; jsonPath: string }[] }[] } }
    ).spec.versions[0]!.additionalPrinterColumns!;
    expect(columns).toContainEqual(expect.objectContaining({ name: 'Status', jsonPath: '.status.syncStatus' }));
    expect(columns).toContainEqual(expect.objectContaining({ name: 'Version', jsonPath: '.status.configVersion' }));

    await deleteSource('ZoneRuleset', name);
    await rulesWhen(zoneId, FIREWALL, 'rule removed', (r) => r.length === 0);
  });
});

describe('Web UI findability', () => {
  it('lists the sync workflow by CloudflareTarget and by CloudflareSources', async () => {
    const { zoneName, zoneId } = await freshZone();
    const name = uniq('findme');
    const target = rulesetTarget(zoneId, FIREWALL);
    const workflowId = syncWorkflowId(target);
    await k.apply(
      source('ZoneRuleset', name, zoneRuleset(zoneName, [{ expression: 'ip.src eq 192.0.2.40', action: 'block' }])),
    );
    await syncedSource('ZoneRuleset', name);
    await eventually('listed by CloudflareTarget', async () =>
      (await listWorkflows(`CloudflareTarget = 'ZoneRuleset/${zoneId}/${FIREWALL}'`)).some(
        (w) => w.workflowId === workflowId,
      ),
    );
    await eventually('listed by CloudflareSources', async () =>
      (await listWorkflows(`CloudflareSources = 'ZoneRuleset/${namespace}/${name}'`)).some(
        (w) => w.workflowId === workflowId && w.status === 'RUNNING',
      ),
    );

    await deleteSource('ZoneRuleset', name);
    await rulesWhen(zoneId, FIREWALL, 'rule removed', (r) => r.length === 0);
  });
});
