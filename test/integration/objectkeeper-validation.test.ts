/** Bad ObjectKeeper specs are refused by the real apiserver (CRD schema + CEL) with a clear message. */
import { describe, expect, it } from 'vitest';
import type { ObjectKeeper } from '../../src/api/objectkeeper.js';
import { apiMessage, statusCode } from '../../src/kube/client.js';
import { kube, uniq, refusal } from '../support/env.js';

const k = kube();
const ref = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: 'x', uid: 'u-1' };

const rejection = (spec: unknown) =>
  refusal(
    () =>
      k.create({
        apiVersion: 'deckhouse.io/v1alpha1',
        kind: 'ObjectKeeper',
        metadata: { name: uniq('bad') },
        spec,
      } as never),
    JSON.stringify(spec),
  );

describe('ObjectKeeper validation', () => {
  it.each([
    [{ mode: 'FollowObject' }, 'followObjectRef is required when mode is FollowObject or FollowObjectWithTTL'],
    [{ mode: 'FollowObjectWithTTL', ttl: '1h' }, 'followObjectRef is required'],
    [{ mode: 'FollowObject', followObjectRef: ref, ttl: '1h' }, 'ttl must not be set when mode is FollowObject'],
    [{ mode: 'TTL' }, 'ttl is required when mode is TTL or FollowObjectWithTTL'],
    [{ mode: 'FollowObjectWithTTL', followObjectRef: ref }, 'ttl is required'],
    [{ mode: 'TTL', ttl: '1h', followObjectRef: ref }, 'followObjectRef must not be set when mode is TTL'],
    [{ mode: 'Forever' }, 'Unsupported value: "Forever"'],
    [{ mode: 'TTL', ttl: '10 minutes' }, 'spec.ttl'],
    [{ mode: 'FollowObject', followObjectRef: { ...ref, uid: undefined } }, 'spec.followObjectRef.uid: Required value'],
    [{ mode: 'FollowObject', followObjectRef: { ...ref, name: 'Not_A_Name' } }, 'spec.followObjectRef.name'],
    [{}, 'spec.mode: Required value'],
  ])('%j is rejected: %s', async (spec, expected) => {
    const r = await rejection(spec);
    expect(r.code).toBe(422);
    expect(r.message).toContain(expected);
  });

  it('refuses to change a keeper spec after creation', async () => {
    const keeper = await k.create<ObjectKeeper>({
      apiVersion: 'deckhouse.io/v1alpha1',
      kind: 'ObjectKeeper',
      metadata: { name: uniq('immutable') },
      spec: { mode: 'TTL', ttl: '1h' },
    });
    try {
      await k.objects.replace({ ...keeper, spec: { mode: 'TTL', ttl: '2h' } });
      throw new Error('spec change accepted');
    } catch (err) {
      expect(statusCode(err)).toBe(422);
      expect(apiMessage(err)).toContain('spec is immutable');
    } finally {
      await k.delete({ apiVersion: 'deckhouse.io/v1alpha1', kind: 'ObjectKeeper', name: keeper.metadata!.name! });
    }
  });
});
