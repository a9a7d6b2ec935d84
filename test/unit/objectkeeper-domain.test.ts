import { describe, expect, it } from 'vitest';
import type { ObjectKeeperSpec } from '../../src/api/objectkeeper.js';
import {
  keeperExpiry,
  followRefTo,
  judgeFollowed,
  objectKeeperWorkflowId,
  ownedByKeeper,
} from '../../src/domain/objectkeeper.js';

const ref = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns', name: 'cm', uid: 'uid-1' };
const follow: ObjectKeeperSpec = { mode: 'FollowObject', followObjectRef: ref };

describe('judgeFollowed', () => {
  it('keeps a keeper whose object is present with the followed UID', () => {
    expect(judgeFollowed(follow, { status: 'ok', uid: 'uid-1' })).toEqual({ lost: false });
  });
  it('loses a deleted object', () => {
    const v = judgeFollowed(follow, { status: 'gone', reason: 'NotFound' });
    expect(v).toMatchObject({ lost: true, reason: 'Deleted' });
  });
  it('loses an object recreated under the same name (UID mismatch)', () => {
    const v = judgeFollowed(follow, { status: 'ok', uid: 'uid-2' });
    expect(v).toMatchObject({ lost: true, reason: 'Recreated' });
    if (v.lost) expect(v.message).toContain('uid-2');
  });
  it('loses an object whose kind is no longer served', () => {
    expect(judgeFollowed(follow, { status: 'gone', reason: 'KindNotServed', detail: 'x' })).toMatchObject({
      lost: true,
      reason: 'KindNotServed',
    });
  });
  it('refuses to judge a TTL keeper, which follows nothing', () => {
    expect(() => judgeFollowed({ mode: 'TTL', ttl: '1h' }, { status: 'gone', reason: 'NotFound' })).toThrow();
  });
});

describe('keeperExpiry', () => {
  const created = '2026-01-01T00:00:00Z';
  it('TTL counts from creation', () => {
    expect(keeperExpiry({ mode: 'TTL', ttl: '90s' }, created)).toBe(Date.parse(created) + 90_000);
  });
  it('FollowObjectWithTTL counts from lostAt, and has no expiry before the loss', () => {
    const spec: ObjectKeeperSpec = { mode: 'FollowObjectWithTTL', followObjectRef: ref, ttl: '1h' };
    expect(keeperExpiry(spec, created)).toBeUndefined();
    expect(keeperExpiry(spec, created, '2026-01-02T00:00:00Z')).toBe(Date.parse('2026-01-02T01:00:00Z'));
  });
  it('FollowObject never expires by time', () => {
    expect(keeperExpiry(follow, created, '2026-01-02T00:00:00Z')).toBeUndefined();
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
