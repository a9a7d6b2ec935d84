import { describe, expect, it } from 'vitest';
import {
  checkpointNameFor,
  chunkNameFor,
  requestExpiry,
  isTerminal,
  keeperNameFor,
  outcomeCondition,
  requestWorkflowId,
} from '../../src/domain/requests.js';
import type { Condition } from '../../src/domain/conditions.js';

const ready = (status: Condition['status'], reason: string): Condition[] => [
  { type: 'Ready', status, reason, message: '', lastTransitionTime: '2026-01-01T00:00:00Z' },
];

describe('isTerminal (the originals’ predicate: True, or False with any reason but Processing / TargetsPending)', () => {
  it.each([
    [undefined, false],
    [[], false],
    [ready('False', 'Processing'), false],
    // storage-foundation's "waiting for targets": a request it left there is not finished.
    [ready('False', 'TargetsPending'), false],
    [ready('Unknown', 'Whatever'), false],
    [ready('True', 'Completed'), true],
    [ready('False', 'NotFound'), true],
    [ready('False', 'Failed'), true],
  ] as const)('%j → %s', (conditions, terminal) => {
    expect(isTerminal(conditions as Condition[] | undefined)).toBe(terminal);
  });

  it('ignores other condition types', () => {
    expect(
      isTerminal([
        { type: 'Other', status: 'True', reason: 'X', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' },
      ]),
    ).toBe(false);
  });
});

describe('requestExpiry (TTL counted from completionTimestamp)', () => {
  it('adds the TTL to completionTimestamp', () => {
    expect(requestExpiry('2026-01-01T00:00:00Z', 60_000)).toBe(Date.parse('2026-01-01T00:01:00Z'));
  });
  it('never expires without completionTimestamp (fail safe), with TTL 0 (disabled), or with garbage', () => {
    expect(requestExpiry(undefined, 60_000)).toBeUndefined();
    expect(requestExpiry('2026-01-01T00:00:00Z', 0)).toBeUndefined();
    expect(requestExpiry('not a time', 60_000)).toBeUndefined();
  });
});

describe('names derive from UIDs (a retry addresses the same object)', () => {
  const uid = '0b5c7a4e-1111-2222-3333-444455556666';
  it('workflow ID, keeper, checkpoint and chunk names', () => {
    expect(requestWorkflowId({ kind: 'ManifestCaptureRequest', namespace: 'ns', name: 'n', uid })).toBe(
      `request/ManifestCaptureRequest/ns/n/${uid}`,
    );
    expect(keeperNameFor({ kind: 'ManifestCaptureRequest', uid })).toBe(`ret-mcr-${uid}`);
    expect(keeperNameFor({ kind: 'VolumeCaptureRequest', uid })).toBe(`ret-vcr-${uid}`);
    expect(keeperNameFor({ kind: 'VolumeRestoreRequest', uid })).toBe(`ret-vrr-${uid}`);
    expect(chunkNameFor(checkpointNameFor(uid), 3)).toBe(`mcp-${uid}-3`);
  });
});

it('a successful outcome is always Ready=True/Completed; a failure keeps its reason', () => {
  expect(outcomeCondition({ ready: true, message: 'ok' })).toEqual({
    type: 'Ready',
    status: 'True',
    reason: 'Completed',
    message: 'ok',
  });
  expect(outcomeCondition({ ready: false, reason: 'NotFound', message: 'gone' })).toMatchObject({
    status: 'False',
    reason: 'NotFound',
  });
});
