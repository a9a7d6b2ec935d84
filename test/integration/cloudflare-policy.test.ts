/**
 * The credentials' rules hold at every place a source's spec is read (issue 33: N2, N3, N5, N13),
 * written from the side of a team that tries to get past them: a Tunnel's domain is a zone
 * `allowedZones` must list; a priority or an adoption the namespace was not granted is refused by
 * the webhook and, when the webhook did not see the edit, changes nothing at the target (which
 * reads the spec again on every sync). "The webhook did not see it" is made real by excluding the
 * attacker's namespace from the Cloudflare webhook for one write — as an install without the
 * webhook, or one where it was down, would be.
 * Real Temporal, kube-apiserver and etcd; Cloudflare is the emulator, read through the SDK.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { CLOUDFLARE_WEBHOOK_NAME, WEBHOOK_CONFIGURATION_NAME } from '../../src/admission/webhook.js';
import { CLOUDFLARE_API_VERSION, CLOUDFLARE_GROUP, DEFAULT_CREDENTIALS_NAMESPACE } from '../../src/api/cloudflare.js';
import { TUNNEL_BINDING_VERSION } from '../../src/api/cloudflare-tunnels.js';
import { eventually, refusal, uniq } from '../support/env.js';
import {
  cloudflareSuite,
  createCredentials,
  hexId,
  requestMark,
  requestsSince,
  sourceObject,
  tunnelIngressClass,
  zoneRecords,
} from '../support/cloudflare.js';

const account = hexId();
const suite = cloudflareSuite({
  taskQueue: 'cf-pol',
  namespace: 'cf-pol',
  account: { id: account, name: 'policy' },
  configOverrides: { debounceMs: 200 },
});
const { k } = suite;
const ns = () => suite.namespace;

/** Namespaces this file made besides the suite's (deleted in afterAll). */
const namespaces: string[] = [];
async function namespace(prefix: string): Promise<string> {
  const name = uniq(prefix);
  namespaces.push(name);
  await k.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  return name;
}
afterAll(async () => {
  for (const name of namespaces) await k.delete({ apiVersion: 'v1', kind: 'Namespace', name }).catch(() => undefined);
});

async function seedZone(prefix: string): Promise<{ name: string; id: string }> {
  const name = `${uniq(prefix)}.example.com`;
  const { zones } = await suite.fx.admin.seed({ zones: [{ name, account_id: account }] });
  return { name, id: zones[0]!.id };
}

const vwc = {
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'ValidatingWebhookConfiguration',
  name: WEBHOOK_CONFIGURATION_NAME,
};
type Webhook = { name: string; namespaceSelector?: unknown };

/**
 * Runs `write` with the Cloudflare webhook not looking at `namespace` (only there: the other
 * namespaces and the other webhooks stay as registered), retried until the apiserver uses the
 * narrowed registration; the registration is restored after.
 */
async function unseenByWebhook(namespace: string, write: () => Promise<unknown>): Promise<void> {
  const registered = (await k.get<KubernetesObject & { webhooks: Webhook[] }>(vwc))!;
  const narrowed = registered.webhooks.map((w) =>
    w.name === CLOUDFLARE_WEBHOOK_NAME
      ? {
          ...w,
          namespaceSelector: {
            matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: [namespace] }],
          },
        }
      : w,
  );
  await k.mergePatch(vwc, { webhooks: narrowed });
  try {
    await eventually('the write, unseen by the webhook', async () => {
      try {
        await write();
        return true;
      } catch (err) {
        if (String((err as Error).message).includes(CLOUDFLARE_WEBHOOK_NAME)) return undefined;
        throw err;
      }
    });
  } finally {
    await k.mergePatch(vwc, { webhooks: registered.webhooks });
  }
}

/** `write` refused by the Cloudflare webhook (waiting until it is registered again); its message. */
async function refusedByWebhook(write: () => Promise<unknown>): Promise<string> {
  return eventually('refused by the webhook', async () => {
    const r = await refusal(write);
    expect(r.code, r.message).toBe(403);
    return r.message.includes(`admission webhook "${CLOUDFLARE_WEBHOOK_NAME}" denied the request`)
      ? r.message
      : undefined;
  });
}

type Condition = { type: string; status: string; reason: string; message: string };
async function readyOf(apiVersion: string, kind: string, name: string, namespace?: string) {
  const obj = (await k.get({ apiVersion, kind, name, ...(namespace ? { namespace } : {}) })) as
    { status?: { conditions?: Condition[] } } | undefined;
  return obj?.status?.conditions?.find((c) => c.type === 'Ready');
}
const BINDING_API = `${CLOUDFLARE_GROUP}/${TUNNEL_BINDING_VERSION}`;
/** The Ready condition once `ok` says so (the last one seen is named on a timeout). */
async function readyWhen(
  apiVersion: string,
  kind: string,
  name: string,
  namespace: string | undefined,
  ok: (c: Condition) => boolean,
): Promise<Condition> {
  let last: Condition | undefined;
  try {
    return await eventually(`${kind} ${name} ready condition`, async () => {
      last = await readyOf(apiVersion, kind, name, namespace);
      return last && ok(last) ? last : undefined;
    });
  } catch (err) {
    throw new Error(`${(err as Error).message}; last: ${JSON.stringify(last)}`);
  }
}

const binding = (name: string, namespace: string, tunnel: string, hosts: Array<[string, string]>) => ({
  apiVersion: BINDING_API,
  kind: 'TunnelBinding',
  metadata: { name, namespace },
  subjects: hosts.map(([fqdn, target]) => ({ name: 'web', spec: { fqdn, target } })),
  tunnelRef: { kind: 'ClusterTunnel', name: tunnel },
});

async function configOf(tunnelId: string): Promise<Array<{ hostname?: string; service: string }>> {
  const c = (await suite.fx.cf.zeroTrust.tunnels.cloudflared.configurations.get(tunnelId, {
    account_id: account,
  })) as { config?: { ingress?: Array<{ hostname?: string; service: string }> } | null };
  return c.config?.ingress ?? [];
}

async function tunnelsNamed(name: string): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const t of suite.fx.cf.zeroTrust.tunnels.cloudflared.list({
    account_id: account,
    name,
    is_deleted: false,
  }))
    out.push(t);
  return out;
}

describe("a Tunnel's domain is a zone allowedZones must list (N2)", () => {
  it('credentials limited to team.example.com: a Tunnel on corp.example.com is refused by the webhook and by its workflow, and no CNAME lands in corp', async () => {
    const team = await seedZone('team');
    const corp = await seedZone('corp');
    const creds = uniq('cf-pol-zones');
    await createCredentials(k, {
      name: creds,
      namespace: ns(),
      accountId: account,
      use: { allowedNamespaces: [ns()], allowedZones: [team.name] },
    });
    const tunnelName = uniq('corp-tunnel');
    const tunnel = sourceObject(
      'Tunnel',
      uniq('corp'),
      { newTunnel: { name: tunnelName }, cloudflare: { credentialsRef: { name: creds }, domain: corp.name } },
      ns(),
    );
    const refused = await refusedByWebhook(() => k.create(tunnel));
    expect(refused).toContain('CredentialsNotAllowed');
    expect(refused).toContain(
      `spec.cloudflare.domain: CloudflareCredentials ${creds} may not write to zone ${corp.name}`,
    );

    // Past the webhook, the workflow refuses it: no tunnel is made, so nothing can route or get a CNAME.
    await unseenByWebhook(ns(), () => k.create(tunnel));
    const ref = { apiVersion: CLOUDFLARE_API_VERSION, kind: 'Tunnel', namespace: ns(), name: tunnel.metadata.name };
    const status = await readyWhen(
      ref.apiVersion,
      'Tunnel',
      ref.name,
      ns(),
      (c) => c.reason === 'CredentialsNotAllowed',
    );
    expect(status.message).toContain(
      `spec.cloudflare.domain: CloudflareCredentials ${creds} may not write to zone ${corp.name}`,
    );
    expect(await tunnelsNamed(tunnelName)).toEqual([]);

    // The allowed zone's Tunnel: its hostname in the other zone gets no CNAME either (the tunnel's
    // zone is no grant, and neither is any other).
    const allowed = sourceObject(
      'Tunnel',
      uniq('team'),
      { newTunnel: { name: uniq('team-tunnel') }, cloudflare: { credentialsRef: { name: creds }, domain: team.name } },
      ns(),
    );
    await k.create(allowed);
    await eventually(
      'the allowed tunnel',
      async () =>
        ((await k.get({ ...ref, name: allowed.metadata.name })) as { status?: { tunnelId?: string } })?.status
          ?.tunnelId,
    );
    const b = uniq('login');
    await k.apply({
      apiVersion: BINDING_API,
      kind: 'TunnelBinding',
      metadata: { name: b, namespace: ns() },
      subjects: [
        { name: 'web', spec: { fqdn: `login.${corp.name}`, target: 'http://login:80' } },
        { name: 'web', spec: { fqdn: `app.${team.name}`, target: 'http://app:80' } },
      ],
      tunnelRef: { kind: 'Tunnel', name: allowed.metadata.name },
    });
    const bound = await readyWhen(BINDING_API, 'TunnelBinding', b, ns(), (c) => c.reason === 'SyncedWithoutDNS');
    expect(bound.message).toContain(`login.${corp.name} (zone ${corp.name} is not in spec.allowedZones`);
    await eventually('the allowed CNAME', async () =>
      (await zoneRecords(suite.fx.cf, team.id)).some((r) => r.name === `app.${team.name}`),
    );
    expect(await zoneRecords(suite.fx.cf, corp.id)).toEqual([]);
  });
});

describe('a priority the namespace was not granted changes nothing (N3)', () => {
  it('a binding at 50 edited to priority 0: refused by the webhook; unseen by it, the older holder keeps the hostname through later syncs', async () => {
    const zone = await seedZone('shared');
    const creds = uniq('cf-pol-tun');
    await createCredentials(k, {
      name: creds,
      namespace: ns(),
      accountId: account,
      use: { allowedNamespaces: ['*'], priorityNamespaces: ['platform'] },
    });
    // A ClusterTunnel the platform team shares: its Secret and connector live in the operator's namespace.
    await k.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: DEFAULT_CREDENTIALS_NAMESPACE } });
    const ct = uniq('shared');
    const ctRef = { apiVersion: CLOUDFLARE_API_VERSION, kind: 'ClusterTunnel', name: ct };
    await k.apply(
      sourceObject('ClusterTunnel', ct, {
        newTunnel: { name: uniq('cf-pol-shared') },
        cloudflare: { credentialsRef: { name: creds }, domain: zone.name },
      }),
    );
    const tunnelId = await eventually(
      'the shared tunnel',
      async () => ((await k.get(ctRef)) as { status?: { tunnelId?: string } })?.status?.tunnelId,
    );
    const [teamA, teamB, teamC] = [await namespace('team-a'), await namespace('team-b'), await namespace('team-c')];
    const host = `app.${zone.name}`;
    const serviceOf = async (h: string) => (await configOf(tunnelId)).find((r) => r.hostname === h)?.service;

    await k.apply(binding('holder', teamA, ct, [[host, 'http://holder.team-a:80']]));
    await eventually(
      'the holder routes the hostname',
      async () => (await serviceOf(host)) === 'http://holder.team-a:80',
    );
    const intruderRef = { apiVersion: BINDING_API, kind: 'TunnelBinding', namespace: teamB, name: 'intruder' };
    await k.apply(binding('intruder', teamB, ct, [[host, 'http://intruder.team-b:80']]));
    await readyWhen(BINDING_API, 'TunnelBinding', 'intruder', teamB, (c) =>
      c.message.includes(`${host} is already held by TunnelBinding/${teamA}/holder`),
    );

    const ahead = () => k.mergePatch(intruderRef, { spec: { priority: 0 } });
    const refused = await refusedByWebhook(ahead);
    expect(refused).toContain('PriorityNotAllowed');
    expect(refused).toContain('spec.priorityNamespaces');

    await unseenByWebhook(teamB, ahead);
    await readyWhen(BINDING_API, 'TunnelBinding', 'intruder', teamB, (c) => c.reason === 'PriorityNotAllowed');
    // Another team's change syncs the tunnel: the target reads the intruder's spec again.
    const other = `other.${zone.name}`;
    await k.apply(binding('bystander', teamC, ct, [[other, 'http://bystander.team-c:80']]));
    await eventually('the bystander routed', async () => (await serviceOf(other)) === 'http://bystander.team-c:80');
    expect(await serviceOf(host)).toBe('http://holder.team-a:80');
    // And again on the next change, and the edit still cannot be made while the webhook looks.
    await k.apply(binding('bystander', teamC, ct, [[other, 'http://bystander.team-c:8080']]));
    await eventually('the bystander changed', async () => (await serviceOf(other)) === 'http://bystander.team-c:8080');
    expect(await serviceOf(host)).toBe('http://holder.team-a:80');
    expect(await refusedByWebhook(() => k.mergePatch(intruderRef, { spec: { priority: 1 } }))).toContain(
      'PriorityNotAllowed',
    );
    // Nor by the back door: admitted at priority 0 while naming a tunnel that does not exist (the
    // webhook leaves that to the workflow), then pointed at the shared one — a binding's
    // `tunnelRef` is outside its spec, and the webhook looks at every field.
    const sneak = { ...binding('sneak', teamB, uniq('no-such-tunnel'), [[host, 'http://sneak.team-b:80']]) };
    await k.create({ ...sneak, spec: { priority: 0 } });
    const sneakRef = { apiVersion: BINDING_API, kind: 'TunnelBinding', namespace: teamB, name: 'sneak' };
    expect(
      await refusedByWebhook(() => k.mergePatch(sneakRef, { tunnelRef: { kind: 'ClusterTunnel', name: ct } })),
    ).toContain('PriorityNotAllowed');
    await k.delete(sneakRef);

    for (const [name, n] of [
      ['holder', teamA],
      ['intruder', teamB],
      ['bystander', teamC],
    ] as const)
      await k.delete({ apiVersion: BINDING_API, kind: 'TunnelBinding', namespace: n, name });
    await k.delete(ctRef);
    await eventually('the ClusterTunnel released', async () => !(await k.get(ctRef)), { timeoutMs: 60_000 });
  });
});

describe('adoptExisting needs adoptNamespaces, at the target too (N5)', () => {
  it('a namespace without the grant cannot take over a hand-made apex record, not even by an edit the webhook did not see', async () => {
    const zone = await seedZone('apex');
    const creds = uniq('cf-pol-dns');
    await createCredentials(k, {
      name: creds,
      namespace: ns(),
      accountId: account,
      use: { allowedNamespaces: ['*'], adoptNamespaces: ['platform'] },
    });
    const byHand = await suite.fx.cf.dns.records.create({
      zone_id: zone.id,
      type: 'A',
      name: zone.name,
      content: '192.0.2.10',
      ttl: 1,
      proxied: false,
      comment: 'made by hand',
    });
    const untouched = async () => {
      const apex = (await zoneRecords(suite.fx.cf, zone.id)).filter((r) => r.name === zone.name);
      expect(apex.map((r) => [r.id, r.content, r.comment])).toEqual([[byHand.id, '192.0.2.10', 'made by hand']]);
    };
    const record = (name: string, content: string, adoptExisting: boolean) =>
      sourceObject(
        'DNSRecord',
        name,
        {
          name: '@',
          type: 'A',
          content,
          ...(adoptExisting ? { adoptExisting } : {}),
          cloudflare: { domain: zone.name, credentialsRef: { name: creds } },
        },
        ns(),
      );

    const refused = await refusedByWebhook(() => k.create(record(uniq('apex'), '192.0.2.66', true)));
    expect(refused).toContain('AdoptionNotAllowed');

    const squatter = uniq('apex');
    await k.create(record(squatter, '192.0.2.66', false));
    await eventually('held by the hand-made record', async () => {
      const c = await suite.readyOf('DNSRecord', squatter, ns());
      return c?.reason === 'Conflict' ? c : undefined;
    });
    const ref = { apiVersion: CLOUDFLARE_API_VERSION, kind: 'DNSRecord', namespace: ns(), name: squatter };
    await unseenByWebhook(ns(), () => k.mergePatch(ref, { spec: { adoptExisting: true } }));
    await readyWhen(CLOUDFLARE_API_VERSION, 'DNSRecord', squatter, ns(), (c) => c.reason === 'AdoptionNotAllowed');

    // A second record of the apex's set registers: the target syncs and reads the squatter again.
    const peer = uniq('apex-peer');
    await k.create(record(peer, '192.0.2.67', false));
    await eventually('the peer held too', async () => {
      const c = await suite.readyOf('DNSRecord', peer, ns());
      return c?.reason === 'Conflict' ? c : undefined;
    });
    await untouched();
    for (const name of [squatter, peer]) await k.delete({ ...ref, name });
    await eventually(
      'both released',
      async () => !(await k.get({ ...ref, name: squatter })) && !(await k.get({ ...ref, name: peer })),
    );
    await untouched();
  });
});

describe("placing a tunnel's hostnames costs a zone lookup by name, not a listing of the account (N13)", () => {
  it('2,000 zones in the account, five Ingress edits: at most one zone call per edit and label', async () => {
    const big = hexId();
    const zoneName = `${uniq('big')}.example.com`;
    const seeded = await suite.fx.admin.seed({
      accounts: [{ id: big, name: 'many zones' }],
      zones: [
        { name: zoneName, account_id: big },
        ...Array.from({ length: 2_000 }, (_, i) => ({ name: `filler-${i}.example.org`, account_id: big })),
      ],
    });
    const creds = uniq('cf-pol-big');
    await createCredentials(k, { name: creds, namespace: ns(), accountId: big });
    const t = uniq('big');
    const tRef = { apiVersion: CLOUDFLARE_API_VERSION, kind: 'Tunnel', namespace: ns(), name: t };
    await k.apply(
      sourceObject(
        'Tunnel',
        t,
        { newTunnel: { name: uniq('cf-pol-big') }, cloudflare: { credentialsRef: { name: creds }, domain: zoneName } },
        ns(),
      ),
    );
    await eventually(
      'the tunnel',
      async () => ((await k.get(tRef)) as { status?: { tunnelId?: string } })?.status?.tunnelId,
    );
    await k.apply({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: ns() },
      spec: { ports: [{ port: 80, targetPort: 80 }] },
    });
    const cls = uniq('big-class');
    await k.apply(
      sourceObject('TunnelIngressClassConfig', `${cls}-cfg`, { tunnelRef: { kind: 'Tunnel', name: t } }, ns()),
    );
    await k.apply(tunnelIngressClass(cls, `${cls}-cfg`, ns()));
    const ingress = (host: string) => ({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: `${cls}-ing`, namespace: ns() },
      spec: {
        ingressClassName: cls,
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
    const zoneId = seeded.zones.find((z) => z.name === zoneName)!.id;
    const cnameOf = async (host: string) =>
      (await zoneRecords(suite.fx.cf, zoneId)).some((r) => r.name === host && r.type === 'CNAME');
    await k.apply(ingress(`v0.${zoneName}`));
    await eventually('the first CNAME', () => cnameOf(`v0.${zoneName}`), { timeoutMs: 60_000 });

    const mark = await requestMark(suite.fx.admin);
    const edits = 5;
    for (let i = 1; i <= edits; i++) {
      await k.apply(ingress(`v${i}.${zoneName}`));
      await eventually(`the CNAME of edit ${i}`, () => cnameOf(`v${i}.${zoneName}`), { timeoutMs: 60_000 });
    }
    const zoneCalls = await requestsSince(suite.fx.admin, mark, { method: 'GET', path: '^/zones$' });
    const labels = 3;
    expect(zoneCalls.length).toBeGreaterThan(0);
    expect(zoneCalls.length).toBeLessThanOrEqual(edits * labels);
  });
});

describe("two teams' Tunnels with their own credentials and hostnames in one zone (N10)", () => {
  it('both get their CNAMEs, each written with its own token; neither is a CredentialsConflict', async () => {
    const zone = await seedZone('teams');
    const teamB = { token: `team-b-${hexId()}`, id: `team-b-${hexId().slice(0, 8)}` };
    await suite.fx.admin.addToken({ token: teamB.token, id: teamB.id });
    const credsA = uniq('cf-pol-team-a');
    const credsB = uniq('cf-pol-team-b');
    await createCredentials(k, { name: credsA, namespace: ns(), accountId: account });
    await createCredentials(k, { name: credsB, namespace: ns(), accountId: account, token: teamB.token });
    const [nsA, nsB] = [await namespace('dns-a'), await namespace('dns-b')];
    const tunnelIds: Record<string, string> = {};
    for (const [team, n, creds] of [
      ['a', nsA, credsA],
      ['b', nsB, credsB],
    ] as const) {
      await k.apply(
        sourceObject(
          'Tunnel',
          `tunnel-${team}`,
          {
            newTunnel: { name: uniq(`cf-pol-${team}`) },
            cloudflare: { credentialsRef: { name: creds }, domain: zone.name },
          },
          n,
        ),
      );
      const ref = { apiVersion: CLOUDFLARE_API_VERSION, kind: 'Tunnel', namespace: n, name: `tunnel-${team}` };
      tunnelIds[team] = await eventually(
        `team ${team}'s tunnel`,
        async () => ((await k.get(ref)) as { status?: { tunnelId?: string } })?.status?.tunnelId,
      );
      await k.apply({
        apiVersion: BINDING_API,
        kind: 'TunnelBinding',
        metadata: { name: `app-${team}`, namespace: n },
        subjects: [{ name: 'web', spec: { fqdn: `${team}.${zone.name}`, target: `http://app.${n}:80` } }],
        tunnelRef: { kind: 'Tunnel', name: `tunnel-${team}` },
      });
      // Team A's CNAMEs first: the zone's target is written with A's credentials before B comes.
      if (team === 'a')
        await eventually("team a's CNAME", async () =>
          (await zoneRecords(suite.fx.cf, zone.id)).some((r) => r.name === `a.${zone.name}`),
        );
    }
    const cnames = async () =>
      Object.fromEntries(
        (await zoneRecords(suite.fx.cf, zone.id)).filter((r) => r.type === 'CNAME').map((r) => [r.name, r.content]),
      );
    await eventually('both CNAMEs', async () => Object.keys(await cnames()).length === 2, { timeoutMs: 60_000 });
    expect(await cnames()).toEqual({
      [`a.${zone.name}`]: `${tunnelIds.a}.cfargotunnel.com`,
      [`b.${zone.name}`]: `${tunnelIds.b}.cfargotunnel.com`,
    });
    const b = await readyWhen(BINDING_API, 'TunnelBinding', 'app-b', nsB, (c) => c.status === 'True');
    expect(b.reason).toBe('Synced');
    // Team B's record was written with team B's token, not with A's.
    const batches = await suite.fx.admin.requests({ method: 'POST', path: `^/zones/${zone.id}/dns_records/batch$` });
    const wroteB = batches.filter((r) =>
      JSON.stringify((r.body as { posts?: unknown[] })?.posts ?? []).includes(`b.${zone.name}`),
    );
    expect(wroteB.map((r) => r.tokenId)).toEqual([teamB.id]);
  });
});
