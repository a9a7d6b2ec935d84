import { describe, expect, it } from 'vitest';
import type { ObjectKeeperSpec } from '../../src/api/objectkeeper.js';
import {
  keeperDeletionIsNews,
  keeperExpiry,
  keeperStep,
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

describe('keeperStep', () => {
  const created = '2026-01-01T00:00:00Z';
  const lost = { lost: true, reason: 'Deleted', message: 'ConfigMap ns/cm (uid uid-1) was deleted' } as const;
  it('TTL mode expires ttl after creation, whatever it saw', () => {
    expect(keeperStep({ mode: 'TTL', ttl: '4s' }, created, undefined, undefined, 'now')).toEqual({
      kind: 'expire',
      expiresAtMs: Date.parse(created) + 4_000,
      why: 'ttl 4s counted from creation',
    });
  });
  it('a follow mode tracks while the object is there', () => {
    expect(keeperStep(follow, created, { lost: false }, undefined, 'now')).toEqual({ kind: 'track' });
  });
  it('FollowObject deletes the keeper once the object is lost', () => {
    expect(keeperStep(follow, created, lost, undefined, 'now')).toEqual({ kind: 'delete', why: lost.message });
  });
  it('FollowObjectWithTTL records lostAt now (or keeps the one recorded) and expires ttl after it', () => {
    const spec: ObjectKeeperSpec = { mode: 'FollowObjectWithTTL', followObjectRef: ref, ttl: '5s' };
    const at = '2026-01-01T00:01:00.000Z';
    expect(keeperStep(spec, created, lost, undefined, at)).toEqual({
      kind: 'expire',
      expiresAtMs: Date.parse(at) + 5_000,
      lostAt: at,
      why: `${lost.message}; ttl 5s counted from lostAt`,
    });
    expect(keeperStep(spec, created, lost, created, at)).toMatchObject({
      lostAt: created,
      expiresAtMs: Date.parse(created) + 5_000,
    });
  });
});

describe('keeperDeletionIsNews (the watcher’s keeperDeleted hint)', () => {
  const now = Date.parse('2026-01-01T00:10:00Z');
  it('is news for a keeper deleted before its TTL, or while what it follows is there', () => {
    expect(keeperDeletionIsNews({ mode: 'TTL', expiresAt: '2026-01-01T01:00:00Z', followedLost: false }, now)).toBe(
      true,
    );
    expect(keeperDeletionIsNews({ mode: 'FollowObject', followedLost: false }, now)).toBe(true);
    // Lost, but its TTL still runs: only a person deletes it now.
    expect(keeperDeletionIsNews({ mode: 'FollowObjectWithTTL', followedLost: true }, now)).toBe(true);
  });
  it('is not when the workflow deletes it itself: its TTL is up (or within the clock skew), or what it follows is lost', () => {
    expect(keeperDeletionIsNews({ mode: 'TTL', expiresAt: '2026-01-01T00:09:59Z', followedLost: false }, now)).toBe(
      false,
    );
    expect(keeperDeletionIsNews({ mode: 'TTL', expiresAt: '2026-01-01T00:10:04Z', followedLost: false }, now)).toBe(
      false,
    );
    expect(keeperDeletionIsNews({ mode: 'FollowObject', followedLost: true }, now)).toBe(false);
  });
});
