/** What the admission webhook checks for the Cloudflare source kinds, decided purely (src/admission/review.ts). */
import { describe, expect, it } from 'vitest';
import { checksFor, type AdmissionRequest } from '../../src/admission/review.js';

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
