/**
 * Shared hostnames on one tunnel, from the side of a team that wants another's (issue 33, N4, M3):
 * the rule that decides a (hostname, path) two objects want, the Gateway API's route attachment,
 * and which config an IngressClass's parameters name. Sources are built through the kinds' own
 * rules, as the sync builds them, so the defaults are the ones a user gets.
 */
import { describe, expect, it } from 'vitest';
import type { RegisteredSource } from '../../src/domain/cloudflare/aggregate.js';
import { tunnelConfigurationAdapter } from '../../src/activities/cloudflare/targets/tunnel-configuration.js';
import { credentialsUseRefusal } from '../../src/domain/cloudflare/credentials-use.js';
import { credentialsUseOf, priorityOf } from '../../src/domain/cloudflare/sources.js';
import {
  attachedRoutes,
  routeSkips,
  tunnelBindingRules,
  tunnelGatewayClassConfigRules,
  tunnelIngressClassConfigRules,
  type ExpandedGatewayClassConfig,
  type ExpandedIngressClassConfig,
  type ExpandedTunnelBinding,
} from '../../src/domain/cloudflare/kinds/tunnels.js';
import {
  aggregateTunnelConfig,
  classParametersNamespace,
  hostnameConflictEvents,
  conflictLine,
  httpRouteRules,
  intersectHostname,
  type GatewayFacts,
  type HTTPRouteFacts,
  type IngressFacts,
} from '../../src/domain/cloudflare/tunnels.js';

const target = { resourceType: 'TunnelConfiguration', accountId: 'acct', tunnelId: 'tid' } as const;
const tunnel = { kind: 'Tunnel' as const, name: 'shared', namespace: 'infra', tunnelId: 'tid', domain: 'example.com' };

function registered(
  kind: string,
  namespace: string,
  name: string,
  priority: number,
  createdAt: string,
  config: unknown,
) {
  return { ref: { kind, namespace, name }, priority, createdAt, generation: 1, uid: name, config } as RegisteredSource;
}

/** A TunnelBinding of `namespace` routing `host` to its Service `svc`, as the sync sees it. */
function binding(namespace: string, name: string, host: string, createdAt: string, priority?: number) {
  const spec: ExpandedTunnelBinding = {
    namespace,
    tunnel,
    tunnelRef: { kind: 'Tunnel', name: 'shared' },
    subjects: [{ name: 'svc', spec: { fqdn: host } }],
    services: { svc: { ports: [{ port: 80 }] } },
    ...(priority !== undefined ? { priority } : {}),
  };
  return registered(
    'TunnelBinding',
    namespace,
    name,
    priorityOf('TunnelBinding', spec as never),
    createdAt,
    tunnelBindingRules.contribution(spec, target, { name }),
  );
}

const ing = (namespace: string, name: string, host: string, createdAt: string): IngressFacts => ({
  namespace,
  name,
  createdAt,
  rules: [
    {
      host,
      http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } }] },
    },
  ],
});

/** A TunnelIngressClassConfig of `namespace` gathering `ingresses`, as the sync sees it. */
function classConfig(namespace: string, name: string, createdAt: string, ingresses: IngressFacts[]) {
  const spec = {
    namespace,
    tunnel,
    tunnelRef: { kind: 'Tunnel', name: 'shared', namespace: 'infra' },
    ingresses,
    services: Object.fromEntries(ingresses.map((i) => [`${i.namespace}/web`, { ports: [{ port: 80 }] }])),
  } as unknown as ExpandedIngressClassConfig;
  return registered(
    'TunnelIngressClassConfig',
    namespace,
    name,
    priorityOf('TunnelIngressClassConfig', spec as never),
    createdAt,
    tunnelIngressClassConfigRules.contribution(spec, target, { name }),
  );
}

const serviceOf = (sources: RegisteredSource[], host: string) =>
  aggregateTunnelConfig(sources).config.ingress.find((r) => r.hostname === host)?.service;

describe('one (hostname, path) wanted by two teams: the older claim keeps it unless a priority was granted', () => {
  it("a newer TunnelBinding of another namespace does not take an Ingress's hostname by its kind's default (probe P2)", () => {
    const ingresses = classConfig('infra', 'cfg', '2025-01-01T00:00:00Z', [
      ing('team-a', 'app', 'app.example.com', '2025-02-01T00:00:00Z'),
    ]);
    const intruder = binding('team-b', 'grab', 'app.example.com', '2026-01-01T00:00:00Z');
    expect(serviceOf([intruder, ingresses], 'app.example.com')).toBe('http://web.team-a.svc:80');
    const { conflicts } = aggregateTunnelConfig([intruder, ingresses]);
    expect(conflicts).toEqual([
      expect.objectContaining({
        owner: 'TunnelBinding/team-b/grab',
        key: 'rule app.example.com',
        heldBy: 'Ingress team-a/app (TunnelIngressClassConfig/infra/cfg)',
      }),
    ]);
  });

  it("an Ingress is as old as the Ingress, not as the class config that gathers it: a newer Ingress does not take an older binding's hostname", () => {
    const holder = binding('team-a', 'web', 'app.example.com', '2025-06-01T00:00:00Z');
    const ingresses = classConfig('infra', 'cfg', '2024-01-01T00:00:00Z', [
      ing('team-b', 'grab', 'app.example.com', '2026-01-01T00:00:00Z'),
    ]);
    expect(serviceOf([ingresses, holder], 'app.example.com')).toBe('http://svc.team-a.svc:80');
    expect(aggregateTunnelConfig([ingresses, holder]).conflicts).toEqual([
      expect.objectContaining({
        owner: 'TunnelIngressClassConfig/infra/cfg',
        key: 'rule app.example.com (Ingress team-b/grab)',
        heldBy: 'TunnelBinding/team-a/web',
      }),
    ]);
  });

  it('two Ingresses of one class: the older keeps the hostname, whatever their namespaces sort as, and the newer is a conflict naming it (probe P3)', () => {
    const cfg = classConfig('infra', 'cfg', '2024-01-01T00:00:00Z', [
      ing('aaa-intruder', 'x', 'app.example.com', '2026-01-01T00:00:00Z'),
      ing('team-a', 'app', 'app.example.com', '2025-01-01T00:00:00Z'),
    ]);
    expect(serviceOf([cfg], 'app.example.com')).toBe('http://web.team-a.svc:80');
    const { conflicts } = aggregateTunnelConfig([cfg]);
    expect(conflicts).toEqual([
      expect.objectContaining({
        owner: 'TunnelIngressClassConfig/infra/cfg',
        key: 'rule app.example.com (Ingress aaa-intruder/x)',
        heldBy: 'Ingress team-a/app (TunnelIngressClassConfig/infra/cfg)',
      }),
    ]);
  });

  it('the conflict is an Event on both objects — a Warning on the loser naming the holder, a Normal one on the holder — and not again at the next sync', () => {
    const cfg = classConfig('infra', 'cfg', '2024-01-01T00:00:00Z', [
      ing('aaa-intruder', 'x', 'app.example.com', '2026-01-01T00:00:00Z'),
      ing('team-a', 'app', 'app.example.com', '2025-01-01T00:00:00Z'),
    ]);
    const { conflicts } = aggregateTunnelConfig([cfg]);
    const events = hostnameConflictEvents(conflicts, [], () => undefined);
    expect(events).toEqual([
      {
        regarding: { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', namespace: 'aaa-intruder', name: 'x' },
        event: expect.objectContaining({ type: 'Warning', reason: 'HostnameConflict' }),
      },
      {
        regarding: { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', namespace: 'team-a', name: 'app' },
        event: expect.objectContaining({ type: 'Normal', reason: 'HostnameConflict' }),
      },
    ]);
    expect(events[0]!.event.note).toContain('rule app.example.com is held by Ingress team-a/app');
    expect(events[1]!.event.note).toContain('Ingress aaa-intruder/x');
    expect(hostnameConflictEvents(conflicts, conflicts.map(conflictLine), () => undefined)).toEqual([]);
  });

  it("the seed's priorities still apply where granted: a binding at 50 goes ahead, and 50 is below the kind's default, so it needs priorityNamespaces", () => {
    const ingresses = classConfig('infra', 'cfg', '2025-01-01T00:00:00Z', [
      ing('team-a', 'app', 'app.example.com', '2025-02-01T00:00:00Z'),
    ]);
    const granted = binding('ops', 'override', 'app.example.com', '2026-01-01T00:00:00Z', 50);
    expect(serviceOf([granted, ingresses], 'app.example.com')).toBe('http://svc.ops.svc:80');
    const policy = { name: 'acct', priorityNamespaces: ['ops'] };
    const use = (namespace: string, priority?: number) =>
      credentialsUseOf('TunnelBinding', { ...(priority !== undefined ? { priority } : {}) } as never, namespace);
    expect(credentialsUseRefusal(policy, use('team-b', 50))).toMatchObject({ reason: 'PriorityNotAllowed' });
    expect(credentialsUseRefusal(policy, use('ops', 50))).toBeUndefined();
    expect(credentialsUseRefusal(policy, use('team-b'))).toBeUndefined();
  });
});

describe('an orphaned class config', () => {
  it('keeps each of its remaining rules claimed by the Ingress that asked for it when some were removed by hand', () => {
    const cfg = classConfig('infra', 'gone', '2024-01-01T00:00:00Z', [
      ing('team-a', 'first', 'first.example.com', '2025-01-01T00:00:00Z'),
      ing('team-b', 'second', 'app.example.com', '2025-02-01T00:00:00Z'),
    ]);
    const orphan = { ...cfg, orphaned: true } as RegisteredSource;
    // In Cloudflare: the second Ingress's rule only (the first's was removed by hand).
    const live = {
      ingress: [{ hostname: 'app.example.com', service: 'http://web.team-b.svc:80' }, { service: 'http_status:404' }],
    };
    const newcomer = binding('team-c', 'web', 'app.example.com', '2026-01-01T00:00:00Z');
    const { plan } = tunnelConfigurationAdapter.planWhole!([live], [orphan, newcomer], 'c');
    expect(plan.conflicts).toEqual([
      expect.objectContaining({
        owner: 'TunnelIngressClassConfig/infra/gone',
        claimant: { kind: 'Ingress', namespace: 'team-b', name: 'second' },
      }),
    ]);
  });
});

describe('HTTPRoutes attach as the Gateway API specifies (allowedRoutes, listener hostnames)', () => {
  const gateway = (listeners: GatewayFacts['listeners']): GatewayFacts => ({
    namespace: 'infra',
    name: 'edge',
    listeners,
  });
  const route = (namespace: string, hostnames?: string[], sectionName?: string): HTTPRouteFacts => ({
    namespace,
    name: 'r',
    createdAt: '2026-01-01T00:00:00Z',
    ...(hostnames ? { hostnames } : {}),
    parentRefs: [{ name: 'edge', namespace: 'infra', ...(sectionName ? { sectionName } : {}) }],
    rules: [{ backendRefs: [{ name: 'web', port: 80 }] }],
  });
  const rulesOf = (r: HTTPRouteFacts, g: GatewayFacts, labels: Record<string, Record<string, string>> = {}) =>
    httpRouteRules([r], [g], {}, {}, labels);

  it('a listener without allowedRoutes takes routes of its own namespace only: a route of another namespace gets no rule, and the note says why', () => {
    const g = gateway([{ name: 'web', protocol: 'HTTP', port: 80, hostname: '*.example.com' }]);
    const out = rulesOf(route('team-b', ['app.example.com']), g);
    expect(out.rules).toEqual([]);
    expect(out.attached).toBe(0);
    expect(out.notes).toEqual([
      'HTTPRoute team-b/r: not attached (listener web of Gateway infra/edge does not allow routes from namespace team-b: allowedRoutes.namespaces.from is Same (infra))',
    ]);
    expect(rulesOf(route('infra', ['app.example.com']), g).rules.map((x) => x.hostname)).toEqual(['app.example.com']);
  });

  it('from: All takes every namespace; from: Selector the namespaces whose labels match', () => {
    const all = gateway([{ name: 'web', hostname: '*.example.com', allowedRoutes: { namespaces: { from: 'All' } } }]);
    expect(rulesOf(route('team-b', ['app.example.com']), all).attached).toBe(1);
    const selected = gateway([
      {
        name: 'web',
        hostname: '*.example.com',
        allowedRoutes: {
          namespaces: {
            from: 'Selector',
            selector: {
              matchLabels: { edge: 'yes' },
              matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['sandbox'] }],
            },
          },
        },
      },
    ]);
    const r = route('team-b', ['app.example.com']);
    expect(rulesOf(r, selected, { 'team-b': { edge: 'yes' } }).attached).toBe(1);
    expect(rulesOf(r, selected, { 'team-b': { edge: 'yes', tier: 'sandbox' } }).attached).toBe(0);
    expect(rulesOf(r, selected, { 'team-b': {} }).attached).toBe(0);
  });

  it('allowedRoutes.kinds without HTTPRoute, or a TCP listener, takes no HTTPRoute', () => {
    const grpcOnly = gateway([
      { name: 'web', allowedRoutes: { namespaces: { from: 'All' }, kinds: [{ kind: 'GRPCRoute' }] } },
    ]);
    expect(rulesOf(route('infra', ['app.example.com']), grpcOnly).attached).toBe(0);
    const tcp = gateway([{ name: 'raw', protocol: 'TCP', port: 22 }]);
    expect(rulesOf(route('infra', ['app.example.com']), tcp).attached).toBe(0);
  });

  it("a route's hostnames are intersected with the listener's: one outside it is not routed, a route with none inside is not attached", () => {
    const g = gateway([
      { name: 'web', hostname: '*.team-a.example.com', allowedRoutes: { namespaces: { from: 'All' } } },
    ]);
    const partly = rulesOf(route('team-b', ['shop.team-a.example.com', 'login.bank.example.com']), g);
    expect(partly.rules.map((x) => x.hostname)).toEqual(['shop.team-a.example.com']);
    const outside = rulesOf(route('team-b', ['login.bank.example.com']), g);
    expect(outside.rules).toEqual([]);
    expect(outside.notes[0]).toContain(
      "no hostname of the route is within listener web of Gateway infra/edge's hostname",
    );
  });

  it('wildcards as the Gateway API defines them', () => {
    expect(intersectHostname('*.example.com', 'a.example.com')).toBe('a.example.com');
    expect(intersectHostname('*.example.com', 'a.b.example.com')).toBe('a.b.example.com');
    expect(intersectHostname('*.example.com', 'example.com')).toBeUndefined();
    expect(intersectHostname('*.example.com', '*.example.com')).toBe('*.example.com');
    expect(intersectHostname('test.example.com', '*.example.com')).toBe('test.example.com');
    expect(intersectHostname('test.example.com', 'other.example.com')).toBeUndefined();
    expect(intersectHostname(undefined, 'Any.Example.com')).toBe('any.example.com');
    expect(intersectHostname('*.a.example.com', '*.example.com')).toBe('*.a.example.com');
  });

  it("a route of another namespace on a Gateway that does not allow it is not counted, and the class config's status says why", () => {
    const spec = {
      namespace: 'infra',
      tunnel,
      tunnelRef: { kind: 'Tunnel', name: 'shared' },
      gateways: [gateway([{ name: 'web', hostname: '*.example.com' }])],
      routes: [route('team-b', ['app.example.com'])],
      services: {},
    } as unknown as ExpandedGatewayClassConfig;
    expect(attachedRoutes(spec)).toBe(0);
    expect(routeSkips(spec)[0]).toMatch(/^HTTPRoute team-b\/r: not attached/);
    expect(tunnelGatewayClassConfigRules.statusFields!(spec)).toMatchObject({
      routeCount: 0,
      skipped: [expect.stringMatching(/^HTTPRoute team-b\/r: not attached/)],
    });
    expect(tunnelGatewayClassConfigRules.contribution(spec, target, { name: 'cfg' })).toEqual({ rules: [] });
  });
});

describe("which config an IngressClass's parameters name (M3)", () => {
  it('with a namespace, that one; without, the one in cloudflare-operator-system (the original), never one of that name in any namespace', () => {
    expect(classParametersNamespace('IngressClass', { namespace: 'infra', scope: 'Namespace' })).toEqual({
      namespace: 'infra',
    });
    // The original's sample: a namespace without a scope.
    expect(classParametersNamespace('IngressClass', { namespace: 'cloudflare-operator-system' })).toEqual({
      namespace: 'cloudflare-operator-system',
    });
    expect(classParametersNamespace('IngressClass', {})).toEqual({ namespace: 'cloudflare-operator-system' });
    expect(classParametersNamespace('IngressClass', { scope: 'Cluster' })).toEqual({
      namespace: 'cloudflare-operator-system',
    });
    expect(classParametersNamespace('IngressClass', { scope: 'Namespace' })).toMatchObject({
      problem: expect.stringContaining('spec.parameters.scope is Namespace'),
    });
    expect(classParametersNamespace('GatewayClass', {})).toMatchObject({
      problem: expect.stringContaining('spec.parametersRef.namespace'),
    });
  });
});
