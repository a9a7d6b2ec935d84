import { describe, expect, it } from 'vitest';
import {
  type SourceRef,
  describe as describeItem,
  marker,
  ownershipOf,
  parseRefString,
  refString,
  stripMarkers,
} from '../../src/domain/cloudflare/markers.js';
import {
  type SyncTarget,
  fnv1a,
  sameTarget,
  sourceWorkflowId,
  syncStateName,
  syncWorkflowId,
  targetCloudflareId,
  targetKey,
} from '../../src/domain/cloudflare/targets.js';
import {
  type RegisteredSource,
  compareSources,
  desiredEntries,
  desiredRules,
  orderSources,
} from '../../src/domain/cloudflare/aggregate.js';
import {
  type FallbackDomain,
  type RulesetRule,
  type SplitTunnelEntry,
  fallbackDomainCodec,
  rulesetRuleCodec,
  splitTunnelCodec,
} from '../../src/domain/cloudflare/items.js';
import { type DesiredItem, type MergeOptions, canonical, planWrite } from '../../src/domain/cloudflare/merge.js';
import { zoneRulesetRules } from '../../src/domain/cloudflare/kinds/rulesets.js';

const CLUSTER = 'cluster-a';
const OTHER = 'cluster-b';
const opts: MergeOptions = { clusterId: CLUSTER, adoptLegacy: false };

const teamA: SourceRef = { kind: 'TransformRule', namespace: 'team-a', name: 'headers' };
const teamB: SourceRef = { kind: 'TransformRule', namespace: 'team-b', name: 'headers' };
const policy: SourceRef = { kind: 'DeviceSettingsPolicy', name: 'default' };

/** The i-th element, failing the test when there is none. */
function nth<T>(xs: readonly T[], i: number): T {
  const x = xs[i];
  if (x === undefined) throw new Error(`no element ${i} in ${JSON.stringify(xs)}`);
  return x;
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

// ---------------------------------------------------------------------------------------------
// markers
// ---------------------------------------------------------------------------------------------

describe('markers: refString / parseRefString', () => {
  it('formats a namespaced ref as Kind/Namespace/Name and a cluster-scoped one as Kind/Name', () => {
    expect(refString(teamA)).toBe('TransformRule/team-a/headers');
    expect(refString(policy)).toBe('DeviceSettingsPolicy/default');
  });

  it('round-trips namespaced and cluster-scoped refs', () => {
    for (const ref of [teamA, teamB, policy, { kind: 'ZoneRuleset', namespace: 'x', name: 'y.z-1' }]) {
      expect(parseRefString(refString(ref))).toEqual(ref);
    }
  });

  it('rejects strings that are not refs', () => {
    for (const s of ['', 'Kind', 'Kind/', '/name', 'a/b/c/d', '/ns/name', 'Kind/ns/']) {
      expect(parseRefString(s), s).toBeUndefined();
    }
  });
});

describe('markers: describe', () => {
  it('appends the marker to the user description', () => {
    expect(describeItem('Add header', CLUSTER, teamA)).toBe(
      'Add header [managed-by:cluster-a:TransformRule/team-a/headers]',
    );
  });

  it('is just the marker when there is no description', () => {
    expect(describeItem(undefined, CLUSTER, teamA)).toBe(marker(CLUSTER, teamA));
    expect(describeItem('', CLUSTER, teamA)).toBe('[managed-by:cluster-a:TransformRule/team-a/headers]');
    expect(describeItem('   ', CLUSTER, teamA)).toBe(marker(CLUSTER, teamA));
  });

  it('uses Kind/Name for a cluster-scoped source', () => {
    expect(describeItem('corp', CLUSTER, policy)).toBe('corp [managed-by:cluster-a:DeviceSettingsPolicy/default]');
  });

  it('replaces an old marker instead of stacking a second one', () => {
    const once = describeItem('Add header', CLUSTER, teamA);
    expect(describeItem(once, CLUSTER, teamA)).toBe(once);
    const legacy = 'Add header [managed-by:TransformRule/team-a/headers]';
    expect(describeItem(legacy, CLUSTER, teamA)).toBe(once);
    const foreign = 'Add header [managed-by:cluster-z:TransformRule/x/y]';
    const d = describeItem(foreign, CLUSTER, teamA);
    expect(d).toBe(once);
    expect(d.match(/\[managed-by:/g)).toHaveLength(1);
  });

  it('describe is idempotent and the result is classified as ours with the same ref', () => {
    const d = describeItem(describeItem('x', CLUSTER, policy), CLUSTER, policy);
    expect(ownershipOf(d, CLUSTER)).toEqual({ owner: 'ours', ref: policy });
  });
});

describe('markers: stripMarkers', () => {
  it('removes every marker and the whitespace before it', () => {
    expect(stripMarkers('Add header [managed-by:cluster-a:TransformRule/team-a/headers]')).toBe('Add header');
    expect(stripMarkers('a [managed-by:K/n/m] [managed-by:c:K/n/m]')).toBe('a');
    expect(stripMarkers('[managed-by:c:K/n/m]')).toBe('');
  });

  it('leaves descriptions without markers untouched', () => {
    expect(stripMarkers('Manual rule by admin')).toBe('Manual rule by admin');
    expect(stripMarkers('keep [brackets] here')).toBe('keep [brackets] here');
  });
});

describe('markers: ownershipOf', () => {
  it('classifies our cluster id as ours, with the ref', () => {
    expect(ownershipOf(`x ${marker(CLUSTER, teamA)}`, CLUSTER)).toEqual({ owner: 'ours', ref: teamA });
  });

  it('classifies a cluster-scoped marker of ours', () => {
    expect(ownershipOf('[managed-by:cluster-a:DeviceSettingsPolicy/default]', CLUSTER)).toEqual({
      owner: 'ours',
      ref: policy,
    });
  });

  it('classifies another cluster id as other-cluster', () => {
    expect(ownershipOf(`x ${marker(OTHER, teamA)}`, CLUSTER)).toEqual({
      owner: 'other-cluster',
      clusterId: OTHER,
      ref: teamA,
    });
  });

  it('does not treat a cluster id that merely starts with ours as ours', () => {
    expect(ownershipOf(marker('cluster-a2', teamA), CLUSTER)).toMatchObject({ owner: 'other-cluster' });
    expect(ownershipOf(marker('cluster', teamA), CLUSTER)).toMatchObject({ owner: 'other-cluster' });
  });

  it('classifies the original marker without cluster id as legacy (namespaced and cluster-scoped)', () => {
    expect(ownershipOf('Rule [managed-by:TransformRule/team-a/headers]', CLUSTER)).toEqual({
      owner: 'legacy',
      ref: teamA,
    });
    expect(ownershipOf('[managed-by:DeviceSettingsPolicy/default]', CLUSTER)).toEqual({ owner: 'legacy', ref: policy });
  });

  it('classifies descriptions without a marker as external', () => {
    for (const d of [undefined, null, '', 'Manual rule by admin', 'managed-by:cluster-a:K/n/m (no brackets)']) {
      expect(ownershipOf(d, CLUSTER), String(d)).toEqual({ owner: 'external' });
    }
  });

  it('classifies malformed markers as external', () => {
    for (const d of [
      '[managed-by:]',
      '[managed-by:cluster-a]',
      '[managed-by:cluster-a:TransformRule]',
      '[managed-by:cluster-a:K/a/b/c]',
      '[managed-by::TransformRule/team-a/headers]',
      '[managed-by:bad cluster:TransformRule/team-a/headers]',
      '[managed-by:-bad:TransformRule/team-a/headers]',
      '[managed-by:K/a/b/c]',
      '[managed-by:/ns/name]',
    ]) {
      expect(ownershipOf(d, CLUSTER), d).toEqual({ owner: 'external' });
    }
  });

  it('the last marker counts', () => {
    expect(ownershipOf(`${marker(OTHER, teamB)} ${marker(CLUSTER, teamA)}`, CLUSTER)).toEqual({
      owner: 'ours',
      ref: teamA,
    });
    expect(ownershipOf(`${marker(CLUSTER, teamA)} ${marker(OTHER, teamB)}`, CLUSTER)).toMatchObject({
      owner: 'other-cluster',
      clusterId: OTHER,
    });
  });
});

// ---------------------------------------------------------------------------------------------
// targets
// ---------------------------------------------------------------------------------------------

const ZONE = '023e105f4ecef8ad9ca31a8372d0c353';
const ACCOUNT = '01a7362d577a6c3019a474fd6f485823';

describe('targets', () => {
  const transform: SyncTarget = {
    resourceType: 'ZoneRuleset',
    accountId: ACCOUNT,
    zoneId: ZONE,
    phase: 'http_request_late_transform',
  };
  const include: SyncTarget = { resourceType: 'DeviceSettingsPolicy', accountId: ACCOUNT, list: 'include' };
  const exclude: SyncTarget = { resourceType: 'DeviceSettingsPolicy', accountId: ACCOUNT, list: 'exclude' };

  it('targetKey and syncWorkflowId have the documented shapes', () => {
    expect(targetKey(transform)).toBe(`ZoneRuleset/${ZONE}/http_request_late_transform`);
    expect(targetKey(include)).toBe(`DeviceSettingsPolicy/${ACCOUNT}/include`);
    expect(syncWorkflowId(transform)).toBe(`cloudflare-sync/ZoneRuleset/${ZONE}/http_request_late_transform`);
    expect(syncWorkflowId(exclude)).toBe(`cloudflare-sync/DeviceSettingsPolicy/${ACCOUNT}/exclude`);
  });

  it('sourceWorkflowId omits the namespace for cluster-scoped sources', () => {
    expect(sourceWorkflowId(teamA)).toBe('cloudflare-source/TransformRule/team-a/headers');
    expect(sourceWorkflowId(policy)).toBe('cloudflare-source/DeviceSettingsPolicy/default');
  });

  it('ruleset targets of the same zone and phase are the same target; other phases/zones are not', () => {
    const sameOtherAccount: SyncTarget = { ...transform, accountId: 'another-account' };
    expect(sameTarget(transform, { ...transform })).toBe(true);
    expect(sameTarget(transform, sameOtherAccount)).toBe(true);
    expect(syncWorkflowId(transform)).toBe(syncWorkflowId(sameOtherAccount));
    expect(syncStateName(transform)).toBe(syncStateName(sameOtherAccount));
    expect(sameTarget(transform, { ...transform, phase: 'http_request_transform' })).toBe(false);
    expect(sameTarget(transform, { ...transform, zoneId: 'ffff' })).toBe(false);
    expect(sameTarget(include, exclude)).toBe(false);
  });

  it('targetCloudflareId: ruleset id when known, pending placeholder otherwise; account list id', () => {
    expect(targetCloudflareId(transform, 'rs-1')).toBe('rs-1');
    expect(targetCloudflareId(transform)).toBe(`pending-${ZONE}-http_request_late_transform`);
    expect(targetCloudflareId(include)).toBe(`account-${ACCOUNT}-include`);
  });

  it('fnv1a is the standard 32-bit FNV-1a as 8 hex digits', () => {
    expect(fnv1a('')).toBe('811c9dc5');
    expect(fnv1a('a')).toBe('e40c292c');
    expect(fnv1a('foobar')).toBe('bf9cf968');
  });

  it('syncStateName keeps short names readable and unhashed', () => {
    const short: SyncTarget = {
      resourceType: 'ZoneRuleset',
      accountId: 'a',
      zoneId: 'z1',
      phase: 'http_request_transform',
    };
    expect(syncStateName(short)).toBe('zone-ruleset-z1-http-request-transform');
    expect(syncStateName({ resourceType: 'DeviceSettingsPolicy', accountId: 'acc', list: 'fallback_domains' })).toBe(
      'device-settings-policy-acc-fallback-domains',
    );
  });

  it('syncStateName is a DNS-1123 label of at most 63 characters, deterministic', () => {
    const targets: SyncTarget[] = [
      transform,
      include,
      exclude,
      { resourceType: 'DeviceSettingsPolicy', accountId: ACCOUNT, list: 'fallback_domains' },
      { resourceType: 'ZoneRuleset', accountId: ACCOUNT, zoneId: ZONE, phase: 'http_request_dynamic_redirect' },
      { resourceType: 'ZoneRuleset', accountId: ACCOUNT, zoneId: `${ZONE}${ZONE}`, phase: 'http_ratelimit' },
      {
        resourceType: 'ZoneRuleset',
        accountId: ACCOUNT,
        zoneId: 'Zone_With.Odd--Chars_',
        phase: 'HTTP_Request_Transform',
      },
    ];
    for (const t of targets) {
      const name = syncStateName(t);
      expect(name.length, name).toBeLessThanOrEqual(63);
      expect(name, name).toMatch(DNS1123_LABEL);
      expect(syncStateName(structuredClone(t))).toBe(name);
    }
    expect(syncStateName(transform)).toHaveLength(63);
  });

  it('syncStateName hashes exactly when the readable name exceeds 63 characters', () => {
    // device-settings-policy-<32>-include is exactly 63: kept readable
    expect(syncStateName(include)).toBe(`device-settings-policy-${ACCOUNT}-include`);
    expect(syncStateName(include)).toHaveLength(63);
    // zone-ruleset-<32>-http-request-origin is 65: cut and hashed
    const origin: SyncTarget = {
      resourceType: 'ZoneRuleset',
      accountId: ACCOUNT,
      zoneId: ZONE,
      phase: 'http_request_origin',
    };
    expect(`zone-ruleset-${ZONE}-http-request-origin`).toHaveLength(65);
    expect(syncStateName(origin)).toBe(`zone-ruleset-${ZONE}-http-req-${fnv1a(targetKey(origin))}`);
    expect(syncStateName(origin)).toHaveLength(63);
  });

  it('syncStateName is distinct for targets that differ only beyond the cut', () => {
    // zone-ruleset-<32 hex>-http-req… is 54 chars: these phases differ only after the cut.
    const a: SyncTarget = {
      resourceType: 'ZoneRuleset',
      accountId: ACCOUNT,
      zoneId: ZONE,
      phase: 'http_request_late_transform',
    };
    const b: SyncTarget = { ...a, phase: 'http_request_transform' };
    const c: SyncTarget = { ...a, phase: 'http_request_dynamic_redirect' };
    for (const t of [b, c]) {
      expect(syncStateName(t).slice(0, 54)).toBe(syncStateName(a).slice(0, 54));
      expect(syncStateName(t)).toHaveLength(63);
    }
    const names = new Set([a, b, c].map(syncStateName));
    expect(names.size).toBe(3);
    const fallback: SyncTarget = { resourceType: 'DeviceSettingsPolicy', accountId: ACCOUNT, list: 'fallback_domains' };
    expect(new Set([include, exclude, fallback].map(syncStateName)).size).toBe(3);
    expect(syncStateName(a)).toBe(`${syncStateName(a).slice(0, 54).replace(/-+$/, '')}-${fnv1a(targetKey(a))}`);
  });
});

// ---------------------------------------------------------------------------------------------
// aggregate
// ---------------------------------------------------------------------------------------------

function source<C extends RegisteredSource['config']>(
  ref: SourceRef,
  config: C,
  priority = 100,
  createdAt = '2024-01-01T00:00:00Z',
): RegisteredSource<C> {
  return { ref, priority, createdAt, generation: 1, uid: `uid-${refString(ref)}`, config };
}

function permutations<T>(xs: T[]): T[][] {
  if (xs.length <= 1) return [xs];
  return xs.flatMap((x, i) => permutations([...xs.slice(0, i), ...xs.slice(i + 1)]).map((p) => [x, ...p]));
}

describe('aggregate', () => {
  const r = (name: string, ns = 'ns'): SourceRef => ({ kind: 'TransformRule', namespace: ns, name });
  const sources = [
    source(r('late'), { rules: [{ action: 'rewrite', expression: 'late' }] }, 100, '2024-03-01T00:00:00Z'),
    source(r('early'), { rules: [{ action: 'rewrite', expression: 'early' }] }, 100, '2024-01-01T00:00:00Z'),
    source(r('urgent'), { rules: [{ action: 'rewrite', expression: 'urgent' }] }, 10, '2025-01-01T00:00:00Z'),
    source(r('b-same-time'), { rules: [{ action: 'rewrite', expression: 'b' }] }, 100, '2024-02-01T00:00:00Z'),
    source(r('a-same-time'), { rules: [{ action: 'rewrite', expression: 'a' }] }, 100, '2024-02-01T00:00:00Z'),
    source(r('low'), { rules: [{ action: 'rewrite', expression: 'low' }] }, 200, '2020-01-01T00:00:00Z'),
  ];

  it('orders by priority, then creation time, then ref', () => {
    expect(orderSources(sources).map((s) => s.ref.name)).toEqual([
      'urgent',
      'early',
      'a-same-time',
      'b-same-time',
      'late',
      'low',
    ]);
  });

  it('compareSources breaks a full tie on ref (namespace included)', () => {
    const x = source(r('same', 'ns-a'), { rules: [] });
    const y = source(r('same', 'ns-b'), { rules: [] });
    expect(compareSources(x, y)).toBeLessThan(0);
    expect(compareSources(y, x)).toBeGreaterThan(0);
    expect(compareSources(x, x)).toBe(0);
  });

  it('gives identical output for identical inputs in any input order', () => {
    const small = sources.slice(0, 5);
    const reference = desiredRules(small, CLUSTER);
    for (const p of permutations(small)) expect(desiredRules(p, CLUSTER)).toEqual(reference);
    const full = orderSources(sources).map((s) => refString(s.ref));
    expect(orderSources([...sources].reverse()).map((s) => refString(s.ref))).toEqual(full);
  });

  it('desiredRules puts each source marker on its rules and keeps the user description', () => {
    const a = source(teamA, {
      rules: [
        { action: 'rewrite', expression: 'a1', description: 'Add header' },
        { action: 'rewrite', expression: 'a2' },
      ],
    });
    const b = source(teamB, {
      rules: [{ action: 'redirect', expression: 'b1', description: 'Old [managed-by:x:K/y/z]' }],
    });
    const out = desiredRules([b, a], CLUSTER);
    expect(out).toEqual([
      {
        owner: teamA,
        item: { action: 'rewrite', expression: 'a1', description: `Add header ${marker(CLUSTER, teamA)}` },
      },
      { owner: teamA, item: { action: 'rewrite', expression: 'a2', description: marker(CLUSTER, teamA) } },
      { owner: teamB, item: { action: 'redirect', expression: 'b1', description: `Old ${marker(CLUSTER, teamB)}` } },
    ]);
    for (const d of out) expect(ownershipOf(d.item.description, CLUSTER)).toEqual({ owner: 'ours', ref: d.owner });
  });

  it('desiredRules does not mutate the source config', () => {
    const rule = { action: 'rewrite', expression: 'a1', description: 'Add header' };
    desiredRules([source(teamA, { rules: [rule] })], CLUSTER);
    expect(rule.description).toBe('Add header');
  });

  it('desiredEntries puts each source marker on its entries (cluster-scoped too)', () => {
    const p = source(policy, {
      entries: [{ address: '10.0.0.0/8', description: 'corp' }, { host: 'intra.example.com' }],
    });
    const q = source(teamA, { entries: [{ address: '192.168.0.0/16' }] }, 50);
    const out = desiredEntries<SplitTunnelEntry>([p, q], CLUSTER);
    expect(out).toEqual([
      { owner: teamA, item: { address: '192.168.0.0/16', description: marker(CLUSTER, teamA) } },
      { owner: policy, item: { address: '10.0.0.0/8', description: `corp ${marker(CLUSTER, policy)}` } },
      { owner: policy, item: { host: 'intra.example.com', description: marker(CLUSTER, policy) } },
    ]);
  });
});

// ---------------------------------------------------------------------------------------------
// merge: rulesets
// ---------------------------------------------------------------------------------------------

const manual: RulesetRule = {
  id: 'r-manual',
  ref: 'r-manual',
  action: 'block',
  expression: 'ip.src eq 1.2.3.4',
  description: 'Manual rule by admin',
  enabled: true,
  version: '1',
  last_updated: '2024-01-01T00:00:00Z',
};

/** What Cloudflare returns after a write: every rule gets an id (and ref = id), version, timestamp. */
let nextId = 1;
function readBack(items: RulesetRule[]): RulesetRule[] {
  return items.map((x) => {
    if (x.id && x.version) return x; // not ours, or not replaced: Cloudflare returns it as it was
    if (x.id) return { ...x, ref: x.ref ?? x.id, version: '2', last_updated: '2024-06-01T00:00:00Z' };
    const id = `r-new-${nextId++}`;
    return { enabled: true, ...x, id, ref: x.ref ?? id, version: '1', last_updated: '2024-06-01T00:00:00Z' };
  });
}

function rulesOf(...srcs: RegisteredSource[]): DesiredItem<RulesetRule>[] {
  return desiredRules(srcs, CLUSTER);
}

const plan = (live: RulesetRule[], desired: DesiredItem<RulesetRule>[], o: Partial<MergeOptions> = {}) =>
  planWrite(live, desired, rulesetRuleCodec, { ...opts, ...o });

describe('merge: rulesets (rulesetRuleCodec)', () => {
  const srcA = (expr = 'http.host eq "a.example.com"') =>
    source(
      teamA,
      { rules: [{ action: 'rewrite', expression: expr, description: 'Team A header' }] },
      100,
      '2024-01-01T00:00:00Z',
    );
  const srcB = () =>
    source(
      teamB,
      { rules: [{ action: 'rewrite', expression: 'http.host eq "b.example.com"', description: 'Team B header' }] },
      100,
      '2024-02-01T00:00:00Z',
    );

  it('seed 1: keeps the external manual rule in place and untouched through create, update, delete', () => {
    // create
    const created = plan([manual], rulesOf(srcA()));
    expect(created.write).toBe(true);
    expect(nth(created.items, 0)).toBe(manual);
    expect(created.items).toHaveLength(2);
    expect(nth(created.items, 1).description).toBe(`Team A header ${marker(CLUSTER, teamA)}`);
    expect(created.counts).toMatchObject({ ours: 0, external: 1, desired: 1 });
    let live = readBack(created.items);
    const idA = nth(live, 1).id;

    // no-op after the write
    const again = plan(live, rulesOf(srcA()));
    expect(again.write).toBe(false);
    expect(again.differences).toEqual([]);

    // update
    const updated = plan(live, rulesOf(srcA('http.host eq "a2.example.com"')));
    expect(updated.write).toBe(true);
    expect(nth(updated.items, 0)).toBe(manual);
    expect(nth(updated.items, 1)).toMatchObject({ id: idA, expression: 'http.host eq "a2.example.com"' });
    live = readBack(updated.items);

    // delete (the source is gone from the desired list)
    const deleted = plan(live, []);
    expect(deleted.write).toBe(true);
    expect(deleted.items).toEqual([manual]);
    expect(nth(deleted.items, 0)).toBe(manual);
    expect(deleted.counts).toMatchObject({ ours: 1, external: 1, desired: 0 });
  });

  it('a frozen source (invalid spec) keeps its live rules as they are, in place, and wants nothing', () => {
    const live = readBack(plan([manual], rulesOf(srcA(), srcB())).items);
    const [, ruleA, ruleB] = live;
    // Team A's spec became invalid: only team B is desired, team A is frozen.
    const frozen = plan(live, rulesOf(srcB()), { frozenOwners: new Set([refString(teamA)]) });
    expect(frozen.write).toBe(false);
    expect(frozen.items.map((r) => r.id)).toEqual(live.map((r) => r.id));
    expect(nth(frozen.items, 1)).toBe(ruleA); // the very live object: not rewritten
    expect(frozen.counts).toMatchObject({ ours: 1, frozen: 1, external: 1 });
    // Team B changes meanwhile: team A's rule stays, untouched, where it was.
    const changed = plan(
      live,
      rulesOf(
        source(
          teamB,
          { rules: [{ action: 'rewrite', expression: 'http.host eq "b2.example.com"', description: 'B' }] },
          100,
          '2024-02-01T00:00:00Z',
        ),
      ),
      { frozenOwners: new Set([refString(teamA)]) },
    );
    expect(changed.write).toBe(true);
    expect(nth(changed.items, 0)).toBe(manual);
    expect(nth(changed.items, 1)).toBe(ruleA);
    expect(nth(changed.items, 2)).toMatchObject({ id: ruleB!.id, expression: 'http.host eq "b2.example.com"' });
    // Not frozen any more and gone from the desired list: removed.
    expect(plan(live, rulesOf(srcB())).items.map((r) => r.description)).not.toContain(ruleA!.description);
  });

  it('seed 2: deleting team A leaves team B and the manual rule', () => {
    const both = plan([manual], rulesOf(srcA(), srcB()));
    expect(both.items.map((x) => x.description)).toEqual([
      'Manual rule by admin',
      `Team A header ${marker(CLUSTER, teamA)}`,
      `Team B header ${marker(CLUSTER, teamB)}`,
    ]);
    const live = readBack(both.items);
    const idB = nth(live, 2).id;
    const withoutA = plan(live, rulesOf(srcB()));
    expect(withoutA.write).toBe(true);
    expect(withoutA.items).toHaveLength(2);
    expect(nth(withoutA.items, 0)).toEqual(nth(live, 0));
    expect(nth(withoutA.items, 1)).toMatchObject({ id: idB, description: `Team B header ${marker(CLUSTER, teamB)}` });
    expect(withoutA.differences).toEqual([
      `not wanted or changed in Cloudflare: rule ${JSON.stringify(nth(live, 1).description)}`,
    ]);
  });

  it('no-op: live already equals desired → no write, no differences (server fields and ref=id ignored)', () => {
    const live = readBack(plan([manual], rulesOf(srcA(), srcB())).items);
    const p = plan(live, rulesOf(srcB(), srcA()));
    expect(p.write).toBe(false);
    expect(p.differences).toEqual([]);
    expect(p.conflicts).toEqual([]);
    expect(p.counts).toEqual({ ours: 2, external: 1, otherClusters: 0, adopted: 0, legacy: 0, frozen: 0, desired: 2 });
  });

  it('an explicit enabled: true equals an omitted enabled', () => {
    const desired = rulesOf(srcA());
    const live = [{ ...nth(desired, 0).item, id: 'x', ref: 'x' }];
    delete nth(live, 0).enabled;
    expect(plan(live, [{ ...nth(desired, 0), item: { ...nth(desired, 0).item, enabled: true } }]).write).toBe(false);
    expect(plan(live, [{ ...nth(desired, 0), item: { ...nth(desired, 0).item, enabled: false } }]).write).toBe(true);
  });

  it('a user-set ref that differs from the id is compared', () => {
    const d = rulesOf(source(teamA, { rules: [{ action: 'rewrite', expression: 'e', ref: 'my-ref' }] }));
    const live = [{ ...nth(d, 0).item, id: 'id-1', ref: 'my-ref' }];
    expect(plan(live, d).write).toBe(false);
    expect(plan([{ ...nth(live, 0), ref: 'other-ref' }], d).write).toBe(true);
  });

  it('a dashboard edit of one of our rules is drift: write with a difference naming it', () => {
    const live = readBack(plan([manual], rulesOf(srcA(), srcB())).items);
    const edited = live.map((x, i) => (i === 2 ? { ...x, expression: 'true' } : x));
    const p = plan(edited, rulesOf(srcA(), srcB()));
    expect(p.write).toBe(true);
    const label = JSON.stringify(`Team B header ${marker(CLUSTER, teamB)}`);
    expect(p.differences).toEqual([
      `missing in Cloudflare: rule ${label}`,
      `not wanted or changed in Cloudflare: rule ${label}`,
    ]);
    // the edit is reverted, the id kept
    expect(nth(p.items, 2)).toMatchObject({ id: nth(live, 2).id, expression: 'http.host eq "b.example.com"' });
  });

  it('a reordering of our rules is a difference (rules are ordered)', () => {
    const live = readBack(plan([], rulesOf(srcA(), srcB())).items);
    const p = plan([nth(live, 1), nth(live, 0)], rulesOf(srcA(), srcB()));
    expect(p.write).toBe(true);
    expect(p.differences).toEqual(['our items are in another order']);
    expect(p.items.map((x) => x.id)).toEqual([nth(live, 0).id, nth(live, 1).id]);
  });

  it("another cluster's rules are untouched and not counted as ours", () => {
    const foreign: RulesetRule = {
      id: 'r-foreign',
      version: '7',
      action: 'rewrite',
      expression: 'x',
      description: `Team A header ${marker(OTHER, teamA)}`,
    };
    const p = plan([foreign, manual], rulesOf(srcA()));
    expect(nth(p.items, 0)).toBe(foreign);
    expect(nth(p.items, 1)).toBe(manual);
    expect(p.items).toHaveLength(3);
    expect(p.counts).toMatchObject({ otherClusters: 1, external: 1, ours: 0 });
    const removeAll = plan(readBack(p.items), []);
    expect(removeAll.items.map((x) => x.id)).toEqual(['r-foreign', 'r-manual']);
    expect(nth(removeAll.items, 0)).toBe(foreign);
  });

  it('legacy-marker rules are kept untouched when adoptLegacy is false', () => {
    const legacy: RulesetRule = {
      id: 'r-legacy',
      ref: 'r-legacy',
      action: 'rewrite',
      expression: 'old',
      description: 'Team A header [managed-by:TransformRule/team-a/headers]',
    };
    const p = plan([legacy, manual], rulesOf(srcA()), { adoptLegacy: false });
    expect(p.items).toHaveLength(3);
    expect(nth(p.items, 0)).toBe(legacy);
    expect(nth(p.items, 1)).toBe(manual);
    expect(nth(p.items, 2)).not.toHaveProperty('id');
    expect(p.counts).toMatchObject({ legacy: 1, ours: 0, external: 1 });
    // removing all our sources still leaves the legacy rule
    expect(plan([legacy, manual], [], { adoptLegacy: false })).toMatchObject({ write: false, items: [legacy, manual] });
  });

  it('legacy-marker rules are replaced (in place, keeping the id) when adoptLegacy is true', () => {
    const legacy: RulesetRule = {
      id: 'r-legacy',
      ref: 'r-legacy',
      action: 'rewrite',
      expression: 'old',
      description: 'Team A header [managed-by:TransformRule/team-a/headers]',
    };
    const p = plan([legacy, manual], rulesOf(srcA()), { adoptLegacy: true });
    expect(p.write).toBe(true);
    expect(p.items).toHaveLength(2);
    expect(nth(p.items, 0)).toMatchObject({
      id: 'r-legacy',
      ref: 'r-legacy',
      expression: 'http.host eq "a.example.com"',
      description: `Team A header ${marker(CLUSTER, teamA)}`,
    });
    expect(nth(p.items, 1)).toBe(manual);
    expect(p.counts).toMatchObject({ legacy: 1, ours: 0 });
    // and a legacy rule of a source that no longer exists is removed when adopting
    expect(plan([legacy, manual], [], { adoptLegacy: true }).items).toEqual([manual]);
  });

  it('our rules of a source that no longer exists are removed', () => {
    const gone: SourceRef = { kind: 'TransformRule', namespace: 'team-gone', name: 'x' };
    const orphan: RulesetRule = {
      id: 'r-orphan',
      action: 'rewrite',
      expression: 'orphan',
      description: marker(CLUSTER, gone),
    };
    const live = [manual, orphan, ...readBack(plan([], rulesOf(srcA())).items)];
    const p = plan(live, rulesOf(srcA()));
    expect(p.write).toBe(true);
    expect(p.items.map((x) => x.id)).toEqual(['r-manual', nth(live, 2).id]);
    expect(p.differences).toEqual([`not wanted or changed in Cloudflare: rule ${JSON.stringify(orphan.description)}`]);
  });

  it('carryIdentity: the n-th live rule of a source gives its id (and ref) to the n-th desired rule', () => {
    const two = (e1: string, e2: string) =>
      source(teamA, {
        rules: [
          { action: 'rewrite', expression: e1 },
          { action: 'rewrite', expression: e2 },
        ],
      });
    const live = readBack(plan([], [...rulesOf(two('one', 'two')), ...rulesOf(srcB())]).items);
    const p = plan(live, [...rulesOf(two('ONE', 'TWO')), ...rulesOf(srcB())]);
    expect(p.items.map((x) => [x.id, x.ref, x.expression])).toEqual([
      [nth(live, 0).id, nth(live, 0).id, 'ONE'],
      [nth(live, 1).id, nth(live, 1).id, 'TWO'],
      [nth(live, 2).id, nth(live, 2).id, 'http.host eq "b.example.com"'],
    ]);
    // a third rule for team A is new: no id
    const grown = plan(
      live,
      rulesOf(source(teamA, { rules: ['1', '2', '3'].map((e) => ({ action: 'rewrite', expression: e })) })),
    );
    expect(grown.items.map((x) => x.id)).toEqual([nth(live, 0).id, nth(live, 1).id, undefined]);
    // a user-set ref is not replaced by the live one
    const withRef = plan(
      live,
      rulesOf(source(teamA, { rules: [{ action: 'rewrite', expression: 'x', ref: 'mine' }] })),
    );
    expect(nth(withRef.items, 0)).toMatchObject({ id: nth(live, 0).id, ref: 'mine' });
  });

  it('a rule with an explicit ref keeps its live identity when a rule is inserted before it: refs stay unique (D17)', () => {
    const rules = (...rs: { expression: string; ref?: string }[]) =>
      rulesOf(source(teamA, { rules: rs.map((r) => ({ action: 'block', ...r })) }));
    const live = readBack(plan([], rules({ expression: 'A', ref: 'a' }, { expression: 'B' })).items);
    // The user prepends C (no ref): C must not take A's ref, A keeps its rule (id and ref).
    const p = plan(live, rules({ expression: 'C' }, { expression: 'A', ref: 'a' }, { expression: 'B' }));
    const refs = p.items.map((x) => x.ref).filter((r): r is string => r !== undefined);
    expect(new Set(refs).size).toBe(refs.length);
    const ids = p.items.map((x) => x.id).filter((id): id is string => id !== undefined);
    expect(new Set(ids).size).toBe(ids.length);
    expect(p.items.find((x) => x.expression === 'A')).toMatchObject({ id: nth(live, 0).id, ref: 'a' });
    expect(p.items.find((x) => x.expression === 'C')!.ref).not.toBe('a');
  });

  it('no identity is carried across sources', () => {
    const live = readBack(plan([], rulesOf(srcA())).items);
    const p = plan(live, rulesOf(srcB()));
    expect(p.items).toHaveLength(1);
    expect(nth(p.items, 0).id).toBeUndefined();
  });

  it('position: our block sits where our first rule was, external rules around it keep their order', () => {
    const ext = (n: number): RulesetRule => ({
      id: `e${n}`,
      action: 'block',
      expression: `e${n}`,
      description: `ext ${n}`,
    });
    const ours = readBack(plan([], rulesOf(srcA(), srcB())).items);
    const live = [ext(1), nth(ours, 0), ext(2), nth(ours, 1), ext(3)];
    const p = plan(live, rulesOf(srcA(), srcB()));
    expect(p.items.map((x) => x.id)).toEqual(['e1', nth(ours, 0).id, nth(ours, 1).id, 'e2', 'e3']);
    // ours first in the live list → block at the very start
    const first = plan([nth(ours, 0), ext(1), ext(2)], rulesOf(srcA(), srcB()));
    expect(first.items.map((x) => x.id)).toEqual([nth(ours, 0).id, undefined, 'e1', 'e2']);
    // none of ours yet → appended at the end
    const none = plan([ext(1), ext(2)], rulesOf(srcA()));
    expect(none.items.map((x) => x.id)).toEqual(['e1', 'e2', undefined]);
  });

  it('a non-contiguous but equal managed subset is not a write', () => {
    const ours = readBack(plan([], rulesOf(srcA(), srcB())).items);
    const p = plan([nth(ours, 0), manual, nth(ours, 1)], rulesOf(srcA(), srcB()));
    expect(p.write).toBe(false);
    expect(p.differences).toEqual([]);
  });

  it('does not mutate the live list', () => {
    const live = readBack(plan([manual], rulesOf(srcA())).items);
    const snapshot = structuredClone(live);
    plan(live, rulesOf(srcB()));
    expect(live).toEqual(snapshot);
  });
});

// ---------------------------------------------------------------------------------------------
// merge: split tunnel / fallback domains
// ---------------------------------------------------------------------------------------------

describe('merge: split tunnel (splitTunnelCodec)', () => {
  const low = (entries: SplitTunnelEntry[]) => source(teamA, { entries }, 10, '2024-05-01T00:00:00Z');
  const high = (entries: SplitTunnelEntry[]) => source(teamB, { entries }, 100, '2020-01-01T00:00:00Z');
  const split = (live: SplitTunnelEntry[], srcs: RegisteredSource[]) =>
    planWrite(live, desiredEntries<SplitTunnelEntry>(srcs, CLUSTER), splitTunnelCodec, opts);

  it('keyOf: address, case-insensitive host, undefined for neither', () => {
    expect(splitTunnelCodec.keyOf!({ address: '10.0.0.0/8' })).toBe('address:10.0.0.0/8');
    expect(splitTunnelCodec.keyOf!({ host: 'Intra.Example.COM' })).toBe('host:intra.example.com');
    expect(splitTunnelCodec.keyOf!({ description: 'x' })).toBeUndefined();
  });

  it('duplicates across sources: the first by priority wins, the other is a conflict', () => {
    const p = split(
      [],
      [high([{ address: '10.0.0.0/8' }, { host: 'b.example.com' }]), low([{ address: '10.0.0.0/8' }])],
    );
    expect(p.items).toEqual([
      { address: '10.0.0.0/8', description: marker(CLUSTER, teamA) },
      { host: 'b.example.com', description: marker(CLUSTER, teamB) },
    ]);
    expect(p.conflicts).toEqual([{ owner: refString(teamB), key: 'address:10.0.0.0/8', heldBy: refString(teamA) }]);
    expect(p.counts.desired).toBe(2);
  });

  it('duplicate hosts differing only in case are one key', () => {
    const p = split([], [low([{ host: 'Intra.example.com' }]), high([{ host: 'intra.EXAMPLE.com' }])]);
    expect(p.items).toHaveLength(1);
    expect(p.conflicts).toEqual([{ owner: refString(teamB), key: 'host:intra.example.com', heldBy: refString(teamA) }]);
  });

  it('an external entry with the same address: ours is skipped, conflict held by external', () => {
    const ext: SplitTunnelEntry = { address: '10.0.0.0/8', description: 'added by hand' };
    const p = split([ext], [low([{ address: '10.0.0.0/8' }, { address: '172.16.0.0/12' }])]);
    expect(p.items).toEqual([ext, { address: '172.16.0.0/12', description: marker(CLUSTER, teamA) }]);
    expect(p.conflicts).toEqual([{ owner: refString(teamA), key: 'address:10.0.0.0/8', heldBy: 'external' }]);
  });

  it("another cluster's or a legacy entry with the same key: ours is skipped, conflict says who", () => {
    const foreign: SplitTunnelEntry = { address: '10.0.0.0/8', description: marker(OTHER, teamA) };
    const legacy: SplitTunnelEntry = {
      host: 'h.example.com',
      description: '[managed-by:DeviceSettingsPolicy/default]',
    };
    const p = split([foreign, legacy], [low([{ address: '10.0.0.0/8' }, { host: 'h.example.com' }])]);
    expect(p.items).toEqual([foreign, legacy]);
    expect(p.conflicts).toEqual([
      { owner: refString(teamA), key: 'address:10.0.0.0/8', heldBy: `cluster ${OTHER}` },
      { owner: refString(teamA), key: 'host:h.example.com', heldBy: 'legacy marker' },
    ]);
  });

  it('our own live entry with the same key is not a conflict', () => {
    const first = split([], [low([{ address: '10.0.0.0/8' }])]);
    const p = split(first.items, [low([{ address: '10.0.0.0/8' }])]);
    expect(p.conflicts).toEqual([]);
    expect(p.write).toBe(false);
  });

  it('comparison is order-insensitive: the same entries in another order → no write', () => {
    const srcs = [low([{ address: '10.0.0.0/8' }, { address: '192.168.0.0/16' }]), high([{ host: 'b.example.com' }])];
    const written = split([{ address: '1.1.1.1/32', description: 'ext' }], srcs).items;
    const shuffled = [nth(written, 3), nth(written, 0), nth(written, 2), nth(written, 1)];
    const p = split(shuffled, srcs);
    expect(p.write).toBe(false);
    expect(p.differences).toEqual([]);
  });

  it('a changed entry description or removed entry is a write', () => {
    const srcs = [low([{ address: '10.0.0.0/8', description: 'corp' }])];
    const written = split([], srcs).items;
    const p = split([{ ...nth(written, 0), description: `changed ${marker(CLUSTER, teamA)}` }], srcs);
    expect(p.write).toBe(true);
    expect(p.differences).toEqual([
      'missing in Cloudflare: entry 10.0.0.0/8',
      'not wanted or changed in Cloudflare: entry 10.0.0.0/8',
    ]);
    const removed = split(written, []);
    expect(removed).toMatchObject({ write: true, items: [] });
  });
});

describe('merge: fallback domains (fallbackDomainCodec)', () => {
  const fb = (entries: FallbackDomain[], ref = policy, priority = 100) => source(ref, { entries }, priority);
  const plan = (live: FallbackDomain[], srcs: RegisteredSource[]) =>
    planWrite(live, desiredEntries<FallbackDomain>(srcs, CLUSTER), fallbackDomainCodec, opts);

  it('suffixes are compared case-insensitively: no write when only the case differs', () => {
    const live: FallbackDomain[] = [
      { suffix: 'Corp.Example.COM', description: marker(CLUSTER, policy), dns_server: ['10.0.0.53'] },
    ];
    const p = plan(live, [fb([{ suffix: 'corp.example.com', dns_server: ['10.0.0.53'] }])]);
    expect(p.write).toBe(false);
    expect(p.differences).toEqual([]);
  });

  it('an omitted dns_server equals an empty one; a different server is a write', () => {
    const live: FallbackDomain[] = [{ suffix: 'corp', description: marker(CLUSTER, policy), dns_server: [] }];
    expect(plan(live, [fb([{ suffix: 'corp' }])]).write).toBe(false);
    expect(plan(live, [fb([{ suffix: 'corp', dns_server: ['1.1.1.1'] }])]).write).toBe(true);
  });

  it('an external suffix differing only in case holds the key', () => {
    const ext: FallbackDomain = { suffix: 'CORP.example.com' };
    const p = plan([ext], [fb([{ suffix: 'corp.example.com' }, { suffix: 'home.arpa' }])]);
    expect(p.items).toEqual([ext, { suffix: 'home.arpa', description: marker(CLUSTER, policy) }]);
    expect(p.conflicts).toEqual([{ owner: refString(policy), key: 'suffix:corp.example.com', heldBy: 'external' }]);
  });

  it('duplicate suffixes across sources: lower priority number wins', () => {
    const p = plan([], [fb([{ suffix: 'x.example' }], policy, 100), fb([{ suffix: 'X.EXAMPLE' }], teamA, 1)]);
    expect(p.items).toEqual([{ suffix: 'X.EXAMPLE', description: marker(CLUSTER, teamA) }]);
    expect(p.conflicts).toEqual([{ owner: refString(policy), key: 'suffix:x.example', heldBy: refString(teamA) }]);
  });

  it('order-insensitive', () => {
    const srcs = [fb([{ suffix: 'a.example' }, { suffix: 'b.example' }, { suffix: 'c.example' }])];
    const written = plan([], srcs).items;
    expect(plan([...written].reverse(), srcs).write).toBe(false);
  });
});

describe('merge: canonical', () => {
  it('sorts keys at every depth and drops undefined', () => {
    expect(canonical({ b: 1, a: { d: undefined, c: [{ z: 1, y: 2 }] } })).toBe('{"a":{"c":[{"y":2,"z":1}]},"b":1}');
    expect(canonical({ a: 1, b: undefined })).toBe(canonical({ a: 1 }));
  });
});

describe('ZoneRuleset validation: what the Ruleset Engine would refuse with a 400 is refused with its reason', () => {
  const problems = (phase: string, rules: object[]) =>
    zoneRulesetRules.validate({ zone: 'a.example', phase, rules } as never, { name: 'x' } as never);

  it('an action its phase does not take', () => {
    expect(problems('http_request_transform', [{ action: 'block', expression: 'true' }])).toEqual([
      expect.stringContaining('spec.rules[0].action: block is not an action of phase http_request_transform'),
    ]);
    expect(problems('http_request_firewall_custom', [{ action: 'block', expression: 'true' }])).toEqual([]);
  });

  it('a ref used twice', () => {
    const rule = { action: 'block', expression: 'true', ref: 'r' };
    expect(problems('http_request_firewall_custom', [rule, rule])).toEqual(['spec.rules[1].ref: "r" is used twice']);
  });
});
