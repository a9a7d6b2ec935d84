/**
 * An orphaned source in a tunnel configuration (owned whole, no marker per rule): left in
 * Cloudflare as it is, not held for ever (issue 33, N6b).
 */
import { describe, expect, it } from 'vitest';
import type { RegisteredSource } from '../../src/domain/cloudflare/aggregate.js';
import { tunnelConfigurationAdapter } from '../../src/activities/cloudflare/targets/tunnel-configuration.js';
import type { TunnelConfig } from '../../src/domain/cloudflare/tunnels.js';

const binding = (name: string, rules: Array<{ hostname: string; service: string }>, createdAt: string) =>
  ({
    ref: { kind: 'TunnelBinding', namespace: 'ns', name },
    priority: 50,
    createdAt,
    generation: 1,
    uid: name,
    config: { rules },
  }) as RegisteredSource;
/** As the sync passes a source deleted with deletion policy Orphan: its last record, flagged. */
const orphaned = (s: RegisteredSource) => ({ ...s, generation: 0, uid: '', orphaned: true }) as RegisteredSource;
const catchAll = { service: 'http_status:404' };
const plan = (live: TunnelConfig[], sources: RegisteredSource[]) =>
  tunnelConfigurationAdapter.planWhole!(live, sources, 'c').plan;

describe('an orphan in a tunnel configuration', () => {
  const rules = [
    { hostname: 'left.x', service: 'http://left:80' },
    { hostname: 'taken.x', service: 'http://old:80' },
  ];
  const old = orphaned(binding('old', rules, '2026-01-01T00:00:00Z'));

  it('keeps its rules while Cloudflare has them', () => {
    const live: TunnelConfig = { ingress: [...rules, catchAll] };
    expect(plan([live], [old]).write).toBe(false);
  });

  it('does not write back a rule removed in Cloudflare', () => {
    const live = { ingress: [{ hostname: 'taken.x', service: 'http://old:80' }, catchAll] };
    const p = plan([live], [old]);
    expect(p.write).toBe(false);
    expect(p.items[0]!.ingress.map((r) => r.hostname)).toEqual(['taken.x', undefined]);
  });

  it('never holds a hostname against a live source, even a newer one of a higher priority number', () => {
    const live: TunnelConfig = { ingress: [...rules, catchAll] };
    const newer = {
      ...binding('new', [{ hostname: 'taken.x', service: 'http://new:80' }], '2026-06-01T00:00:00Z'),
      priority: 100,
    };
    const p = plan([live], [old, newer]);
    expect(p.write).toBe(true);
    expect(p.items[0]!.ingress).toEqual([
      { hostname: 'left.x', service: 'http://left:80' },
      { hostname: 'taken.x', service: 'http://new:80' },
      catchAll,
    ]);
    expect(p.conflicts.map((c) => [c.owner, c.heldBy])).toEqual([['TunnelBinding/ns/old', 'TunnelBinding/ns/new']]);
  });
});
