/**
 * The plan step of a target's sync, alone (src/domain/cloudflare/sync-plan.ts): who contributes,
 * who stays as they are, what the merge writes against a live list, whether a difference is drift,
 * and the status it records — no server, no Cloudflare. A split-tunnel list is the target: keyed
 * entries, several per source, each marked in its description.
 */
import { describe, expect, it } from 'vitest';
import type { ConfigSource } from '../../src/api/cloudflare.js';
import { desiredEntries, type RegisteredSource } from '../../src/domain/cloudflare/aggregate.js';
import { splitTunnelCodec, type SplitTunnelEntry } from '../../src/domain/cloudflare/items.js';
import { marker, refString, type SourceRef } from '../../src/domain/cloudflare/markers.js';
import {
  SyncSources,
  askedItems,
  decideWrite,
  failedStatus,
  keptSources,
  keptWhileThere,
  planTarget,
  syncedStatus,
  unregisteredRecords,
  type RejectedSource,
  type SourceVerdict,
  type TargetPlanner,
} from '../../src/domain/cloudflare/sync-plan.js';

const CLUSTER = 'c1';
const planner: TargetPlanner<SplitTunnelEntry> = {
  codec: splitTunnelCodec,
  desired: (sources, clusterId) => desiredEntries<SplitTunnelEntry>(sources, clusterId),
};
const ref = (name: string): SourceRef => ({ kind: 'DeviceSettingsPolicy', name });
const source = (name: string, addresses: string[], extra: Partial<RegisteredSource> = {}): RegisteredSource => ({
  ref: ref(name),
  uid: `uid-${name}`,
  generation: 1,
  createdAt: '2026-01-01T00:00:00.000Z',
  priority: 100,
  config: { entries: addresses.map((address) => ({ address })) },
  ...extra,
});
const record = (s: RegisteredSource, extra: Partial<ConfigSource> = {}): ConfigSource => ({
  ref: s.ref,
  priority: s.priority,
  config: s.config as unknown as ConfigSource['config'],
  ...extra,
});
const verdictOf = (s: RegisteredSource): SourceVerdict => ({
  ref: s.ref,
  generation: s.generation,
  result: 'Synced',
  message: '',
});
/** The sources of one sync, all contributing, with what the SyncState recorded before. */
function sync(contributing: RegisteredSource[], previous: ConfigSource[] = []): SyncSources {
  return new SyncSources(
    { sources: [...contributing], verdicts: contributing.map(verdictOf), frozen: new Set(), frozenRecords: [] },
    new Map(previous.map((r) => [refString(r.ref), r])),
  );
}
const ours = (name: string, address: string): SplitTunnelEntry => ({
  address,
  description: marker(CLUSTER, ref(name)),
});
const plan = (sources: SyncSources, live: SplitTunnelEntry[]) =>
  planTarget(
    planner,
    live,
    askedItems(planner, live, sources, CLUSTER, (r) => r.createdAt ?? ''),
    { frozen: sources.frozen, clusterId: CLUSTER, adoptLegacy: false },
    (desired) => JSON.stringify(desired.map((d) => d.item)),
  );
const addresses = (items: SplitTunnelEntry[]) => items.map((i) => i.address);

describe('priorities and ownership markers', () => {
  it('an entry two sources want goes to the higher priority; the other is told who holds it', () => {
    const first = source('first', ['10.0.0.1/32'], { priority: 10 });
    const second = source('second', ['10.0.0.1/32', '10.0.0.2/32'], { priority: 50 });
    const sources = sync([second, first]);
    const planned = plan(sources, []);
    expect(addresses(planned.plan.items)).toEqual(['10.0.0.1/32', '10.0.0.2/32']);
    expect(planned.plan.items[0]!.description).toBe(marker(CLUSTER, first.ref));
    sources.markConflicts(planned.plan.conflicts, planned.desired);
    const verdict = sources.verdicts.find((v) => v.ref.name === 'second')!;
    expect(verdict).toMatchObject({ result: 'Conflict', allHeld: false });
    expect(verdict.message).toContain(refString(first.ref));
  });

  it("an unmarked entry and another cluster's are kept; a source wanting the unmarked one is in conflict, all of it held", () => {
    const mine = source('mine', ['10.0.0.1/32']);
    const sources = sync([mine]);
    const live = [
      { address: '10.0.0.1/32', description: 'made in the dashboard' },
      { address: '10.0.0.9/32', description: marker('other', ref('theirs')) },
    ];
    const planned = plan(sources, live);
    expect(planned.plan.items).toEqual(live);
    expect(planned.plan.counts).toMatchObject({ external: 1, otherClusters: 1 });
    sources.markConflicts(planned.plan.conflicts, planned.desired);
    expect(sources.verdicts[0]).toMatchObject({ result: 'Conflict', allHeld: true });
    expect(sources.verdicts[0]!.message).toContain('one this operator does not manage (never adopted)');
  });
});

describe('safe deletion and orphans', () => {
  const gone = source('gone', ['10.0.0.5/32']);
  const stays = source('stays', ['10.0.0.1/32']);
  const live = [ours('stays', '10.0.0.1/32'), ours('gone', '10.0.0.5/32')];
  const previous = new Map([gone, stays].map((s) => [refString(s.ref), record(s)]));
  const claims = [{ ref: stays.ref, uid: stays.uid, generation: 1, anchor: '', credentials: '' }];

  it('a source removed (not orphaned) loses its entries; the others stay', () => {
    const sources = sync([stays], [...previous.values()]);
    for (const [key, kept] of keptSources(previous, new Map(), claims, [gone.ref])) sources.keep(key, kept);
    expect(addresses(plan(sources, live).plan.items)).toEqual(['10.0.0.1/32']);
  });

  it('a source removed with deletion policy Orphan keeps its entries, for good: the record is marked and kept next time', () => {
    const kept = keptSources(previous, new Map(), claims, [{ ...gone.ref, orphan: true }]);
    expect(kept.get(refString(gone.ref))).toMatchObject({ orphaned: true });
    const sources = sync([stays], [...previous.values()]);
    for (const [key, r] of kept) sources.keep(key, r);
    const planned = plan(sources, live);
    expect(planned.plan.write).toBe(false);
    // The next sync: the record says orphaned, the source is not registered nor removed.
    const later = new Map([...previous, [refString(gone.ref), kept.get(refString(gone.ref))!]]);
    expect([...keptSources(later, new Map(), claims).keys()]).toEqual([refString(gone.ref)]);
  });

  it('a source the SyncState lists that has not registered is kept while its object is there, and not once it is being deleted', () => {
    // DeviceSettingsPolicy is a source kind: the sync reads it to see whether it is still there.
    expect(unregisteredRecords(previous, claims).map((r) => r.ref.name)).toEqual(['gone']);
    const there = { metadata: { creationTimestamp: new Date('2026-01-02T00:00:00Z') } };
    expect(keptWhileThere(previous.get(refString(gone.ref))!, there)).toMatchObject({
      createdAt: '2026-01-02T00:00:00.000Z',
    });
    const deleting = { metadata: { deletionTimestamp: new Date('2026-01-03T00:00:00Z') } };
    expect(keptWhileThere(previous.get(refString(gone.ref))!, deleting)).toBeUndefined();
    expect(keptWhileThere(previous.get(refString(gone.ref))!, undefined)).toBeUndefined();
  });
});

describe('refused sources', () => {
  const bad = source('bad', ['10.0.0.7/32'], { generation: 3 });
  const good = source('good', ['10.0.0.1/32']);
  const refused: RejectedSource = {
    source: refString(bad.ref),
    generation: 3,
    reason: 'CloudflareInvalid',
    message: 'no',
  };

  it('an observation does not ask again about the generation Cloudflare refused: its entries stay as recorded', () => {
    const before = record(bad, { config: { entries: [{ address: '10.0.0.6/32' }] } as never });
    const sources = sync([good, bad], [before]);
    sources.rejectAgain('observe', [refused]);
    expect(sources.sources.map((s) => s.ref.name)).toEqual(['good']);
    expect(sources.frozenRecords).toEqual([before]);
    expect(sources.verdicts.find((v) => v.ref.name === 'bad')).toMatchObject({
      result: 'Rejected',
      reason: 'CloudflareInvalid',
    });
    expect(sources.rejected).toEqual([refused]);
  });

  it('a change, or a new generation, is asked again', () => {
    const onChange = sync([good, bad]);
    onChange.rejectAgain('change', [refused]);
    expect(onChange.sources).toHaveLength(2);
    const edited = sync([good, { ...bad, generation: 4 }]);
    edited.rejectAgain('observe', [refused]);
    expect(edited.sources).toHaveLength(2);
  });

  it('held back then released, a source is as it was (the isolation of refused changes)', () => {
    const before = record(bad);
    const sources = sync([good, bad], [before]);
    sources.holdBack(bad);
    expect(sources.frozen.has(refString(bad.ref))).toBe(true);
    expect(sources.frozenRecords).toEqual([before]);
    sources.release(bad);
    expect(sources.frozen.size).toBe(0);
    expect(sources.frozenRecords).toEqual([]);
    expect(sources.sources).toContain(bad);
  });

  it('only the sources whose configuration changed are tried one by one, in priority order', () => {
    const changedLow = source('low', ['10.0.0.3/32'], { priority: 50 });
    const changedHigh = source('high', ['10.0.0.4/32'], { priority: 10 });
    const sources = sync([good, changedLow, changedHigh], [record(good), record(changedLow, { config: {} as never })]);
    expect(sources.changed().map((s) => s.ref.name)).toEqual(['high', 'low']);
  });
});

describe('drift', () => {
  const request = { lastDigest: 'd1', driftPolicy: 'repair' as const, trigger: 'observe' as const };

  it('a write wanted with the digest last written is drift: repaired, or left under policy observe unless a user reaggregates', () => {
    expect(decideWrite({ write: true }, 'd1', request)).toEqual({ drifted: true, driftLeft: false, write: true });
    expect(decideWrite({ write: true }, 'd1', { ...request, driftPolicy: 'observe' })).toEqual({
      drifted: true,
      driftLeft: true,
      write: false,
    });
    expect(decideWrite({ write: true }, 'd1', { ...request, driftPolicy: 'observe', trigger: 'reaggregate' })).toEqual({
      drifted: true,
      driftLeft: false,
      write: true,
    });
  });

  it('a write with a new digest is a change, not drift; nothing to write is neither', () => {
    expect(decideWrite({ write: true }, 'd2', { ...request, driftPolicy: 'observe' })).toEqual({
      drifted: false,
      driftLeft: false,
      write: true,
    });
    expect(decideWrite({ write: false }, 'd1', request)).toEqual({ drifted: false, driftLeft: false, write: false });
  });

  it('the status says so: Drifted True with the differences, and InSync on the next observation', () => {
    const sources = sync([source('a', ['10.0.0.1/32'])]);
    const planned = plan(sources, [ours('a', '10.0.0.2/32')]);
    const now = new Date('2026-02-01T00:00:00Z');
    const facts = {
      wrote: true,
      decision: decideWrite(planned.plan, planned.digest, { ...request, lastDigest: planned.digest }),
      trigger: 'observe' as const,
      plan: planned.plan,
      sourceCount: 1,
      digest: planned.digest,
      configVersion: 4,
      rejected: [],
    };
    const status = syncedStatus(undefined, facts, now) as { conditions: Array<{ type: string; reason: string }> };
    expect(status).toMatchObject({ syncStatus: 'Synced', configVersion: 4, lastSyncTime: now.toISOString() });
    expect(status.conditions.find((c) => c.type === 'Drifted')).toMatchObject({ reason: 'DriftRepaired' });
    const calm = { ...facts, wrote: false, decision: { drifted: false, driftLeft: false, write: false } };
    const after = syncedStatus({ metadata: {}, status: status as never }, calm, now) as typeof status;
    expect(after.conditions.find((c) => c.type === 'Drifted')).toMatchObject({ reason: 'InSync' });
    expect(after).not.toHaveProperty('lastSyncTime');
  });
});

describe('failures', () => {
  it('a transient failure counts a retry; a permanent one says why and when', () => {
    const now = new Date('2026-02-01T00:00:00Z');
    const prev = { metadata: { generation: 2 }, status: { retryCount: 2 } } as never;
    expect(failedStatus(prev, { message: 'busy', permanent: false, failureReason: 'x' }, now)).toMatchObject({
      syncStatus: 'Error',
      retryCount: 3,
      errorCategory: 'Transient',
    });
    expect(failedStatus(prev, { message: 'no', permanent: true, failureReason: 'AuthError' }, now)).toMatchObject({
      syncStatus: 'Failed',
      failureReason: 'AuthError',
      failedAt: now.toISOString(),
      conditions: [{ type: 'Ready', status: 'False', reason: 'SyncFailed', observedGeneration: 2 }],
    });
  });
});
