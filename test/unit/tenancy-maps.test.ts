/** The two persistent maps snapshots are made of: copies must share what a change did not touch. */
import { describe, expect, it } from 'vitest';
import { IdSet } from '../../src/tenancy/id-set.js';
import { LayeredMap } from '../../src/tenancy/layered-map.js';
import { ShardedMap } from '../../src/tenancy/sharded-map.js';

const shardsOf = <V>(m: ShardedMap<V>) => (m as unknown as { shards: ReadonlyMap<number, V>[] }).shards;

describe('ShardedMap (tenant ID → entry)', () => {
  it('behaves like a read-only map', () => {
    const m = ShardedMap.from<string>([
      [1, 'a'],
      [257, 'b'], // same shard as 1
      [3, 'c'],
    ]);
    expect(m.size).toBe(3);
    expect([m.get(1), m.get(257), m.get(3), m.get(2), m.has(257), m.has(2)]).toEqual([
      'a',
      'b',
      'c',
      undefined,
      true,
      false,
    ]);
    expect(new Map(m)).toEqual(
      new Map([
        [1, 'a'],
        [257, 'b'],
        [3, 'c'],
      ]),
    );
    const seen: string[] = [];
    m.forEach((v) => seen.push(v));
    expect(seen.sort()).toEqual(['a', 'b', 'c']);
    expect([...m.keys()].sort()).toEqual([1, 257, 3].sort());
  });

  it('leaves the original untouched and shares every shard a change did not touch', () => {
    const base = ShardedMap.from<string>(Array.from({ length: 10_000 }, (_, i) => [i, `v${i}`]));
    const next = base.edit().set(5, 'changed').set(10_000, 'new').delete(7).delete(123_456).build();
    expect([base.get(5), base.get(10_000), base.get(7), base.size]).toEqual(['v5', undefined, 'v7', 10_000]);
    expect([next.get(5), next.get(10_000), next.get(7), next.size]).toEqual(['changed', 'new', undefined, 10_000]);
    const shared = shardsOf(next).filter((shard, i) => shard === shardsOf(base)[i]).length;
    expect(shared).toBe(shardsOf(base).length - 3); // the shards of 5, 10000 and 7 were copied
  });

  it('builders are single-use', () => {
    const edit = ShardedMap.empty<number>().edit();
    edit.set(1, 1).build();
    expect(() => edit.build()).toThrow();
    expect(() => edit.set(2, 2)).toThrow();
  });
});

describe('LayeredMap (index value → tenant ID)', () => {
  it('behaves like a read-only map through sets, overwrites and deletes', () => {
    let m = LayeredMap.from([
      ['a.com', 1],
      ['b.com', 2],
    ]);
    m = m.edit().set('c.com', 3).set('a.com', 10).delete('b.com').delete('nope.com').build();
    expect([m.get('a.com'), m.get('b.com'), m.get('c.com'), m.has('b.com'), m.size]).toEqual([
      10,
      undefined,
      3,
      false,
      2,
    ]);
    expect(new Map(m)).toEqual(
      new Map([
        ['a.com', 10],
        ['c.com', 3],
      ]),
    );
    m = m.edit().delete('c.com').set('b.com', 20).build(); // c only in the overlay; b over a tombstone
    expect(new Map(m)).toEqual(
      new Map([
        ['a.com', 10],
        ['b.com', 20],
      ]),
    );
    expect(m.size).toBe(2);
  });

  it('leaves the original untouched', () => {
    const base = LayeredMap.from([['a.com', 1]]);
    const next = base.edit().set('a.com', 2).set('b.com', 3).build();
    expect([base.get('a.com'), base.get('b.com'), base.size]).toEqual([1, undefined, 1]);
    expect([next.get('a.com'), next.get('b.com'), next.size]).toEqual([2, 3, 2]);
  });

  it('copies only the overlay per change, and folds it into the base past the threshold', () => {
    let m = LayeredMap.from(Array.from({ length: 10_000 }, (_, i) => [`t${i}.example.com`, i] as const));
    const sizes: number[] = [];
    for (let i = 0; i < 1000; i++) {
      m = m.edit().set(`t${i}.example.com`, -i).build();
      sizes.push(m.overlaySize);
    }
    expect(Math.max(...sizes)).toBeLessThanOrEqual(401); // 4·√10000 = 400, then folded
    expect(sizes).toContain(0);
    expect(m.size).toBe(10_000);
    for (let i = 0; i < 1000; i += 97) expect(m.get(`t${i}.example.com`)).toBe(-i);
    expect(m.get('t5000.example.com')).toBe(5000);
  });

  it('reports whether a builder changed anything, and is single-use', () => {
    const edit = LayeredMap.empty<number>().edit();
    expect(edit.changed).toBe(false);
    edit.delete('absent');
    expect(edit.changed).toBe(false);
    edit.set('a', 1);
    expect(edit.changed).toBe(true);
    edit.build();
    expect(() => edit.build()).toThrow();
    expect(() => edit.set('b', 2)).toThrow();
  });
});

describe('IdSet (active tenants)', () => {
  it('holds small IDs in the bitmap and any other number beside it', () => {
    const ids = [1, 7, 8, 9, 1000, 4_194_303, 4_194_304, 9_007_199_254_740_991];
    const set = ids.reduce((b, id) => b.add(id), IdSet.EMPTY.edit()).build();
    for (const id of ids) expect(set.has(id), String(id)).toBe(true);
    for (const id of [0, 2, 6, 10, 999, 1001, 4_194_305, 2 ** 40, -1]) expect(set.has(id), String(id)).toBe(false);
    expect(set.size).toBe(ids.length);
  });

  it('leaves the original untouched', () => {
    const base = IdSet.EMPTY.edit().add(3).add(5_000_000).build();
    const next = base.edit().delete(3).add(4).delete(5_000_000).build();
    expect([base.has(3), base.has(4), base.has(5_000_000), base.size]).toEqual([true, false, true, 2]);
    expect([next.has(3), next.has(4), next.has(5_000_000), next.size]).toEqual([false, true, false, 1]);
  });

  it('reports whether anything changed', () => {
    const base = IdSet.EMPTY.edit().add(3).build();
    expect(base.edit().add(3).delete(4).changed).toBe(false);
    expect(base.edit().add(4).changed).toBe(true);
  });
});
