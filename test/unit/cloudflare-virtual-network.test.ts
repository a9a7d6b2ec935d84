/** The VirtualNetwork kind, decided purely: its target, validation, contribution and merge. */
import { describe, expect, it } from 'vitest';
import { desiredNetworks, type RegisteredSource } from '../../src/domain/cloudflare/aggregate.js';
import { virtualNetworkCodec, type VirtualNetworkItem } from '../../src/domain/cloudflare/items.js';
import { commentRoom, virtualNetworkRules } from '../../src/domain/cloudflare/kinds/virtual-network.js';
import { planWrite } from '../../src/domain/cloudflare/merge.js';
import { syncStateName, targetKey, type SyncTarget } from '../../src/domain/cloudflare/targets.js';

const CLUSTER = 'cluster-a';
const opts = { clusterId: CLUSTER, adoptLegacy: false };
const account = '0123456789abcdef0123456789abcdef';
const obj = { name: 'staging' };

function source(name: string, spec: Record<string, unknown>, createdAt = '2026-01-01T00:00:00Z'): RegisteredSource {
  const ref = { kind: 'VirtualNetwork', name };
  const target = virtualNetworkRules.targets(spec as never, { accountId: account }, ref)[0]!;
  return {
    ref,
    priority: 100,
    createdAt,
    generation: 1,
    uid: `uid-${name}`,
    config: virtualNetworkRules.contribution(spec as never, target, ref),
  };
}

describe('VirtualNetwork target', () => {
  it('is keyed by account and network name; spec.name or else the object name', () => {
    expect(virtualNetworkRules.targets({ name: 'net' } as never, { accountId: account }, obj)).toEqual([
      { resourceType: 'VirtualNetwork', accountId: account, name: 'net' },
    ]);
    const [t] = virtualNetworkRules.targets({} as never, { accountId: account }, obj);
    expect(targetKey(t!)).toBe(`VirtualNetwork/${account}/staging`);
    expect(syncStateName(t!)).toBe(`virtual-network-${account}-staging`);
    expect(virtualNetworkRules.zone({} as never)).toBeUndefined();
  });

  it('gives names kebab-case would change a hashed SyncState name, so they never collide', () => {
    const t = (name: string): SyncTarget => ({ resourceType: 'VirtualNetwork', accountId: account, name });
    const names = ['prod', 'Prod', 'prod net', 'prod-net'].map((n) => syncStateName(t(n)));
    expect(new Set(names).size).toBe(4);
    for (const n of names) expect(n).toMatch(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/);
  });
});

describe('VirtualNetwork validation', () => {
  it('accepts a plain spec', () => {
    expect(virtualNetworkRules.validate({ name: 'net', comment: 'fine' } as never, obj)).toEqual([]);
  });
  it('names the field of each problem', () => {
    expect(virtualNetworkRules.validate({ name: '' } as never, obj)).toEqual([
      'spec.name: the network name must not be empty',
    ]);
    expect(virtualNetworkRules.validate({ name: 'x'.repeat(256) } as never, obj)[0]).toMatch(/^spec\.name: .*255/);
    expect(virtualNetworkRules.validate({ comment: 'a\nb' } as never, obj)).toEqual([
      'spec.comment: must be a single line (it contains a line break)',
    ]);
    const room = commentRoom(obj);
    expect(virtualNetworkRules.validate({ comment: 'c'.repeat(room) } as never, obj)).toEqual([]);
    expect(virtualNetworkRules.validate({ comment: 'c'.repeat(room + 1) } as never, obj)[0]).toMatch(
      /^spec\.comment: .*marker/,
    );
  });
});

describe('VirtualNetwork merge', () => {
  const item = (n: Partial<VirtualNetworkItem> & { name: string }): VirtualNetworkItem => ({
    comment: '',
    is_default_network: false,
    ...n,
  });

  it('creates ours with the marker in its comment', () => {
    const desired = desiredNetworks([source('staging', { comment: 'Staging' })], CLUSTER);
    expect(desired.map((d) => d.item)).toEqual([
      { name: 'staging', comment: 'Staging [managed-by:cluster-a:VirtualNetwork/staging]', is_default_network: false },
    ]);
    const plan = planWrite([], desired, virtualNetworkCodec, opts);
    expect(plan.write).toBe(true);
    expect(plan.conflicts).toEqual([]);
  });

  it('patches ours in place (its id carried) and writes nothing when equal', () => {
    const live = [item({ id: 'n1', name: 'staging', comment: 'Old [managed-by:cluster-a:VirtualNetwork/staging]' })];
    const desired = desiredNetworks([source('staging', { comment: 'New' })], CLUSTER);
    const plan = planWrite(live, desired, virtualNetworkCodec, opts);
    expect(plan.write).toBe(true);
    expect(plan.items).toEqual([{ ...desired[0]!.item, id: 'n1' }]);
    const same = planWrite([{ ...desired[0]!.item, id: 'n1' }], desired, virtualNetworkCodec, opts);
    expect(same.write).toBe(false);
  });

  it('never adopts a hand-made network of the same name: a conflict, the network kept', () => {
    const live = [item({ id: 'h1', name: 'staging', comment: 'made by hand' })];
    const desired = desiredNetworks([source('staging', { comment: 'Staging' })], CLUSTER);
    const plan = planWrite(live, desired, virtualNetworkCodec, opts);
    expect(plan.write).toBe(false);
    expect(plan.items).toEqual(live);
    expect(plan.conflicts).toEqual([
      { owner: 'VirtualNetwork/staging', key: 'virtual network "staging"', heldBy: 'external' },
    ]);
  });

  it('two objects wanting one name: the first in order wins, the other is a conflict', () => {
    const first = source('a', { name: 'shared' }, '2026-01-01T00:00:00Z');
    const second = source('b', { name: 'shared' }, '2026-01-02T00:00:00Z');
    const plan = planWrite([], desiredNetworks([second, first], CLUSTER), virtualNetworkCodec, opts);
    expect(plan.items.map((n) => n.comment)).toEqual(['[managed-by:cluster-a:VirtualNetwork/a]']);
    expect(plan.conflicts.map((c) => c.owner)).toEqual(['VirtualNetwork/b']);
  });

  it('contributes nothing to a target of another name (the object was renamed)', () => {
    const old: SyncTarget = { resourceType: 'VirtualNetwork', accountId: account, name: 'old' };
    expect(virtualNetworkRules.contribution({ name: 'new' } as never, old, obj)).toEqual({ entries: [] });
  });
});
