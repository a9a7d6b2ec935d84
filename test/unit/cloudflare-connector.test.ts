/**
 * The tunnel's connector as built before it is written (src/domain/cloudflare/connector.ts) and
 * the strategic merge patch it applies `spec.deployPatch` with. The integration test
 * (cloudflare-tunnels) compares the merge with the apiserver's own.
 */
import { describe, expect, it } from 'vitest';
import type { TunnelSpec } from '../../src/api/cloudflare-tunnels.js';
import { connectorDeployment, parseDeployPatch } from '../../src/domain/cloudflare/connector.js';
import { validateSource } from '../../src/domain/cloudflare/sources.js';
import { strategicMerge } from '../../src/domain/strategic-merge.js';

const owner = (spec: Partial<TunnelSpec>) => ({
  apiVersion: 'networking.cloudflare-operator.io/v1alpha2',
  kind: 'Tunnel' as const,
  name: 'edge',
  uid: 'u-1',
  spec: { newTunnel: { name: 'edge' }, cloudflare: {}, ...spec } as TunnelSpec,
});
const place = { namespace: 'team-a', secretName: 'edge', defaultImage: 'cloudflare/cloudflared:2025.4.0' };

type Dep = {
  metadata: { name: string; namespace: string; ownerReferences: unknown[]; labels: Record<string, string> };
  spec: {
    replicas?: number;
    selector: { matchLabels: Record<string, string> };
    template: { spec: { containers: Array<Record<string, unknown>>; volumes?: unknown[]; tolerations?: unknown[] } };
  };
};
const build = (spec: Partial<TunnelSpec>) => {
  const out = connectorDeployment(owner(spec), place);
  if ('problem' in out) throw new Error(out.problem);
  return out.deployment as unknown as Dep;
};

describe('the connector Deployment', () => {
  it('runs the tunnel remotely managed with the token from its Secret, one replica of the default image', () => {
    const d = build({});
    expect(d.metadata).toMatchObject({ name: 'edge', namespace: 'team-a' });
    expect(d.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Tunnel', name: 'edge', uid: 'u-1', controller: true }),
    ]);
    // No size: the replicas are left to whatever scales it (1 by the apiserver's default at creation).
    expect(d.spec.replicas).toBeUndefined();
    const c = d.spec.template.spec.containers[0]!;
    expect(c.image).toBe('cloudflare/cloudflared:2025.4.0');
    expect(c.args).toEqual(['tunnel', '--no-autoupdate', '--protocol', 'auto', '--metrics', '0.0.0.0:2000', 'run']);
    expect(c.env).toEqual([{ name: 'TUNNEL_TOKEN', valueFrom: { secretKeyRef: { name: 'edge', key: 'token' } } }]);
  });

  it("the original's v1alpha1 fields, the origin CA pool mounted where the rules point", () => {
    const d = build({
      size: 3,
      image: 'example/cloudflared:1',
      nodeSelectors: { zone: 'a' },
      tolerations: [{ key: 'k', operator: 'Exists' }],
      originCaPool: 'ca',
    });
    expect(d.spec.replicas).toBe(3);
    expect(d.spec.template.spec).toMatchObject({
      nodeSelector: { zone: 'a' },
      tolerations: [{ key: 'k', operator: 'Exists' }],
    });
    expect(d.spec.template.spec.containers[0]!.image).toBe('example/cloudflared:1');
    expect(d.spec.template.spec.containers[0]!.volumeMounts).toEqual([
      { name: 'certs', mountPath: '/etc/cloudflared/certs', readOnly: true },
    ]);
    expect(d.spec.template.spec.volumes).toEqual([{ name: 'certs', secret: { secretName: 'ca', defaultMode: 0o644 } }]);
  });

  it('deployPatch (YAML or JSON) merges by merge key, replaces other lists, deletes with null and $patch', () => {
    const d = build({
      originCaPool: 'ca',
      tolerations: [{ key: 'a', operator: 'Exists' }],
      deployPatch: [
        'spec:',
        '  replicas: 4',
        '  template:',
        '    spec:',
        '      tolerations: [{key: b, operator: Exists}]',
        '      volumes: [{name: certs, $patch: delete}, {name: extra, emptyDir: {}}]',
        '      containers:',
        '        - name: cloudflared',
        '          livenessProbe: null',
        '          env: [{name: TUNNEL_LOGLEVEL, value: debug}]',
        '        - name: sidecar',
        '          image: busybox',
      ].join('\n'),
    });
    expect(d.spec.replicas).toBe(4);
    const pod = d.spec.template.spec;
    expect(pod.tolerations).toEqual([{ key: 'b', operator: 'Exists' }]);
    expect(pod.volumes).toEqual([{ name: 'extra', emptyDir: {} }]);
    expect(pod.containers.map((c) => c.name)).toEqual(['cloudflared', 'sidecar']);
    const c = pod.containers[0]!;
    expect(c.livenessProbe).toBeUndefined();
    expect(c.args).toContain('run');
    expect((c.env as Array<{ name: string }>).map((e) => e.name)).toEqual(['TUNNEL_TOKEN', 'TUNNEL_LOGLEVEL']);
  });

  it('what ties it to its Tunnel survives the patch', () => {
    const d = build({
      deployPatch: JSON.stringify({
        metadata: { name: 'other', ownerReferences: null, labels: { extra: 'x' } },
        spec: { selector: { matchLabels: { app: 'other' } } },
      }),
    });
    expect(d.metadata.name).toBe('edge');
    expect(d.metadata.ownerReferences).toHaveLength(1);
    expect(d.metadata.labels).toMatchObject({ extra: 'x', 'cloudflare-operator.io/tunnel': 'edge' });
    expect(d.spec.selector.matchLabels).toEqual(build({}).spec.selector.matchLabels);
  });

  it('a patch that is not an object, not YAML, or names a list item without its key is an InvalidSpec naming deployPatch', () => {
    expect(parseDeployPatch('')).toEqual({});
    expect(parseDeployPatch('[1]')).toMatch(/^spec.deployPatch: must be an object/);
    expect(parseDeployPatch('{a: [')).toMatch(/^spec.deployPatch: not JSON or YAML/);
    const ref = { kind: 'Tunnel', namespace: 'n', name: 'edge' };
    expect(
      validateSource(
        'Tunnel',
        owner({ deployPatch: '{"spec":{"template":{"spec":{"containers":[{"image":"x"}]}}}}' }).spec,
        ref,
      ),
    ).toEqual(['spec.deployPatch: containers: an item without its merge key "name"']);
    expect(validateSource('Tunnel', owner({ deployPatch: '{}' }).spec, ref)).toEqual([]);
  });
});

describe('strategic merge', () => {
  it('$patch: replace on a map or a list, $retainKeys, primitive merged lists', () => {
    expect(strategicMerge({ a: { x: 1, y: 2 } }, { a: { $patch: 'replace', z: 3 } })).toEqual({ a: { z: 3 } });
    expect(strategicMerge({ env: [{ name: 'A' }] }, { env: [{ $patch: 'replace' }, { name: 'B' }] })).toEqual({
      env: [{ name: 'B' }],
    });
    expect(
      strategicMerge(
        { strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1 } } },
        {
          strategy: { $retainKeys: ['type'], type: 'Recreate' },
        },
      ),
    ).toEqual({ strategy: { type: 'Recreate' } });
    expect(strategicMerge({ finalizers: ['a'] }, { finalizers: ['b', 'a'] })).toEqual({ finalizers: ['a', 'b'] });
  });
});
