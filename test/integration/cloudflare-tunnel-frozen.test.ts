/**
 * Frozen sources in a target owned whole (a tunnel's configuration, whose rules carry no marker):
 * a source whose spec became invalid, or that was deleted with deletion policy Orphan, keeps
 * contributing what it last contributed — in its own place among equal priorities, and however
 * large the recorded configurations have grown. Real Temporal, kube-apiserver and etcd;
 * Cloudflare is the emulator, read only through the official SDK.
 */
import { describe, expect, it } from 'vitest';
import { CLOUDFLARE_API_VERSION, CLOUDFLARE_GROUP, type CloudflareSyncState } from '../../src/api/cloudflare.js';
import { TUNNEL_BINDING_VERSION } from '../../src/api/cloudflare-tunnels.js';
import { syncStateName } from '../../src/domain/cloudflare/targets.js';
import { eventually, uniq } from '../support/env.js';
import { cloudflareSuite, hexId, sourceObject } from '../support/cloudflare.js';

const account = hexId();
const creds = uniq('cf-frz-acct');
const zoneName = `${uniq('frz')}.example`;
const suite = cloudflareSuite({
  taskQueue: 'cf-frz',
  namespace: 'cf-frz',
  account: { id: account, name: 'frozen' },
  zone: zoneName,
  credentials: { name: creds },
  configOverrides: { debounceMs: 200 },
});
const { k } = suite;
const ns = () => suite.namespace;

interface Rule {
  hostname?: string;
  path?: string;
  service: string;
}
interface Subject {
  name: string;
  spec: { fqdn: string; target: string; path?: string; protocol?: string };
}

const bindingRef = (name: string) => ({
  apiVersion: `${CLOUDFLARE_GROUP}/${TUNNEL_BINDING_VERSION}`,
  kind: 'TunnelBinding',
  namespace: ns(),
  name,
});
/** A binding of `subjects` to the tunnel, DNS left alone (the hostnames need no CNAME here). */
const binding = (name: string, tunnel: string, subjects: Subject[], annotations?: Record<string, string>) => ({
  apiVersion: `${CLOUDFLARE_GROUP}/${TUNNEL_BINDING_VERSION}`,
  kind: 'TunnelBinding',
  metadata: { name, namespace: ns(), ...(annotations ? { annotations } : {}) },
  subjects,
  tunnelRef: { kind: 'Tunnel', name: tunnel, disableDNSUpdates: true },
});
const bindingReady = async (name: string) =>
  (
    (await k.get(bindingRef(name))) as
      { status?: { conditions?: Array<{ type: string; status: string; reason: string }> } } | undefined
  )?.status?.conditions?.find((c) => c.type === 'Ready');

async function rulesOf(tunnelId: string): Promise<Rule[]> {
  const c = (await suite.fx.cf.zeroTrust.tunnels.cloudflared.configurations.get(tunnelId, {
    account_id: account,
  })) as { config?: { ingress?: Rule[] } | null };
  return c.config?.ingress ?? [];
}
const serviceOf = async (tunnelId: string, hostname: string) =>
  (await rulesOf(tunnelId)).find((r) => r.hostname === hostname)?.service;

/** A Tunnel of its own, created and active; its id. */
async function newTunnel(): Promise<{ name: string; id: string }> {
  const name = uniq('frz-tunnel');
  await k.apply(
    sourceObject(
      'Tunnel',
      name,
      { cloudflare: { credentialsRef: { name: creds }, domain: zoneName }, newTunnel: { name: uniq('cf-frz') } },
      ns(),
    ),
  );
  const id = await eventually('the tunnel created', async () => {
    const s = (
      (await k.get({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'Tunnel', namespace: ns(), name })) as
        { status?: { tunnelId?: string; state?: string } } | undefined
    )?.status;
    return s?.state === 'active' ? s.tunnelId : undefined;
  });
  return { name, id };
}

/** Another team's change to the tunnel: a sync that re-aggregates every source. */
async function someoneElsesChange(tunnel: { name: string; id: string }): Promise<void> {
  const name = uniq('other');
  const host = `${name}.${zoneName}`;
  await k.apply(binding(name, tunnel.name, [{ name, spec: { fqdn: host, target: 'http://10.9.9.9:80' } }]));
  await eventually(`${host} in the configuration`, async () => (await serviceOf(tunnel.id, host)) !== undefined);
}

describe('a frozen source in a tunnel configuration', () => {
  it('an invalid, then orphaned, loser of a shared hostname does not take it over: the rule routes where it did', async () => {
    const tunnel = await newTunnel();
    const shared = `shared.${zoneName}`;
    const own = `own.${zoneName}`;
    // Equal priority (bindings, 100): the older wins. The loser's name sorts first, so a loser
    // placed before its real creation time takes the hostname.
    const winner = uniq('z-first');
    const loser = uniq('a-second');
    await k.apply(binding(winner, tunnel.name, [{ name: 'a', spec: { fqdn: shared, target: 'http://10.0.0.1:80' } }]));
    await eventually(
      'the winner routes the shared hostname',
      async () => (await serviceOf(tunnel.id, shared)) !== undefined,
    );
    const loserSubjects: Subject[] = [
      { name: 'b', spec: { fqdn: shared, target: 'http://10.0.0.2:80' } },
      { name: 'b-own', spec: { fqdn: own, target: 'http://10.0.0.2:81' } },
    ];
    await k.apply(binding(loser, tunnel.name, loserSubjects));
    await eventually('the loser’s own hostname routed', async () => (await serviceOf(tunnel.id, own)) !== undefined);
    await eventually(
      'the loser told of the conflict',
      async () => (await bindingReady(loser))?.reason === 'SyncedWithConflicts',
    );
    expect(await serviceOf(tunnel.id, shared)).toBe('http://10.0.0.1:80');

    // The loser's spec becomes invalid; the next sync (another team's change) keeps what it had.
    const invalid = [loserSubjects[0]!, { name: 'b-own', spec: { ...loserSubjects[1]!.spec, protocol: 'bogus' } }];
    await k.apply(binding(loser, tunnel.name, invalid));
    await eventually('the loser InvalidSpec', async () => (await bindingReady(loser))?.reason === 'InvalidSpec');
    await someoneElsesChange(tunnel);
    expect(await serviceOf(tunnel.id, shared)).toBe('http://10.0.0.1:80');
    expect(await serviceOf(tunnel.id, own)).toBe('http://10.0.0.2:81');

    // Deleted with deletion policy Orphan: its items stay for good, still behind the winner.
    await k.apply(binding(loser, tunnel.name, invalid, { 'cloudflare-operator.io/deletion-policy': 'Orphan' }));
    await k.delete(bindingRef(loser));
    await eventually('the loser released', async () => !(await k.get(bindingRef(loser))));
    await someoneElsesChange(tunnel);
    expect(await serviceOf(tunnel.id, shared)).toBe('http://10.0.0.1:80');
    expect(await serviceOf(tunnel.id, own)).toBe('http://10.0.0.2:81');
  });

  it('past 256 KiB of recorded configurations, a source that becomes invalid keeps every rule it had', async () => {
    const tunnel = await newTunnel();
    // Five rules whose path regexes (≈ 64 KiB each) take the recorded configurations past 256 KiB.
    const subjects: Subject[] = Array.from({ length: 5 }, (_, i) => ({
      name: `big-${i}`,
      spec: {
        fqdn: `big-${i}.${zoneName}`,
        target: `http://10.0.1.${i}:80`,
        path: `^/(${Array.from({ length: 8_000 }, (_, j) => `p${i}x${j}`).join('|')})$`,
      },
    }));
    expect(JSON.stringify(subjects).length).toBeGreaterThan(256 * 1024);
    const big = uniq('big');
    await k.apply(binding(big, tunnel.name, subjects));
    /** A rule, its long path shortened (a failure shows what differs, not 300 KiB). */
    const brief = (r: Rule) => ({
      hostname: r.hostname,
      path: `${r.path?.slice(0, 12)}…(${r.path?.length})`,
      service: r.service,
    });
    const wanted = subjects.map((s) => brief({ hostname: s.spec.fqdn, path: s.spec.path!, service: s.spec.target }));
    const mine = async () => (await rulesOf(tunnel.id)).filter((r) => r.hostname?.startsWith('big-')).map(brief);
    await eventually('the five rules in Cloudflare', async () => (await mine()).length === 5, { timeoutMs: 120_000 });
    await eventually('Synced', async () => (await bindingReady(big))?.reason === 'Synced');

    const invalid = subjects.map((s, i) => (i === 0 ? { ...s, spec: { ...s.spec, protocol: 'bogus' } } : s));
    await k.apply(binding(big, tunnel.name, invalid));
    await eventually('InvalidSpec', async () => (await bindingReady(big))?.reason === 'InvalidSpec');
    await someoneElsesChange(tunnel);
    expect(
      (await mine()).sort((a, b) => a.hostname!.localeCompare(b.hostname!)),
      'the invalid source’s rules are still there, unchanged',
    ).toEqual(wanted);

    // Recorded packed, not dropped.
    const state = await k.get<CloudflareSyncState>({
      apiVersion: CLOUDFLARE_API_VERSION,
      kind: 'CloudflareSyncState',
      name: syncStateName({ resourceType: 'TunnelConfiguration', accountId: account, tunnelId: tunnel.id }),
    });
    expect(state?.spec.packedConfigs).toBeDefined();
    expect(state!.spec.packedConfigs!.length).toBeLessThan(JSON.stringify(subjects).length / 2);
    expect(state!.spec.sources!.every((s) => JSON.stringify(s.config) === '{}')).toBe(true);
  });
});
