/**
 * Hostnames of one shared tunnel, from the side of a team that wants another's (issue 33, N4, M3):
 * two Ingresses of one class in two namespaces, a TunnelBinding of another namespace created
 * after an Ingress, a TunnelIngressClassConfig named like the one an IngressClass's
 * namespace-less parameters mean, HTTPRoutes from namespaces and for hostnames a Gateway's
 * listeners do not take. Real Temporal, kube-apiserver and etcd; Cloudflare is the emulator, read
 * through the official SDK.
 */
import { describe, expect, it } from 'vitest';
import type { CoreV1Event } from '@kubernetes/client-node';
import { CLOUDFLARE_API_VERSION, CLOUDFLARE_GROUP, DEFAULT_CREDENTIALS_NAMESPACE } from '../../src/api/cloudflare.js';
import { TUNNEL_BINDING_VERSION } from '../../src/api/cloudflare-tunnels.js';
import { eventually, uniq } from '../support/env.js';
import { cloudflareSuite, hexId, sourceObject, tunnelIngressClass } from '../support/cloudflare.js';
import { GATEWAY_API, installGatewayApiCrds, tunnelGatewayClass } from '../support/gateway-api.js';

const account = hexId();
const creds = uniq('cf-host-acct');
const zoneName = `${uniq('host')}.example`;
const suite = cloudflareSuite({
  taskQueue: 'cf-host',
  namespace: 'cf-host',
  account: { id: account, name: 'hostnames' },
  zone: zoneName,
  credentials: { name: creds },
  configOverrides: { debounceMs: 200 },
});
const { k } = suite;
const infra = () => suite.namespace;

interface Rule {
  hostname?: string;
  path?: string;
  service: string;
}

async function rulesOf(tunnelId: string): Promise<Rule[]> {
  const c = (await suite.fx.cf.zeroTrust.tunnels.cloudflared.configurations.get(tunnelId, {
    account_id: account,
  })) as { config?: { ingress?: Rule[] } | null };
  return (c.config?.ingress ?? []).map((r) => ({
    ...(r.hostname ? { hostname: r.hostname } : {}),
    ...(r.path ? { path: r.path } : {}),
    service: r.service,
  }));
}
const serviceFor = async (tunnelId: string, host: string) =>
  (await rulesOf(tunnelId)).find((r) => r.hostname === host)?.service;

const namespace = (name: string, labels: Record<string, string> = {}) =>
  k.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } });
const service = (ns: string, name = 'web') => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: ns },
  spec: { ports: [{ port: 80, targetPort: 80 }] },
});
const ingress = (ns: string, name: string, className: string, host: string) => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: { name, namespace: ns },
  spec: {
    ingressClassName: className,
    rules: [
      {
        host,
        http: {
          paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } }],
        },
      },
    ],
  },
});

type Status = {
  conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
  ingressCount?: number;
  routeCount?: number;
  skipped?: string[];
};
const statusOf = async (apiVersion: string, kind: string, ns: string, name: string) =>
  ((await k.get({ apiVersion, kind, namespace: ns, name })) as { status?: Status } | undefined)?.status;
const readyOf = (s: Status | undefined) => s?.conditions?.find((c) => c.type === 'Ready');

/** The Events `kubectl describe` shows for the object (found by its UID). */
async function eventsOf(apiVersion: string, kind: string, ns: string, name: string): Promise<CoreV1Event[]> {
  const obj = (await k.get({ apiVersion, kind, namespace: ns, name })) as { metadata: { uid: string } };
  const fieldSelector = `involvedObject.kind=${kind},involvedObject.name=${name},involvedObject.uid=${obj.metadata.uid}`;
  return (await k.core.listNamespacedEvent({ namespace: ns, fieldSelector })).items;
}

async function clusterTunnel(name: string): Promise<string> {
  await namespace(DEFAULT_CREDENTIALS_NAMESPACE); // where a ClusterTunnel's Secret goes
  await k.apply(
    sourceObject('ClusterTunnel', name, {
      newTunnel: { name: uniq('cf-shared') },
      cloudflare: { credentialsRef: { name: creds }, domain: zoneName },
    }),
  );
  return eventually('the shared tunnel', async () => {
    const obj = (await k.get({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'ClusterTunnel', name })) as
      { status?: { tunnelId?: string } } | undefined;
    return obj?.status?.tunnelId;
  });
}

describe('Ingresses and bindings of several teams on one tunnel', () => {
  it('the older Ingress keeps a hostname and both are told; a newer binding of another namespace does not take it; a config named like a namespace-less IngressClass parameters captures nothing', async () => {
    const teamA = uniq('team-a');
    const teamB = uniq('team-b');
    await namespace(teamA);
    await namespace(teamB);
    await k.apply(service(teamA));
    await k.apply(service(teamB));
    const ct = uniq('shared');
    const tunnelId = await clusterTunnel(ct);
    const cls = uniq('shared-class');
    await k.apply(
      sourceObject('TunnelIngressClassConfig', 'shared', { tunnelRef: { kind: 'ClusterTunnel', name: ct } }, infra()),
    );
    await k.apply(tunnelIngressClass(cls, 'shared', infra()));

    // Team A's Ingress first: in the tunnel.
    const app = `app.${zoneName}`;
    await k.apply(ingress(teamA, 'app', cls, app));
    await eventually(
      'team A serves app',
      async () => (await serviceFor(tunnelId, app)) === `http://web.${teamA}.svc:80`,
      {
        timeoutMs: 120_000,
      },
    );

    // Team B's Ingress of the same class, later, for the same host (its namespace sorts first).
    await k.apply(ingress(teamB, 'app', cls, app));
    const reported = await eventually('the conflict on the class config', async () => {
      const ready = readyOf(await statusOf(CLOUDFLARE_API_VERSION, 'TunnelIngressClassConfig', infra(), 'shared'));
      return ready?.reason === 'SyncedWithConflicts' ? ready : undefined;
    });
    expect(reported.message).toContain(`rule ${app} (Ingress ${teamB}/app) is already held by Ingress ${teamA}/app`);
    expect(await serviceFor(tunnelId, app)).toBe(`http://web.${teamA}.svc:80`);
    const lost = await eventually('a HostnameConflict Event on the newer Ingress', async () => {
      const e = (await eventsOf('networking.k8s.io/v1', 'Ingress', teamB, 'app')).find(
        (x) => x.reason === 'HostnameConflict',
      );
      return e;
    });
    expect(lost).toMatchObject({ type: 'Warning' });
    expect(lost.message).toContain(`is held by Ingress ${teamA}/app`);
    const kept = (await eventsOf('networking.k8s.io/v1', 'Ingress', teamA, 'app')).find(
      (x) => x.reason === 'HostnameConflict',
    );
    expect(kept).toMatchObject({ type: 'Normal' });

    // Team B's binding, created after team A's Ingress, for the same host: not taken.
    const bindingRef = {
      apiVersion: `${CLOUDFLARE_GROUP}/${TUNNEL_BINDING_VERSION}`,
      kind: 'TunnelBinding',
      namespace: teamB,
      name: 'grab',
    };
    await k.apply({
      apiVersion: bindingRef.apiVersion,
      kind: 'TunnelBinding',
      metadata: { name: 'grab', namespace: teamB },
      subjects: [{ name: 'web', spec: { fqdn: app } }],
      tunnelRef: { kind: 'ClusterTunnel', name: ct },
    });
    const refused = await eventually('the binding told who holds app', async () => {
      const ready = readyOf(await statusOf(bindingRef.apiVersion, 'TunnelBinding', teamB, 'grab'));
      return ready?.reason === 'SyncedWithConflicts' || ready?.reason === 'Conflict' ? ready : undefined;
    });
    expect(refused.message).toContain(`is already held by Ingress ${teamA}/app`);
    expect(await serviceFor(tunnelId, app)).toBe(`http://web.${teamA}.svc:80`);

    // M3: an IngressClass whose parameters name no namespace does not mean team B's config of that name.
    const loose = uniq('loose-class');
    await k.apply({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'IngressClass',
      metadata: { name: loose },
      spec: {
        controller: 'cloudflare-operator.io/ingress-controller',
        parameters: { apiGroup: CLOUDFLARE_GROUP, kind: 'TunnelIngressClassConfig', name: 'loose' },
      },
    });
    const other = `other.${zoneName}`;
    await k.apply(ingress(teamA, 'other', loose, other));
    // Created after the class and its Ingress, so its first read sees them.
    await k.apply(
      sourceObject('TunnelIngressClassConfig', 'loose', { tunnelRef: { kind: 'ClusterTunnel', name: ct } }, teamB),
    );
    // Team B's config is Ready once it has read the classes: it serves none of them.
    const looseStatus = await eventually('team B’s config read the IngressClasses', async () => {
      const s = await statusOf(CLOUDFLARE_API_VERSION, 'TunnelIngressClassConfig', teamB, 'loose');
      return readyOf(s)?.status === 'True' && s?.ingressCount !== undefined ? s : undefined;
    });
    expect(looseStatus.ingressCount).toBe(0);
    expect(looseStatus.skipped).toEqual([
      `IngressClass ${loose} is not served by this config: its parameters name no namespace, so they mean TunnelIngressClassConfig ${DEFAULT_CREDENTIALS_NAMESPACE}/loose`,
    ]);
    expect((await rulesOf(tunnelId)).some((r) => r.hostname === other)).toBe(false);

    for (const ns of [teamA, teamB]) await k.delete({ apiVersion: 'v1', kind: 'Namespace', name: ns });
  });
});

describe("HTTPRoutes attach only where a Gateway's listeners take them", () => {
  it('a route from a namespace the listener does not allow is not attached; a route hostname outside the listener’s is not routed; the class config says why', async () => {
    await installGatewayApiCrds(k);
    const teamA = uniq('gw-team-a');
    const teamB = uniq('gw-team-b');
    await namespace(teamA, { 'edge-access': 'granted' });
    await namespace(teamB);
    for (const ns of [infra(), teamA, teamB]) await k.apply(service(ns));
    const t = uniq('gw-tunnel');
    await k.apply(
      sourceObject(
        'Tunnel',
        t,
        { newTunnel: { name: uniq('cf-gw') }, cloudflare: { credentialsRef: { name: creds }, domain: zoneName } },
        infra(),
      ),
    );
    const tunnelId = await eventually('the tunnel', async () => {
      const obj = (await k.get({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'Tunnel', namespace: infra(), name: t })) as
        { status?: { tunnelId?: string } } | undefined;
      return obj?.status?.tunnelId;
    });
    const cfg = uniq('gw-cfg');
    const cls = uniq('gw-class');
    await k.apply(sourceObject('TunnelGatewayClassConfig', cfg, { tunnelRef: { kind: 'Tunnel', name: t } }, infra()));
    await k.apply(tunnelGatewayClass(cls, cfg, infra()));
    await k.apply({
      apiVersion: GATEWAY_API,
      kind: 'Gateway',
      metadata: { name: 'edge', namespace: infra() },
      spec: {
        gatewayClassName: cls,
        listeners: [
          // No allowedRoutes: routes of the Gateway's own namespace only.
          { name: 'infra', protocol: 'HTTP', port: 80, hostname: `*.infra.${zoneName}` },
          {
            name: 'team-a',
            protocol: 'HTTP',
            port: 8080,
            hostname: `*.team-a.${zoneName}`,
            allowedRoutes: {
              namespaces: { from: 'Selector', selector: { matchLabels: { 'edge-access': 'granted' } } },
            },
          },
        ],
      },
    });
    const route = (ns: string, name: string, sectionName: string, hostnames: string[]) => ({
      apiVersion: GATEWAY_API,
      kind: 'HTTPRoute',
      metadata: { name, namespace: ns },
      spec: {
        parentRefs: [{ name: 'edge', namespace: infra(), sectionName }],
        hostnames,
        rules: [{ backendRefs: [{ name: 'web', port: 80 }] }],
      },
    });
    const www = `www.infra.${zoneName}`;
    const shop = `shop.team-a.${zoneName}`;
    await k.apply(route(infra(), 'www', 'infra', [www]));
    // Team B on the infra listener (from: Same): not attached.
    await k.apply(route(teamB, 'steal', 'infra', [`admin.infra.${zoneName}`]));
    // Team A on its listener: a hostname outside it is not routed; a route with none inside is not attached.
    await k.apply(route(teamA, 'shop', 'team-a', [shop, `login.bank.${zoneName}`]));
    await k.apply(route(teamA, 'bank', 'team-a', [`pay.bank.${zoneName}`]));

    const expected: Rule[] = [
      { hostname: shop, service: `http://web.${teamA}.svc:80` },
      { hostname: www, service: `http://web.${infra()}.svc:80` },
      { service: 'http_status:404' },
    ];
    await eventually(
      'only what the listeners take in the tunnel',
      async () => JSON.stringify(await rulesOf(tunnelId)) === JSON.stringify(expected),
      { timeoutMs: 120_000 },
    );
    const status = await eventually(
      'the class config counts the attached routes and says why the others are not',
      async () => {
        const s = await statusOf(CLOUDFLARE_API_VERSION, 'TunnelGatewayClassConfig', infra(), cfg);
        return readyOf(s)?.status === 'True' && s?.routeCount === 2 ? s : undefined;
      },
    );
    expect(status.skipped).toEqual([
      `HTTPRoute ${teamA}/bank: not attached (no hostname of the route is within listener team-a of Gateway ${infra()}/edge's hostname *.team-a.${zoneName})`,
      `HTTPRoute ${teamB}/steal: not attached (listener infra of Gateway ${infra()}/edge does not allow routes from namespace ${teamB}: allowedRoutes.namespaces.from is Same (${infra()}))`,
    ]);

    for (const ns of [teamA, teamB]) await k.delete({ apiVersion: 'v1', kind: 'Namespace', name: ns });
  });
});
