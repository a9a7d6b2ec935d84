/** What the admission webhook checks for the Cloudflare source kinds, SandboxPools and Sandboxes, decided purely (src/admission/review.ts). */
import { describe, expect, it } from 'vitest';
import {
  checksFor,
  refusalMessage,
  sandboxChecks,
  sandboxPoolChecks,
  type AdmissionRequest,
} from '../../src/admission/review.js';
import type { EnvVar } from '../../src/api/sandbox.js';

const request = (kind: string, operation: string, spec: unknown, oldSpec?: unknown): AdmissionRequest => ({
  uid: 'u',
  kind: { group: 'networking.cloudflare-operator.io', version: 'v1alpha2', kind },
  namespace: 'team-a',
  operation,
  userInfo: { username: 'alice' },
  object: { metadata: { name: 'x' }, spec },
  ...(oldSpec !== undefined ? { oldObject: { spec: oldSpec } } : {}),
});

const dns = (credentials?: string) => ({
  name: 'www',
  type: 'A',
  content: '192.0.2.1',
  cloudflare: { domain: 'example.com', ...(credentials ? { credentialsRef: { name: credentials } } : {}) },
});

describe('admission checks of Cloudflare sources', () => {
  it('the CloudflareCredentials a source names: get, cluster-scoped; none named → nothing to check', () => {
    expect(checksFor(request('DNSRecord', 'CREATE', dns('team-a')))).toEqual([
      {
        apiVersion: 'networking.cloudflare-operator.io/v1alpha2',
        kind: 'CloudflareCredentials',
        namespace: '',
        name: 'team-a',
        verbs: ['get'],
        clusterScoped: true,
      },
    ]);
    expect(checksFor(request('DNSRecord', 'CREATE', dns()))).toEqual([]);
    expect(
      checksFor(request('ZoneRuleset', 'CREATE', { zone: 'example.com', credentialsRef: { name: 'c' } })),
    ).toHaveLength(1);
  });

  it('every update that changes the spec is checked; one that leaves it (a finalizer, a label) never is', () => {
    expect(checksFor(request('DNSRecord', 'UPDATE', dns('team-b'), dns('team-a')))).toHaveLength(1);
    expect(checksFor(request('DNSRecord', 'UPDATE', dns('team-b'), dns('team-b')))).toEqual([]);
    expect(checksFor(request('DNSRecord', 'DELETE', dns('team-b')))).toBeUndefined();
  });

  it("an identity provider's Secret: get in its namespace, the original's default namespace when none is given", () => {
    const spec = (namespace?: string) => ({
      type: 'github',
      config: { clientId: 'x' },
      configSecretRef: { name: 'oauth', key: 'k', ...(namespace ? { namespace } : {}) },
    });
    expect(checksFor(request('AccessIdentityProvider', 'CREATE', spec('ops')))).toEqual([
      { apiVersion: 'v1', kind: 'Secret', namespace: 'ops', name: 'oauth', verbs: ['get'] },
    ]);
    expect(checksFor(request('AccessIdentityProvider', 'CREATE', spec()))![0]!.namespace).toBe(
      'cloudflare-operator-system',
    );
  });

  it('capture requests are still checked on CREATE only; other kinds not at all', () => {
    const mcr = (operation: string): AdmissionRequest => ({
      ...request('ManifestCaptureRequest', operation, { targets: [{ apiVersion: 'v1', kind: 'Secret', name: 's' }] }),
      kind: { group: 'state-snapshotter.deckhouse.io', version: 'v1alpha1', kind: 'ManifestCaptureRequest' },
    });
    expect(checksFor(mcr('CREATE'))).toHaveLength(1);
    expect(checksFor(mcr('UPDATE'))).toBeUndefined();
    expect(checksFor(request('CloudflareCredentials', 'CREATE', {}))).toBeUndefined();
  });
});

describe('admission checks of the tunnel kinds', () => {
  const CF = 'networking.cloudflare-operator.io/v1alpha2';

  it("a Tunnel's creator must be allowed to create and update the Secret its credentials go into and its cloudflared Deployment", () => {
    expect(checksFor(request('Tunnel', 'CREATE', { newTunnel: { name: 'edge' } }))).toEqual([
      { apiVersion: 'v1', kind: 'Secret', namespace: 'team-a', name: 'x', verbs: ['create', 'update'] },
      { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'team-a', name: 'x', verbs: ['create', 'update'] },
    ]);
    // A ClusterTunnel's Secret lives in the original's namespace; its credentials are checked too.
    expect(
      checksFor({
        ...request('ClusterTunnel', 'CREATE', {
          newTunnel: { name: 'edge' },
          cloudflare: { credentialsRef: { name: 'c' } },
        }),
        namespace: undefined,
      }),
    ).toEqual([
      {
        apiVersion: 'v1',
        kind: 'Secret',
        namespace: 'cloudflare-operator-system',
        name: 'x',
        verbs: ['create', 'update'],
      },
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        namespace: 'cloudflare-operator-system',
        name: 'x',
        verbs: ['create', 'update'],
      },
      { apiVersion: CF, kind: 'CloudflareCredentials', namespace: '', name: 'c', verbs: ['get'], clusterScoped: true },
    ]);
  });

  it('a binding or class config: get on the Tunnel it routes through (a ClusterTunnel cluster-scoped)', () => {
    const binding: AdmissionRequest = {
      ...request('TunnelBinding', 'CREATE', undefined),
      kind: { group: 'networking.cloudflare-operator.io', version: 'v1alpha1', kind: 'TunnelBinding' },
      object: { metadata: { name: 'b' }, tunnelRef: { kind: 'Tunnel', name: 'edge' } },
    };
    expect(checksFor(binding)).toEqual([
      { apiVersion: CF, kind: 'Tunnel', namespace: 'team-a', name: 'edge', verbs: ['get'] },
    ]);
    expect(
      checksFor(
        request('TunnelGatewayClassConfig', 'CREATE', { tunnelRef: { kind: 'ClusterTunnel', name: 'shared' } }),
      ),
    ).toEqual([
      { apiVersion: CF, kind: 'ClusterTunnel', namespace: '', name: 'shared', verbs: ['get'], clusterScoped: true },
    ]);
    expect(
      checksFor(
        request('TunnelIngressClassConfig', 'CREATE', {
          tunnelRef: { kind: 'Tunnel', name: 'edge', namespace: 'net' },
        }),
      ),
    ).toEqual([{ apiVersion: CF, kind: 'Tunnel', namespace: 'net', name: 'edge', verbs: ['get'] }]);
    // Moving a binding to another tunnel is checked; an update that keeps its tunnelRef (the finalizer) is not.
    const moved = { ...binding, operation: 'UPDATE', oldObject: { tunnelRef: { kind: 'Tunnel', name: 'old' } } };
    expect(checksFor(moved)).toHaveLength(1);
    const kept = { ...binding, operation: 'UPDATE', oldObject: { tunnelRef: { kind: 'Tunnel', name: 'edge' } } };
    expect(checksFor(kept)).toEqual([]);
  });
});

describe('admission checks of SandboxPools', () => {
  const pool = (operation: string, spec: unknown, oldSpec?: unknown): AdmissionRequest => ({
    ...request('SandboxPool', operation, spec, oldSpec),
    kind: { group: 'sandbox.fast.io', version: 'v1alpha1', kind: 'SandboxPool' },
  });
  const spec = (image: string) => ({
    capacity: {},
    agentTemplate: { spec: { containers: [{ name: 'agent', image }] } },
  });

  it('its creator must be allowed to create Pods in its namespace, on create and on a spec change', () => {
    const createPods = [{ apiVersion: 'v1', kind: 'Pod', namespace: 'team-a', name: '', verbs: ['create'] }];
    expect(checksFor(pool('CREATE', spec('a')))).toEqual(createPods);
    expect(checksFor(pool('UPDATE', spec('b'), spec('a')))).toEqual(createPods);
    // The fast path's finalizer write leaves the spec as it was: never refused.
    expect(checksFor(pool('UPDATE', spec('a'), spec('a')))).toEqual([]);
    expect(checksFor(pool('DELETE', spec('a')))).toBeUndefined();
    // The same kind name in another group is not a SandboxPool.
    expect(checksFor(request('SandboxPool', 'CREATE', spec('a')))).toBeUndefined();
  });

  it('a refusal says why the pool needs the right and what is missing', () => {
    const message = refusalMessage(
      'SandboxPool',
      [{ reason: 'denied', target: sandboxPoolChecks('team-a')[0]!, verb: 'create', resource: 'pods' }],
      { username: 'bob' },
    );
    expect(message).toBe(
      'a SandboxPool makes the operator create its agent Pods from spec.agentTemplate, so its creator must be allowed to create Pods in its namespace, and is not: Pods (v1): user "bob" may not create pods in namespace "team-a"',
    );
  });
});

describe('admission checks of Sandboxes (envs[].valueFrom)', () => {
  const sb = (operation: string, spec: unknown, oldSpec?: unknown): AdmissionRequest => ({
    ...request('Sandbox', operation, spec, oldSpec),
    kind: { group: 'sandbox.fast.io', version: 'v1alpha1', kind: 'Sandbox' },
  });
  const spec = (...envs: EnvVar[]) => ({ image: 'i', poolRef: 'p', envs });
  const fromSecret = { name: 'A', valueFrom: { secretKeyRef: { name: 'db', key: 'pw', optional: true } } };
  const fromConfigMap = { name: 'B', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'mode' } } };

  it("its creator must be allowed to get each Secret and ConfigMap named (optional too), in the Sandbox's namespace", () => {
    const checks = [
      { apiVersion: 'v1', kind: 'Secret', namespace: 'team-a', name: 'db', verbs: ['get'] },
      { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'team-a', name: 'cfg', verbs: ['get'] },
    ];
    expect(checksFor(sb('CREATE', spec(fromSecret, fromConfigMap, { name: 'C', value: 'x' })))).toEqual(checks);
    expect(checksFor(sb('UPDATE', spec(fromSecret, fromConfigMap), spec()))).toEqual(checks);
    // The fast path's writes (finalizer, hand-off, status) leave envs as they were: never refused.
    expect(checksFor(sb('UPDATE', { ...spec(fromSecret), expireTime: 'x' }, spec(fromSecret)))).toEqual([]);
    expect(checksFor(sb('CREATE', spec({ name: 'C', value: 'x' })))).toEqual([]);
    expect(checksFor(sb('DELETE', spec(fromSecret)))).toBeUndefined();
  });

  it('a refusal says why the Sandbox needs the right and what is missing', () => {
    const [target] = sandboxChecks(spec(fromSecret), 'team-a');
    expect(
      refusalMessage('Sandbox', [{ reason: 'denied', target: target!, verb: 'get', resource: 'secrets' }], {
        username: 'bob',
      }),
    ).toBe(
      `a Sandbox's envs[].valueFrom makes the operator read the Secret or ConfigMap it names into the sandbox, so its creator must be allowed to get it, and is not: Secret "db" (v1): user "bob" may not get secrets in namespace "team-a"`,
    );
  });
});
