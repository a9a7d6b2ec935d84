/** The tunnel configuration's pure rules: aggregation, rule order, Ingress and binding rules, CNAMEs. */
import { describe, expect, it } from 'vitest';
import type { RegisteredSource } from '../../src/domain/cloudflare/aggregate.js';
import { tunnelRules, tunnelBindingRules } from '../../src/domain/cloudflare/kinds/tunnels.js';
import { planWrite } from '../../src/domain/cloudflare/merge.js';
import { dnsRecordCodec, type DnsRecordItem } from '../../src/domain/cloudflare/items.js';
import {
  aggregateTunnelConfig,
  bindingRules,
  gatewayPath,
  httpRouteRules,
  ingressPath,
  ingressRules,
  placeHostnames,
  tunnelDnsRecords,
  unplacedMessage,
  type TunnelContribution,
} from '../../src/domain/cloudflare/tunnels.js';
import { tunnelConfigurationAdapter } from '../../src/activities/cloudflare/targets/tunnel-configuration.js';
import { tunnelRecordCodec } from '../../src/activities/cloudflare/targets/tunnel-dns.js';

const src = (
  kind: string,
  name: string,
  priority: number,
  config: TunnelContribution,
  createdAt = '2026-01-01T00:00:00Z',
): RegisteredSource => ({
  ref: { kind, namespace: 'ns', name },
  priority,
  createdAt,
  generation: 1,
  uid: name,
  config,
});

describe('aggregateTunnelConfig', () => {
  const tunnel = src('Tunnel', 't', 10, {
    rules: [],
    settings: { fallbackTarget: 'http_status:503', originRequest: { noTLSVerify: true } },
  });

  it('one configuration: most specific rules first, the Tunnel settings, its catch-all last', () => {
    const ingress = src('TunnelIngressClassConfig', 'cfg', 100, {
      rules: [
        { hostname: 'b.example.com', service: 'http://b:80' },
        { hostname: '*.example.com', service: 'http://wild:80' },
        { hostname: 'a.example.com', path: '^/api(/|$)', service: 'http://api:80' },
        { hostname: 'a.example.com', path: '^/api/v2(/|$)', service: 'http://v2:80' },
        { hostname: 'a.example.com', service: 'http://a:80' },
      ],
    });
    const { config, conflicts } = aggregateTunnelConfig([ingress, tunnel]);
    expect(conflicts).toEqual([]);
    expect(config).toEqual({
      ingress: [
        { hostname: 'a.example.com', path: '^/api/v2(/|$)', service: 'http://v2:80' },
        { hostname: 'a.example.com', path: '^/api(/|$)', service: 'http://api:80' },
        { hostname: 'a.example.com', service: 'http://a:80' },
        { hostname: 'b.example.com', service: 'http://b:80' },
        { hostname: '*.example.com', service: 'http://wild:80' },
        { service: 'http_status:503' },
      ],
      originRequest: { noTLSVerify: true },
    });
  });

  it('(hostname, path) is held by the higher priority; a lower one wanting it differently is a conflict', () => {
    const binding = src('TunnelBinding', 'bind', 50, {
      rules: [{ hostname: 'x.example.com', service: 'http://bind:80' }],
    });
    const ingress = src('TunnelIngressClassConfig', 'cfg', 100, {
      rules: [
        { hostname: 'x.example.com', service: 'http://ingress:80' },
        { hostname: 'y.example.com', service: 'http://y:80' },
      ],
    });
    const { config, conflicts, owners } = aggregateTunnelConfig([ingress, binding]);
    expect(config.ingress.map((r) => r.service)).toEqual(['http://bind:80', 'http://y:80', 'http_status:404']);
    expect(conflicts).toEqual([
      expect.objectContaining({
        owner: 'TunnelIngressClassConfig/ns/cfg',
        key: 'rule x.example.com',
        heldBy: 'TunnelBinding/ns/bind',
      }),
    ]);
    expect(owners.get('rule y.example.com')).toBe('TunnelIngressClassConfig/ns/cfg');
  });

  it("a source's own catch-all is refused (the catch-all is the Tunnel's fallbackTarget)", () => {
    const rogue = src('TunnelBinding', 'rogue', 50, { rules: [{ service: 'http://everything:80' }] });
    const { config, conflicts } = aggregateTunnelConfig([tunnel, rogue]);
    expect(config.ingress).toEqual([{ service: 'http_status:503' }]);
    expect(conflicts[0]).toMatchObject({ owner: 'TunnelBinding/ns/rogue', key: 'the catch-all rule' });
  });

  it('with no source left, the catch-all alone (http_status:404)', () => {
    expect(aggregateTunnelConfig([]).config).toEqual({ ingress: [{ service: 'http_status:404' }] });
  });

  it('the adapter writes only when the configuration differs from the live one', () => {
    const ingress = src('TunnelIngressClassConfig', 'cfg', 100, {
      rules: [{ hostname: 'a.x', service: 'http://a:80' }],
    });
    const first = tunnelConfigurationAdapter.planWhole!([], [tunnel, ingress], 'c');
    expect(first.plan.write).toBe(true);
    // Cloudflare echoes what was written (empty objects and absent fields mean the same).
    const live = {
      ...first.plan.items[0]!,
      ingress: first.plan.items[0]!.ingress.map((r) => ({ ...r, originRequest: {} })),
    };
    const again = tunnelConfigurationAdapter.planWhole!([live], [ingress, tunnel], 'c');
    expect(again.plan.write).toBe(false);
    const edited = { ...live, ingress: [{ hostname: 'a.x', service: 'http://evil:80' }, ...live.ingress.slice(1)] };
    const repaired = tunnelConfigurationAdapter.planWhole!([edited], [ingress, tunnel], 'c');
    expect(repaired.plan.write).toBe(true);
    expect(repaired.plan.differences).toContain('missing in Cloudflare: rule a.x → http://a:80');
  });
});

describe('warp-routing (D15): Cloudflare no longer stores nor answers it', () => {
  it('a Tunnel with enableWarpRouting writes no warp-routing, and reads back equal: an observation writes nothing', () => {
    const target = { resourceType: 'TunnelConfiguration', accountId: 'a', tunnelId: 't' } as const;
    const spec = { enableWarpRouting: true, cloudflare: { accountId: 'a', domain: 'x' } };
    const warp = src(
      'Tunnel',
      't',
      10,
      tunnelRules.contribution(spec as never, target, { name: 't' } as never) as never,
    );
    const ingress = src('TunnelIngressClassConfig', 'cfg', 100, {
      rules: [{ hostname: 'a.x', service: 'http://a:80' }],
    });
    const written = tunnelConfigurationAdapter.planWhole!([], [warp, ingress], 'c').plan.items[0]!;
    expect(written).not.toHaveProperty('warp-routing');
    // What the configurations GET answers: the schema's fields only (ingress, originRequest).
    const live = {
      ingress: written.ingress,
      ...(written.originRequest ? { originRequest: written.originRequest } : {}),
    };
    const observed = tunnelConfigurationAdapter.planWhole!([live], [warp, ingress], 'c');
    expect(observed.plan.write).toBe(false);
    expect(observed.plan.differences).toEqual([]);
  });
});

describe('Ingress rules', () => {
  it('paths: Exact anchored, Prefix as a path prefix (and / as no path), ImplementationSpecific as written', () => {
    expect(ingressPath('/api', 'Exact')).toBe('^/api$');
    expect(ingressPath('/api/', 'Prefix')).toBe('^/api(/|$)');
    expect(ingressPath('/a.b', 'Prefix')).toBe('^/a\\.b(/|$)');
    expect(ingressPath('/', 'Prefix')).toBeUndefined();
    expect(ingressPath('^/v[0-9]+/', 'ImplementationSpecific')).toBe('^/v[0-9]+/');
  });

  it("backends: the Service's named port, the protocol from annotation, appProtocol or the class default; unusable rules skipped with a note", () => {
    const { rules, notes } = ingressRules(
      [
        {
          namespace: 'web',
          name: 'site',
          rules: [
            {
              host: 'Site.Example.com',
              http: {
                paths: [
                  { path: '/', pathType: 'Prefix', backend: { service: { name: 'front', port: { name: 'https' } } } },
                  { path: '/grpc', pathType: 'Prefix', backend: { service: { name: 'rpc', port: { number: 9000 } } } },
                  { path: '/x', pathType: 'Prefix', backend: { service: { name: 'missing', port: { name: 'http' } } } },
                ],
              },
            },
            { http: { paths: [{ path: '/', backend: { service: { name: 'front', port: { number: 443 } } } }] } },
          ],
        },
        {
          namespace: 'web',
          name: 'secure',
          annotations: { 'cloudflare-operator.io/backend-protocol': 'https' },
          rules: [
            {
              host: 'secure.example.com',
              http: { paths: [{ backend: { service: { name: 'rpc', port: { number: 9000 } } } }] },
            },
          ],
        },
      ],
      {
        'web/front': { ports: [{ name: 'https', port: 8443 }] },
        'web/rpc': { ports: [{ port: 9000, appProtocol: 'h2c' }] },
      },
      { protocol: 'http', originRequest: { noTlsVerify: true, connectTimeout: '5s' } },
    );
    expect(rules).toEqual([
      {
        hostname: 'site.example.com',
        service: 'https://front.web.svc:8443',
        originRequest: { noTLSVerify: true, connectTimeout: 5 },
      },
      {
        hostname: 'site.example.com',
        path: '^/grpc(/|$)',
        service: 'http://rpc.web.svc:9000',
        originRequest: { noTLSVerify: true, connectTimeout: 5 },
      },
      {
        hostname: 'secure.example.com',
        service: 'https://rpc.web.svc:9000',
        originRequest: { noTLSVerify: true, connectTimeout: 5 },
      },
    ]);
    expect(notes).toEqual([
      'Ingress web/site rules[0].http.paths[2]: port http of Service web/missing not found (skipped)',
      'Ingress web/site rules[1]: no host (skipped)',
    ]);
  });
});

describe('TunnelBinding rules', () => {
  it("defaults the hostname from the tunnel's domain, the protocol from the port and the target from the Service", () => {
    const { rules, problems } = bindingRules(
      'apps',
      [
        { name: 'web' },
        { name: 'ssh', spec: { proxyPort: 2222 } },
        { name: 'api', spec: { fqdn: 'API.other.org', protocol: 'https', path: '/v1', noTlsVerify: true } },
        { name: 'ext', spec: { target: 'http://10.0.0.1:8080' } },
      ],
      { web: { ports: [{ port: 80 }] }, ssh: { ports: [{ port: 22 }] }, api: { ports: [{ port: 8443 }] } },
      'example.com',
    );
    expect(problems).toEqual([]);
    expect(rules).toEqual([
      { hostname: 'web.example.com', service: 'http://web.apps.svc:80' },
      {
        hostname: 'ssh.example.com',
        service: 'ssh://ssh.apps.svc:22',
        originRequest: { proxyAddress: '127.0.0.1', proxyPort: 2222 },
      },
      {
        hostname: 'api.other.org',
        path: '/v1',
        service: 'https://api.apps.svc:8443',
        originRequest: { noTLSVerify: true },
      },
      { hostname: 'ext.example.com', service: 'http://10.0.0.1:8080' },
    ]);
  });

  it('names what is missing: the Service, a hostname, a known protocol', () => {
    const { problems } = bindingRules(
      'apps',
      [{ name: 'gone' }, { name: 'web', spec: { protocol: 'gopher' } }, { kind: 'Deployment', name: 'd' }],
      { gone: null, web: { ports: [{ port: 80 }] } },
      undefined,
    );
    expect(problems).toEqual([
      'subjects[0].spec.fqdn: not set and the tunnel has no spec.cloudflare.domain to default it from',
      'subjects[1].spec.fqdn: not set and the tunnel has no spec.cloudflare.domain to default it from',
      'subjects[2].kind: only Service subjects are supported (got "Deployment")',
    ]);
    expect(bindingRules('apps', [{ name: 'gone' }], { gone: null }, 'example.com').problems).toEqual([
      'subjects[0]: Service apps/gone not found (create it or set spec.target)',
    ]);
  });

  it('a binding whose tunnel has no ID yet waits (TunnelNotReady); one naming no tunnel is invalid', () => {
    const base = { namespace: 'apps', subjects: [{ name: 'web', spec: { target: 'http://x:1' } }], services: {} };
    const tunnelRef = { kind: 'Tunnel' as const, name: 't' };
    expect(tunnelBindingRules.validate({ ...base, tunnelRef, tunnel: null }, { name: 'b' })).toEqual([
      'tunnelRef: Tunnel apps/t not found',
    ]);
    const pending = { ...base, tunnelRef, tunnel: { kind: 'Tunnel' as const, name: 't', namespace: 'apps' } };
    expect(tunnelBindingRules.validate(pending, { name: 'b' })).toEqual([
      'subjects[0].spec.fqdn: not set and the tunnel has no spec.cloudflare.domain to default it from',
    ]);
    expect(tunnelBindingRules.waitingFor!(pending)).toMatchObject({ reason: 'TunnelNotReady' });
  });
});

describe('Tunnel spec', () => {
  it('exactly one of newTunnel and existingTunnel; a catch-all cloudflared accepts', () => {
    expect(
      tunnelRules.validate({ newTunnel: { name: 'a' }, existingTunnel: { name: 'b' }, cloudflare: {} } as never, {
        name: 't',
      }),
    ).toEqual(['spec: set exactly one of newTunnel and existingTunnel']);
    expect(
      tunnelRules.validate({ existingTunnel: {}, fallbackTarget: 'nowhere', cloudflare: {} } as never, { name: 't' }),
    ).toEqual([
      'spec.existingTunnel: set id or name',
      'spec.fallbackTarget: "nowhere" is not a catch-all cloudflared accepts (http_status:404, https://…)',
    ]);
  });
});

describe('tunnel CNAMEs', () => {
  it('one proxied CNAME per hostname in the zone; other zones and wildcards left out', () => {
    expect(
      tunnelDnsRecords(['a.example.com', 'example.com', 'b.other.org', '*.example.com'], 'example.com', 'T', true),
    ).toEqual([
      { name: 'a.example.com', type: 'CNAME', content: 'T.cfargotunnel.com', ttl: 1, proxied: true },
      { name: 'example.com', type: 'CNAME', content: 'T.cfargotunnel.com', ttl: 1, proxied: true },
    ]);
  });

  it('each hostname in the most specific zone the credentials see; none held by a visible zone, a wildcard, a zone not allowed: no CNAME, with the reason', () => {
    const zones = [
      { id: 'Z1', name: 'example.com' },
      { id: 'Z2', name: 'other.org' },
      { id: 'Z3', name: 'sub.example.com' },
    ];
    const hosts = ['a.example.com', 'b.other.org', 'x.sub.example.com', 'c.nowhere.net', '*.example.com'];
    const placed = placeHostnames(hosts, zones, { credentials: 'cf' });
    expect(placed.zones).toEqual([
      { zoneId: 'Z1', zoneName: 'example.com', subzones: ['sub.example.com'] },
      { zoneId: 'Z2', zoneName: 'other.org' },
      { zoneId: 'Z3', zoneName: 'sub.example.com' },
    ]);
    expect(placed.unplaced.map((u) => u.hostname)).toEqual(['c.nowhere.net', '*.example.com']);
    expect(unplacedMessage(placed.unplaced)).toContain(
      'c.nowhere.net (no zone CloudflareCredentials cf can see holds it)',
    );
    // The parent zone's target leaves the subzone's hostname to the subzone's target.
    expect(tunnelDnsRecords(hosts, 'example.com', 'T', true, ['sub.example.com']).map((r) => r.name)).toEqual([
      'a.example.com',
    ]);
    expect(tunnelDnsRecords(hosts, 'sub.example.com', 'T', true).map((r) => r.name)).toEqual(['x.sub.example.com']);
    // allowedZones: the tunnel's own zone stays allowed (its CNAMEs were always made), another needs listing.
    const limited = placeHostnames(hosts.slice(0, 2), zones, {
      credentials: 'cf',
      tunnelDomain: 'example.com',
      allowedZones: ['dev.example.net'],
    });
    expect(limited.zones.map((z) => z.zoneName)).toEqual(['example.com']);
    expect(limited.unplaced).toEqual([
      { hostname: 'b.other.org', reason: 'zone other.org is not in spec.allowedZones of CloudflareCredentials cf' },
    ]);
  });

  it("a zone's records marked by a DNSRecord are held, never rewritten, by the tunnel target (and the other way round)", () => {
    const dnsMarked = {
      id: '1',
      name: 'app.example.com',
      type: 'A',
      content: '192.0.2.1',
      comment: '[managed-by:c:DNSRecord/ns/app]',
    };
    const want = {
      owner: { kind: 'TunnelBinding', namespace: 'ns', name: 'b' },
      item: {
        name: 'app.example.com',
        type: 'CNAME',
        content: 'T.cfargotunnel.com',
        comment: '[managed-by:c:TunnelBinding/ns/b]',
      },
    };
    const plan = planWrite<DnsRecordItem>([dnsMarked], [want], tunnelRecordCodec, {
      clusterId: 'c',
      adoptLegacy: false,
      ownedKinds: new Set(['TunnelBinding']),
    });
    expect(plan.items).toEqual([dnsMarked]);
    expect(plan.conflicts).toEqual([
      { owner: 'TunnelBinding/ns/b', key: 'name app.example.com', heldBy: 'DNSRecord/ns/app' },
    ]);
    // The DNSRecord target does not take the tunnel's CNAME for one of its own stale records either.
    const tunnelMade = { id: '2', ...want.item };
    const dnsPlan = planWrite<DnsRecordItem>([tunnelMade], [], dnsRecordCodec, {
      clusterId: 'c',
      adoptLegacy: false,
      ownedKinds: new Set(['DNSRecord']),
    });
    expect(dnsPlan.write).toBe(false);
    expect(dnsPlan.items).toEqual([tunnelMade]);
  });
});

describe('HTTPRoute rules', () => {
  const gateways = [
    {
      namespace: 'web',
      name: 'edge',
      listeners: [
        { name: 'a', hostname: 'a.example.com' },
        { name: 'b', hostname: 'b.example.com' },
      ],
    },
  ];

  it('paths: PathPrefix as a prefix (and / as no path), Exact anchored, RegularExpression as written', () => {
    expect(gatewayPath(undefined)).toBeUndefined();
    expect(gatewayPath({ type: 'PathPrefix', value: '/api/' })).toBe('^/api(/|$)');
    expect(gatewayPath({ type: 'Exact', value: '/a.b' })).toBe('^/a\\.b$');
    expect(gatewayPath({ type: 'RegularExpression', value: '^/v[0-9]+' })).toBe('^/v[0-9]+');
  });

  it("routes attached to a class Gateway: the route's hostnames within its listeners', else theirs; each match × hostname → the first Service backend", () => {
    const { rules, notes, attached } = httpRouteRules(
      [
        {
          namespace: 'web',
          name: 'site',
          parentRefs: [{ name: 'edge', sectionName: 'b' }],
          rules: [
            {
              matches: [{ path: { type: 'Exact', value: '/login' } }, { path: { type: 'PathPrefix', value: '/app' } }],
              backendRefs: [{ name: 'front', port: 443 }],
            },
          ],
        },
        {
          namespace: 'web',
          name: 'other-gateway',
          parentRefs: [{ name: 'not-ours' }],
          rules: [{ backendRefs: [{ name: 'front', port: 80 }] }],
        },
        {
          namespace: 'web',
          name: 'bad',
          hostnames: ['A.example.com'],
          parentRefs: [{ name: 'edge' }],
          rules: [
            { backendRefs: [{ name: 'elsewhere', namespace: 'other', port: 80 }] },
            { backendRefs: [{ group: 'example.com', kind: 'Bucket', name: 'b' }] },
            { backendRefs: [{ name: 'front' }] },
            { backendRefs: [{ name: 'front', port: 80 }] },
          ],
        },
      ],
      gateways,
      { 'web/front': { ports: [{ port: 443, appProtocol: 'https' }, { port: 80 }] } },
      { originRequest: { noTlsVerify: true } },
    );
    expect(attached).toBe(2);
    expect(rules).toEqual([
      {
        hostname: 'b.example.com',
        path: '^/login$',
        service: 'https://front.web.svc:443',
        originRequest: { noTLSVerify: true },
      },
      {
        hostname: 'b.example.com',
        path: '^/app(/|$)',
        service: 'https://front.web.svc:443',
        originRequest: { noTLSVerify: true },
      },
      { hostname: 'a.example.com', service: 'http://front.web.svc:80', originRequest: { noTLSVerify: true } },
    ]);
    expect(notes).toEqual([
      'HTTPRoute web/bad rules[0]: a backend in namespace other needs a ReferenceGrant, not supported (skipped)',
      'HTTPRoute web/bad rules[1]: no Service backend (skipped)',
      'HTTPRoute web/bad rules[2]: backend front has no port (skipped)',
    ]);
  });
});
