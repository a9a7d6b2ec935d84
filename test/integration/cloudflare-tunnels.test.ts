/**
 * Tunnels on the aggregation's one mechanism: a Tunnel creates (or adopts) its tunnel and
 * writes its credentials Secret, then feeds its settings to the target
 * `TunnelConfiguration/<account>/<tunnelId>`; a TunnelBinding's Services and the Ingresses of a
 * TunnelIngressClassConfig's class feed their rules there, and their hostnames' CNAMEs to the
 * zone's `TunnelDNS` target. Real Temporal, kube-apiserver (+ controller-manager for the Secret's
 * garbage collection) and etcd; Cloudflare is the emulator, read only through the official SDK.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CLOUDFLARE_API_VERSION, CLOUDFLARE_GROUP, CLOUDFLARE_ID_ANNOTATION } from '../../src/api/cloudflare.js';
import { AppsV1Api, PatchStrategy, type KubernetesObject, type V1Deployment } from '@kubernetes/client-node';
import { TUNNEL_BINDING_VERSION } from '../../src/api/cloudflare-tunnels.js';
import { baseConnectorDeployment } from '../../src/domain/cloudflare/connector.js';
import { CloudflareSyncStateKind, type CloudflareSyncState } from '../../src/api/cloudflare.js';
import { syncStateName } from '../../src/domain/cloudflare/targets.js';
import type { ManagedProcess } from '../../src/infra/process.js';
import { eventually, spawnRole, uniq, waitForWorker } from '../support/env.js';
import {
  clearStatus,
  cloudflareSuite,
  hexId,
  secret as markSecret,
  sourceObject,
  tunnelIngressClass,
  zoneRecords,
} from '../support/cloudflare.js';
import { GATEWAY_API, installGatewayApiCrds, tunnelGatewayClass } from '../support/gateway-api.js';

const account = hexId();
const creds = uniq('cf-tun-acct');
const zoneName = `${uniq('tun')}.example`;
const children: ManagedProcess[] = [];
const suite = cloudflareSuite({
  taskQueue: 'cf-tun',
  namespace: 'cf-tun',
  account: { id: account, name: 'tunnels' },
  zone: zoneName,
  credentials: { name: creds },
  configOverrides: { debounceMs: 200 },
  afterWorkerStop: async () => {
    for (const p of children) await p.stop();
  },
});
const { k } = suite;
const ns = () => suite.namespace;

interface Rule {
  hostname?: string;
  path?: string;
  service: string;
  originRequest?: Record<string, unknown>;
}

async function cfTunnels(name?: string) {
  const out: Array<{ id: string; name: string; deleted_at?: string | null }> = [];
  for await (const t of suite.fx.cf.zeroTrust.tunnels.cloudflared.list({
    account_id: account,
    ...(name ? { name } : {}),
  }))
    out.push(t as never);
  return out;
}

async function configOf(tunnelId: string): Promise<{ version: number; ingress: Rule[] }> {
  const c = (await suite.fx.cf.zeroTrust.tunnels.cloudflared.configurations.get(tunnelId, {
    account_id: account,
  })) as { version?: number; config?: { ingress?: Rule[] } | null };
  return { version: c.version ?? 0, ingress: c.config?.ingress ?? [] };
}

const records = () => zoneRecords(suite.fx.cf, suite.zoneId);

const tunnel = (name: string, spec: Record<string, unknown>) =>
  sourceObject('Tunnel', name, { cloudflare: { credentialsRef: { name: creds }, domain: zoneName }, ...spec }, ns());
const tunnelRef = (name: string) => ({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'Tunnel', namespace: ns(), name });
const tunnelStatus = async (name: string) =>
  (
    (await k.get(tunnelRef(name))) as
      { status?: { tunnelId?: string; tunnelName?: string; state?: string; accountId?: string } } | undefined
  )?.status;

const service = (name: string, ports: Array<{ port: number; name?: string }>) => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace: ns() },
  spec: { ports: ports.map((p) => ({ ...p, targetPort: p.port })) },
});

const ingress = (
  name: string,
  className: string,
  host: string,
  paths: Array<{ path: string; service: string; port: number; pathType?: string }>,
) => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: { name, namespace: ns() },
  spec: {
    ingressClassName: className,
    rules: [
      {
        host,
        http: {
          paths: paths.map((p) => ({
            path: p.path,
            pathType: p.pathType ?? 'Prefix',
            backend: { service: { name: p.service, port: { number: p.port } } },
          })),
        },
      },
    ],
  },
});

const binding = (name: string, tunnelName: string, subjects: unknown[]) => ({
  apiVersion: `${CLOUDFLARE_GROUP}/${TUNNEL_BINDING_VERSION}`,
  kind: 'TunnelBinding',
  metadata: { name, namespace: ns() },
  subjects,
  tunnelRef: { kind: 'Tunnel', name: tunnelName },
});

const ready = async (kind: string, name: string) => {
  if (kind !== 'TunnelBinding') return suite.readyOf(kind, name, ns());
  const obj = (await k.get({
    apiVersion: `${CLOUDFLARE_GROUP}/${TUNNEL_BINDING_VERSION}`,
    kind,
    namespace: ns(),
    name,
  })) as { status?: { conditions?: Array<{ type: string; status: string; reason: string; message: string }> } };
  return obj?.status?.conditions?.find((c) => c.type === 'Ready');
};

describe('Tunnel, TunnelBinding and Ingress → one tunnel configuration', () => {
  it('creates the tunnel and its credentials Secret; Ingresses and a binding make one ordered configuration with the catch-all last; removing an Ingress removes its rule and its CNAME only', async () => {
    // A record made by hand for another hostname of the zone: never touched.
    const byHand = await suite.fx.cf.dns.records.create({
      zone_id: suite.zoneId,
      type: 'CNAME',
      name: `other.${zoneName}`,
      content: 'example.net',
      ttl: 1,
      comment: 'made by hand',
    });
    const t = uniq('edge');
    const cfName = uniq('cf-edge');
    await k.apply(tunnel(t, { newTunnel: { name: cfName }, fallbackTarget: 'http_status:503' }));
    const status = await eventually('the tunnel created and recorded', async () => {
      const s = await tunnelStatus(t);
      return s?.tunnelId && s.state === 'active' ? s : undefined;
    });
    const live = await cfTunnels(cfName);
    expect(live.map((x) => x.id)).toEqual([status.tunnelId]);
    expect(status).toMatchObject({ tunnelName: cfName, accountId: account });

    // Credentials as cloudflared reads them, in a Secret the Tunnel owns (never in its status).
    type SecretView = { data?: Record<string, string>; metadata?: { ownerReferences?: Array<{ uid: string }> } };
    const secret: SecretView = await eventually(
      'the credentials Secret',
      async () =>
        (await k.get({ apiVersion: 'v1', kind: 'Secret', namespace: ns(), name: t })) as SecretView | undefined,
    );
    const creds = JSON.parse(Buffer.from(secret.data!['credentials.json']!, 'base64').toString()) as Record<
      string,
      string
    >;
    expect(creds).toMatchObject({ AccountTag: account, TunnelID: status.tunnelId });
    expect(Buffer.from(creds.TunnelSecret!, 'base64').length).toBeGreaterThanOrEqual(32);
    // The tunnel's secret and token never reach a workflow history (checked at the file's end).
    markSecret(creds.TunnelSecret!);
    markSecret(Buffer.from(secret.data!.token!, 'base64').toString());
    const token = JSON.parse(Buffer.from(Buffer.from(secret.data!.token!, 'base64').toString(), 'base64').toString());
    expect(token).toMatchObject({ a: account, t: status.tunnelId });
    const tunnelObj = (await k.get(tunnelRef(t))) as { metadata: { uid: string } } & Record<string, unknown>;
    expect(secret.metadata?.ownerReferences?.[0]?.uid).toBe(tunnelObj.metadata.uid);
    expect(JSON.stringify(tunnelObj)).not.toContain(creds.TunnelSecret);

    // The Tunnel alone: its catch-all.
    await eventually('the catch-all alone', async () => {
      const c = await configOf(status.tunnelId!);
      return c.ingress.length === 1 && c.ingress[0]!.service === 'http_status:503';
    });

    // Services, an IngressClass whose parameters are a TunnelIngressClassConfig, two Ingresses, a binding.
    await k.apply(service('web', [{ port: 80 }]));
    await k.apply(service('api', [{ port: 8080, name: 'http' }]));
    await k.apply(service('admin', [{ port: 443 }]));
    const cls = uniq('tunnel-class');
    await k.apply(
      sourceObject('TunnelIngressClassConfig', 'ingress-cfg', { tunnelRef: { kind: 'Tunnel', name: t } }, ns()),
    );
    await k.apply(tunnelIngressClass(cls, 'ingress-cfg', ns()));
    const a = `a.${zoneName}`;
    const b = `b.${zoneName}`;
    const adminHost = `admin.${zoneName}`;
    await k.apply(
      ingress('ing-a', cls, a, [
        { path: '/', service: 'web', port: 80 },
        { path: '/api', service: 'api', port: 8080 },
      ]),
    );
    await k.apply(ingress('ing-b', cls, b, [{ path: '/', service: 'web', port: 80 }]));
    await k.apply(binding('bind-admin', t, [{ name: 'admin' }]));

    const expected: Rule[] = [
      { hostname: a, path: '^/api(/|$)', service: `http://api.${ns()}.svc:8080` },
      { hostname: a, service: `http://web.${ns()}.svc:80` },
      { hostname: adminHost, service: `https://admin.${ns()}.svc:443` },
      { hostname: b, service: `http://web.${ns()}.svc:80` },
      { service: 'http_status:503' },
    ];
    await eventually(
      'one configuration: most specific first, the catch-all last',
      async () => JSON.stringify((await configOf(status.tunnelId!)).ingress) === JSON.stringify(expected),
      { timeoutMs: 120_000 },
    );
    const cname = `${status.tunnelId}.cfargotunnel.com`;
    await eventually('a CNAME per hostname', async () => {
      const rs = await records();
      return [a, b, adminHost].every((h) =>
        rs.some((r) => r.name === h && r.type === 'CNAME' && r.content === cname && r.proxied),
      );
    });
    await eventually('every source Ready', async () =>
      (
        await Promise.all([
          ready('Tunnel', t),
          ready('TunnelIngressClassConfig', 'ingress-cfg'),
          ready('TunnelBinding', 'bind-admin'),
        ])
      ).every((c) => c?.status === 'True'),
    );
    const cfg = (await k.get({
      apiVersion: CLOUDFLARE_API_VERSION,
      kind: 'TunnelIngressClassConfig',
      namespace: ns(),
      name: 'ingress-cfg',
    })) as { status?: { ingressCount?: number; tunnelId?: string; state?: string } };
    expect(cfg.status).toMatchObject({ ingressCount: 2, tunnelId: status.tunnelId, state: 'active' });
    const bindingStatus = (
      (await k.get({
        apiVersion: `${CLOUDFLARE_GROUP}/${TUNNEL_BINDING_VERSION}`,
        kind: 'TunnelBinding',
        namespace: ns(),
        name: 'bind-admin',
      })) as { status?: { hostnames?: string; services?: unknown[] } }
    ).status;
    expect(bindingStatus).toMatchObject({
      hostnames: adminHost,
      services: [{ hostname: adminHost, target: `https://admin.${ns()}.svc:443` }],
    });
    const st = await k.get<CloudflareSyncState>({
      apiVersion: CLOUDFLARE_API_VERSION,
      kind: CloudflareSyncStateKind.kind,
      name: syncStateName({ resourceType: 'TunnelConfiguration', accountId: account, tunnelId: status.tunnelId! }),
    });
    expect(st?.spec.sources?.map((s) => s.ref.kind).sort()).toEqual([
      'Tunnel',
      'TunnelBinding',
      'TunnelIngressClassConfig',
    ]);

    // Removing an Ingress removes its rule and its CNAME, nothing else.
    const before = (await records()).filter((r) => r.name !== b);
    await k.delete({ apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', namespace: ns(), name: 'ing-b' });
    await eventually('b gone from the configuration', async () => {
      const c = await configOf(status.tunnelId!);
      return JSON.stringify(c.ingress) === JSON.stringify(expected.filter((r) => r.hostname !== b));
    });
    await eventually('b.<zone> CNAME removed', async () => !(await records()).some((r) => r.name === b));
    const after = await records();
    expect(after.map((r) => `${r.id} ${r.name} ${r.content}`).sort()).toEqual(
      before.map((r) => `${r.id} ${r.name} ${r.content}`).sort(),
    );
    expect(after.find((r) => r.id === byHand.id)).toMatchObject({ content: 'example.net', comment: 'made by hand' });

    // Deleting the Tunnel deletes the tunnel it created; the Secret goes with the Tunnel.
    await k.delete({ apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', namespace: ns(), name: 'ing-a' });
    await k.delete({
      apiVersion: `${CLOUDFLARE_GROUP}/${TUNNEL_BINDING_VERSION}`,
      kind: 'TunnelBinding',
      namespace: ns(),
      name: 'bind-admin',
    });
    await eventually('the CNAMEs removed', async () => !(await records()).some((r) => r.content === cname));
    // A private network route to the tunnel (made by hand): removed with the tunnel; one to another tunnel stays.
    const routes = suite.fx.cf.zeroTrust.networks.routes;
    const mine = await routes.create({ account_id: account, network: '10.42.0.0/16', tunnel_id: status.tunnelId! });
    const elsewhere = (await suite.fx.cf.zeroTrust.tunnels.cloudflared.create({
      account_id: account,
      name: uniq('other-tunnel'),
    })) as { id: string };
    const kept = await routes.create({ account_id: account, network: '10.43.0.0/16', tunnel_id: elsewhere.id });
    await k.delete(tunnelRef(t));
    await eventually('the tunnel deleted in Cloudflare', async () => {
      const left = await cfTunnels(cfName);
      return left.every((x) => x.deleted_at);
    });
    await eventually('the Tunnel object gone (finalizer released)', async () => !(await k.get(tunnelRef(t))));
    const liveRoutes: string[] = [];
    for await (const r of routes.list({ account_id: account })) liveRoutes.push(r.id!);
    expect(liveRoutes).toContain(kept.id);
    expect(liveRoutes).not.toContain(mine.id);
    expect((await records()).find((r) => r.id === byHand.id)).toBeTruthy();
  });
});

describe('Tunnel lifecycle', () => {
  it("a crash between the create and recording the ID leaves exactly one tunnel, and it is this Tunnel's", async () => {
    await suite.stopWorker();
    const doomed = spawnRole('worker', suite.taskQueue, 'cf-tunnel-created', {
      CLOUDFLARE_API_BASE_URL: suite.fx.emulator.baseURL,
      DO_CLUSTER_ID: 'default', // as the in-process worker (test/support/cloudflare.ts)
      DO_FAULT_KILL_AT: 'cloudflare-created',
      DO_CLOUDFLARE_DEBOUNCE: '200ms',
    });
    children.push(doomed);
    try {
      await waitForWorker(suite.taskQueue, doomed);
      const t = uniq('crash');
      const cfName = uniq('cf-crash');
      await k.apply(tunnel(t, { newTunnel: { name: cfName } }));
      const code = await Promise.race([
        doomed.exited,
        new Promise<'alive'>((r) => setTimeout(() => r('alive'), 120_000)),
      ]);
      expect(code, doomed.logTail()).not.toBe('alive');
      expect(doomed.logTail(50)).toContain('fault injection: SIGKILL at cloudflare-created');
      expect((await cfTunnels(cfName)).filter((x) => !x.deleted_at)).toHaveLength(1); // the POST went through
      expect((await tunnelStatus(t))?.state).toBe('creating'); // the intent, recorded before it

      await suite.startWorker();
      const status = await eventually(
        'active after the retry',
        async () => {
          const st = await tunnelStatus(t);
          return st?.state === 'active' && st.tunnelId ? st : undefined;
        },
        { timeoutMs: 150_000 },
      );
      const live = (await cfTunnels(cfName)).filter((x) => !x.deleted_at);
      expect(live.map((x) => x.id)).toEqual([status.tunnelId]);
      const posts = await suite.fx.admin.requests({ method: 'POST', path: `^/accounts/${account}/cfd_tunnel$` });
      expect(posts.filter((r) => r.status === 200 && JSON.stringify(r).includes(cfName))).toHaveLength(1);
      await k.delete(tunnelRef(t));
      await eventually('deleted with its Tunnel', async () => (await cfTunnels(cfName)).every((x) => x.deleted_at));
    } finally {
      if (!suite.worker) await suite.startWorker();
    }
  });

  it('a Tunnel whose status was lost (restored from a backup) knows its tunnel again by its annotation: no TunnelNameTaken, and its deletion deletes the tunnel', async () => {
    const t = uniq('restored');
    const cfName = uniq('cf-restored');
    await k.apply(tunnel(t, { newTunnel: { name: cfName } }));
    const first = await eventually('active', async () => {
      const st = await tunnelStatus(t);
      return st?.state === 'active' && st.tunnelId ? st : undefined;
    });
    const annotations = async () =>
      ((await k.get(tunnelRef(t))) as { metadata?: { annotations?: Record<string, string> } } | undefined)?.metadata
        ?.annotations ?? {};
    expect((await annotations())[CLOUDFLARE_ID_ANNOTATION]).toBe(first.tunnelId);
    await eventually('configured', async () => (await configOf(first.tunnelId!)).ingress.length > 0);

    const statusRef = { ...tunnelRef(t), plural: 'tunnels' };
    await clearStatus(k, statusRef);
    await k.apply(tunnel(t, { newTunnel: { name: cfName }, fallbackTarget: 'http_status:503' }));
    await eventually('its tunnel again, configured', async () => {
      const ready = await suite.readyOf('Tunnel', t, ns());
      expect(ready?.reason).not.toBe('TunnelNameTaken');
      const st = await tunnelStatus(t);
      return (
        st?.tunnelId === first.tunnelId &&
        (await configOf(first.tunnelId!)).ingress.at(-1)?.service === 'http_status:503'
      );
    });
    expect((await cfTunnels(cfName)).filter((x) => !x.deleted_at).map((x) => x.id)).toEqual([first.tunnelId]);

    await clearStatus(k, statusRef);
    await k.delete(tunnelRef(t));
    await eventually('deleted with its Tunnel', async () => (await cfTunnels(cfName)).every((x) => x.deleted_at));
  });

  it('adopts an existing tunnel by name and leaves it on delete; never takes a tunnel or a Secret that is not its own; bad specs say which field', async () => {
    const made = (await suite.fx.cf.zeroTrust.tunnels.cloudflared.create({
      account_id: account,
      name: uniq('by-hand'),
      config_src: 'cloudflare',
    })) as { id: string; name: string };

    // existingTunnel: adopted (same id), credentials written, never deleted by the operator.
    const adopter = uniq('adopt');
    await k.apply(tunnel(adopter, { existingTunnel: { name: made.name } }));
    await eventually('adopted', async () => (await tunnelStatus(adopter))?.tunnelId === made.id);
    await eventually('its credentials Secret', async () =>
      k.get({ apiVersion: 'v1', kind: 'Secret', namespace: ns(), name: adopter }),
    );

    // newTunnel with a name someone else's tunnel has: refused, no second tunnel.
    const clash = uniq('clash');
    await k.apply(tunnel(clash, { newTunnel: { name: made.name } }));
    const refused = await eventually('TunnelNameTaken', async () => {
      const c = await ready('Tunnel', clash);
      return c?.reason === 'TunnelNameTaken' ? c : undefined;
    });
    expect(refused.message).toContain('set spec.existingTunnel.name');
    expect((await cfTunnels(made.name)).filter((x) => !x.deleted_at)).toHaveLength(1);

    // A Secret of the Tunnel's name that it does not own: never overwritten.
    const squatted = uniq('squat');
    const squatName = uniq('cf-squat');
    const secretRef = { apiVersion: 'v1', kind: 'Secret', namespace: ns(), name: squatted };
    await k.apply({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: squatted, namespace: ns() },
      stringData: { mine: 'keep me' },
    } as never);
    await k.apply(tunnel(squatted, { newTunnel: { name: squatName } }));
    const conflict = await eventually('SecretConflict', async () => {
      const c = await ready('Tunnel', squatted);
      return c?.reason === 'SecretConflict' ? c : undefined;
    });
    expect(conflict.message).toContain(`Secret ${ns()}/${squatted} exists and is not owned by this Tunnel`);
    const kept = (await k.get(secretRef)) as { data?: Record<string, string> };
    expect(Object.keys(kept.data ?? {})).toEqual(['mine']);
    // The tunnel it made is recorded before the Secret failed: never leaked, and once the user
    // removes the Secret, the next attempt goes on with that same tunnel (checked below).
    const squatTunnels = (await cfTunnels(squatName)).filter((x) => !x.deleted_at);
    expect(squatTunnels).toHaveLength(1);
    expect((await tunnelStatus(squatted))?.tunnelId).toBe(squatTunnels[0]!.id);
    await k.delete(secretRef);

    // A tunnel of that name made by someone else between the lookup and the create: Cloudflare
    // answers 409, and it is never taken for ours (nor deleted with the Tunnel).
    const raced = uniq('raced');
    const racedName = uniq('cf-raced');
    const delayed = await suite.fx.admin.addFault({
      method: 'POST',
      path: `^/accounts/${account}/cfd_tunnel$`,
      latencyMs: 3000,
      times: 1,
    });
    await k.apply(tunnel(raced, { newTunnel: { name: racedName } }));
    await eventually('the operator’s create in flight', async () =>
      (await suite.fx.admin.faults()).some((f) => f.id === delayed.id && f.hits === 1),
    );
    const foreign = (await suite.fx.cf.zeroTrust.tunnels.cloudflared.create({
      account_id: account,
      name: racedName,
      config_src: 'cloudflare',
    })) as { id: string };
    const taken = await eventually('TunnelNameTaken after the 409', async () => {
      const c = await ready('Tunnel', raced);
      return c?.reason === 'TunnelNameTaken' ? c : undefined;
    });
    expect(taken.message).toContain('set spec.existingTunnel.name');
    await suite.fx.admin.clearFaults();

    // Bad specs: the field named on the status, nothing made in Cloudflare.
    const both = uniq('both');
    await k.apply(tunnel(both, { newTunnel: { name: uniq('x') }, existingTunnel: { name: made.name } }));
    const invalid = await eventually('InvalidSpec', async () => {
      const c = await ready('Tunnel', both);
      return c?.reason === 'InvalidSpec' ? c : undefined;
    });
    expect(invalid.message).toContain('set exactly one of newTunnel and existingTunnel');
    await k.apply(binding('lost', 'no-such-tunnel', [{ name: 'web', spec: { target: 'http://web:80' } }]));
    const lost = await eventually('the binding names a missing Tunnel', async () => {
      const c = await ready('TunnelBinding', 'lost');
      return c?.reason === 'InvalidSpec' ? c : undefined;
    });
    expect(lost.message).toBe(`tunnelRef: Tunnel ${ns()}/no-such-tunnel not found`);

    // With the Secret gone, the squatted Tunnel goes on with the tunnel it made (after its retry).
    const resumed = await eventually(
      'the squatted Tunnel active with its own tunnel',
      async () => {
        const st = await tunnelStatus(squatted);
        return st?.state === 'active' ? st : undefined;
      },
      { timeoutMs: 120_000 },
    );
    expect(resumed.tunnelId).toBe(squatTunnels[0]!.id);
    expect((await cfTunnels(squatName)).filter((x) => !x.deleted_at).map((x) => x.id)).toEqual([resumed.tunnelId]);
    expect((await tunnelStatus(raced))?.tunnelId).not.toBe(foreign.id);

    for (const name of [adopter, clash, squatted, both, raced]) await k.delete(tunnelRef(name));
    await eventually('the Tunnels released', async () => {
      for (const name of [adopter, clash, squatted, both, raced]) if (await k.get(tunnelRef(name))) return false;
      return true;
    });
    // The adopted and the raced tunnels were not the operator's to delete; the squatted one's was.
    expect((await cfTunnels(made.name)).filter((x) => !x.deleted_at).map((x) => x.id)).toEqual([made.id]);
    expect((await cfTunnels(racedName)).filter((x) => !x.deleted_at).map((x) => x.id)).toEqual([foreign.id]);
    expect((await cfTunnels(squatName)).filter((x) => !x.deleted_at)).toEqual([]);
  });
});

describe("the tunnel's connector: a cloudflared Deployment", () => {
  const deploymentRef = (name: string) => ({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: ns(), name });
  const deployment = (name: string) => k.get<V1Deployment>(deploymentRef(name));

  it('runs the tunnel with its token (remotely managed), shaped by size, image, tolerations and deployPatch as the apiserver merges it; follows spec changes; goes with the Tunnel; never takes a Deployment that is not its own', async () => {
    const t = uniq('conn');
    const deployPatch = JSON.stringify({
      metadata: { annotations: { team: 'edge' } },
      spec: {
        template: {
          spec: {
            containers: [{ name: 'cloudflared', resources: { limits: { memory: '128Mi' } } }],
            priorityClassName: 'system-cluster-critical',
          },
        },
      },
    });
    await k.apply(
      tunnel(t, {
        newTunnel: { name: uniq('cf-conn') },
        protocol: 'quic',
        size: 2,
        image: 'cloudflare/cloudflared:2025.1.0',
        tolerations: [{ key: 'edge', operator: 'Exists', effect: 'NoSchedule' }],
        deployPatch,
      }),
    );
    const owner = await eventually('the tunnel', async () => {
      const o = (await k.get(tunnelRef(t))) as (KubernetesObject & { status?: { tunnelId?: string } }) | undefined;
      return o?.status?.tunnelId ? o : undefined;
    });
    const dep = await eventually('its Deployment', () => deployment(t));
    expect(dep.metadata?.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Tunnel', name: t, uid: owner.metadata!.uid, controller: true }),
    ]);
    expect(dep.metadata?.annotations?.team).toBe('edge');
    expect(dep.spec?.replicas).toBe(2);
    const pod = dep.spec!.template.spec!;
    expect(pod.tolerations).toEqual([{ key: 'edge', operator: 'Exists', effect: 'NoSchedule' }]);
    expect(pod.priorityClassName).toBe('system-cluster-critical');
    // The patch merged into the operator's container by name: its args, token and probe stay.
    expect(pod.containers).toHaveLength(1);
    const c = pod.containers[0]!;
    expect(c.image).toBe('cloudflare/cloudflared:2025.1.0');
    expect(c.args).toEqual(['tunnel', '--no-autoupdate', '--protocol', 'quic', '--metrics', '0.0.0.0:2000', 'run']);
    expect(c.env).toEqual([{ name: 'TUNNEL_TOKEN', valueFrom: { secretKeyRef: { name: t, key: 'token' } } }]);
    expect(c.resources?.limits).toEqual({ memory: '128Mi' });
    expect(c.livenessProbe?.httpGet?.path).toBe('/ready');
    // The Secret it reads holds the tunnel's run token.
    expect(await k.get({ apiVersion: 'v1', kind: 'Secret', namespace: ns(), name: t })).toBeTruthy();

    // The same patch merged by the apiserver into the unpatched Deployment gives the same Pod template.
    const base = baseConnectorDeployment(
      {
        apiVersion: CLOUDFLARE_API_VERSION,
        kind: 'Tunnel',
        name: `${t}-ref`,
        uid: owner.metadata!.uid!,
        spec: {
          newTunnel: { name: 'x' },
          protocol: 'quic',
          size: 2,
          image: 'cloudflare/cloudflared:2025.1.0',
          tolerations: [{ key: 'edge', operator: 'Exists', effect: 'NoSchedule' }],
          cloudflare: {},
        } as never,
      },
      { namespace: ns(), secretName: t, defaultImage: 'unused' },
    );
    const ref = structuredClone(base) as unknown as KubernetesObject & { spec: V1Deployment['spec'] };
    delete ref.metadata!.ownerReferences;
    ref.spec!.selector = { matchLabels: { ref: `${t}-ref` } };
    ref.spec!.template.metadata = { labels: { ref: `${t}-ref` } };
    await k.create(ref);
    const patch = JSON.parse(deployPatch) as { metadata?: Record<string, unknown> };
    // KubernetesObjectApi.patch sends the object it is given as the patch body.
    const merged = await k.objects.patch<V1Deployment>(
      {
        ...patch,
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { ...patch.metadata, name: `${t}-ref`, namespace: ns() },
      } as KubernetesObject,
      undefined,
      undefined,
      'test',
      undefined,
      PatchStrategy.StrategicMergePatch,
    );
    expect(dep.spec!.template.spec).toEqual(merged.spec!.template.spec);

    // A spec change: the Deployment follows (a patch that no longer sets a field drops it).
    await k.mergePatch(tunnelRef(t), {
      spec: {
        size: 1,
        deployPatch: JSON.stringify({
          spec: {
            template: { spec: { containers: [{ name: 'cloudflared', resources: { requests: { cpu: '50m' } } }] } },
          },
        }),
      },
    });
    await eventually('the Deployment updated', async () => {
      const d = await deployment(t);
      const r = d?.spec?.template.spec?.containers[0]?.resources;
      return (
        d?.spec?.replicas === 1 && r?.requests?.cpu === '50m' && !r.limits && !d.spec.template.spec?.priorityClassName
      );
    });

    // A patch Kubernetes refuses is shown on the Tunnel, naming the field.
    await k.mergePatch(tunnelRef(t), {
      spec: { deployPatch: '{"spec": {"template": {"spec": {"containers": [{"name": "cloudflared", "image": ""}]}}}}' },
    });
    await eventually('the refusal on the Tunnel', async () => {
      const r = await ready('Tunnel', t);
      return r?.status === 'False' && r.reason === 'InvalidSpec' && r.message.includes('spec.deployPatch')
        ? r
        : undefined;
    });
    await k.mergePatch(tunnelRef(t), { spec: { deployPatch: '{}' } });

    // Deleted with the Tunnel (before its tunnel).
    await k.delete(tunnelRef(t));
    await eventually('the Deployment gone', async () => !(await deployment(t)));

    // A Deployment of the Tunnel's name that is not its own: never changed or deleted.
    const squat = uniq('conn-squat');
    const foreign = structuredClone(ref);
    foreign.metadata = { name: squat, namespace: ns() };
    const made = await k.create(foreign);
    await k.apply(tunnel(squat, { newTunnel: { name: uniq('cf-squat') } }));
    await eventually('ConnectorConflict', async () => {
      const r = await ready('Tunnel', squat);
      return r?.reason === 'ConnectorConflict' ? r : undefined;
    });
    expect((await deployment(squat))?.metadata?.resourceVersion).toBe(made.metadata?.resourceVersion);
    await k.delete(tunnelRef(squat));
    await eventually('the Tunnel gone', async () => !(await k.get(tunnelRef(squat))));
    expect((await deployment(squat))?.metadata?.uid).toBe(made.metadata?.uid);
  });
  it("a Tunnel migrated from the original: its Deployment, under the original's selector, is replaced — Ready, not InvalidSpec", async () => {
    const t = uniq('migrated');
    // The original's Tunnel and its connector, as the original left them, before this operator runs it.
    await suite.stopWorker();
    let original: V1Deployment;
    try {
      await k.apply(tunnel(t, { newTunnel: { name: uniq('cf-migrated') } }));
      const owner = (await k.get(tunnelRef(t))) as KubernetesObject;
      const labels = {
        'cloudflare-operator.io/tunnel': t,
        'cloudflare-operator.io/app': 'cloudflared',
        'cloudflare-operator.io/id': 'f70ff985-a4ef-4643-bbbc-4a0ed4fc8415',
        'cloudflare-operator.io/name': t,
        'cloudflare-operator.io/domain': zoneName,
        'cloudflare-operator.io/is-cluster-tunnel': 'false',
      };
      original = await k.create<V1Deployment & KubernetesObject>({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: {
          name: t,
          namespace: ns(),
          labels,
          ownerReferences: [
            {
              apiVersion: owner.apiVersion!,
              kind: 'Tunnel',
              name: t,
              uid: owner.metadata!.uid!,
              controller: true,
              blockOwnerDeletion: true,
            },
          ],
        },
        spec: {
          replicas: 1,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              containers: [
                {
                  name: 'cloudflared',
                  image: 'cloudflare/cloudflared:latest',
                  args: ['tunnel', '--no-autoupdate', 'run'],
                },
              ],
            },
          },
        },
      });
    } finally {
      await suite.startWorker();
    }
    const replaced = await eventually(
      "the Deployment replaced under the connector's selector",
      async () => {
        const d = await deployment(t);
        return d &&
          d.metadata?.uid !== original.metadata?.uid &&
          d.spec?.selector?.matchLabels?.['app.kubernetes.io/name']
          ? d
          : undefined;
      },
      { timeoutMs: 120_000 },
    );
    expect(replaced.spec?.selector?.matchLabels).not.toHaveProperty('cloudflare-operator.io/id');
    expect(replaced.spec?.template.spec?.containers[0]?.env).toEqual([
      { name: 'TUNNEL_TOKEN', valueFrom: { secretKeyRef: { name: t, key: 'token' } } },
    ]);
    await eventually('Ready', async () => (await ready('Tunnel', t))?.status === 'True');
    expect((await ready('Tunnel', t))?.reason).not.toBe('InvalidSpec');
    await k.delete(tunnelRef(t));
    await eventually(
      'the Tunnel and its Deployment gone',
      async () => !(await k.get(tunnelRef(t))) && !(await deployment(t)),
    );
  });
  it('a rotated run token rolls the connector: the Pod template carries its checksum', async () => {
    const t = uniq('rotate');
    await k.apply(tunnel(t, { newTunnel: { name: uniq('cf-rotate') } }));
    const checksumOf = async () =>
      (await deployment(t))?.spec?.template.metadata?.annotations?.['cloudflare-operator.io/token-checksum'];
    const before = await eventually('the checksum on the Pod template', checksumOf);
    const tunnelId = (await tunnelStatus(t))!.tunnelId!;
    const rotated = markSecret(randomBytes(32).toString('base64'));
    await suite.fx.cf.zeroTrust.tunnels.cloudflared.edit(tunnelId, { account_id: account, tunnel_secret: rotated });
    // Noticed at the Tunnel's next resolve: a spec change here (the re-registration interval otherwise).
    await k.mergePatch(tunnelRef(t), { spec: { fallbackTarget: 'http_status:503' } });
    const after = await eventually('a new checksum on the Pod template', async () => {
      const c = await checksumOf();
      return c && c !== before ? c : undefined;
    });
    expect(after).toMatch(/^sha256:[0-9a-f]{32}$/);
    const secret = (await k.get({ apiVersion: 'v1', kind: 'Secret', namespace: ns(), name: t })) as {
      data: Record<string, string>;
    };
    const token = Buffer.from(secret.data.token!, 'base64').toString();
    markSecret(token);
    expect(JSON.parse(Buffer.from(token, 'base64').toString()).s).toBe(rotated);
    await k.delete(tunnelRef(t));
    await eventually('the Tunnel gone', async () => !(await k.get(tunnelRef(t))));
  });
  it("without size, the replicas are the scaler's (an HPA, kubectl scale): the re-apply at each resolve keeps them; a size set is kept", async () => {
    const t = uniq('scaled');
    const round = (n: number) => ({ deployPatch: JSON.stringify({ metadata: { annotations: { round: String(n) } } }) });
    await k.apply(tunnel(t, { newTunnel: { name: uniq('cf-scaled') }, ...round(1) }));
    const dep = await eventually('its Deployment', () => deployment(t));
    expect(dep.spec?.replicas).toBe(1); // the apiserver's default
    // Scaled as an HPA or `kubectl scale` does: through the scale subresource, under a manager of its own.
    const apps = k.kc.makeApiClient(AppsV1Api);
    const scale = await apps.readNamespacedDeploymentScale({ name: t, namespace: ns() });
    await apps.replaceNamespacedDeploymentScale({
      name: t,
      namespace: ns(),
      body: { ...scale, spec: { replicas: 3 } },
      fieldManager: 'horizontal-pod-autoscaler',
    });
    // A spec change: the connector is applied again (its annotation shows it), the replicas stay.
    await k.mergePatch(tunnelRef(t), { spec: round(2) });
    const again = await eventually('the Deployment applied again', async () => {
      const d = await deployment(t);
      return d?.metadata?.annotations?.round === '2' ? d : undefined;
    });
    expect(again.spec?.replicas).toBe(3);
    // `size` set: the operator's, kept at that.
    await k.mergePatch(tunnelRef(t), { spec: { size: 2 } });
    await eventually('the size applied', async () => (await deployment(t))?.spec?.replicas === 2);
    await k.delete(tunnelRef(t));
    await eventually('the Tunnel gone', async () => !(await k.get(tunnelRef(t))));
  });

  it("the original's v1alpha1 manifest (size, inline details, zoneId) carrying the original's finalizer: served, run with its size, its binding's CNAME without a zone lookup, deleted cleanly", async () => {
    const t = uniq('v1a1');
    const cfName = uniq('cf-v1a1');
    const v1alpha1 = { apiVersion: `${CLOUDFLARE_GROUP}/v1alpha1`, kind: 'Tunnel', namespace: ns(), name: t };
    // As the original's config/samples/networking_v1alpha1_tunnel.yaml, with credentialsRef (inline
    // credentials alone are refused) and a finalizer the original put on it.
    await k.apply({
      apiVersion: v1alpha1.apiVersion,
      kind: 'Tunnel',
      metadata: { name: t, namespace: ns(), finalizers: ['cloudflare-operator.io/finalizer'] },
      spec: {
        newTunnel: { name: cfName },
        size: 2,
        cloudflare: {
          domain: zoneName,
          zoneId: suite.zoneId,
          email: 'email@example.com',
          accountId: account,
          credentialsRef: { name: creds },
        },
      },
    });
    const read = (await k.get(v1alpha1)) as { spec: { size?: number; cloudflare: Record<string, unknown> } };
    expect(read.spec.size).toBe(2);
    expect(read.spec.cloudflare).toMatchObject({ email: 'email@example.com', zoneId: suite.zoneId });
    await eventually('its connector with 2 replicas', async () => (await deployment(t))?.spec?.replicas === 2);

    const lookups = async () => (await suite.fx.admin.requests({ method: 'GET', path: '^/zones$' })).length;
    const before = await lookups();
    const svc = uniq('svc');
    await k.apply(service(svc, [{ port: 80 }]));
    const b = uniq('bind');
    await k.apply(binding(b, t, [{ name: svc }]));
    await eventually('the binding Ready', async () => (await ready('TunnelBinding', b))?.status === 'True');
    expect((await records()).some((r) => r.name === `${svc}.${zoneName}`)).toBe(true);
    expect(await lookups()).toBe(before); // the zone ID given: no lookup

    await k.delete({
      apiVersion: `${CLOUDFLARE_GROUP}/${TUNNEL_BINDING_VERSION}`,
      kind: 'TunnelBinding',
      namespace: ns(),
      name: b,
    });
    await k.delete(v1alpha1);
    await eventually('deleted, the original finalizer released', async () => !(await k.get(v1alpha1)), {
      timeoutMs: 120_000,
    });
    expect((await cfTunnels(cfName)).every((x) => x.deleted_at)).toBe(true);
  });
});

describe('deleting a tunnel and its sources together', () => {
  it('every finalizer is released and Cloudflare keeps nothing of them (a namespace being deleted does this)', async () => {
    const t = uniq('all');
    const cfName = uniq('cf-all');
    await k.apply(tunnel(t, { newTunnel: { name: cfName } }));
    await k.apply(service('web', [{ port: 80 }]));
    const b = uniq('bind');
    await k.apply(binding(b, t, [{ name: 'web' }]));
    const tunnelId = await eventually('the tunnel', async () => (await tunnelStatus(t))?.tunnelId);
    await eventually('the binding Ready', async () => (await ready('TunnelBinding', b))?.status === 'True');
    await eventually('its CNAME', async () => (await records()).some((r) => r.name === `web.${zoneName}`));

    // A class config with an Ingress on the same tunnel, the Ingress removed before the end (as deploy.test does).
    const cls = uniq('all-class');
    await k.apply(
      sourceObject('TunnelIngressClassConfig', `${cls}-cfg`, { tunnelRef: { kind: 'Tunnel', name: t } }, ns()),
    );
    await k.apply(tunnelIngressClass(cls, `${cls}-cfg`, ns()));
    await k.apply(ingress(`${cls}-ing`, cls, `${cls}.${zoneName}`, [{ path: '/', service: 'web', port: 80 }]));
    await eventually('the Ingress rule', async () =>
      (await configOf(tunnelId)).ingress.some((r) => r.hostname === `${cls}.${zoneName}`),
    );
    await k.delete({ apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', namespace: ns(), name: `${cls}-ing` });
    const cfgRef = {
      apiVersion: CLOUDFLARE_API_VERSION,
      kind: 'TunnelIngressClassConfig',
      namespace: ns(),
      name: `${cls}-cfg`,
    };

    const bindingRef = {
      apiVersion: `${CLOUDFLARE_GROUP}/${TUNNEL_BINDING_VERSION}`,
      kind: 'TunnelBinding',
      namespace: ns(),
      name: b,
    };
    await Promise.all([k.delete(tunnelRef(t)), k.delete(bindingRef), k.delete(cfgRef)]);
    await eventually(
      'all three gone',
      async () => !(await k.get(tunnelRef(t))) && !(await k.get(bindingRef)) && !(await k.get(cfgRef)),
      { timeoutMs: 120_000 },
    );
    expect((await cfTunnels(cfName)).every((x) => x.deleted_at)).toBe(true);
    await eventually('its CNAME removed', async () => !(await records()).some((r) => r.name === `web.${zoneName}`));
  });
});

describe('Gateway API: HTTPRoutes of a TunnelGatewayClassConfig', () => {
  it('the routes attached to Gateways of the class become rules and CNAMEs; removing a route removes them', async () => {
    await installGatewayApiCrds(k);
    const t = uniq('gw-tunnel');
    await k.apply(tunnel(t, { newTunnel: { name: uniq('cf-gw') } }));
    const tunnelId = await eventually('the tunnel', async () => (await tunnelStatus(t))?.tunnelId);
    await k.apply(service('web', [{ port: 80 }]));
    await k.apply(service('shop-api', [{ port: 8443, name: 'https' }]));
    const cfg = uniq('gw-cfg');
    const cls = uniq('gw-class');
    await k.apply(sourceObject('TunnelGatewayClassConfig', cfg, { tunnelRef: { kind: 'Tunnel', name: t } }, ns()));
    await k.apply(tunnelGatewayClass(cls, cfg, ns()));
    await k.apply({
      apiVersion: GATEWAY_API,
      kind: 'Gateway',
      metadata: { name: 'edge', namespace: ns() },
      spec: {
        gatewayClassName: cls,
        listeners: [{ name: 'web', protocol: 'HTTP', port: 80, hostname: `*.${zoneName}` }],
      },
    });
    const shop = `shop.${zoneName}`;
    const route = {
      apiVersion: GATEWAY_API,
      kind: 'HTTPRoute',
      metadata: { name: 'shop', namespace: ns() },
      spec: {
        parentRefs: [{ name: 'edge' }],
        hostnames: [shop],
        rules: [
          {
            matches: [{ path: { type: 'PathPrefix', value: '/cart' } }],
            backendRefs: [{ name: 'shop-api', port: 8443 }],
          },
          { backendRefs: [{ name: 'web', port: 80 }] },
        ],
      },
    };
    await k.apply(route);
    const expected: Rule[] = [
      { hostname: shop, path: '^/cart(/|$)', service: `https://shop-api.${ns()}.svc:8443` },
      { hostname: shop, service: `http://web.${ns()}.svc:80` },
      { service: 'http_status:404' },
    ];
    await eventually(
      'the route in the tunnel configuration',
      async () => JSON.stringify((await configOf(tunnelId)).ingress) === JSON.stringify(expected),
      { timeoutMs: 120_000 },
    );
    await eventually('its CNAME', async () =>
      (await records()).some((r) => r.name === shop && r.content === `${tunnelId}.cfargotunnel.com`),
    );
    await eventually('the class config Ready, counting its Gateway and route', async () => {
      const obj = (await k.get({
        apiVersion: CLOUDFLARE_API_VERSION,
        kind: 'TunnelGatewayClassConfig',
        namespace: ns(),
        name: cfg,
      })) as
        | {
            status?: {
              gatewayCount?: number;
              routeCount?: number;
              tunnelId?: string;
              conditions?: Array<{ type: string; status: string }>;
            };
          }
        | undefined;
      const st = obj?.status;
      return (
        st?.gatewayCount === 1 &&
        st.routeCount === 1 &&
        st.tunnelId === tunnelId &&
        st.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')
      );
    });

    await k.delete({ apiVersion: GATEWAY_API, kind: 'HTTPRoute', namespace: ns(), name: 'shop' });
    await eventually(
      'the route gone from the configuration',
      async () =>
        JSON.stringify((await configOf(tunnelId)).ingress) === JSON.stringify([{ service: 'http_status:404' }]),
    );
    await eventually('its CNAME removed', async () => !(await records()).some((r) => r.name === shop));
    await k.delete({
      apiVersion: CLOUDFLARE_API_VERSION,
      kind: 'TunnelGatewayClassConfig',
      namespace: ns(),
      name: cfg,
    });
    await k.delete(tunnelRef(t));
    await eventually('the Tunnel released', async () => !(await k.get(tunnelRef(t))));
  });
});

describe('hostnames of several zones on one tunnel (adyanth/cloudflare-operator#60)', () => {
  it("each hostname's CNAME goes to the zone that holds it; moving or removing a hostname removes its record there; a hostname no zone of the credentials holds is named on the status", async () => {
    const zone2 = `${uniq('tun2')}.example`;
    const elsewhere = `${uniq('tun3')}.example`; // a zone of another account: not visible to the credentials
    const seeded = await suite.fx.admin.seed({
      accounts: [{ id: hexId(), name: 'someone else' }],
      zones: [{ name: zone2, account_id: account }],
    });
    const zone2Id = seeded.zones[0]!.id;
    const other = seeded.accounts[0]!.id;
    await suite.fx.admin.seed({ zones: [{ name: elsewhere, account_id: other }] });
    const records2 = () => zoneRecords(suite.fx.cf, zone2Id);

    const t = uniq('zones');
    await k.apply(tunnel(t, { newTunnel: { name: uniq('cf-zones') } }));
    const tunnelId = await eventually('the tunnel', async () => (await tunnelStatus(t))?.tunnelId);
    const cname = `${tunnelId}.cfargotunnel.com`;
    await k.apply(service('web', [{ port: 80 }]));
    const one = `one.${zoneName}`;
    const two = `two.${zone2}`;
    const three = `three.${elsewhere}`;
    const b = uniq('bind-zones');
    const subject = (fqdn: string) => ({ name: 'web', spec: { fqdn } });
    await k.apply(binding(b, t, [subject(one), subject(two), subject(three)]));

    const cnameAt = (rs: Array<{ name: string; type: string; content?: string }>, host: string) =>
      rs.some((r) => r.name === host && r.type === 'CNAME' && r.content === cname);
    await eventually(
      'each CNAME in its own zone',
      async () => cnameAt(await records(), one) && cnameAt(await records2(), two),
      {
        timeoutMs: 60_000,
      },
    );
    expect((await records()).some((r) => r.name === two)).toBe(false);
    // An Ingress of a class config on the same tunnel: its host's CNAME in the second zone too.
    const cls = uniq('zones-class');
    const fromIngress = `ing.${zone2}`;
    await k.apply(
      sourceObject('TunnelIngressClassConfig', `${cls}-cfg`, { tunnelRef: { kind: 'Tunnel', name: t } }, ns()),
    );
    await k.apply(tunnelIngressClass(cls, `${cls}-cfg`, ns()));
    await k.apply(ingress(`${cls}-ing`, cls, fromIngress, [{ path: '/', service: 'web', port: 80 }]));
    await eventually("the Ingress host's CNAME in its zone", async () => cnameAt(await records2(), fromIngress), {
      timeoutMs: 60_000,
    });
    const status = await eventually('the hostname without a zone named on the status', async () => {
      const c = await ready('TunnelBinding', b);
      return c?.reason === 'SyncedWithoutDNS' ? c : undefined;
    });
    expect(status.status).toBe('True');
    expect(status.message).toContain(`${three} (no zone CloudflareCredentials ${creds} can see holds it)`);
    // Every rule is in the tunnel's configuration: only that CNAME is missing. (The configuration
    // is another target than the CNAMEs: the Ingress's rule may land after its CNAME.)
    const all = [three, one, two, fromIngress].sort();
    const hosts = async () => (await configOf(tunnelId)).ingress.map((r) => r.hostname ?? '').filter(Boolean);
    await eventually('every rule in the configuration', async () => (await hosts()).length === all.length);
    expect((await hosts()).sort()).toEqual(all);

    // `one` moves to the second zone, `two` and `three` go: the first zone keeps nothing of the binding.
    const moved = `one.${zone2}`;
    await k.apply(binding(b, t, [subject(moved)]));
    await eventually(
      'the moved CNAME in its new zone only, the removed one gone',
      async () => {
        const [rs1, rs2] = [await records(), await records2()];
        return !rs1.some((r) => r.name === one) && cnameAt(rs2, moved) && !rs2.some((r) => r.name === two);
      },
      { timeoutMs: 60_000 },
    );
    await eventually('Synced', async () => (await ready('TunnelBinding', b))?.reason === 'Synced');

    await k.delete({ apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', namespace: ns(), name: `${cls}-ing` });
    await eventually(
      "the Ingress host's CNAME removed",
      async () => !(await records2()).some((r) => r.name === fromIngress),
    );
    await k.delete({
      apiVersion: CLOUDFLARE_API_VERSION,
      kind: 'TunnelIngressClassConfig',
      namespace: ns(),
      name: `${cls}-cfg`,
    });
    const bindingRef = {
      apiVersion: `${CLOUDFLARE_GROUP}/${TUNNEL_BINDING_VERSION}`,
      kind: 'TunnelBinding',
      namespace: ns(),
      name: b,
    };
    await k.delete(bindingRef);
    await eventually('the binding released', async () => !(await k.get(bindingRef)));
    expect((await records2()).some((r) => r.name === moved)).toBe(false);
    await k.delete(tunnelRef(t));
    await eventually('the Tunnel released', async () => !(await k.get(tunnelRef(t))));
  });
});
