/** Who may use a CloudflareCredentials (src/domain/cloudflare/credentials-use.ts, issue 23 D2). */
import { describe, expect, it } from 'vitest';
import { credentialsUseRefusal, type CredentialsUsePolicy } from '../../src/domain/cloudflare/credentials-use.js';
import { credentialsUseOf } from '../../src/domain/cloudflare/sources.js';

const redirect = (priority?: number, credentials?: string) => ({
  zone: 'corp.example.com',
  ...(priority !== undefined ? { priority } : {}),
  ...(credentials ? { credentialsRef: { name: credentials } } : {}),
  rules: [{ name: 'r', expression: 'true', target: { url: 'https://evil.example' } }],
});
const refusal = (policy: CredentialsUsePolicy, spec: Record<string, unknown>, ns = 'team-a', kind = 'RedirectRule') =>
  credentialsUseRefusal(policy, credentialsUseOf(kind as never, spec, ns));

describe('who may use CloudflareCredentials', () => {
  it('the default credentials without allowedNamespaces serve no namespaced source; listed namespaces (or *) may', () => {
    const def = { name: 'default', isDefault: true };
    expect(refusal(def, redirect())).toMatchObject({
      reason: 'CredentialsNotAllowed',
      message: expect.stringContaining('lists no spec.allowedNamespaces') as unknown,
    });
    expect(refusal({ ...def, allowedNamespaces: ['team-a'] }, redirect())).toBeUndefined();
    expect(refusal({ ...def, allowedNamespaces: ['*'] }, redirect())).toBeUndefined();
    expect(refusal({ ...def, allowedNamespaces: ['team-b'] }, redirect())?.message).toContain(
      'may not be used from namespace "team-a"',
    );
    // Cluster-scoped sources are made by administrators: not restricted.
    expect(refusal(def, { mode: 'include', splitTunnel: [] }, '', 'DeviceSettingsPolicy')).toBeUndefined();
  });

  it('named credentials without a list stay usable from every namespace (get on them is checked); with one, only from those', () => {
    expect(refusal({ name: 'team' }, redirect(undefined, 'team'))).toBeUndefined();
    expect(refusal({ name: 'team', allowedNamespaces: ['team-b'] }, redirect(undefined, 'team'))?.reason).toBe(
      'CredentialsNotAllowed',
    );
  });

  it('allowedZones limits the zone written, case and trailing dot aside', () => {
    const policy = { name: 'team', allowedZones: ['Corp.Example.com.'] };
    expect(refusal(policy, redirect(undefined, 'team'))).toBeUndefined();
    expect(refusal(policy, { ...redirect(undefined, 'team'), zone: 'other.example' })?.message).toContain(
      'may not write to zone other.example',
    );
  });

  it("a priority below the kind's default is reserved to priorityNamespaces; the default or a later one is anyone's", () => {
    const policy = { name: 'default', isDefault: true, allowedNamespaces: ['*'] };
    expect(refusal(policy, redirect(0))).toMatchObject({
      reason: 'PriorityNotAllowed',
      message: expect.stringContaining('priority 0') as unknown,
    });
    expect(refusal(policy, redirect(100))).toBeUndefined();
    expect(refusal(policy, redirect(500))).toBeUndefined();
    expect(refusal({ ...policy, priorityNamespaces: ['team-a'] }, redirect(0))).toBeUndefined();
    // A DNSRecord's spec.priority is its MX priority, not a source priority.
    expect(
      refusal(
        policy,
        { name: 'mx', type: 'MX', content: 'mx.example.com', priority: 1, cloudflare: { domain: 'a.b' } },
        'team-a',
        'DNSRecord',
      ),
    ).toBeUndefined();
  });

  it('taking over what the operator did not create (existingTunnel, adoptExisting) needs adoptNamespaces; knowing an ID is no grant', () => {
    const policy = { name: 'team', allowedNamespaces: ['*'] };
    const existing = { existingTunnel: { id: 'c0ffee00-0000-4000-8000-000000000001' }, cloudflare: {} };
    expect(refusal(policy, existing, 'team-b', 'Tunnel')).toMatchObject({
      reason: 'AdoptionNotAllowed',
      message: expect.stringContaining('spec.existingTunnel') as unknown,
    });
    expect(refusal({ ...policy, adoptNamespaces: ['team-b'] }, existing, 'team-b', 'Tunnel')).toBeUndefined();
    expect(refusal({ ...policy, adoptNamespaces: ['*'] }, existing, 'team-b', 'Tunnel')).toBeUndefined();
    // A tunnel it creates is its own; a ClusterTunnel is an administrator's.
    expect(refusal(policy, { newTunnel: { name: 't' }, cloudflare: {} }, 'team-b', 'Tunnel')).toBeUndefined();
    expect(refusal(policy, existing, '', 'ClusterTunnel')).toBeUndefined();
    const adopt = { name: 'www', type: 'A', content: '192.0.2.1', adoptExisting: true, cloudflare: { domain: 'a.b' } };
    expect(refusal(policy, adopt, 'team-b', 'DNSRecord')?.reason).toBe('AdoptionNotAllowed');
    expect(refusal({ ...policy, adoptNamespaces: ['team-b'] }, adopt, 'team-b', 'DNSRecord')).toBeUndefined();
    expect(refusal(policy, { ...adopt, adoptExisting: false }, 'team-b', 'DNSRecord')).toBeUndefined();
  });
});

describe("a Tunnel's domain is a zone for allowedZones (issue 33, N2)", () => {
  const policy = { name: 'shared', allowedNamespaces: ['team-b'], allowedZones: ['team.example.com'] };
  const tunnel = (domain: string) => ({
    newTunnel: { name: 't' },
    cloudflare: { domain, credentialsRef: { name: 'shared' } },
  });

  it('a Tunnel or ClusterTunnel whose spec.cloudflare.domain is not allowed is refused, naming the field', () => {
    expect(refusal(policy, tunnel('corp.example.com'), 'team-b', 'Tunnel')).toEqual({
      reason: 'CredentialsNotAllowed',
      message:
        'spec.cloudflare.domain: CloudflareCredentials shared may not write to zone corp.example.com (spec.allowedZones: team.example.com)',
    });
    expect(refusal(policy, tunnel('corp.example.com'), '', 'ClusterTunnel')?.reason).toBe('CredentialsNotAllowed');
    expect(refusal(policy, tunnel('Team.Example.com'), 'team-b', 'Tunnel')).toBeUndefined();
  });

  it("a source writing through a tunnel is held to its tunnel's domain and to the priority rule", () => {
    const binding = (domain: string, priority?: number) => ({
      ...(priority !== undefined ? { priority } : {}),
      namespace: 'team-b',
      subjects: [{ name: 'web' }],
      tunnelRef: { kind: 'ClusterTunnel', name: 'shared' },
      tunnel: { kind: 'ClusterTunnel', name: 'shared', credentialsRef: 'shared', domain, tunnelId: 'T' },
      services: {},
    });
    expect(refusal(policy, binding('corp.example.com'), 'team-b', 'TunnelBinding')?.message).toContain(
      "its tunnel's spec.cloudflare.domain: CloudflareCredentials shared may not write to zone corp.example.com",
    );
    expect(refusal(policy, binding('team.example.com'), 'team-b', 'TunnelBinding')).toBeUndefined();
    // The namespace rule is the tunnel's `get` grant, checked by the webhook: another namespace passes here.
    expect(refusal(policy, binding('team.example.com'), 'team-c', 'TunnelBinding')).toBeUndefined();
    expect(refusal(policy, binding('team.example.com', 0), 'team-b', 'TunnelBinding')?.reason).toBe(
      'PriorityNotAllowed',
    );
  });
});
