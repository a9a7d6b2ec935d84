/**
 * What a CloudflareSyncState records of its sources: plain configurations while small, packed
 * (gzip) past 256 KiB — never dropped, since a source whose spec becomes invalid is
 * re-aggregated from them — and, past even the packed limit, the frozen sources' ones only.
 */
import { describe, expect, it } from 'vitest';
import type { CloudflareSyncState, ConfigSource } from '../../src/api/cloudflare.js';
import { recordedConfigsOf } from '../../src/activities/cloudflare/sync-read.js';
import { recordedSources } from '../../src/activities/cloudflare/sync-record.js';
import type { RegisteredSource } from '../../src/domain/cloudflare/aggregate.js';

const rules = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => ({ hostname: `h${i}.${tag}.example`, service: `http://10.0.${i % 250}.1:80` }));
const live = (name: string, n: number): RegisteredSource => ({
  ref: { kind: 'TunnelBinding', namespace: 'team', name },
  priority: 50,
  createdAt: '2026-01-01T00:00:00.000Z',
  generation: 1,
  uid: `uid-${name}`,
  config: { rules: rules(n, name) },
});
const frozen = (name: string, n: number): ConfigSource => ({
  ref: { kind: 'TunnelBinding', namespace: 'team', name },
  priority: 50,
  createdAt: '2025-06-01T00:00:00.000Z',
  config: { rules: rules(n, name) } as never,
});
const state = (r: ReturnType<typeof recordedSources>) => ({ spec: r }) as unknown as CloudflareSyncState;

describe('the sources a SyncState records', () => {
  it('small: every configuration plain, with its creation time', () => {
    const r = recordedSources({ sources: [live('a', 3)], frozenRecords: [frozen('b', 2)] });
    expect(r.packedConfigs).toBeUndefined();
    expect(r.sources.map((s) => [s.ref.name, s.createdAt, (s.config as { rules: unknown[] }).rules.length])).toEqual([
      ['a', '2026-01-01T00:00:00.000Z', 3],
      ['b', '2025-06-01T00:00:00.000Z', 2],
    ]);
  });

  it('past 256 KiB: packed, and read back whole', () => {
    const spec = { sources: [live('a', 2_000), live('c', 2_000)], frozenRecords: [frozen('b', 1_000)] };
    const r = recordedSources(spec);
    expect(JSON.stringify(spec).length).toBeGreaterThan(256 * 1024);
    expect(r.sources.every((s) => JSON.stringify(s.config) === '{}')).toBe(true);
    expect(r.packedConfigs!.length).toBeLessThan(JSON.stringify(spec).length / 5);
    const back = recordedConfigsOf(state(r));
    expect(back.get('TunnelBinding/team/b')?.config).toEqual(frozen('b', 1_000).config);
    expect(back.get('TunnelBinding/team/a')?.config).toEqual(live('a', 2_000).config);
  });

  it('past the packed limit too: the frozen sources keep theirs, the others are left out', () => {
    const r = recordedSources(
      { sources: [live('a', 200)], frozenRecords: [frozen('b', 10)] },
      { plain: 1_000, packed: 500 },
    );
    const back = recordedConfigsOf(state(r));
    expect(back.get('TunnelBinding/team/b')?.config).toEqual(frozen('b', 10).config);
    expect(back.get('TunnelBinding/team/a')?.config).toEqual({});
  });

  it('an unreadable packed value (edited by hand) reads as no configuration', () => {
    const back = recordedConfigsOf(state({ sources: [frozen('b', 1)], packedConfigs: 'not gzip' }));
    expect(back.get('TunnelBinding/team/b')?.config).toEqual(frozen('b', 1).config);
  });
});
