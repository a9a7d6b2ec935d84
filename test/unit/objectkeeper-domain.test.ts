import { describe, expect, it } from 'vitest';
import type { ObjectKeeperSpec } from '../../src/api/objectkeeper.js';
import {
  expiryOf,
  followRefTo,
  judgeFollowed,
  objectKeeperWorkflowId,
  ownedByKeeper,
} from '../../src/domain/objectkeeper.js';

const ref = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns', name: 'cm', uid: 'uid-1' };
const follow: ObjectKeeperSpec = { mode: 'FollowObject', followObjectRef: ref };

describe('judgeFollowed', () => {
  it('keeps a keeper whose object is present with the followed UID', () => {
    expect(judgeFollowed(follow, { state: 'present', uid: 'uid-1' })).toEqual({ lost: false });
  });
  it('loses a deleted object', () => {
    const v = judgeFollowed(follow, { state: 'absent', reason: 'NotFound' });
    expect(v).toMatchObject({ lost: true, reason: 'Deleted' });
  });
  it('loses an object recreated under the same name (UID mismatch)', () => {
    const v = judgeFollowed(follow, { state: 'present', uid: 'uid-2' });
    expect(v).toMatchObject({ lost: true, reason: 'Recreated' });
    if (v.lost) expect(v.message).toContain('uid-2');
  });
  it('loses an object whose kind is no longer served', () => {
    expect(judgeFollowed(follow, { state: 'absent', reason: 'KindNotServed', detail: 'x' })).toMatchObject({
      lost: true,
      reason: 'KindNotServed',
    });
  });
  it('refuses to judge a TTL keeper, which follows nothing', () => {
    expect(() => judgeFollowed({ mode: 'TTL', ttl: '1h' }, { state: 'absent', reason: 'NotFound' })).toThrow();
  });
});

describe('expiryOf', () => {
  const created = '2026-01-01T00:00:00Z';
  it('TTL counts from creation', () => {
    expect(expiryOf({ mode: 'TTL', ttl: '90s' }, created)).toBe(Date.parse(created) + 90_000);
  });
  it('FollowObjectWithTTL counts from lostAt, and has no expiry before the loss', () => {
    const spec: ObjectKeeperSpec = { mode: 'FollowObjectWithTTL', followObjectRef: ref, ttl: '1h' };
    expect(expiryOf(spec, created)).toBeUndefined();
    expect(expiryOf(spec, created, '2026-01-02T00:00:00Z')).toBe(Date.parse('2026-01-02T01:00:00Z'));
  });
  it('FollowObject never expires by time', () => {
    expect(expiryOf(follow, created, '2026-01-02T00:00:00Z')).toBeUndefined();
  });
});

it('workflow IDs include the keeper UID, so a recreated keeper is a new workflow', () => {
  expect(objectKeeperWorkflowId('k', 'a')).not.toBe(objectKeeperWorkflowId('k', 'b'));
  expect(objectKeeperWorkflowId('k', 'a')).toBe('objectkeeper/k/a');
});

describe('references built from apiserver objects', () => {
  const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'ns', uid: 'u1' } };
  const keeper = { apiVersion: 'deckhouse.io/v1alpha1', kind: 'ObjectKeeper', metadata: { name: 'k', uid: 'u2' } };

  it('followRefTo carries the UID, and the namespace only for namespaced objects', () => {
    expect(followRefTo(cm)).toEqual({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns', name: 'cm', uid: 'u1' });
    expect(followRefTo(keeper)).toEqual({
      apiVersion: 'deckhouse.io/v1alpha1',
      kind: 'ObjectKeeper',
      name: 'k',
      uid: 'u2',
    });
  });

  it('ownedByKeeper is a controller reference with the keeper UID', () => {
    expect(ownedByKeeper(keeper)).toEqual({ ...followRefTo(keeper), controller: true });
  });

  it('refuses objects without a UID (the UID barrier)', () => {
    expect(() => ownedByKeeper({ ...keeper, metadata: { name: 'k' } })).toThrow(/no apiVersion\/kind\/name\/uid/);
    expect(() => followRefTo({ ...cm, metadata: { name: 'cm', namespace: 'ns', uid: '' } })).toThrow();
  });
});
