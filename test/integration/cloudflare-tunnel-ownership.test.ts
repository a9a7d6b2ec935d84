/**
 * A tunnel is its own team's (issue 33, N1), from the attacker's side: team B, in its own
 * namespace with its own CloudflareCredentials of the same account — allowed to adopt tunnels —
 * knows team A's tunnel ID (it is in every CNAME) and name. It cannot bind A's tunnel by
 * `existingTunnel`, nor pass it off as its own with `newTunnel` and the `cloudflare-id`
 * annotation: the webhook refuses a user writing the annotation, and the worker, reached past the
 * webhook (an administrator's write), honours neither the annotation nor a proof copied from A.
 * B gets no Secret with A's token, no connector, and deleting B's Tunnels leaves A's tunnel, routes
 * and configuration.
 *
 * Deleting a Tunnel never fails for good (N8): Cloudflare refuses to delete a tunnel while a
 * connector holds connections (the emulator models it, E14) — retried until it stops; a 403 is
 * shown on the status and the Orphan deletion policy releases the Tunnel. A read-only token is
 * told it lacks Cloudflare Tunnel Edit for the run token (M6).
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { V1Deployment, V1Secret } from '@kubernetes/client-node';
import {
  CLOUDFLARE_API_VERSION,
  CLOUDFLARE_DELETION_POLICY_ANNOTATION,
  CLOUDFLARE_ID_ANNOTATION,
} from '../../src/api/cloudflare.js';
import { CLOUDFLARE_WEBHOOK_NAME } from '../../src/admission/webhook.js';
import { CLOUDFLARE_ID_PROOF_ANNOTATION } from '../../src/domain/cloudflare/tunnel-ownership.js';
import type { KubeClient } from '../../src/kube/client.js';
import { eventually, refusal, serviceAccountWith, uniq } from '../support/env.js';
import { cloudflareSuite, createCredentials, hexId, secret, sourceObject } from '../support/cloudflare.js';

const account = hexId();
const credsA = uniq('cf-own-a');
const zoneName = `${uniq('own')}.example`;
const suite = cloudflareSuite({
  taskQueue: 'cf-own',
  namespace: 'cf-own-a',
  account: { id: account, name: 'ownership' },
  zone: zoneName,
  credentials: { name: credsA },
  configOverrides: { debounceMs: 200 },
});
const { k } = suite;
const nsA = () => suite.namespace;
/** Team B's namespaces and cluster roles, removed at the end. */
const madeForB: string[] = [];
afterAll(async () => {
  for (const ns of madeForB) {
    for (const kind of ['ClusterRoleBinding', 'ClusterRole'])
      await k.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind, name: `${ns}-creds` }).catch(() => undefined);
    await k.delete({ apiVersion: 'v1', kind: 'Namespace', name: ns }).catch(() => undefined);
  }
});

type TunnelView = {
  metadata: { uid: string; annotations?: Record<string, string> };
  status?: { tunnelId?: string; state?: string; message?: string };
};
const tunnelRef = (ns: string, name: string) => ({
  apiVersion: CLOUDFLARE_API_VERSION,
  kind: 'Tunnel',
  namespace: ns,
  name,
});
const getTunnel = (ns: string, name: string) => k.get(tunnelRef(ns, name)) as Promise<TunnelView | undefined>;
const tunnel = (ns: string, name: string, creds: string, spec: Record<string, unknown>, annotations = {}) => {
  const obj = sourceObject(
    'Tunnel',
    name,
    { cloudflare: { credentialsRef: { name: creds }, domain: zoneName }, ...spec },
    ns,
  );
  return { ...obj, metadata: { ...obj.metadata, annotations } };
};
const cf = () => suite.fx.cf.zeroTrust.tunnels.cloudflared;
const live = async (id: string) =>
  !((await cf().get(id, { account_id: account })) as { deleted_at?: string | null }).deleted_at;
const reasonOf = async (ns: string, name: string, reason: string) => {
  const c = await suite.readyOf('Tunnel', name, ns);
  return c?.reason === reason ? c : undefined;
};

/** Every run token in the namespace's Secrets (what a connector there could run). */
async function tokensIn(ns: string): Promise<string[]> {
  const secrets = (await k.core.listNamespacedSecret({ namespace: ns })).items as V1Secret[];
  return secrets.flatMap((s) => (s.data?.token ? [Buffer.from(s.data.token, 'base64').toString()] : []));
}
async function deploymentsIn(ns: string): Promise<string[]> {
  const page = await k.listPage<V1Deployment>('apps/v1', 'Deployment', { namespace: ns });
  return page.items.map((d) => d.metadata!.name!);
}

/** Team B: a namespace, its own credentials (may adopt tunnels there), and a user who may create Tunnels there. */
async function teamB(): Promise<{ ns: string; creds: string; user: KubeClient }> {
  const ns = uniq('cf-own-b');
  await k.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  madeForB.push(ns);
  const token = secret(`cf-team-b-${hexId()}`);
  await suite.fx.admin.addToken({ token, accounts: [account] });
  const creds = uniq('cf-own-b');
  await createCredentials(k, {
    name: creds,
    namespace: nsA(),
    accountId: account,
    token,
    use: { allowedNamespaces: [ns], adoptNamespaces: [ns] },
  });
  const user = await serviceAccountWith(ns, 'team-b', [
    {
      apiGroups: ['networking.cloudflare-operator.io'],
      resources: ['tunnels'],
      verbs: ['get', 'list', 'create', 'update', 'patch', 'delete'],
    },
    { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'create', 'update'] },
    { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'list', 'create', 'update'] },
  ]);
  // Its credentials are cluster-scoped: a ClusterRole for `get` on them by name.
  const rbac = { apiVersion: 'rbac.authorization.k8s.io/v1', metadata: { name: `${ns}-creds` } };
  await k.apply({
    ...rbac,
    kind: 'ClusterRole',
    rules: [
      {
        apiGroups: ['networking.cloudflare-operator.io'],
        resources: ['cloudflarecredentials'],
        resourceNames: [creds],
        verbs: ['get'],
      },
    ],
  } as never);
  await k.apply({
    ...rbac,
    kind: 'ClusterRoleBinding',
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `${ns}-creds` },
    subjects: [{ kind: 'ServiceAccount', name: 'team-b', namespace: ns }],
  } as never);
  return { ns, creds, user };
}

describe("team B cannot bind, run, rename or delete team A's tunnel", () => {
  it("by existingTunnel {id}, by newTunnel with A's name and the annotation (refused at admission, and by the worker past it, even with A's proof copied): TunnelInUse, no token or connector in B, A's tunnel, route and configuration kept", async () => {
    // Team A's tunnel, running, with a private network route and its configuration.
    const cfA = uniq('cf-team-a');
    await k.apply(tunnel(nsA(), 'edge', credsA, { newTunnel: { name: cfA }, fallbackTarget: 'http_status:503' }));
    const a = await eventually('A active', async () => {
      const t = await getTunnel(nsA(), 'edge');
      return t?.status?.state === 'active' && t.status.tunnelId ? t : undefined;
    });
    const idA = a.status!.tunnelId!;
    const route = await suite.fx.cf.zeroTrust.networks.routes.create({
      account_id: account,
      network: '10.77.0.0/16',
      tunnel_id: idA,
    });
    await eventually('A configured', async () => {
      const c = (await cf().configurations.get(idA, { account_id: account })) as { config?: { ingress?: unknown[] } };
      return (c.config?.ingress?.length ?? 0) > 0;
    });
    await eventually("A's connector", async () => (await deploymentsIn(nsA())).includes('edge'));
    const tokenOfA = async () => {
      const s = (await k.get({ apiVersion: 'v1', kind: 'Secret', namespace: nsA(), name: 'edge' })) as V1Secret;
      return Buffer.from(s.data!.token!, 'base64').toString();
    };
    const runTokenA = secret(await tokenOfA());
    const configBefore = JSON.stringify(await cf().configurations.get(idA, { account_id: account }));

    const b = await teamB();
    // 1. existingTunnel by A's public ID, with credentials that may adopt in B's namespace.
    await b.user.create(tunnel(b.ns, 'by-id', b.creds, { existingTunnel: { id: idA } }));
    const inUse = await eventually('TunnelInUse by id', () => reasonOf(b.ns, 'by-id', 'TunnelInUse'));
    expect(inUse.message).toContain(`tunnel ${idA} is managed by a Tunnel or ClusterTunnel of another namespace`);
    expect(inUse.message).not.toContain(nsA());

    // 2. newTunnel with A's name and the annotation naming A's tunnel: the webhook refuses B's user.
    const refused = await refusal(
      () =>
        b.user.create(
          tunnel(b.ns, 'by-name', b.creds, { newTunnel: { name: cfA } }, { [CLOUDFLARE_ID_ANNOTATION]: idA }),
        ),
      'a user-set cloudflare-id',
    );
    expect(refused.code).toBe(403);
    expect(refused.message).toContain(`admission webhook "${CLOUDFLARE_WEBHOOK_NAME}" denied the request`);
    expect(refused.message).toContain(
      `metadata.annotations["${CLOUDFLARE_ID_ANNOTATION}"]: set only by the operator's worker`,
    );
    // …and adding it to an existing Tunnel of B's.
    await b.user.create(tunnel(b.ns, 'later', b.creds, { newTunnel: { name: uniq('cf-team-b') } }));
    const laterRefused = await refusal(
      () =>
        b.user.mergePatch(tunnelRef(b.ns, 'later'), { metadata: { annotations: { [CLOUDFLARE_ID_ANNOTATION]: idA } } }),
      'a user-changed cloudflare-id',
    );
    expect(laterRefused.code).toBe(403);

    // 3. Past the webhook (an administrator applies B's manifest), with A's proof copied: the worker honours neither.
    await k.apply(
      tunnel(
        b.ns,
        'forged',
        b.creds,
        { newTunnel: { name: cfA } },
        {
          [CLOUDFLARE_ID_ANNOTATION]: idA,
          [CLOUDFLARE_ID_PROOF_ANNOTATION]: a.metadata.annotations![CLOUDFLARE_ID_PROOF_ANNOTATION]!,
        },
      ),
    );
    const forged = await eventually('TunnelInUse by name and annotation', () =>
      reasonOf(b.ns, 'forged', 'TunnelInUse'),
    );
    expect(forged.message).toContain(`spec.newTunnel.name: tunnel ${idA} is managed`);
    expect((await getTunnel(b.ns, 'forged'))?.status?.tunnelId).toBeUndefined();

    // Nothing of A's runs in B: no Secret with A's token, no connector but B's own Tunnel's.
    expect(await tokensIn(b.ns)).not.toContain(runTokenA);
    expect((await deploymentsIn(b.ns)).filter((d) => d !== 'later')).toEqual([]);

    // B deletes its Tunnels: A's tunnel, route and configuration stay, A's Tunnel keeps its tunnel.
    for (const name of ['by-id', 'later']) await b.user.delete(tunnelRef(b.ns, name));
    await k.delete(tunnelRef(b.ns, 'forged'));
    await eventually(
      "B's Tunnels released",
      async () =>
        !(await getTunnel(b.ns, 'by-id')) && !(await getTunnel(b.ns, 'later')) && !(await getTunnel(b.ns, 'forged')),
      { timeoutMs: 120_000 },
    );
    expect(await live(idA)).toBe(true);
    const routes: string[] = [];
    for await (const r of suite.fx.cf.zeroTrust.networks.routes.list({ account_id: account, tunnel_id: idA }))
      if (!r.deleted_at) routes.push(r.id!);
    expect(routes).toEqual([route.id]);
    expect(JSON.stringify(await cf().configurations.get(idA, { account_id: account }))).toBe(configBefore);
    expect((await getTunnel(nsA(), 'edge'))?.status?.tunnelId).toBe(idA);
    expect(await tokenOfA()).toBe(runTokenA);
    expect((await cf().token.get(idA, { account_id: account })) as unknown as string).toBe(runTokenA);

    await k.delete(tunnelRef(nsA(), 'edge'));
    await eventually("A's tunnel deleted with A's Tunnel", async () => !(await live(idA)), { timeoutMs: 120_000 });
  });

  it("existingTunnel needs the credentials' adoptNamespaces: refused by the webhook and, past it, by the workflow (AdoptionNotAllowed)", async () => {
    const byHand = (await cf().create({ account_id: account, name: uniq('by-hand'), config_src: 'cloudflare' })) as {
      id: string;
      name: string;
    };
    const b = await teamB();
    const noGrant = uniq('cf-own-nogrant');
    // Past the webhook: a Tunnel naming credentials that do not exist yet is left to the workflow.
    await k.apply(tunnel(b.ns, 'adopt', noGrant, { existingTunnel: { id: byHand.id } }));
    await createCredentials(k, {
      name: noGrant,
      namespace: nsA(),
      accountId: account,
      use: { allowedNamespaces: [b.ns] },
    });
    const status = await eventually('AdoptionNotAllowed on the status', () =>
      reasonOf(b.ns, 'adopt', 'AdoptionNotAllowed'),
    );
    expect(status.message).toContain('spec.existingTunnel');
    await k.apply({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: `${b.ns}-creds` },
      rules: [
        {
          apiGroups: ['networking.cloudflare-operator.io'],
          resources: ['cloudflarecredentials'],
          resourceNames: [b.creds, noGrant],
          verbs: ['get'],
        },
      ],
    } as never);
    const refused = await eventually('refused by the webhook', async () => {
      const r = await refusal(() =>
        b.user.create(tunnel(b.ns, 'adopt-2', noGrant, { existingTunnel: { id: byHand.id } })),
      );
      return r.message.includes('AdoptionNotAllowed') ? r : undefined;
    });
    expect(refused.code).toBe(403);
    expect(await tokensIn(b.ns)).toEqual([]);
    await k.delete(tunnelRef(b.ns, 'adopt'));
    await eventually('released', async () => !(await getTunnel(b.ns, 'adopt')));
    expect(await live(byHand.id)).toBe(true);
  });
});

describe('deleting a Tunnel never fails for good', () => {
  it('Cloudflare refuses while a connector is connected (1022): retried, the reason on the status, deleted once it stops', async () => {
    const name = uniq('busy');
    await k.apply(tunnel(nsA(), name, credsA, { newTunnel: { name: uniq('cf-busy') } }));
    const id = await eventually('active', async () => {
      const t = await getTunnel(nsA(), name);
      return t?.status?.state === 'active' ? t.status.tunnelId : undefined;
    });
    // A cloudflared outside the cluster (or a Pod not yet stopped) keeps running the tunnel.
    await suite.fx.admin.startConnector(id);
    await k.delete(tunnelRef(nsA(), name));
    const blocked = await eventually('TunnelHasConnections on the status', () =>
      reasonOf(nsA(), name, 'TunnelHasConnections'),
    );
    expect(blocked.message).toContain('Cloudflare refuses while connectors are connected to it (1022)');
    expect(await live(id)).toBe(true);
    await suite.fx.admin.stopConnectors(id);
    await eventually('deleted and released', async () => !(await getTunnel(nsA(), name)) && !(await live(id)), {
      timeoutMs: 120_000,
    });
  });

  it('a 403 (a revoked token) is shown on the status; the Orphan deletion policy releases the Tunnel and leaves its tunnel', async () => {
    const name = uniq('revoked');
    await k.apply(tunnel(nsA(), name, credsA, { newTunnel: { name: uniq('cf-revoked') } }));
    const id = await eventually('active', async () => {
      const t = await getTunnel(nsA(), name);
      return t?.status?.state === 'active' ? t.status.tunnelId : undefined;
    });
    await suite.fx.admin.addFault({
      method: 'DELETE',
      path: `^/accounts/${account}/cfd_tunnel/${id}$`,
      status: 403,
      code: 10000,
      message: 'Authentication error',
    });
    try {
      await k.delete(tunnelRef(nsA(), name));
      const shown = await eventually('the 403 on the status', async () => {
        const c = await suite.readyOf('Tunnel', name, nsA());
        return c?.reason === 'CloudflareAuth' ? c : undefined;
      });
      expect(shown.message).toContain('Cloudflare answered 403');
      expect(shown.message).toContain(`${CLOUDFLARE_DELETION_POLICY_ANNOTATION}: Orphan`);
      await k.mergePatch(tunnelRef(nsA(), name), {
        metadata: { annotations: { [CLOUDFLARE_DELETION_POLICY_ANNOTATION]: 'Orphan' } },
      });
      await eventually('released', async () => !(await getTunnel(nsA(), name)), { timeoutMs: 120_000 });
      expect(await live(id)).toBe(true);
    } finally {
      await suite.fx.admin.clearFaults();
    }
  });
});

describe('a read-only token', () => {
  it('is told the run token needs Cloudflare Tunnel Edit', async () => {
    const byHand = (await cf().create({ account_id: account, name: uniq('ro'), config_src: 'cloudflare' })) as {
      id: string;
    };
    const token = secret(`cf-ro-${hexId()}`);
    await suite.fx.admin.addToken({ token, readOnly: true });
    const ro = uniq('cf-own-ro');
    await createCredentials(k, { name: ro, namespace: nsA(), accountId: account, token });
    const name = uniq('ro');
    await k.apply(tunnel(nsA(), name, ro, { existingTunnel: { id: byHand.id } }));
    const refused = await eventually('CloudflareAuth', () => reasonOf(nsA(), name, 'CloudflareAuth'));
    expect(refused.message).toContain(`read the run token of tunnel ${byHand.id}: Cloudflare answered 403`);
    expect(refused.message).toContain('Cloudflare Tunnel Edit (account-level)');
    await k.delete(tunnelRef(nsA(), name));
    await eventually('released', async () => !(await getTunnel(nsA(), name)));
  });
});
