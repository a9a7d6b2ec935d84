/**
 * Which status write is an Event (src/domain/events.ts): the transitions a user looks for, and
 * none for a write that repeats the state it found (a resync, a source told its result again).
 */
import { describe, expect, it } from 'vitest';
import { eventName } from '../../src/kube/events.js';
import {
  driftEvent,
  keeperDeletedEvent,
  poolScaledUpEvent,
  requestOutcomeEvent,
  sandboxStatusEvent,
  sourceReadyEvent,
} from '../../src/domain/events.js';

describe('Event decisions', () => {
  it('a request: Completed, or Failed with its reason', () => {
    expect(requestOutcomeEvent({ ready: true, message: 'captured 2 objects' })).toMatchObject({
      type: 'Normal',
      reason: 'Completed',
      note: 'captured 2 objects',
    });
    expect(requestOutcomeEvent({ ready: false, reason: 'RBACDenied', message: 'no get on secrets' })).toMatchObject({
      type: 'Warning',
      reason: 'Failed',
      note: 'RBACDenied: no get on secrets',
    });
  });

  it('a keeper: Expired once its TTL has passed, otherwise its followed object is gone', () => {
    const now = new Date('2026-01-01T00:10:00Z');
    expect(keeperDeletedEvent({ expiresAt: '2026-01-01T00:09:00Z' }, now).reason).toBe('Expired');
    expect(keeperDeletedEvent({ expiresAt: '2026-01-01T00:11:00Z' }, now).reason).toBe('FollowedObjectGone');
    expect(keeperDeletedEvent({}, now).reason).toBe('FollowedObjectGone');
  });

  it('a sandbox: Placed, Failed, Lost, Expired; nothing for Pending, Running or a field change', () => {
    expect(sandboxStatusEvent({ phase: 'Bound', assignedPod: 'agent-0', nodeName: 'n1' })).toMatchObject({
      reason: 'Placed',
      note: 'placed on agent agent-0 (node n1)',
    });
    const why = [{ reason: 'AgentLost', message: 'agent gone 5m' }];
    expect(sandboxStatusEvent({ phase: 'Failed', conditions: why })?.type).toBe('Warning');
    expect(sandboxStatusEvent({ phase: 'Lost', conditions: why })?.note).toBe('AgentLost: agent gone 5m');
    expect(sandboxStatusEvent({ phase: 'Expired' })?.reason).toBe('Expired');
    for (const phase of ['Pending', 'Running', 'Terminating', undefined])
      expect(sandboxStatusEvent({ phase, conditions: why })).toBeUndefined();
  });

  it('a pool: ScaledUp only when Pods were created', () => {
    expect(poolScaledUpEvent([], 4)).toBeUndefined();
    expect(poolScaledUpEvent(['a-1', 'a-2'], 4)?.note).toBe('created 2 agent Pod(s) of 4 slot(s): a-1, a-2');
  });

  it('a Cloudflare source: a changed Ready condition only; progress is no Event', () => {
    const synced = { status: 'True', reason: 'Synced', message: 'in Cloudflare' } as const;
    const syncing = { status: 'False', reason: 'Syncing', message: 'registered' } as const;
    const failed = { status: 'False', reason: 'Kubernetes403', message: 'forbidden' } as const;
    expect(sourceReadyEvent(undefined, synced)?.reason).toBe('Synced');
    expect(sourceReadyEvent(syncing, synced)?.reason).toBe('Synced');
    expect(sourceReadyEvent(synced, { ...synced, message: 'other words' })).toBeUndefined();
    expect(sourceReadyEvent(synced, syncing)).toBeUndefined();
    expect(sourceReadyEvent(synced, failed)).toMatchObject({ type: 'Warning', reason: 'SyncFailed' });
    expect(sourceReadyEvent(failed, failed)).toBeUndefined();
  });

  it('drift: every repair; drift left in place (observe) once', () => {
    const found = { drifted: true, left: false, differences: ['record a: content'] };
    expect(driftEvent(found, undefined)?.reason).toBe('DriftRepaired');
    expect(driftEvent(found, { status: 'True', reason: 'DriftRepaired' })?.reason).toBe('DriftRepaired');
    const observed = { ...found, left: true };
    expect(driftEvent(observed, { status: 'False', reason: 'InSync' })?.reason).toBe('DriftObserved');
    expect(driftEvent(observed, { status: 'True', reason: 'DriftObserved' })).toBeUndefined();
    expect(driftEvent({ ...found, drifted: false }, undefined)).toBeUndefined();
  });

  it('one Event name per object, reason and controller, a valid object name', () => {
    const ref = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'a', name: 'x'.repeat(253), uid: 'u' };
    const name = eventName(ref, 'Synced', 'durable-operators.io/worker');
    expect(name).toBe(eventName(ref, 'Synced', 'durable-operators.io/worker'));
    expect(name).not.toBe(eventName(ref, 'SyncFailed', 'durable-operators.io/worker'));
    expect(name).not.toBe(eventName({ ...ref, uid: 'v' }, 'Synced', 'durable-operators.io/worker'));
    expect(name.length).toBeLessThanOrEqual(253);
    expect(name).toMatch(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/);
  });
});
