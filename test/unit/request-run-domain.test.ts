/**
 * The decisions of a request's run (src/domain/request-run.ts) and of a manifest capture
 * (src/domain/request-capture.ts), pure: how a run starts, how an operation's result or escaped
 * failure ends the request, what a TTL reap means, where a capture writes its chunks.
 */
import { describe, expect, it, vi } from 'vitest';
import type { Condition } from '../../src/domain/conditions.js';
import {
  capturedMessage,
  checkpointConditions,
  reportsCaptureProgress,
  writesChunksInTask,
} from '../../src/domain/request-capture.js';
import {
  afterReap,
  howFailureEnds,
  howRequestStarts,
  isDeleted,
  outcomeOf,
  phaseNeedsIndexing,
  phaseOf,
} from '../../src/domain/request-run.js';
import type { RequestView } from '../../src/domain/requests.js';
import { GONE } from '../../src/domain/results.js';

const NOW = new Date('2026-11-29T10:00:00Z');

function view(fields: { deleting?: boolean; terminal?: boolean; conditions?: Condition[] } = {}): RequestView {
  return {
    status: 'ok',
    deleting: fields.deleting ?? false,
    terminal: fields.terminal ?? false,
    spec: { targets: [] },
    requestStatus: { conditions: fields.conditions },
  };
}
const ready = (status: Condition['status'], reason: string): Condition[] => [
  { type: 'Ready', status, reason, message: 'm', lastTransitionTime: NOW.toISOString() },
];

describe('howRequestStarts', () => {
  it('a request gone or being deleted ends the run unprocessed, each with its own words', () => {
    const gone = howRequestStarts(GONE);
    const deleting = howRequestStarts(view({ deleting: true, terminal: true }));
    expect(gone).toMatchObject({
      next: 'end',
      ending: { phase: 'Deleted', result: 'request gone before it was processed' },
    });
    expect(deleting).toMatchObject({ next: 'end', ending: { phase: 'Deleted', result: 'request is being deleted' } });
  });

  it('a terminal request is never operated on again: it shows how it ended', () => {
    expect(howRequestStarts(view({ terminal: true, conditions: ready('True', 'Completed') }))).toEqual({
      next: 'terminal',
      phase: 'Completed',
      details: 'terminal before this run',
    });
    expect(howRequestStarts(view({ terminal: true, conditions: ready('False', 'NotFound') }))).toMatchObject({
      phase: 'NotFound',
    });
    expect(howRequestStarts(view({ terminal: true }))).toMatchObject({ phase: 'Terminal' });
  });

  it('anything else is operated on, with its spec', () => {
    expect(howRequestStarts(view())).toEqual({ next: 'operate', spec: { targets: [] } });
  });
});

it('isDeleted: a delete hint is believed when the fresh read finds the request gone or being deleted', () => {
  expect(isDeleted(GONE)).toBe(true);
  expect(isDeleted(view({ deleting: true }))).toBe(true);
  expect(isDeleted(view())).toBe(false);
});

it('outcomeOf / phaseOf: a completed operation is Ready with its message, a failed one keeps its reason', () => {
  const done = outcomeOf({ status: 'ok', message: 'captured' });
  expect(done).toEqual({ ready: true, message: 'captured' });
  expect(phaseOf(done)).toBe('Completed');
  const refused = outcomeOf({ status: 'failed', outcome: { ready: false, reason: 'NotFound', message: 'no cm' } });
  expect(refused).toEqual({ ready: false, reason: 'NotFound', message: 'no cm' });
  expect(phaseOf(refused)).toBe('NotFound');
});

it('phaseNeedsIndexing: runs from before request-fewer-tasks always upsert, later ones only a change', () => {
  expect(phaseNeedsIndexing(false, 'Processing', 'Processing')).toBe(true);
  expect(phaseNeedsIndexing(true, 'Processing', 'Processing')).toBe(false);
  expect(phaseNeedsIndexing(true, 'Processing', 'Completed')).toBe(true);
  expect(phaseNeedsIndexing(true, undefined, 'Processing')).toBe(true);
});

describe('howFailureEnds', () => {
  const never = () => {
    throw new Error('asked whether local failures end, for a failure that does not need it');
  };

  it('the request found deleted is GONE, wrapped or not', () => {
    expect(howFailureEnds({ wrapped: false, type: 'RequestGone', message: 'request deleted' }, never)).toBe(GONE);
    expect(howFailureEnds({ wrapped: true, type: 'RequestGone', message: 'request deleted' }, never)).toBe(GONE);
  });

  it('a Forbidden past the rollout window ends RBACDenied, pointing at the missing grant', () => {
    const ended = howFailureEnds({ wrapped: true, type: 'Kubernetes403', message: 'create chunk: forbidden' }, never);
    expect(ended).toEqual({
      status: 'failed',
      outcome: {
        ready: false,
        reason: 'RBACDenied',
        message: "create chunk: forbidden — the controller's ServiceAccount lacks this permission (see deploy/rbac)",
      },
    });
  });

  it('any other failure retries could not fix ends InternalError with its message (a timeout included)', () => {
    expect(howFailureEnds({ wrapped: true, type: 'Kubernetes422', message: 'invalid' }, never)).toEqual({
      status: 'failed',
      outcome: { ready: false, reason: 'InternalError', message: 'invalid' },
    });
    expect(howFailureEnds({ wrapped: true, message: 'activity StartToClose timeout' }, never)).toMatchObject({
      outcome: { reason: 'InternalError', message: 'activity StartToClose timeout' },
    });
  });

  it('a local activity’s own failure (unwrapped) ends the request like a regular one’s in runs that take the patch', () => {
    const patched = vi.fn(() => true);
    const f = { wrapped: false, type: 'Kubernetes403', message: 'get Pod ns/any: forbidden' };
    expect(howFailureEnds(f, patched)).toMatchObject({ status: 'failed', outcome: { reason: 'RBACDenied' } });
    expect(patched).toHaveBeenCalledTimes(1);
    expect(howFailureEnds({ wrapped: false, type: 'Kubernetes422', message: 'x' }, () => true)).toMatchObject({
      outcome: { reason: 'InternalError' },
    });
  });

  it('runs from before the patch are not ended by an unwrapped failure (they failed, and replay so)', () => {
    expect(
      howFailureEnds({ wrapped: false, type: 'Kubernetes403', message: 'forbidden' }, () => false),
    ).toBeUndefined();
  });
});

describe('afterReap (runs from before request-ends-when-terminal wait for the TTL)', () => {
  it.each([
    [GONE, 'Deleted', 'request deleted'],
    [{ status: 'ok', state: 'deleted' }, 'Reaped', 'reaped after TTL'],
    [{ status: 'ok', state: 'deleting' }, 'Deleted', 'request deleted'],
    [{ status: 'ok', state: 'not-terminal' }, 'Orphaned', 'request not terminal; not reaped'],
    [
      { status: 'ok', state: 'never', why: 'no completionTimestamp' },
      'Completed',
      'not reaped: no completionTimestamp',
    ],
  ] as const)('%j ends the run %s', (reap, phase, result) => {
    expect(afterReap(reap, 'Completed')).toMatchObject({ next: 'end', ending: { phase, result } });
  });

  it('a TTL not expired yet is waited for until it does', () => {
    const expiresAt = '2026-11-30T10:00:00Z';
    expect(afterReap({ status: 'ok', state: 'waiting', expiresAt }, 'Completed')).toEqual({ next: 'wait', expiresAt });
  });
});

describe('manifest capture', () => {
  it('reports its progress from 100 objects on; below, the write costs less than the report', () => {
    expect(reportsCaptureProgress(99)).toBe(false);
    expect(reportsCaptureProgress(100)).toBe(true);
  });

  it('writes a small capture’s chunks in the run’s task only in runs that take request-fewer-tasks', () => {
    expect(writesChunksInTask(true, 99)).toBe(true);
    expect(writesChunksInTask(true, 100)).toBe(false);
    expect(writesChunksInTask(false, 1)).toBe(false);
  });

  it('says what it captured, and its checkpoint says how it ended', () => {
    const summary = { totalObjects: 3, totalSizeBytes: 512, chunks: [{}] };
    expect(capturedMessage('mcp-1', summary)).toBe('captured 3 objects into mcp-1: 1 chunk(s), 512 bytes compressed');
    expect(checkpointConditions(true, 'done', NOW)).toEqual([
      { type: 'Ready', status: 'True', reason: 'Completed', message: 'done', lastTransitionTime: NOW.toISOString() },
    ]);
    expect(checkpointConditions(false, 'forbidden', NOW)).toEqual([
      { type: 'Ready', status: 'False', reason: 'Failed', message: 'forbidden', lastTransitionTime: NOW.toISOString() },
    ]);
  });
});
