/**
 * The target checks the credentials' rules again on every spec it reads (issue 33, N3/N5): an
 * edit the webhook did not see, and the source's workflow refused, leaves the source as it was
 * registered — frozen, its items in Cloudflare untouched — and tells it why.
 */
import { describe, expect, it } from 'vitest';
import { collectSources } from '../../src/domain/cloudflare/sync-plan.js';
import type { ConfigSource } from '../../src/api/cloudflare.js';
import type { CredentialsUsePolicy } from '../../src/domain/cloudflare/credentials-use.js';
import type { SyncTarget } from '../../src/domain/cloudflare/targets.js';
import type { SourceRegistration } from '../../src/workflows/cloudflare/messages.js';

const tunnelConfig: SyncTarget = { resourceType: 'TunnelConfiguration', accountId: 'acc', tunnelId: 'T' };
const tunnel = {
  kind: 'ClusterTunnel',
  name: 'shared',
  tunnelId: 'T',
  credentialsRef: 'shared',
  domain: 'example.com',
};
const bindingSpec = (priority?: number) => ({
  ...(priority !== undefined ? { priority } : {}),
  namespace: 'team-b',
  subjects: [{ name: 'web', spec: { fqdn: 'app.example.com', target: 'http://evil.team-b:80' } }],
  tunnelRef: { kind: 'ClusterTunnel', name: 'shared' },
  tunnel,
  services: {},
});
const reg = (kind: string, name: string, anchor: string, generation = 1): SourceRegistration => ({
  ref: { kind, namespace: 'team-b', name },
  uid: `uid-${name}`,
  generation,
  anchor,
  credentials: 'shared',
});
const object = (name: string, generation: number, spec: Record<string, unknown>) => ({
  metadata: { name, namespace: 'team-b', uid: `uid-${name}`, generation, creationTimestamp: '2026-01-02T00:00:00Z' },
  spec,
});
const rules = (policy: Partial<CredentialsUsePolicy>) =>
  new Map([['shared', { policy: { name: 'shared', allowedNamespaces: ['*'], ...policy } }]]);

describe('the target re-checks the credentials rules on the spec it reads', () => {
  it('a binding edited to priority 0 by a namespace without the grant: frozen as registered, PriorityNotAllowed', () => {
    const previous = new Map<string, ConfigSource>([
      [
        'TunnelBinding/team-b/intruder',
        {
          ref: { kind: 'TunnelBinding', namespace: 'team-b', name: 'intruder' },
          priority: 50,
          config: { rules: [] } as never,
        },
      ],
    ]);
    const out = collectSources(
      tunnelConfig,
      [reg('TunnelBinding', 'intruder', 'tunnel:T', 1)],
      new Map([['TunnelBinding/team-b/intruder', object('intruder', 2, bindingSpec(0))]]) as never,
      previous,
      {},
      {},
      rules({ priorityNamespaces: ['platform'] }),
    );
    expect(out.sources).toEqual([]);
    expect(out.frozen.has('TunnelBinding/team-b/intruder')).toBe(true);
    expect(out.frozenRecords.map((r) => r.priority)).toEqual([50]);
    expect(out.verdicts).toEqual([
      expect.objectContaining({ result: 'Rejected', reason: 'PriorityNotAllowed', generation: 2 }),
    ]);
    // With the grant, the same spec is taken as it reads.
    const granted = collectSources(
      tunnelConfig,
      [reg('TunnelBinding', 'intruder', 'tunnel:T', 1)],
      new Map([['TunnelBinding/team-b/intruder', object('intruder', 2, bindingSpec(0))]]) as never,
      previous,
      {},
      {},
      rules({ priorityNamespaces: ['team-b'] }),
    );
    expect(granted.sources.map((s) => s.priority)).toEqual([0]);
  });

  it('a DNSRecord edited to adoptExisting without adoptNamespaces adopts nothing: AdoptionNotAllowed', () => {
    const target: SyncTarget = {
      resourceType: 'DNSRecord',
      accountId: 'acc',
      zoneId: 'Z',
      zone: 'example.com',
      name: 'example.com',
      type: 'A',
    };
    const spec = {
      name: '@',
      type: 'A',
      content: '192.0.2.66',
      adoptExisting: true,
      cloudflare: { domain: 'example.com' },
    };
    const out = collectSources(
      target,
      [reg('DNSRecord', 'apex', 'zone:example.com')],
      new Map([['DNSRecord/team-b/apex', object('apex', 2, spec)]]) as never,
      new Map(),
      {},
      {},
      rules({}),
    );
    expect(out.sources).toEqual([]);
    expect(out.verdicts[0]).toMatchObject({ result: 'Rejected', reason: 'AdoptionNotAllowed' });
    expect(
      collectSources(
        target,
        [reg('DNSRecord', 'apex', 'zone:example.com')],
        new Map([['DNSRecord/team-b/apex', object('apex', 2, spec)]]) as never,
        new Map(),
        {},
        {},
        rules({ adoptNamespaces: ['team-b'] }),
      ).sources,
    ).toHaveLength(1);
  });

  it("a tunnel hostname's CNAME zone outside allowedZones is not written there", () => {
    const dns: SyncTarget = { resourceType: 'TunnelDNS', accountId: 'acc', zoneId: 'Z2', zone: 'corp.example.net' };
    const out = collectSources(
      dns,
      [reg('TunnelBinding', 'b', 'tunnel:T')],
      new Map([['TunnelBinding/team-b/b', object('b', 1, bindingSpec())]]) as never,
      new Map(),
      {},
      {},
      rules({ allowedZones: ['example.com'] }),
    );
    expect(out.verdicts[0]).toMatchObject({ result: 'Rejected', reason: 'CredentialsNotAllowed' });
    expect(out.verdicts[0]!.message).toContain('may not write to zone corp.example.net');
  });
});
