/** The Cloudflare sync workflow's decisions (src/domain/cloudflare/sync-run.ts). */
import { describe, expect, it } from 'vitest';
import type { SourceVerdict } from '../../src/domain/cloudflare/sync-plan.js';
import {
  answeredByLastReport,
  lastResultOf,
  needsSending,
  quietWindowMs,
  reportFingerprint,
  reportOf,
  reportsOf,
  sameRegistration,
  syncDetails,
  syncTrigger,
  targetEmptied,
  untilObservationMs,
  type SyncAnswer,
} from '../../src/domain/cloudflare/sync-run.js';
import type { SourceRegistration, SyncReport } from '../../src/workflows/cloudflare/messages.js';

const from = { target: 'DNSRecord/zone-1/app.example.com/A', syncState: 'dnsrecord-abc' };
const refA = { kind: 'DNSRecord', namespace: 'team-a', name: 'app' };
const refB = { kind: 'DNSRecord', namespace: 'team-b', name: 'app' };
const registration: SourceRegistration = {
  ref: refA,
  uid: 'uid-a',
  generation: 3,
  anchor: 'example.com',
  credentials: 'cf-team-a',
  view: 'v1',
  subzones: ['eu.example.com'],
};
const verdict = (result: SourceVerdict['result'], extra: Partial<SourceVerdict> = {}): SourceVerdict => ({
  ref: refA,
  generation: 3,
  result,
  message: `${result} message`,
  ...extra,
});
const ok = (extra: Partial<Extract<SyncAnswer, { status: 'ok' }>> = {}): SyncAnswer => ({
  status: 'ok',
  wrote: false,
  drifted: false,
  driftLeft: false,
  differences: [],
  counts: { desired: 2 },
  configVersion: 7,
  cloudflareId: 'rec-1',
  verdicts: [],
  ...extra,
});
const failed = (verdicts: SourceVerdict[]): SyncAnswer => ({
  status: 'failed',
  outcome: { reason: 'CloudflareUnavailable', message: 'Cloudflare answered 503', verdicts },
});

describe('sameRegistration and answeredByLastReport', () => {
  it('is the same registration only when nothing a sync reads differs', () => {
    expect(sameRegistration(registration, { ...registration, subzones: ['eu.example.com'] })).toBe(true);
    for (const change of [
      { uid: 'uid-a2' },
      { generation: 4 },
      { credentials: 'cf-other' },
      { anchor: 'other.com' },
      { view: 'v2' },
      { subzones: ['us.example.com'] },
      { subzones: undefined },
    ])
      expect(sameRegistration(registration, { ...registration, ...change }), JSON.stringify(change)).toBe(false);
  });

  it('answers an unchanged repeat from its last report only while it is registered, staying and reported to', () => {
    expect(answeredByLastReport(registration, { ...registration }, false, true)).toBe(true);
    expect(answeredByLastReport(undefined, registration, false, true)).toBe(false);
    expect(answeredByLastReport(registration, registration, true, true)).toBe(false);
    expect(answeredByLastReport(registration, registration, false, false)).toBe(false);
    expect(answeredByLastReport(registration, { ...registration, generation: 4 }, false, true)).toBe(false);
  });
});

describe('syncTrigger and the waits', () => {
  it('names a reaggregate first, then a change that ended the wait, else the observation', () => {
    expect(syncTrigger(true, false)).toBe('reaggregate');
    expect(syncTrigger(true, true)).toBe('reaggregate');
    expect(syncTrigger(false, true)).toBe('change');
    expect(syncTrigger(false, false)).toBe('observe');
  });

  it('waits one quiet window at a time, never past maxDebounceMs since the burst began', () => {
    expect(quietWindowMs(1_000, 1_000, 500, 5_000)).toBe(500);
    expect(quietWindowMs(1_000, 5_800, 500, 5_000)).toBe(200);
    expect(quietWindowMs(1_000, 6_000, 500, 5_000)).toBeUndefined();
    expect(quietWindowMs(1_000, 7_000, 500, 5_000)).toBeUndefined();
  });

  it('waits for the observation until it is due, at least 1 ms', () => {
    expect(untilObservationMs(10_000, 4_000)).toBe(6_000);
    expect(untilObservationMs(10_000, 10_000)).toBe(1);
    expect(untilObservationMs(10_000, 12_000)).toBe(1);
  });
});

describe('reportOf', () => {
  it('shows a synced source with its Cloudflare ID, unless the ID is still a placeholder', () => {
    expect(reportOf(verdict('Synced'), 'rec-1', from)).toEqual({
      ...from,
      result: 'Synced',
      generation: 3,
      reason: 'Synced',
      message: 'Synced message',
      cloudflareId: 'rec-1',
    });
    expect(reportOf(verdict('Synced'), 'pending-1', from)).not.toHaveProperty('cloudflareId');
  });

  it('tells an invalid spec and conflicts apart: nothing of it written, or only some of its items', () => {
    expect(reportOf(verdict('Invalid'), 'rec-1', from)).toMatchObject({ result: 'Invalid', reason: 'InvalidSpec' });
    expect(reportOf(verdict('Conflict'), 'rec-1', from)).toMatchObject({ result: 'Conflict', reason: 'Conflict' });
    expect(reportOf(verdict('Conflict', { allHeld: false }), 'rec-1', from)).toMatchObject({
      result: 'Conflict',
      reason: 'PartialConflict',
    });
    expect(reportOf(verdict('Conflict'), 'rec-1', from)).not.toHaveProperty('cloudflareId');
  });

  it('fails only the source whose credentials differ or whose items Cloudflare refused', () => {
    expect(reportOf(verdict('CredentialsConflict'), 'rec-1', from)).toMatchObject({
      result: 'Failed',
      reason: 'CredentialsConflict',
    });
    expect(reportOf(verdict('Rejected', { reason: 'PriorityNotAllowed' }), 'rec-1', from)).toMatchObject({
      result: 'Failed',
      reason: 'PriorityNotAllowed',
    });
    expect(reportOf(verdict('Rejected'), 'rec-1', from)).toMatchObject({ reason: 'CloudflareInvalid' });
  });
});

describe('reportsOf', () => {
  it('after a sync: each verdict in order, nothing to a gone or moved source, then Removed to each removed one', () => {
    const answer = ok({
      verdicts: [
        verdict('Synced'),
        verdict('Gone', { ref: refB }),
        verdict('Elsewhere', { ref: { ...refB, name: 'moved' } }),
      ],
    });
    const { reports, gone } = reportsOf(answer, [{ ...refB, name: 'old' }], from);
    expect(reports.map(([ref, r]) => [ref.name, r.result])).toEqual([
      ['app', 'Synced'],
      ['old', 'Removed'],
    ]);
    expect(reports[1]![1]).toEqual({
      ...from,
      result: 'Removed',
      generation: 0,
      reason: 'Removed',
      message: `no longer in ${from.target}`,
    });
    expect(gone).toEqual([refB]);
  });

  it('after a failure: Failed to every source it was about (removed ones too), its own reason to a credentials conflict', () => {
    const answer = failed([
      verdict('Synced'),
      verdict('CredentialsConflict', { ref: refB }),
      verdict('Gone', { ref: { ...refB, name: 'gone' } }),
    ]);
    const { reports, gone } = reportsOf(answer, [{ ...refB, name: 'old' }], from);
    expect(reports.map(([ref, r]) => [ref.name, ref.namespace, r.result, r.reason, r.generation])).toEqual([
      ['app', 'team-a', 'Failed', 'CloudflareUnavailable', 3],
      ['app', 'team-b', 'Failed', 'CredentialsConflict', 3],
      ['old', 'team-b', 'Failed', 'CloudflareUnavailable', 0],
    ]);
    expect(reports[0]![1].message).toBe('Cloudflare answered 503');
    expect(gone).toEqual([]);
  });
});

describe('needsSending', () => {
  const report: SyncReport = { ...from, result: 'Synced', generation: 3, reason: 'Synced', message: 'ok' };
  it('sends a report the source was not sent yet, or one that differs', () => {
    expect(needsSending(undefined, report)).toBe(true);
    expect(needsSending(reportFingerprint(report), { ...report, generation: 4 })).toBe(true);
    expect(needsSending(reportFingerprint(report), { ...report, message: 'other' })).toBe(true);
    expect(needsSending(reportFingerprint(report), { ...report, result: 'Conflict' })).toBe(true);
  });
  it('does not send the same report twice, but always a removal', () => {
    expect(needsSending(reportFingerprint(report), { ...report })).toBe(false);
    const removed: SyncReport = { ...report, result: 'Removed' };
    expect(needsSending(reportFingerprint(removed), removed)).toBe(true);
  });
});

describe('targetEmptied', () => {
  const empty = { registered: 0, leaving: 0, synced: true, keepsListedSources: false };
  it('ends a target with no source left after a sync that went through', () => {
    expect(targetEmptied(empty)).toBe(true);
  });
  it('keeps it while a source is registered or leaving, the sync failed, or listed sources are still to register', () => {
    expect(targetEmptied({ ...empty, registered: 1 })).toBe(false);
    expect(targetEmptied({ ...empty, leaving: 1 })).toBe(false);
    expect(targetEmptied({ ...empty, synced: false })).toBe(false);
    expect(targetEmptied({ ...empty, keepsListedSources: true })).toBe(false);
  });
});

describe('what the run shows', () => {
  it('says what the last sync did', () => {
    expect(lastResultOf(ok({ wrote: true }))).toBe('wrote 2 managed item(s)');
    expect(lastResultOf(ok({ wrote: true, drifted: true }))).toBe('wrote 2 managed item(s) (repaired drift)');
    expect(lastResultOf(ok({ driftLeft: true, differences: ['a', 'b', 'c', 'd'] }))).toBe(
      'drift observed, left as is: a; b; c',
    );
    expect(lastResultOf(ok())).toBe('no change needed');
    expect(lastResultOf(failed([]))).toBe('failed: Cloudflare answered 503');
  });

  it('lists at most 20 sources, sorted, and the differences found', () => {
    const keys = Array.from({ length: 22 }, (_, i) => `DNSRecord/ns/s${String(i).padStart(2, '0')}`).reverse();
    const text = syncDetails(ok({ wrote: true, differences: ['x'] }), 'change', 'wrote', 'st', 7, keys);
    const lines = text.split('\n');
    expect(lines[0]).toBe('**wrote** (change) — wrote');
    expect(lines[1]).toBe('SyncState `st`, configVersion 7, 22 source(s):');
    expect(lines[2]).toBe('- DNSRecord/ns/s00');
    expect(lines[21]).toBe('- DNSRecord/ns/s19');
    expect(lines[22]).toBe('- … and 2 more');
    expect(lines.slice(23)).toEqual(['', 'Differences found:', '- x']);
    expect(syncDetails(failed([]), 'observe', 'failed: x', 'st', 7, []).split('\n')[0]).toBe(
      '**failed** (observe) — failed: x',
    );
  });
});
