/** What a Cloudflare source's workflow decides (src/domain/cloudflare/source-run.ts). */
import { describe, expect, it } from 'vitest';
import {
  NOT_REGISTERED,
  anyRemoved,
  deletingReady,
  invalidSpecReady,
  placeStatusFields,
  registrationDue,
  repeatsRegistration,
  reportedReady,
  sameTargets,
  settledRegistration,
  shownAfterRegistration,
  sourceDetails,
  sourceZone,
  stillPending,
  targetsLeft,
  waitMs,
  type ReportFacts,
  type SourceReport,
} from '../../src/domain/cloudflare/source-run.js';

const report = (target: string, result: SourceReport['result'], generation = 2, extra: Partial<SourceReport> = {}) =>
  ({ target, result, generation, reason: result, message: `${target} ${result}`, ...extra }) satisfies SourceReport;

/** Two targets registered at generation 2, nothing pending. */
const facts = (reports: (SourceReport | undefined)[], more: Partial<ReportFacts> = {}): ReportFacts => ({
  generation: 2,
  registeredGeneration: 2,
  retrying: false,
  reports,
  syncStates: ['zr-a', 'zr-b'].slice(0, reports.length),
  unplaced: [],
  unplacedCount: 0,
  ...more,
});

describe('registrationDue', () => {
  const registered = { generation: 2, view: 'v1' };
  it('registers again when the generation or the view changed, or a retry is due', () => {
    expect(registrationDue(registered, { generation: 2, view: 'v1' }, undefined, 1_000)).toBe(false);
    expect(registrationDue(registered, { generation: 3, view: 'v1' }, undefined, 1_000)).toBe(true);
    expect(registrationDue(registered, { generation: 2, view: 'v2' }, undefined, 1_000)).toBe(true);
    expect(registrationDue(registered, { generation: 2, view: 'v1' }, 1_000, 1_000)).toBe(true);
    expect(registrationDue(registered, { generation: 2, view: 'v1' }, 1_001, 1_000)).toBe(false);
  });

  it('registers the first time (and after a silence)', () => {
    expect(registrationDue(NOT_REGISTERED, { generation: 1, view: '' }, undefined, 0)).toBe(true);
  });
});

describe('after a registration', () => {
  it('a repeat is the same generation and view', () => {
    expect(repeatsRegistration({ generation: 2, view: 'v' }, { generation: 2, view: 'v' })).toBe(true);
    expect(repeatsRegistration({ generation: 2, view: 'v' }, { generation: 2, view: 'w' })).toBe(false);
    expect(repeatsRegistration({ generation: 2, view: 'v' }, { generation: 3, view: 'v' })).toBe(false);
    expect(repeatsRegistration(undefined, { generation: 2, view: 'v' })).toBe(false);
  });

  it('shows Syncing unless it repeats itself to the same targets; no target is NothingToSync', () => {
    expect(shownAfterRegistration([], true, true)).toBe('nothing-to-sync');
    expect(shownAfterRegistration(['a'], true, true)).toBe('unchanged');
    expect(shownAfterRegistration(['a'], true, false)).toBe('syncing');
    expect(shownAfterRegistration(['a'], false, true)).toBe('syncing');
  });

  it('compares targets as sets of keys', () => {
    expect(sameTargets(['a', 'b'], ['b', 'a'])).toBe(true);
    expect(sameTargets(['a', 'b'], ['a'])).toBe(false);
    expect(sameTargets(['a'], ['a', 'b'])).toBe(false);
    expect(sameTargets(['a'], ['b'])).toBe(false);
  });

  it('leaves the targets the new registration no longer names', () => {
    const key = (t: { k: string }) => t.k;
    expect(targetsLeft([{ k: 'a' }, { k: 'b' }], [{ k: 'b' }, { k: 'c' }], key)).toEqual([{ k: 'a' }]);
  });

  it('an invalid spec says the last valid configuration stays when it registered before', () => {
    expect(invalidSpecReady(['spec.a: bad', 'spec.b: bad'], false)).toEqual({
      status: 'False',
      reason: 'InvalidSpec',
      message: 'spec.a: bad; spec.b: bad',
    });
    expect(invalidSpecReady(['spec.a: bad'], true).message).toBe(
      'spec.a: bad (the last valid configuration stays in Cloudflare)',
    );
  });
});

describe('reportedReady', () => {
  it('shows nothing without targets, for another generation than registered, or while a retry is pending', () => {
    const synced = [report('a', 'Synced')];
    expect(reportedReady(facts([]))).toBeUndefined();
    expect(reportedReady(facts(synced, { registeredGeneration: -1 }))).toBeUndefined();
    expect(reportedReady(facts(synced, { retrying: true }))).toBeUndefined();
    expect(reportedReady(facts(synced))?.ready.reason).toBe('Synced');
  });

  it('is Synced once every target reports this generation in Cloudflare, not before', () => {
    expect(reportedReady(facts([report('a', 'Synced'), undefined]))).toBeUndefined();
    expect(reportedReady(facts([report('a', 'Synced'), report('b', 'Synced', 1)]))).toBeUndefined();
    expect(reportedReady(facts([report('a', 'Synced'), report('b', 'Synced', 3)]))).toEqual({
      ready: { status: 'True', reason: 'Synced', message: 'in Cloudflare (zr-a, zr-b)' },
      synced: {},
    });
  });

  it('a failure wins whatever its generation, then an invalid spec of this generation', () => {
    const failed = report('b', 'Failed', 1, { reason: 'CloudflareError', message: 'boom' });
    expect(reportedReady(facts([report('a', 'Invalid'), failed]))?.ready).toEqual({
      status: 'False',
      reason: 'CloudflareError',
      message: 'boom',
    });
    expect(reportedReady(facts([report('a', 'Synced'), report('b', 'Invalid')]))?.ready).toEqual({
      status: 'False',
      reason: 'InvalidSpec',
      message: 'b Invalid',
    });
    // An invalid report about an older generation is stale.
    expect(reportedReady(facts([report('a', 'Synced'), report('b', 'Invalid', 1)]))).toBeUndefined();
  });

  it('Conflict when others hold every item; SyncedWithConflicts when some are in', () => {
    const held = (t: string) => report(t, 'Conflict', 2, { reason: 'Conflict', message: `${t} held` });
    expect(reportedReady(facts([held('a'), held('b')]))?.ready).toEqual({
      status: 'False',
      reason: 'Conflict',
      message: 'not in Cloudflare: a held',
    });
    expect(reportedReady(facts([report('a', 'Synced'), held('b')]))?.ready).toEqual({
      status: 'True',
      reason: 'SyncedWithConflicts',
      message: 'in Cloudflare except: b held',
    });
    // A partial conflict (some of a target's items held) is not "every item held".
    const partial = report('b', 'Conflict', 2, { reason: 'PartialConflict', message: 'b partly held' });
    expect(reportedReady(facts([held('a'), partial]))?.ready.reason).toBe('SyncedWithConflicts');
  });

  it('names the hostnames that get no CNAME', () => {
    const unplaced = [{ hostname: 'x.other.org', reason: 'no zone' }];
    const shown = reportedReady(facts([report('a', 'Synced')], { unplaced, unplacedCount: 1 }));
    expect(shown?.ready).toEqual({
      status: 'True',
      reason: 'SyncedWithoutDNS',
      message: 'in Cloudflare (zr-a) except: no CNAME for x.other.org (no zone)',
    });
    const conflict = report('b', 'Conflict', 2, { reason: 'PartialConflict', message: 'b held' });
    const both = reportedReady(facts([report('a', 'Synced'), conflict], { unplaced, unplacedCount: 1 }));
    expect(both?.ready.message).toBe('in Cloudflare except: b held; no CNAME for x.other.org (no zone)');
  });

  it('carries the Cloudflare ID a target reported', () => {
    const shown = reportedReady(facts([report('a', 'Synced', 2, { cloudflareId: 'cf-1' })]));
    expect(shown?.synced).toEqual({ cloudflareId: 'cf-1' });
  });
});

describe('deletion', () => {
  const pending = new Set(['a', 'b']);
  it('a Removed report ends that target’s wait only', () => {
    expect([...stillPending(pending, [report('a', 'Removed'), report('b', 'Synced')])]).toEqual(['b']);
    expect(pending.size).toBe(2); // the caller's set is left as it was
    expect(anyRemoved(pending, [report('a', 'Removed')])).toBe(true);
    expect(anyRemoved(pending, [report('c', 'Removed'), report('a', 'Synced')])).toBe(false);
  });

  it('says what it waits for, or a pending target’s failure', () => {
    expect(deletingReady(pending, [report('c', 'Failed')])).toEqual({
      status: 'False',
      reason: 'Deleting',
      message: "waiting for Cloudflare to drop this source's items from a, b",
    });
    expect(deletingReady(pending, [report('b', 'Failed', 2, { reason: 'Forbidden', message: 'no' })])).toEqual({
      status: 'False',
      reason: 'Forbidden',
      message: 'removing from Cloudflare failed: no',
    });
  });
});

describe('sourceZone', () => {
  const base = { credentials: 'team-a', zoneFromCredentials: true };
  it('the spec’s zone, else the credentials’ default domain for a kind that writes to a zone', () => {
    expect(sourceZone({ ...base, specZone: 'a.com', defaultDomain: 'b.com' })).toEqual({ zone: 'a.com' });
    expect(sourceZone({ ...base, defaultDomain: 'b.com' })).toEqual({ zone: 'b.com' });
    expect(sourceZone({ ...base, zoneFromCredentials: false, defaultDomain: 'b.com' })).toEqual({ zone: undefined });
  });

  it('refuses such a kind with neither', () => {
    expect(sourceZone(base)).toEqual({
      refused: {
        reason: 'NoZone',
        message:
          'spec.cloudflare.domain is not set and CloudflareCredentials team-a has no defaultDomain: name the zone',
      },
    });
  });
});

describe('the run', () => {
  it('waits until a pending retry (not below 0), else until it registers again', () => {
    expect(waitMs(undefined, 1_000, 300_000)).toBe(300_000);
    expect(waitMs(6_000, 1_000, 300_000)).toBe(5_000);
    expect(waitMs(500, 1_000, 300_000)).toBe(0);
  });

  it('carries the registration made, or the one a silence repeats, once a status was written', () => {
    const made = { generation: 3, view: 'v' };
    expect(settledRegistration(made, undefined, 'key')).toEqual(made);
    expect(settledRegistration(NOT_REGISTERED, made, 'key')).toEqual(made);
    expect(settledRegistration(made, undefined, '')).toBeUndefined();
    expect(settledRegistration(NOT_REGISTERED, undefined, 'key')).toBeUndefined();
    expect(settledRegistration(NOT_REGISTERED, NOT_REGISTERED, 'key')).toBeUndefined();
  });

  it('shows its zone’s ID, else its account', () => {
    expect(placeStatusFields({ accountId: 'acc', zoneId: 'z' })).toEqual({ zoneId: 'z' });
    expect(placeStatusFields({ accountId: 'acc' })).toEqual({ accountId: 'acc' });
  });

  it('details name the reason, the generation and each target', () => {
    const ready = { status: 'False' as const, reason: 'Syncing', message: 'registered with zr-a' };
    expect(sourceDetails(ready, 4, [])).toBe('**Syncing** (generation 4) — registered with zr-a');
    expect(sourceDetails(ready, 4, [{ key: 'ZoneRuleset/z/p', syncState: 'zr-a' }])).toBe(
      '**Syncing** (generation 4) — registered with zr-a\n\nTargets:\n- ZoneRuleset/z/p → `zr-a`',
    );
  });
});
