/**
 * Migrating from the original operator (StringKe/cloudflare-operator), from the user's side: what
 * its install leaves behind — its finalizers on an Ingress, a Gateway, the tunnel's Secret, the
 * CloudflareCredentials and its own SyncStates; a tunnel CNAME with its `_managed.` TXT record;
 * `cloudflare.com/*` annotations on Ingresses — is taken over when this operator starts: the
 * CNAME becomes ours and the TXT goes, the annotations are honoured, and deleting the Ingress, the
 * Secret, the namespace, the SyncState and the credentials completes. Real Temporal,
 * kube-apiserver (+ garbage collector and namespace controller) and etcd; Cloudflare is the
 * emulator, read only through the official SDK.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { CLOUDFLARE_API_VERSION, CloudflareSyncStateKind } from '../../src/api/cloudflare.js';
import { ownershipOf } from '../../src/domain/cloudflare/markers.js';
import { eventually, uniq } from '../support/env.js';
import {
  createCredentials,
  cloudflareSuite,
  hexId,
  sourceObject,
  tunnelIngressClass,
  zoneRecords,
} from '../support/cloudflare.js';
import { GATEWAY_API, installGatewayApiCrds, tunnelGatewayClass } from '../support/gateway-api.js';

const account = hexId();
const zoneName = `${uniq('mig')}.example`;
const suite = cloudflareSuite({
  taskQueue: 'cf-mig',
  namespace: 'cf-mig',
  account: { id: account, name: 'migration' },
  zone: zoneName,
  configOverrides: { debounceMs: 200 },
});
const { k } = suite;

interface Rule {
  hostname?: string;
  service: string;
  originRequest?: Record<string, unknown>;
}

const finalizersOf = async (ref: { apiVersion: string; kind: string; name: string; namespace?: string }) =>
  (await k.get(ref))?.metadata?.finalizers ?? [];

describe('an install of the original operator is taken over', () => {
  it('its finalizers released, its CNAME ours and its TXT gone, its annotations honoured; every deletion completes', async () => {
    await installGatewayApiCrds(k);
    await suite.stopWorker(); // the original's objects are there before this operator runs
    const ns = uniq('cf-mig-app');
    await k.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });

    // The tunnel the original made, and its CNAME + `_managed.` TXT for one Ingress's host.
    const cfName = uniq('cf-mig-tunnel');
    const made = await suite.fx.cf.zeroTrust.tunnels.cloudflared.create({
      account_id: account,
      name: cfName,
      config_src: 'cloudflare',
    });
    const tunnelId = made.id!;
    const host = `app.${zoneName}`;
    const cname = await suite.fx.cf.dns.records.create({
      zone_id: suite.zoneId,
      type: 'CNAME',
      name: host,
      content: `${tunnelId}.cfargotunnel.com`,
      proxied: true,
      ttl: 1,
      comment: 'Managed by cloudflare-operator',
    });
    await suite.fx.cf.dns.records.create({
      zone_id: suite.zoneId,
      type: 'TXT',
      name: `_managed.${host}`,
      content: JSON.stringify({ DnsId: cname.id, TunnelName: cfName, TunnelId: tunnelId }),
      ttl: 1,
      comment: 'Managed by cloudflare-operator',
    });

    // Its credentials (the original's finalizer on them), with credentialsRef added to its manifests.
    const creds = uniq('cf-mig-creds');
    await createCredentials(k, { name: creds, namespace: suite.namespace, accountId: account });
    const credsRef = { apiVersion: CLOUDFLARE_API_VERSION, kind: 'CloudflareCredentials', name: creds };
    await k.mergePatch(credsRef, { metadata: { finalizers: ['cloudflare.com/credentials-finalizer'] } });

    // Its Tunnel (its finalizer) and the Tunnel's Secret (owned by it, the original's finalizer).
    const t = 'tunnel';
    const tunnelRef = { apiVersion: CLOUDFLARE_API_VERSION, kind: 'Tunnel', namespace: ns, name: t };
    const tunnel: KubernetesObject = await k.apply({
      ...sourceObject(
        'Tunnel',
        t,
        {
          existingTunnel: { id: tunnelId, name: cfName },
          cloudflare: { credentialsRef: { name: creds }, domain: zoneName, accountId: account, email: 'e@x.example' },
        },
        ns,
      ),
      metadata: { name: t, namespace: ns, finalizers: ['cloudflare-operator.io/finalizer'] },
    });
    const secretRef = { apiVersion: 'v1', kind: 'Secret', namespace: ns, name: t };
    await k.create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: t,
        namespace: ns,
        finalizers: [`cloudflare-operator.io/secret-finalizer-${t}`],
        ownerReferences: [
          { apiVersion: CLOUDFLARE_API_VERSION, kind: 'Tunnel', name: t, uid: tunnel.metadata!.uid!, controller: true },
        ],
      },
      stringData: { 'credentials.json': '{}' },
    } as never);

    // Its ingress class (the original's sample config, durations as it wrote them) and two Ingresses.
    const cls = uniq('cf-mig-class');
    await k.apply(
      sourceObject(
        'TunnelIngressClassConfig',
        'cfg',
        {
          tunnelRef: { kind: 'Tunnel', name: t },
          dnsManagement: 'Automatic',
          defaultOriginRequest: { connectTimeout: '30s', noTlsVerify: false },
        },
        ns,
      ),
    );
    await k.apply(tunnelIngressClass(cls, 'cfg', ns));
    await k.apply({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: ns },
      spec: { ports: [{ port: 8443, targetPort: 8443 }] },
    });
    const ingress = (name: string, hostname: string, annotations: Record<string, string>, finalizers: string[]) => ({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name, namespace: ns, annotations, finalizers },
      spec: {
        ingressClassName: cls,
        rules: [
          {
            host: hostname,
            http: {
              paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 8443 } } } }],
            },
          },
        ],
      },
    });
    const appRef = { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', namespace: ns, name: 'app' };
    await k.create(
      ingress(
        'app',
        host,
        {
          'cloudflare.com/protocol': 'https',
          'cloudflare.com/no-tls-verify': 'true',
          'cloudflare.com/connect-timeout': '10s',
        },
        ['ingress.cloudflare-operator.io/finalizer'],
      ),
    );
    const quiet = `quiet.${zoneName}`;
    await k.create(ingress('quiet', quiet, { 'cloudflare.com/disable-dns': 'true' }, []));

    // Its gateway class and a Gateway of it (the original's finalizer).
    const gwc = uniq('cf-mig-gwc');
    await k.apply(sourceObject('TunnelGatewayClassConfig', 'gw-cfg', { tunnelRef: { kind: 'Tunnel', name: t } }, ns));
    await k.apply(tunnelGatewayClass(gwc, 'gw-cfg', ns));
    const gatewayRef = { apiVersion: GATEWAY_API, kind: 'Gateway', namespace: ns, name: 'gw' };
    await k.create({
      apiVersion: GATEWAY_API,
      kind: 'Gateway',
      metadata: { name: 'gw', namespace: ns, finalizers: ['gateway.cloudflare-operator.io/finalizer'] },
      spec: { gatewayClassName: gwc, listeners: [{ name: 'http', protocol: 'HTTP', port: 80 }] },
    } as never);

    // One of its own SyncStates, with its finalizer.
    const syncStateRef = {
      apiVersion: CloudflareSyncStateKind.apiVersion,
      kind: 'CloudflareSyncState',
      name: uniq('tunnel-configuration'),
    };
    await k.create({
      ...syncStateRef,
      metadata: { name: syncStateRef.name, finalizers: ['tunnelconfig.sync.cloudflare-operator.io/finalizer'] },
      spec: {
        resourceType: 'TunnelConfiguration',
        cloudflareId: tunnelId,
        accountId: account,
        credentialsRef: { name: creds },
      },
    } as never);

    // This operator starts.
    await suite.startWorker();

    // The CNAME is ours (same record), its TXT gone; the disabled host has none.
    const records = () => zoneRecords(suite.fx.cf, suite.zoneId);
    await eventually(
      'the CNAME taken over, the TXT removed',
      async () => {
        const all = await records();
        const taken = all.find((r) => r.id === cname.id);
        return ownershipOf(taken?.comment, 'default').owner === 'ours' &&
          !all.some((r) => r.name === `_managed.${host}`)
          ? all
          : undefined;
      },
      { timeoutMs: 120_000 },
    );
    expect(ownershipOf((await records()).find((r) => r.id === cname.id)?.comment, 'default')).toMatchObject({
      ref: { kind: 'TunnelIngressClassConfig', namespace: ns, name: 'cfg' },
    });

    // The annotations: https, no TLS verification, 10 s over the class's 30 s; disable-dns honoured.
    const config = async () =>
      (
        (await suite.fx.cf.zeroTrust.tunnels.cloudflared.configurations.get(tunnelId, { account_id: account })) as {
          config?: { ingress?: Rule[] } | null;
        }
      ).config?.ingress ?? [];
    const rules = await eventually('both Ingresses routed', async () => {
      const r = await config();
      return r.some((x) => x.hostname === quiet) && r.some((x) => x.hostname === host) ? r : undefined;
    });
    expect(rules.find((r) => r.hostname === host)).toMatchObject({
      service: `https://web.${ns}.svc:8443`,
      originRequest: { noTLSVerify: true, connectTimeout: 10 },
    });
    expect(rules.find((r) => r.hostname === quiet)?.originRequest).toMatchObject({ connectTimeout: 30 });
    expect((await records()).some((r) => r.name === quiet)).toBe(false);

    // Every original finalizer released.
    await eventually('the Ingress released', async () => !(await finalizersOf(appRef)).length);
    await eventually('the Gateway released', async () => !(await finalizersOf(gatewayRef)).length);
    await eventually('the Secret released', async () => !(await finalizersOf(secretRef)).length);
    await eventually('the credentials released', async () => !(await finalizersOf(credsRef)).length);
    await eventually('the SyncState released', async () => !(await finalizersOf(syncStateRef)).length);

    // Deleting completes: the Ingress (its CNAME goes), the Secret, the namespace, the SyncState, the credentials.
    await k.delete(appRef);
    await eventually('the Ingress gone', async () => !(await k.get(appRef)));
    await eventually('its CNAME removed', async () => !(await records()).some((r) => r.name === host));
    await k.delete(secretRef);
    await eventually('the Secret gone', async () => !(await k.get(secretRef)));
    await k.delete({ apiVersion: 'v1', kind: 'Namespace', name: ns });
    await eventually(
      'the namespace gone',
      async () => !(await k.get({ apiVersion: 'v1', kind: 'Namespace', name: ns })),
      {
        timeoutMs: 180_000,
      },
    );
    expect(await k.get(tunnelRef)).toBeUndefined();
    await k.delete(syncStateRef);
    await eventually('the SyncState gone', async () => !(await k.get(syncStateRef)));
    await k.delete(credsRef);
    await eventually('the credentials gone', async () => !(await k.get(credsRef)));
  });
});
