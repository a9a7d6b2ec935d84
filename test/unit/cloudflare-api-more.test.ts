/**
 * The remaining Cloudflare kinds (src/api/cloudflare-tunnels.ts, cloudflare-zones.ts,
 * cloudflare-zerotrust.ts) checked with TypeBox: names, scope and versions as the original; the
 * added priority, adoptExisting and status fields; the examples of deploy/examples/cloudflare and
 * manifests in the original's shape pass; bad enums and missing required fields fail.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import '../support/typebox.js';
import {
  ALL_KINDS,
  AccessGroupKind,
  AccessIdentityProviderKind,
  CLOUDFLARE_GROUP,
  CLOUDFLARE_TUNNEL_KINDS,
  CLOUDFLARE_ZEROTRUST_KINDS,
  CLOUDFLARE_ZONE_KINDS,
  ClusterTunnelKind,
  CloudflareDomainKind,
  DNSRecordKind,
  GatewayConfigurationKind,
  IP_ADDRESS_PATTERN,
  TUNNEL_BINDING_DEPRECATION,
  TunnelBindingKind,
  TunnelGatewayClassConfigKind,
  TunnelIngressClassConfigKind,
  TunnelKind,
  VirtualNetworkKind,
  crdOf,
  type KindDefinition,
} from '../../src/api/index.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const EXAMPLES = path.join(ROOT, 'deploy/examples/cloudflare');

interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: unknown;
  status?: unknown;
  [field: string]: unknown;
}

const KINDS: KindDefinition[] = [...CLOUDFLARE_TUNNEL_KINDS, ...CLOUDFLARE_ZONE_KINDS, ...CLOUDFLARE_ZEROTRUST_KINDS];
const byKind = new Map<string, KindDefinition>(KINDS.map((k) => [k.kind, k]));

/** Every schema problem of an object of one of these kinds, as `part/path: message`. */
function problems(obj: Obj): string[] {
  const kind = byKind.get(obj.kind);
  if (!kind) return [`unknown kind ${obj.kind}`];
  const out: string[] = [];
  if (obj.apiVersion !== `${kind.group}/${kind.version}`) out.push(`apiVersion ${obj.apiVersion}`);
  if (kind.scope === 'Cluster' && obj.metadata.namespace) out.push('cluster-scoped object with a namespace');
  if (kind.scope === 'Namespaced' && !obj.metadata.namespace) out.push('namespaced object without a namespace');
  const check = (part: string, schema: TSchema) => {
    for (const e of Value.Errors(schema, obj[part])) out.push(`${part}${e.path}: ${e.message}`);
  };
  for (const part of kind.rootRequired ?? ['spec']) if (obj[part] === undefined) out.push(`${part}: required`);
  for (const [part, schema] of Object.entries(kind.rootProperties ?? {}))
    if (obj[part] !== undefined) check(part, schema);
  if (obj.spec !== undefined) check('spec', kind.spec);
  if (obj.status !== undefined) check('status', kind.status);
  return out;
}
const valid = (obj: Obj) => problems(obj).length === 0;

function readExamples(file: string): Obj[] {
  return parseAllDocuments(readFileSync(path.join(EXAMPLES, file), 'utf8'))
    .map((d) => d.toJS() as Obj | null)
    .filter((o): o is Obj => o !== null);
}
const ours = (objs: Obj[]) => objs.filter((o) => byKind.has(o.kind) && o.apiVersion.startsWith(CLOUDFLARE_GROUP));

type Schema = { properties: Record<string, Schema>; required?: string[]; default?: unknown; [k: string]: unknown };
interface Crd {
  spec: {
    versions: {
      name: string;
      deprecated?: boolean;
      deprecationWarning?: string;
      additionalPrinterColumns: { name: string; type: string; jsonPath: string }[];
      schema: { openAPIV3Schema: Schema };
    }[];
  };
}
const crd = (k: KindDefinition) => crdOf(k) as unknown as Crd;
const root = (k: KindDefinition) => crd(k).spec.versions[0]!.schema.openAPIV3Schema;
const columns = (k: KindDefinition) => crd(k).spec.versions[0]!.additionalPrinterColumns.map((c) => c.name);

const cloudflare = { credentialsRef: { name: 'default' } };
const READY = {
  type: 'Ready',
  status: 'True',
  reason: 'Synced',
  message: '',
  lastTransitionTime: '2026-01-01T00:00:00Z',
};

describe('networking.cloudflare-operator.io: the tunnel, zone and Zero Trust kinds', () => {
  it('registers the eleven kinds with the original version, scope, plural and short names', () => {
    for (const k of KINDS) expect(ALL_KINDS).toContain(k);
    expect(KINDS.map((k) => [k.kind, k.version, k.scope, k.plural, ...(k.shortNames ?? [])])).toEqual([
      ['Tunnel', 'v1alpha2', 'Namespaced', 'tunnels'],
      ['ClusterTunnel', 'v1alpha2', 'Cluster', 'clustertunnels'],
      ['TunnelBinding', 'v1alpha1', 'Namespaced', 'tunnelbindings'],
      ['TunnelIngressClassConfig', 'v1alpha2', 'Namespaced', 'tunnelingressclassconfigs', 'ticc'],
      ['TunnelGatewayClassConfig', 'v1alpha2', 'Namespaced', 'tunnelgatewayclassconfigs', 'tgcc'],
      ['CloudflareDomain', 'v1alpha2', 'Cluster', 'cloudflaredomains', 'cfdomain', 'cfdom'],
      ['DNSRecord', 'v1alpha2', 'Namespaced', 'dnsrecords', 'dnsrec'],
      ['GatewayConfiguration', 'v1alpha2', 'Cluster', 'gatewayconfigurations', 'gwconfig'],
      ['AccessGroup', 'v1alpha2', 'Cluster', 'accessgroups', 'accessgrp'],
      ['AccessIdentityProvider', 'v1alpha2', 'Cluster', 'accessidentityproviders', 'accessidp'],
      ['VirtualNetwork', 'v1alpha2', 'Cluster', 'virtualnetworks', 'vnet'],
    ]);
    expect(new Set(ALL_KINDS.map((k) => k.plural)).size).toBe(ALL_KINDS.length);
  });

  it("keeps the original's printer columns and adds Ready (then Age) to every kind", () => {
    expect(Object.fromEntries(KINDS.map((k) => [k.kind, columns(k)]))).toEqual({
      Tunnel: ['TunnelID', 'State', 'Ready', 'Age'],
      ClusterTunnel: ['TunnelID', 'State', 'Ready', 'Age'],
      TunnelBinding: ['FQDNs', 'Ready', 'Age'],
      TunnelIngressClassConfig: ['Tunnel', 'Kind', 'DNS', 'Ingresses', 'State', 'Ready', 'Age'],
      TunnelGatewayClassConfig: ['Tunnel', 'Kind', 'DNS', 'Gateways', 'Routes', 'State', 'Ready', 'Age'],
      CloudflareDomain: ['Domain', 'Zone ID', 'Default', 'State', 'Ready', 'Age'],
      DNSRecord: ['Type', 'Name', 'Content', 'Proxied', 'State', 'Ready', 'Age'],
      GatewayConfiguration: ['State', 'Ready', 'Age'],
      AccessGroup: ['GroupID', 'State', 'Ready', 'Age'],
      AccessIdentityProvider: ['Type', 'ProviderID', 'State', 'Ready', 'Age'],
      VirtualNetwork: ['VNetID', 'Default', 'State', 'Ready', 'Age'],
    });
    for (const k of KINDS)
      expect(crd(k).spec.versions[0]!.additionalPrinterColumns, k.kind).toContainEqual({
        name: 'Ready',
        type: 'string',
        jsonPath: '.status.conditions[?(@.type=="Ready")].status',
      });
  });

  it('gives every status conditions, observedGeneration, syncState and message', () => {
    for (const k of KINDS) {
      const status = root(k).properties.status!;
      for (const f of ['conditions', 'observedGeneration', 'syncState', 'message'])
        expect(status.properties[f], `${k.kind} status.${f}`).toBeDefined();
      expect(status.required, `${k.kind}: nothing required on status`).toBeUndefined();
    }
  });

  it('adds a source priority where objects are merged: Tunnel settings 10, others (TunnelBinding too) 100', () => {
    const priority = (k: KindDefinition) => root(k).properties.spec!.properties.priority;
    expect(priority(TunnelKind)).toMatchObject({ type: 'integer', minimum: 0, default: 10 });
    expect(priority(ClusterTunnelKind)).toMatchObject({ type: 'integer', minimum: 0, default: 10 });
    expect(priority(TunnelBindingKind)).toMatchObject({ type: 'integer', minimum: 0, default: 100 });
    expect(priority(CloudflareDomainKind)).toMatchObject({ type: 'integer', minimum: 0, default: 100 });
    expect(priority(GatewayConfigurationKind)).toMatchObject({ type: 'integer', minimum: 0, default: 100 });
    // DNSRecord's priority is the original's MX/SRV priority: no default, at most 65535.
    expect(priority(DNSRecordKind)).toEqual(expect.objectContaining({ minimum: 0, maximum: 65535 }));
    expect(priority(DNSRecordKind)!.default).toBeUndefined();
    for (const k of [
      TunnelIngressClassConfigKind,
      TunnelGatewayClassConfigKind,
      AccessGroupKind,
      AccessIdentityProviderKind,
      VirtualNetworkKind,
    ])
      expect(priority(k), k.kind).toBeUndefined();
  });

  it('DNSRecord: adoptExisting is opt-in (default false)', () => {
    expect(root(DNSRecordKind).properties.spec!.properties.adoptExisting).toMatchObject({
      type: 'boolean',
      default: false,
    });
  });

  it('TunnelBinding: v1alpha1, deprecated, subjects and tunnelRef required at the top level, spec optional', () => {
    const c = crd(TunnelBindingKind);
    const v = c.spec.versions[0]!;
    expect(v.name).toBe('v1alpha1');
    expect(v.deprecated).toBe(true);
    expect(v.deprecationWarning).toBe(TUNNEL_BINDING_DEPRECATION);
    const s = v.schema.openAPIV3Schema;
    expect(s.required).toEqual(['subjects', 'tunnelRef']);
    expect(Object.keys(s.properties)).toEqual([
      'apiVersion',
      'kind',
      'metadata',
      'subjects',
      'tunnelRef',
      'spec',
      'status',
    ]);
    expect(s.properties.tunnelRef!.required).toEqual(['kind', 'name']);
    expect(s.properties.tunnelRef!.properties.kind!.enum).toEqual(['ClusterTunnel', 'Tunnel']);
    // The other kinds keep the one required top-level field and no deprecation of their version
    // (Tunnel and ClusterTunnel also serve the original's deprecated v1alpha1: crds.test.ts).
    for (const k of KINDS.filter((k) => k !== TunnelBindingKind)) {
      expect(root(k).required, k.kind).toEqual(['spec']);
      expect(crd(k).spec.versions.find((v) => v.name === k.version)!.deprecated, k.kind).toBeUndefined();
    }
  });

  it('identity provider secrets only by reference: nothing secret is required inline', () => {
    const spec = root(AccessIdentityProviderKind).properties.spec!;
    expect(spec.required).toEqual(['type', 'cloudflare']);
    expect(spec.properties.configSecretRef!.required).toEqual(['name', 'key']);
    expect(spec.properties.config!.required).toBeUndefined();
    expect(spec.properties.scimConfig!.required).toBeUndefined();
  });

  describe('deploy/examples/cloudflare', () => {
    it('tunnel.yaml: a new Tunnel, its IngressClass and config, two Ingresses and a TunnelBinding', () => {
      const objs = readExamples('tunnel.yaml');
      expect(objs.map((o) => `${o.apiVersion} ${o.kind} ${o.metadata.name}`)).toEqual([
        'networking.cloudflare-operator.io/v1alpha2 Tunnel example-tunnel',
        'networking.cloudflare-operator.io/v1alpha2 TunnelIngressClassConfig cloudflare-tunnel',
        'networking.k8s.io/v1 IngressClass cloudflare-tunnel',
        'networking.k8s.io/v1 Ingress web',
        'networking.k8s.io/v1 Ingress api',
        'networking.cloudflare-operator.io/v1alpha1 TunnelBinding legacy-app',
      ]);
      for (const o of ours(objs)) expect(problems(o), o.metadata.name).toEqual([]);
      const [tunnel, config, ingressClass, web, api, binding] = objs as [Obj, Obj, Obj, Obj, Obj, Obj];
      expect(tunnel.spec).toMatchObject({ newTunnel: { name: 'example-tunnel' }, cloudflare });
      expect(tunnel.spec).not.toHaveProperty('existingTunnel');
      expect(config.spec).toMatchObject({ tunnelRef: { kind: 'Tunnel', name: tunnel.metadata.name } });
      expect(ingressClass.spec).toEqual({
        controller: 'cloudflare-operator.io/ingress-controller',
        parameters: {
          apiGroup: CLOUDFLARE_GROUP,
          kind: 'TunnelIngressClassConfig',
          name: config.metadata.name,
          scope: 'Namespace',
          namespace: config.metadata.namespace,
        },
      });
      for (const ing of [web, api]) {
        expect(ing.metadata.namespace).toBe(config.metadata.namespace);
        expect(ing.spec).toMatchObject({ ingressClassName: ingressClass.metadata.name });
      }
      expect(binding.tunnelRef).toEqual({ kind: 'Tunnel', name: tunnel.metadata.name });
      expect(binding.subjects).toEqual([
        { name: 'legacy-app', spec: { fqdn: 'legacy.example.com', protocol: 'http' } },
      ]);
      expect(binding).not.toHaveProperty('spec');
    });

    it('cloudflare-domain.yaml: two CloudflareDomains of example.com, different priorities, overlapping settings', () => {
      const objs = readExamples('cloudflare-domain.yaml');
      expect(objs.map((o) => o.kind)).toEqual(['CloudflareDomain', 'CloudflareDomain']);
      for (const o of objs) expect(problems(o), o.metadata.name).toEqual([]);
      type Spec = { domain: string; priority: number; credentialsRef: unknown; [s: string]: unknown };
      const [a, b] = objs.map((o) => o.spec as Spec) as [Spec, Spec];
      expect([a.domain, b.domain]).toEqual(['example.com', 'example.com']);
      for (const s of [a, b]) expect(s.credentialsRef).toEqual({ name: 'default' });
      expect(a.priority).not.toBe(b.priority);
      const overlap = (section: string) => {
        const x = (a[section] ?? {}) as Record<string, unknown>;
        const y = (b[section] ?? {}) as Record<string, unknown>;
        return Object.keys(x).filter((f) => f in y && x[f] !== y[f]);
      };
      expect(overlap('ssl')).toEqual(['mode', 'minTLSVersion']);
      expect(overlap('security')).toEqual(['level']);
    });

    it('dns-records.yaml: CNAME, MX, an adopted TXT and an SRV record of example.com', () => {
      const objs = readExamples('dns-records.yaml');
      for (const o of objs) expect(problems(o), o.metadata.name).toEqual([]);
      type Spec = { type: string; name: string; adoptExisting?: boolean; cloudflare: unknown };
      const specs = objs.map((o) => o.spec as Spec);
      expect(specs.map((s) => s.type)).toEqual(['CNAME', 'MX', 'TXT', 'SRV']);
      for (const s of specs) {
        expect(s.name.endsWith('example.com'), s.name).toBe(true);
        expect(s.cloudflare).toEqual({ ...cloudflare, domain: 'example.com' });
      }
      expect(specs.filter((s) => s.adoptExisting).map((s) => s.type)).toEqual(['TXT']);
    });

    it('access.yaml: an AccessIdentityProvider whose client secret is in a Secret, and an AccessGroup', () => {
      const objs = readExamples('access.yaml');
      expect(objs.map((o) => o.kind)).toEqual(['Secret', 'AccessIdentityProvider', 'AccessGroup']);
      for (const o of ours(objs)) expect(problems(o), o.metadata.name).toEqual([]);
      const secret = objs[0] as Obj & { stringData: Record<string, string> };
      const idp = objs[1]!.spec as { config: Record<string, unknown>; configSecretRef: unknown; cloudflare: unknown };
      expect(idp.configSecretRef).toEqual({
        name: secret.metadata.name,
        namespace: secret.metadata.namespace,
        key: Object.keys(secret.stringData)[0],
      });
      expect(idp.config).not.toHaveProperty('clientSecret');
      expect(idp.cloudflare).toEqual(cloudflare);
      expect(objs[2]!.spec).toMatchObject({ cloudflare });
    });

    it('virtual-network.yaml and gateway-configuration.yaml: valid, with the default credentials', () => {
      const objs = ['virtual-network.yaml', 'gateway-configuration.yaml'].flatMap(readExamples);
      expect(objs.map((o) => o.kind)).toEqual(['VirtualNetwork', 'GatewayConfiguration']);
      for (const o of objs) {
        expect(problems(o), o.metadata.name).toEqual([]);
        expect(o.spec).toMatchObject({ cloudflare });
      }
    });

    it('every object of these kinds in the new examples is valid and names the default credentials', () => {
      const files = [
        'tunnel.yaml',
        'cloudflare-domain.yaml',
        'dns-records.yaml',
        'access.yaml',
        'virtual-network.yaml',
        'gateway-configuration.yaml',
      ];
      const all = ours(files.flatMap(readExamples));
      expect(all).toHaveLength(13);
      for (const o of all) expect(problems(o), `${o.kind}/${o.metadata.name}`).toEqual([]);
      for (const o of all) {
        const spec = (o.spec ?? {}) as { cloudflare?: { credentialsRef?: unknown }; credentialsRef?: unknown };
        const ref = spec.cloudflare?.credentialsRef ?? spec.credentialsRef;
        if (o.kind !== 'TunnelBinding' && o.kind !== 'TunnelIngressClassConfig')
          expect(ref, `${o.kind}/${o.metadata.name}`).toEqual({ name: 'default' });
      }
      expect(new Set(all.map((o) => o.kind))).toEqual(
        new Set([...byKind.keys()].filter((k) => k !== 'ClusterTunnel' && k !== 'TunnelGatewayClassConfig')),
      );
    });
  });

  describe('manifests in the original shape, and what the schemas refuse', () => {
    const obj = (kind: string, spec: unknown, namespace?: string): Obj => {
      const k = byKind.get(kind)!;
      return { apiVersion: `${k.group}/${k.version}`, kind, metadata: { name: 'x', namespace }, spec };
    };

    it('Tunnel/ClusterTunnel: existing tunnel with the legacy inline credential fields; protocol enum', () => {
      const spec = {
        existingTunnel: { name: 'prod' },
        protocol: 'quic',
        enableWarpRouting: true,
        cloudflare: { domain: 'example.com', secret: 'cf', accountId: 'a', CLOUDFLARE_API_TOKEN: 'T' },
      };
      expect(problems(obj('Tunnel', spec, 'default'))).toEqual([]);
      expect(problems(obj('ClusterTunnel', spec))).toEqual([]);
      expect(valid(obj('Tunnel', { ...spec, protocol: 'websocket' }, 'default'))).toBe(false);
      expect(valid(obj('Tunnel', { newTunnel: {}, cloudflare }, 'default'))).toBe(false);
      expect(valid(obj('Tunnel', { newTunnel: { name: 't' } }, 'default'))).toBe(false);
      const t = obj('Tunnel', { newTunnel: { name: 't' }, cloudflare }, 'default');
      t.status = { tunnelId: 'id', state: 'active', syncState: 's', observedGeneration: 1, conditions: [READY] };
      expect(problems(t)).toEqual([]);
      t.status = { state: 'running' };
      expect(valid(t)).toBe(false);
    });

    it('TunnelBinding: subjects and tunnelRef required, tunnelRef.kind and proxy fields checked', () => {
      const binding = (extra: Record<string, unknown>): Obj => ({
        apiVersion: `${CLOUDFLARE_GROUP}/v1alpha1`,
        kind: 'TunnelBinding',
        metadata: { name: 'b', namespace: 'default' },
        subjects: [
          { kind: 'Service', name: 'svc', spec: { proxyAddress: '::1', proxyPort: 8022, proxyType: 'socks' } },
        ],
        tunnelRef: { kind: 'ClusterTunnel', name: 'ct', disableDNSUpdates: true },
        ...extra,
      });
      expect(problems(binding({}))).toEqual([]);
      expect(problems(binding({ spec: { priority: 5 } }))).toEqual([]);
      expect(problems(binding({ tunnelRef: undefined }))).toEqual(['tunnelRef: required']);
      expect(valid(binding({ tunnelRef: { kind: 'Gateway', name: 'x' } }))).toBe(false);
      expect(valid(binding({ subjects: [{ kind: 'Service' }] }))).toBe(false);
      expect(valid(binding({ subjects: [{ name: 's', spec: { proxyType: 'http' } }] }))).toBe(false);
      expect(valid(binding({ subjects: [{ name: 's', spec: { proxyPort: 70000 } }] }))).toBe(false);
      expect(valid(binding({ subjects: [{ name: 's', spec: { proxyAddress: 'localhost' } }] }))).toBe(false);
      const b = binding({});
      b.status = { hostnames: 'a.example.com', services: [{ hostname: 'a.example.com', target: 'http://svc' }] };
      expect(problems(b)).toEqual([]);
    });

    it("proxyAddress: the original's IPv4/IPv6 pattern", () => {
      const re = new RegExp(IP_ADDRESS_PATTERN);
      for (const ok of ['127.0.0.1', '0.0.0.0', '255.255.255.255', '::1', '::', 'fe80::1', '2001:db8:0:0:0:0:0:1'])
        expect(re.test(ok), ok).toBe(true);
      for (const bad of ['256.1.1.1', '1.2.3', 'localhost', '1.2.3.4 ', '2001:db8::g'])
        expect(re.test(bad), bad).toBe(false);
    });

    it('TunnelIngressClassConfig / TunnelGatewayClassConfig: enums of protocol, DNS management, tunnel kind', () => {
      const base = { tunnelRef: { kind: 'ClusterTunnel', name: 'ct' } };
      expect(problems(obj('TunnelIngressClassConfig', { ...base, defaultProtocol: 'wss' }, 'default'))).toEqual([]);
      expect(valid(obj('TunnelIngressClassConfig', { ...base, defaultProtocol: 'grpc' }, 'default'))).toBe(false);
      expect(valid(obj('TunnelIngressClassConfig', { ...base, dnsManagement: 'external' }, 'default'))).toBe(false);
      expect(valid(obj('TunnelIngressClassConfig', {}, 'default'))).toBe(false);
      const gw = { ...base, fallbackTarget: 'http_status:503', defaultOriginRequest: { proxyPort: 1080 } };
      expect(problems(obj('TunnelGatewayClassConfig', gw, 'default'))).toEqual([]);
      expect(valid(obj('TunnelGatewayClassConfig', { ...gw, defaultOriginRequest: { proxyPort: 0 } }, 'default'))).toBe(
        false,
      );
      expect(valid(obj('TunnelGatewayClassConfig', { tunnelRef: { kind: 'Tunnel' } }, 'default'))).toBe(false);
    });

    it('CloudflareDomain: domain pattern, setting enums and bounds', () => {
      const d = (extra: Record<string, unknown>) => obj('CloudflareDomain', { domain: 'example.com', ...extra });
      expect(problems(d({ ssl: { mode: 'full_strict', tls13: 'off' }, cache: { tieredCache: {} } }))).toEqual([]);
      expect(valid(d({ domain: 'bad domain' }))).toBe(false);
      expect(valid(d({ ssl: { minTLSVersion: '1.4' } }))).toBe(false);
      expect(valid(d({ security: { challengePassage: 60 } }))).toBe(false);
      expect(valid(d({ performance: { polish: 'webp' } }))).toBe(false);
      expect(valid(d({ priority: -1 }))).toBe(false);
      expect(valid(obj('CloudflareDomain', {}))).toBe(false);
    });

    it('DNSRecord: type enum, required name/type/content/cloudflare, ttl ≥ 1', () => {
      const r = (extra: Record<string, unknown>) =>
        obj('DNSRecord', { name: 'www', type: 'A', content: '192.0.2.1', cloudflare, ...extra }, 'default');
      expect(problems(r({ ttl: 1, proxied: true, tags: ['a'] }))).toEqual([]);
      expect(valid(r({ type: 'PTR' }))).toBe(false);
      expect(valid(r({ ttl: 0 }))).toBe(false);
      expect(valid(r({ comment: 'x'.repeat(101) }))).toBe(false);
      expect(valid(r({ adoptExisting: 'yes' }))).toBe(false);
      expect(valid(obj('DNSRecord', { name: 'www', type: 'A', content: '192.0.2.1' }, 'default'))).toBe(false);
    });

    it('AccessGroup / AccessIdentityProvider / VirtualNetwork / GatewayConfiguration', () => {
      expect(problems(obj('AccessGroup', { include: [{ everyone: true }], cloudflare }))).toEqual([]);
      expect(valid(obj('AccessGroup', { include: [], cloudflare }))).toBe(false);
      expect(valid(obj('AccessGroup', { include: [{ email: {} }], cloudflare }))).toBe(false);
      expect(problems(obj('AccessIdentityProvider', { type: 'onetimepin', cloudflare }))).toEqual([]);
      expect(valid(obj('AccessIdentityProvider', { type: 'ldap', cloudflare }))).toBe(false);
      const ref = { name: 's', namespace: 'n' };
      expect(valid(obj('AccessIdentityProvider', { type: 'oidc', configSecretRef: ref, cloudflare }))).toBe(false);
      expect(valid(obj('VirtualNetwork', { comment: 'x'.repeat(501), cloudflare }))).toBe(false);
      expect(problems(obj('VirtualNetwork', { cloudflare }))).toEqual([]);
      expect(valid(obj('GatewayConfiguration', { settings: { tlsDecrypt: {} }, cloudflare }))).toBe(false);
      expect(valid(obj('GatewayConfiguration', { cloudflare }))).toBe(false);
      expect(problems(obj('GatewayConfiguration', { settings: {}, cloudflare }))).toEqual([]);
    });
  });
});
