/**
 * `originRequest` as Cloudflare types it (N9) and the original operator's `cloudflare.com/*`
 * Ingress annotations, from the migrating user's side: the original's own sample
 * (`defaultOriginRequest.connectTimeout: 30s`) goes out as 30 seconds, Cloudflare (the emulator,
 * through the real SDK) refuses `"30s"`, and a read-back 30 plans no write.
 */
import { describe, expect, it } from 'vitest';
import { emulatorThroughSdk } from '../support/emulator-unit.js';
import { ingressRules, readIngressAnnotations, wireOriginRequest } from '../../src/domain/cloudflare/tunnels.js';
import { tunnelConfigurationAdapter } from '../../src/activities/cloudflare/targets/tunnel-configuration.js';
import { tunnelIngressClassConfigRules } from '../../src/domain/cloudflare/kinds/tunnels.js';
import { workflowView } from '../../src/activities/cloudflare/expand.js';
import type { RegisteredSource } from '../../src/domain/cloudflare/aggregate.js';

const account = 'a'.repeat(32);
const sdk = emulatorThroughSdk(account);

describe('originRequest durations (N9)', () => {
  it('go out in seconds, as numbers', () => {
    expect(
      wireOriginRequest({ connectTimeout: '30s', tlsTimeout: '1m30s', keepAliveTimeout: '500ms', noTlsVerify: true }),
    ).toEqual({ connectTimeout: 30, tlsTimeout: 90, keepAliveTimeout: 0.5, noTLSVerify: true });
  });

  it('compare equal to what Cloudflare answers: no write when it holds 30', () => {
    const config = {
      ingress: [{ hostname: 'a.example.com', service: 'http://a.default.svc:80' }],
      defaultOriginRequest: { connectTimeout: '30s' },
    };
    const rules = ingressRules(
      [
        {
          namespace: 'default',
          name: 'a',
          rules: [
            { host: 'a.example.com', http: { paths: [{ backend: { service: { name: 'a', port: { number: 80 } } } }] } },
          ],
        },
      ],
      {},
      { protocol: 'http', originRequest: config.defaultOriginRequest },
    ).rules;
    const source = {
      ref: { kind: 'TunnelIngressClassConfig', namespace: 'default', name: 'c' },
      priority: 100,
      config: { rules },
    } as unknown as RegisteredSource;
    const live = {
      ingress: [
        {
          hostname: 'a.example.com',
          service: 'http://a.default.svc:80',
          originRequest: { connectTimeout: 30 },
        },
        { service: 'http_status:404' },
      ],
    };
    const { plan } = tunnelConfigurationAdapter.planWhole!([live], [source], 'c1');
    expect(plan.write).toBe(false);
  });

  it('the emulator refuses a duration string where Cloudflare has seconds, through the SDK', async () => {
    const tunnel = await sdk.cf.zeroTrust.tunnels.cloudflared.create({
      account_id: account,
      name: 'n9',
      config_src: 'cloudflare',
    });
    const put = (originRequest: Record<string, unknown>) =>
      sdk.cf.zeroTrust.tunnels.cloudflared.configurations.update(tunnel.id!, {
        account_id: account,
        config: {
          ingress: [
            { hostname: 'a.example.com', service: 'http://a:80', originRequest },
            { service: 'http_status:404' },
          ],
        } as never,
      });
    await expect(put({ connectTimeout: '30s' })).rejects.toMatchObject({ status: 400 });
    await expect(put({ noTLSVerify: 'true' })).rejects.toMatchObject({ status: 400 });
    const ok = await put({ connectTimeout: 30, noTLSVerify: true });
    expect(ok.config?.ingress?.[0]?.originRequest).toEqual({ connectTimeout: 30, noTLSVerify: true });
  });
});

describe("the original's cloudflare.com/* Ingress annotations", () => {
  const svc = { name: 'web', port: { number: 8443 } };
  const ingress = (annotations: Record<string, string>, host = 'web.example.com') => ({
    namespace: 'apps',
    name: 'web',
    annotations,
    rules: [{ host, http: { paths: [{ backend: { service: svc } }] } }],
  });
  const rulesOf = (annotations: Record<string, string>) =>
    ingressRules([ingress(annotations)], {}, { protocol: 'http', originRequest: { connectTimeout: '10s' } });

  it('protocol, then protocol-<port>, choose the scheme', () => {
    expect(rulesOf({ 'cloudflare.com/protocol': 'https' }).rules[0]!.service).toBe('https://web.apps.svc:8443');
    expect(rulesOf({ 'cloudflare.com/protocol-8443': 'https' }).rules[0]!.service).toBe('https://web.apps.svc:8443');
    expect(rulesOf({ 'cloudflare.com/protocol-9000': 'https' }).rules[0]!.service).toBe('http://web.apps.svc:8443');
  });

  it('every origin setting, over the class defaults, with durations in seconds', () => {
    const { rules, notes } = rulesOf({
      'cloudflare.com/no-tls-verify': 'true',
      'cloudflare.com/http2-origin': 'true',
      'cloudflare.com/ca-pool': 'ca.crt',
      'cloudflare.com/proxy-address': '127.0.0.1',
      'cloudflare.com/proxy-port': '1080',
      'cloudflare.com/proxy-type': 'socks',
      'cloudflare.com/connect-timeout': '30s',
      'cloudflare.com/tls-timeout': '5s',
      'cloudflare.com/keep-alive-timeout': '1m',
      'cloudflare.com/keep-alive-connections': '7',
      'cloudflare.com/origin-server-name': 'origin.internal',
      'cloudflare.com/http-host-header': 'web.internal',
      'cloudflare.com/disable-chunked-encoding': 'true',
      'cloudflare.com/bastion-mode': 'false',
    });
    expect(notes).toEqual([]);
    expect(rules[0]!.originRequest).toEqual({
      noTLSVerify: true,
      http2Origin: true,
      caPool: '/etc/cloudflared/certs/ca.crt',
      proxyAddress: '127.0.0.1',
      proxyPort: 1080,
      proxyType: 'socks',
      connectTimeout: 30,
      tlsTimeout: 5,
      keepAliveTimeout: 60,
      keepAliveConnections: 7,
      originServerName: 'origin.internal',
      httpHostHeader: 'web.internal',
      disableChunkedEncoding: true,
      bastionMode: false,
    });
  });

  it('a value that cannot be read is named, not ignored in silence', () => {
    const { notes, rules } = rulesOf({ 'cloudflare.com/connect-timeout': 'soon', 'cloudflare.com/protocol': 'gopher' });
    expect(notes).toEqual([
      'Ingress apps/web: annotation cloudflare.com/protocol: "gopher" is not one of http, https, tcp, udp, ssh, rdp, smb, ws, wss, h2mux (ignored)',
      'Ingress apps/web: annotation cloudflare.com/connect-timeout: "soon" is not a duration (30s, 1m30s) (ignored)',
    ]);
    expect(rules[0]!.originRequest).toEqual({ connectTimeout: 10 });
    expect(readIngressAnnotations({ 'cloudflare.com/disable-dns': 'yes' }).problems).toHaveLength(1);
  });

  it("the class config's status names them (the workflow's slim view keeps them)", () => {
    const view = {
      tunnelRef: { kind: 'ClusterTunnel', name: 't' },
      namespace: 'apps',
      tunnel: { kind: 'ClusterTunnel', name: 't', tunnelId: 'tid' },
      ingresses: [ingress({ 'cloudflare.com/http2-origin': 'maybe' })],
      services: {},
    };
    const slim = workflowView('TunnelIngressClassConfig', view as never) as never;
    expect(tunnelIngressClassConfigRules.statusFields!(slim)).toMatchObject({
      skipped: ['Ingress apps/web: annotation cloudflare.com/http2-origin: "maybe" is not true or false (ignored)'],
    });
  });

  it('disable-dns leaves the hostname without a CNAME; dns-proxied sets its proxied', () => {
    const spec = {
      tunnelRef: { kind: 'ClusterTunnel' as const, name: 't' },
      namespace: 'apps',
      tunnel: { kind: 'ClusterTunnel' as const, name: 't', tunnelId: 'tid', domain: 'example.com' },
      ingresses: [
        ingress({ 'cloudflare.com/disable-dns': 'true' }, 'off.example.com'),
        ingress({ 'cloudflare.com/dns-proxied': 'false' }, 'grey.example.com'),
        ingress({}, 'on.example.com'),
      ],
      services: {},
    };
    expect(tunnelIngressClassConfigRules.dnsHostnames!(spec)).toEqual(['grey.example.com', 'on.example.com']);
    const target = { resourceType: 'TunnelDNS' as const, accountId: account, zoneId: 'z', zone: 'example.com' };
    const dns = tunnelIngressClassConfigRules.contribution(spec, target, {} as never) as {
      entries: Array<{ name: string; proxied: boolean }>;
    };
    expect(dns.entries.map((e) => [e.name, e.proxied])).toEqual([
      ['on.example.com', true],
      ['grey.example.com', false],
    ]);
  });
});
