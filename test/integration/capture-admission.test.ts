/**
 * Capture requests are admitted only if their creator may use every target (issue 9, item 5):
 * the real apiserver calls the project's admission webhook (started and registered by the
 * local stack, src/admission/local.ts), which asks the apiserver, with SubjectAccessReviews made
 * as the requesting user, whether that user may `get` each target.
 *
 * The users are ServiceAccounts with tokens from the TokenRequest API, so the apiserver
 * authenticates them for real (token auth and RBAC are on in the stack) and the webhook sees
 * their real userInfo. Every "refused" case below would be admitted if the webhook were not
 * registered or did not check: those ServiceAccounts may create the requests.
 */
import { readFileSync } from 'node:fs';
import https from 'node:https';
import type { KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CLOUDFLARE_WEBHOOK_NAME,
  SANDBOX_ENV_WEBHOOK_NAME,
  SANDBOX_POOL_WEBHOOK_NAME,
  LEGACY_WEBHOOK_PATH,
  WEBHOOK_CONFIGURATION_NAME,
  WEBHOOK_NAME,
  WEBHOOK_PATHS,
  validatingWebhookConfiguration,
} from '../../src/admission/webhook.js';
import { KubeClient, apiMessage, isNotFound } from '../../src/kube/client.js';
import { NET_RAW_NAMESPACE } from '../support/admission.js';
import { eventually, kube, refusal, serviceAccountWith, stackInfo, uniq, waitUntilAllowed } from '../support/env.js';

const SNAPSHOTTER = 'state-snapshotter.deckhouse.io/v1alpha1';
const STORAGE = 'storage.deckhouse.io/v1alpha1';
const admin = kube();
const ns = uniq('admission');

/** A ServiceAccount in `ns` bound to a Role with `rules`, and a client authenticated as it. */
const userWith = (name: string, rules: object[]) => serviceAccountWith(ns, name, rules);

function mcr(targets: { apiVersion: string; kind: string; name: string }[]): KubernetesObject {
  return {
    apiVersion: SNAPSHOTTER,
    kind: 'ManifestCaptureRequest',
    metadata: { name: uniq('mcr'), namespace: ns },
    spec: { targets },
  } as KubernetesObject;
}

function vcr(mode: 'Snapshot' | 'Detach', pvc: string): KubernetesObject {
  return {
    apiVersion: STORAGE,
    kind: 'VolumeCaptureRequest',
    metadata: { name: uniq('vcr'), namespace: ns },
    spec: { mode, targets: [{ apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: pvc }] },
  } as KubernetesObject;
}

const secret = (name: string) => ({ apiVersion: 'v1', kind: 'Secret', name });
const configMap = (name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', name });
const createRequests = [
  { apiGroups: ['state-snapshotter.deckhouse.io'], resources: ['manifestcapturerequests'], verbs: ['create'] },
  { apiGroups: ['storage.deckhouse.io'], resources: ['volumecapturerequests'], verbs: ['create'] },
];

/** Creates `obj` as `as`; the apiserver must refuse it through the webhook. Returns the message. */
async function refusedByWebhook(as: KubeClient, obj: KubernetesObject): Promise<string> {
  const r = await refusal(() => as.create(obj), `${obj.kind} ${obj.metadata!.name}`);
  expect(r.code, r.message).toBe(403);
  expect(r.message).toContain(`admission webhook "${WEBHOOK_NAME}" denied the request`);
  expect(await admin.get({ ...refOf(obj) }), 'nothing was created').toBeUndefined();
  return r.message;
}

const refOf = (obj: KubernetesObject) => ({
  apiVersion: obj.apiVersion!,
  kind: obj.kind!,
  namespace: obj.metadata!.namespace,
  name: obj.metadata!.name!,
});

let reader: KubeClient; // may create requests and read ConfigMaps and PVCs, not Secrets
let namedReader: KubeClient; // may create requests and get one Secret by name

beforeAll(async () => {
  await admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  for (const name of ['top-secret', 'shared-secret'])
    await admin.create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace: ns },
      stringData: { k: 'v' },
    } as never);
  await admin.create({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'readable', namespace: ns },
    data: { k: 'v' },
  } as never);
  reader = await userWith('reader', [
    ...createRequests,
    { apiGroups: [''], resources: ['configmaps', 'persistentvolumeclaims'], verbs: ['get'] },
  ]);
  namedReader = await userWith('named-reader', [
    ...createRequests,
    { apiGroups: [''], resources: ['secrets'], resourceNames: ['shared-secret'], verbs: ['get'] },
  ]);
});

/** Cluster-wide grants made by this file (deleted in afterAll). */
const clusterGrants: string[] = [];

/** A ClusterRole with `rules` bound to the ServiceAccount `name` of `ns`. */
async function grantClusterWide(name: string, rules: object[]): Promise<void> {
  const role = `${ns}-${name}`;
  clusterGrants.push(role);
  await admin.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: role },
    rules,
  } as never);
  await admin.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: role },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
    subjects: [{ kind: 'ServiceAccount', name, namespace: ns }],
  } as never);
  const first = rules[0] as { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] };
  await waitUntilAllowed({ namespace: ns, name }, {
    group: first.apiGroups[0]!,
    resource: first.resources[0]!,
    verb: first.verbs[0]!,
    ...(first.resourceNames ? { name: first.resourceNames[0] } : {}),
  } as never);
}

afterAll(async () => {
  for (const name of clusterGrants) {
    await admin
      .delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', name })
      .catch(() => undefined);
    await admin
      .delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', name })
      .catch(() => undefined);
  }
  await admin.delete({ apiVersion: 'v1', kind: 'Namespace', name: ns });
});

describe('ManifestCaptureRequest admission', () => {
  it('is registered with the apiserver, fail-closed, for CREATE of capture requests', async () => {
    const registered = await admin.get<KubernetesObject & { webhooks: Record<string, unknown>[] }>({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      name: WEBHOOK_CONFIGURATION_NAME,
    });
    expect(registered, 'the local stack registers the webhook').toBeDefined();
    const [capture, cloudflare, pools, sandboxEnv] = validatingWebhookConfiguration({ url: '' }).webhooks;
    expect(registered!.webhooks).toHaveLength(4);
    expect(registered!.webhooks[0]).toMatchObject({
      name: WEBHOOK_NAME,
      failurePolicy: 'Fail',
      sideEffects: 'None',
      rules: capture!.rules,
    });
    expect(registered!.webhooks[1]).toMatchObject({
      name: CLOUDFLARE_WEBHOOK_NAME,
      failurePolicy: 'Fail',
      rules: cloudflare!.rules,
    });
    expect(registered!.webhooks[2]).toMatchObject({
      name: SANDBOX_POOL_WEBHOOK_NAME,
      failurePolicy: 'Fail',
      rules: pools!.rules,
    });
    // The apiserver accepted the matchConditions (CEL) that keep every other Sandbox write away.
    expect(registered!.webhooks[3]).toMatchObject({
      name: SANDBOX_ENV_WEBHOOK_NAME,
      failurePolicy: 'Fail',
      rules: sandboxEnv!.rules,
      matchConditions: sandboxEnv!.matchConditions,
    });
  });

  it('gives each webhook its own path, which reviews its kinds only; the 0.2 path still reviews every kind', async () => {
    const registered = await admin.get<
      KubernetesObject & { webhooks: { name: string; clientConfig: { url: string } }[] }
    >({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      name: WEBHOOK_CONFIGURATION_NAME,
    });
    const paths = registered!.webhooks.map((w) => new URL(w.clientConfig.url).pathname);
    expect(paths).toEqual(registered!.webhooks.map((w) => WEBHOOK_PATHS[w.name as keyof typeof WEBHOOK_PATHS]));
    expect(new Set(paths).size).toBe(4);
    // Straight to the server, as the apiserver posts: a SandboxPool review and a capture request's.
    const server = stackInfo().admission!;
    const review = (path: string, kind: { group: string; version: string; kind: string }) =>
      new Promise<{ allowed: boolean; status?: { message: string } }>((resolve, reject) => {
        const body = JSON.stringify({
          apiVersion: 'admission.k8s.io/v1',
          kind: 'AdmissionReview',
          request: {
            uid: uniq('uid'),
            kind,
            operation: 'CREATE',
            namespace: ns,
            userInfo: { username: `system:serviceaccount:${ns}:reader` },
            object: { apiVersion: `${kind.group}/${kind.version}`, kind: kind.kind, metadata: { name: 'x' }, spec: {} },
          },
        });
        const req = https.request(
          `${server.url}${path}`,
          { method: 'POST', ca: readFileSync(server.caFile), headers: { 'content-type': 'application/json' } },
          (res) => {
            let text = '';
            res.on('data', (c: Buffer) => (text += c.toString()));
            res.on('end', () => resolve((JSON.parse(text) as { response: never }).response));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    const pool = { group: 'sandbox.fast.io', version: 'v1alpha1', kind: 'SandboxPool' };
    const capture = { group: 'state-snapshotter.deckhouse.io', version: 'v1alpha1', kind: 'ManifestCaptureRequest' };
    // The pool's creator may not create agent Pods: refused by the pools' path and by 0.2's.
    for (const path of [WEBHOOK_PATHS[SANDBOX_POOL_WEBHOOK_NAME], LEGACY_WEBHOOK_PATH]) {
      const answer = await review(path, pool);
      expect(answer.allowed, path).toBe(false);
      expect(answer.status!.message, path).toMatch(/must be allowed to create Pods/);
    }
    // An empty capture request names nothing: admitted by its path and by 0.2's.
    for (const path of [WEBHOOK_PATHS[WEBHOOK_NAME], LEGACY_WEBHOOK_PATH])
      expect((await review(path, capture)).allowed, path).toBe(true);
    // Another kind's path refuses, naming the right one.
    const misrouted = await review(WEBHOOK_PATHS[WEBHOOK_NAME], pool);
    expect(misrouted.allowed).toBe(false);
    expect(misrouted.status!.message).toContain(
      `does not review SandboxPool (its path is ${WEBHOOK_PATHS[SANDBOX_POOL_WEBHOOK_NAME]})`,
    );
    expect((await review(WEBHOOK_PATHS[CLOUDFLARE_WEBHOOK_NAME], capture)).allowed).toBe(false);
  });

  it('refuses a request naming a Secret its creator may not read, naming the target', async () => {
    const message = await refusedByWebhook(reader, mcr([secret('top-secret')]));
    expect(message).toContain('Secret "top-secret"');
    expect(message).toContain(`user "system:serviceaccount:${ns}:reader" may not get secrets in namespace "${ns}"`);
  });

  it('admits the same user naming a ConfigMap it may read', async () => {
    const created = await reader.create(mcr([configMap('readable')]));
    expect(created.metadata?.uid).toBeTruthy();
  });

  it('names only the refused targets when some are readable', async () => {
    const message = await refusedByWebhook(
      reader,
      mcr([configMap('readable'), secret('top-secret'), secret('shared-secret')]),
    );
    expect(message).toContain('Secret "top-secret"');
    expect(message).toContain('Secret "shared-secret"');
    expect(message).not.toContain('ConfigMap');
  });

  it('honours a grant limited to resourceNames: that Secret is admitted, another is refused', async () => {
    await expect(namedReader.create(mcr([secret('shared-secret')]))).resolves.toBeDefined();
    const message = await refusedByWebhook(namedReader, mcr([secret('shared-secret'), secret('top-secret')]));
    expect(message).toContain('Secret "top-secret"');
    expect(message).not.toContain('shared-secret');
  });

  it('admits an admin naming the Secret', async () => {
    const created = await admin.create(mcr([secret('top-secret')]));
    expect(created.metadata?.uid).toBeTruthy();
  });

  it('refuses kinds whose access cannot be checked: not served, or cluster-scoped', async () => {
    const unserved = await refusedByWebhook(admin, mcr([{ apiVersion: 'example.com/v1', kind: 'Widget', name: 'w' }]));
    expect(unserved).toMatch(/Widget "w" \(example\.com\/v1\): the apiserver does not serve Widget/);
    const clusterScoped = await refusedByWebhook(
      admin,
      mcr([{ apiVersion: 'flowcontrol.apiserver.k8s.io/v1', kind: 'FlowSchema', name: 'exempt' }]),
    );
    expect(clusterScoped).toMatch(/FlowSchema "exempt" .*: FlowSchema is cluster-scoped/);
  });
});

describe('VolumeCaptureRequest admission', () => {
  it('admits a Snapshot of a PVC its creator may read, refuses a Detach (which deletes the claim) without delete', async () => {
    // The PVC need not exist: admission checks access, the workflow checks existence.
    await expect(reader.create(vcr('Snapshot', 'data'))).resolves.toBeDefined();
    const message = await refusedByWebhook(reader, vcr('Detach', 'data'));
    expect(message).toContain('PersistentVolumeClaim "data"');
    expect(message).toContain('may not delete persistentvolumeclaims');
  });

  it('refuses a Snapshot of a PVC its creator may not read', async () => {
    const message = await refusedByWebhook(namedReader, vcr('Snapshot', 'data'));
    expect(message).toContain('may not get persistentvolumeclaims');
  });
});

describe('fail closed', () => {
  it('refuses capture requests while the webhook cannot be reached, and only them', async () => {
    const vwc = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      name: WEBHOOK_CONFIGURATION_NAME,
    };
    const registered = (await admin.get<KubernetesObject & { webhooks: { clientConfig: { url: string } }[] }>(vwc))!;
    const url = registered.webhooks[0]!.clientConfig.url;
    // Port 1 on loopback: nothing listens there, so every call fails to connect.
    // Only the capture webhook is pointed away (a merge patch replaces the whole list).
    const withCaptureUrl = (to: string) =>
      registered.webhooks.map((w, i) => (i === 0 ? { ...w, clientConfig: { ...w.clientConfig, url: to } } : w));
    await admin.mergePatch(vwc, { webhooks: withCaptureUrl('https://127.0.0.1:1/unreachable') });
    try {
      const r = await eventually('the apiserver uses the unreachable webhook', async () => {
        try {
          const created = await admin.create(mcr([configMap('readable')]));
          await admin.delete(refOf(created)).catch((err: unknown) => {
            if (!isNotFound(err)) throw err;
          });
          return undefined;
        } catch (err) {
          return { message: apiMessage(err) };
        }
      });
      expect(r.message).toMatch(/failed calling webhook/);
      // Other objects are not intercepted.
      await expect(
        admin.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: uniq('cm'), namespace: ns } } as never),
      ).resolves.toBeDefined();
    } finally {
      await admin.mergePatch(vwc, { webhooks: withCaptureUrl(url) });
      await eventually(
        'the webhook answers again',
        async () => (await admin.create(mcr([configMap('readable')]))).metadata?.uid,
      );
    }
  });
});

/** Writes `obj` as `as`; the apiserver must refuse it through the Cloudflare sources' webhook. Returns the message. */
async function refusedBySourceWebhook(as: KubeClient, obj: KubernetesObject, write: () => Promise<unknown>) {
  const r = await refusal(write, `${obj.kind} ${obj.metadata!.name}`);
  expect(r.code, r.message).toBe(403);
  expect(r.message).toContain(`admission webhook "${CLOUDFLARE_WEBHOOK_NAME}" denied the request`);
  return r.message;
}

describe('Cloudflare source admission', () => {
  const CF = 'networking.cloudflare-operator.io/v1alpha2';
  const dnsRecord = (name: string, credentials?: string) =>
    ({
      apiVersion: CF,
      kind: 'DNSRecord',
      metadata: { name, namespace: ns },
      spec: {
        name: 'www',
        type: 'A',
        content: '192.0.2.1',
        cloudflare: { domain: 'example.com', ...(credentials ? { credentialsRef: { name: credentials } } : {}) },
      },
    }) as KubernetesObject;
  const provider = (name: string, secretName: string) =>
    ({
      apiVersion: CF,
      kind: 'AccessIdentityProvider',
      metadata: { name },
      spec: {
        type: 'github',
        config: { clientId: 'x' },
        configSecretRef: { name: secretName, key: 'k', namespace: ns },
        cloudflare: { credentialsRef: { name: 'team-a' } },
      },
    }) as KubernetesObject;

  it('a source may only name CloudflareCredentials its creator may get, on create and on every update', async () => {
    const dns = await userWith('dns-editor', [
      {
        apiGroups: ['networking.cloudflare-operator.io'],
        resources: ['dnsrecords'],
        verbs: ['create', 'patch', 'get'],
      },
    ]);
    await grantClusterWide('dns-editor', [
      {
        apiGroups: ['networking.cloudflare-operator.io'],
        resources: ['cloudflarecredentials'],
        resourceNames: ['team-a'],
        verbs: ['get'],
      },
    ]);
    const other = dnsRecord(uniq('dns'), 'team-b');
    const message = await refusedBySourceWebhook(dns, other, () => dns.create(other));
    expect(message).toContain('CloudflareCredentials "team-b"');
    expect(message).toContain(`user "system:serviceaccount:${ns}:dns-editor" may not get cloudflarecredentials`);
    expect(await admin.get(refOf(other)), 'nothing was created').toBeUndefined();

    // Its own credentials, and the default (no credentialsRef: an administrator's choice), are admitted.
    const mine = dnsRecord(uniq('dns'), 'team-a');
    await expect(dns.create(mine)).resolves.toBeDefined();
    await expect(dns.create(dnsRecord(uniq('dns')))).resolves.toBeDefined();

    // Switching to someone else's credentials later is refused too.
    const moved = { ...mine, spec: { cloudflare: { credentialsRef: { name: 'team-b' } } } } as KubernetesObject;
    await refusedBySourceWebhook(dns, moved, () =>
      dns.mergePatch(refOf(mine), { spec: { cloudflare: { credentialsRef: { name: 'team-b' } } } }),
    );
  });

  it('an identity provider may only use a Secret its creator may read (it is sent to Cloudflare as the client secret)', async () => {
    const idp = await userWith('idp-editor', [
      { apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }, // what userWith waits for
      { apiGroups: [''], resources: ['secrets'], resourceNames: ['shared-secret'], verbs: ['get'] },
    ]);
    await grantClusterWide('idp-editor', [
      { apiGroups: ['networking.cloudflare-operator.io'], resources: ['accessidentityproviders'], verbs: ['create'] },
      { apiGroups: ['networking.cloudflare-operator.io'], resources: ['cloudflarecredentials'], verbs: ['get'] },
    ]);
    const stolen = provider(uniq('idp'), 'top-secret');
    const message = await refusedBySourceWebhook(idp, stolen, () => idp.create(stolen));
    expect(message).toContain('Secret "top-secret"');
    const allowed = provider(uniq('idp'), 'shared-secret');
    await expect(idp.create(allowed)).resolves.toBeDefined();
    await admin.delete(refOf(allowed));
  });
});

describe('who may use CloudflareCredentials (issue 23, D2)', () => {
  const CF = 'networking.cloudflare-operator.io/v1alpha2';
  const credsRef = (name: string) => ({ apiVersion: CF, kind: 'CloudflareCredentials', name });
  const credentials = (name: string, spec: Record<string, unknown>) =>
    ({
      apiVersion: CF,
      kind: 'CloudflareCredentials',
      metadata: { name },
      spec: { accountId: 'acc', authType: 'apiToken', secretRef: { name: 'cf-token', namespace: ns }, ...spec },
    }) as KubernetesObject;
  const redirect = (spec: Record<string, unknown>) =>
    ({
      apiVersion: CF,
      kind: 'RedirectRule',
      metadata: { name: uniq('redirect'), namespace: ns },
      spec: {
        zone: 'corp.example.com',
        rules: [{ name: 'everything', expression: 'true', target: { url: 'https://elsewhere.example' } }],
        ...spec,
      },
    }) as KubernetesObject;
  const defaultName = uniq('shared-default');
  const teamName = uniq('team-creds');

  afterAll(async () => {
    // A default left behind would be every later source's default.
    for (const name of [defaultName, teamName]) await admin.delete(credsRef(name)).catch(() => undefined);
  });

  it('a namespace the credentials do not allow is refused, as is a priority ahead of the default; allowed, it is admitted', async () => {
    // A namespace user with no RBAC on CloudflareCredentials at all: the default needs no grant.
    const user = await userWith('redirect-editor', [
      { apiGroups: ['networking.cloudflare-operator.io'], resources: ['redirectrules'], verbs: ['create'] },
    ]);
    await admin.create(credentials(defaultName, { isDefault: true, allowedNamespaces: ['platform'] }));
    const takeover = redirect({ priority: 0 });
    const refused = await refusedBySourceWebhook(user, takeover, () => user.create(takeover));
    expect(refused).toContain('CredentialsNotAllowed');
    expect(refused).toContain(`CloudflareCredentials ${defaultName} may not be used from namespace "${ns}"`);
    expect(await admin.get(refOf(takeover)), 'nothing was created').toBeUndefined();

    // The namespace allowed: a rule at the default priority is admitted, one ahead of it is not.
    await admin.mergePatch(credsRef(defaultName), { spec: { allowedNamespaces: ['platform', ns] } });
    const ahead = redirect({ priority: 0 });
    const message = await eventually('the webhook sees the new list', async () => {
      const m = await refusedBySourceWebhook(user, ahead, () => user.create(ahead));
      return m.includes('PriorityNotAllowed') ? m : undefined;
    });
    expect(message).toContain('only namespaces listed in spec.priorityNamespaces');
    await expect(user.create(redirect({}))).resolves.toBeDefined();

    // Named credentials limited to a zone: another zone is refused.
    await admin.create(credentials(teamName, { allowedNamespaces: [ns], allowedZones: ['team.example.com'] }));
    await grantClusterWide('redirect-editor', [
      {
        apiGroups: ['networking.cloudflare-operator.io'],
        resources: ['cloudflarecredentials'],
        resourceNames: [teamName],
        verbs: ['get'],
      },
    ]);
    const otherZone = redirect({ credentialsRef: { name: teamName } });
    expect(await refusedBySourceWebhook(user, otherZone, () => user.create(otherZone))).toContain(
      `may not write to zone corp.example.com`,
    );
    await expect(
      user.create(redirect({ credentialsRef: { name: teamName }, zone: 'team.example.com' })),
    ).resolves.toBeDefined();
  });
});

type KernelPool = KubernetesObject & { spec: Record<string, unknown> };

describe('SandboxPool admission', () => {
  const sandboxPool = (name: string, image: string): KubernetesObject =>
    ({
      apiVersion: 'sandbox.fast.io/v1alpha1',
      kind: 'SandboxPool',
      metadata: { name, namespace: ns },
      spec: {
        capacity: { poolMin: 0, poolMax: 0, bufferMin: 0, bufferMax: 0 },
        maxSandboxesPerPod: 1,
        agentTemplate: { spec: { containers: [{ name: 'agent', image }] } },
      },
    }) as KubernetesObject;
  const editPools = { apiGroups: ['sandbox.fast.io'], resources: ['sandboxpools'], verbs: ['create', 'patch', 'get'] };

  it('its creator must be allowed to create Pods in its namespace (the fast path creates them from agentTemplate)', async () => {
    const poolsOnly = await userWith('pools-only', [editPools]);
    const pool = sandboxPool(uniq('pool'), 'attacker/miner');
    const r = await refusal(() => poolsOnly.create(pool), `SandboxPool ${pool.metadata!.name}`);
    expect(r.code, r.message).toBe(403);
    expect(r.message).toContain(`admission webhook "${SANDBOX_POOL_WEBHOOK_NAME}" denied the request`);
    expect(r.message).toContain(
      `user "system:serviceaccount:${ns}:pools-only" may not create pods in namespace "${ns}"`,
    );
    expect(await admin.get(refOf(pool)), 'nothing was created').toBeUndefined();

    // A user who may create Pods there may create the pool, and change it.
    const podMaker = await userWith('pool-and-pod-maker', [
      editPools,
      { apiGroups: [''], resources: ['pods'], verbs: ['create'] },
    ]);
    const ok = sandboxPool(uniq('pool'), 'durable-operators:dev');
    await expect(podMaker.create(ok)).resolves.toBeDefined();
    // Changing the template of a pool someone else may edit still needs the right.
    const changed = await refusal(
      () =>
        poolsOnly.mergePatch(refOf(ok), {
          spec: { agentTemplate: { spec: { containers: [{ name: 'agent', image: 'attacker/miner' }] } } },
        }),
      'template change',
    );
    expect(changed.code, changed.message).toBe(403);
    // A change that leaves the spec as it was (a label, the fast path's finalizer) is never refused.
    await expect(poolsOnly.mergePatch(refOf(ok), { metadata: { labels: { team: 'a' } } })).resolves.toBeDefined();
    await admin.delete(refOf(ok));
  });

  it('adds a capability beyond the default set only in a namespace the operator allowed it for (review N1, N10)', async () => {
    const pool = (namespace: string, capabilities: object): KernelPool => {
      const p = sandboxPool(uniq('pool'), 'durable-operators:dev') as KernelPool;
      return {
        ...p,
        metadata: { ...p.metadata, namespace },
        spec: { ...p.spec, sandboxSecurityContext: { capabilities } },
      };
    };
    // The admin may create Pods anywhere: the capability is the only reason to refuse.
    const raw = pool(ns, { add: ['NET_RAW'] });
    const r = await refusal(() => admin.create(raw), 'a pool adding NET_RAW');
    expect(r.code, r.message).toBe(403);
    expect(r.message).toContain(`admission webhook "${SANDBOX_POOL_WEBHOOK_NAME}" denied the request`);
    expect(r.message).toContain(
      `adds NET_RAW, beyond the sandboxes' default set (CHOWN, DAC_OVERRIDE, FSETID, FOWNER, SETGID, SETUID, SETPCAP, NET_BIND_SERVICE, KILL), and the operator has not allowed it in namespace "${ns}": an administrator lists the namespace under NET_RAW in the setting admission.sandboxCapabilities (DO_ADMISSION_SANDBOX_CAPABILITIES)`,
    );
    expect(await admin.get(refOf(raw)), 'nothing was created').toBeUndefined();

    // Within the default set (Kubernetes' restricted profile here) nothing needs allowing.
    const restricted = pool(ns, { drop: ['ALL'], add: ['NET_BIND_SERVICE'] });
    await expect(admin.create(restricted)).resolves.toBeDefined();
    // Adding it later is refused the same way.
    const added = await refusal(
      () =>
        admin.mergePatch(refOf(restricted), {
          spec: { sandboxSecurityContext: { capabilities: { add: ['NET_RAW'] } } },
        }),
      'an update adding NET_RAW',
    );
    expect(added.code, added.message).toBe(403);
    expect(added.message).toContain('adds NET_RAW');
    await admin.delete(refOf(restricted));

    // Where the operator allowed NET_RAW (test/support/admission.ts): admitted, and only NET_RAW.
    await admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NET_RAW_NAMESPACE } } as never);
    try {
      const allowed = pool(NET_RAW_NAMESPACE, { add: ['NET_RAW'] });
      await expect(admin.create(allowed)).resolves.toBeDefined();
      await admin.delete(refOf(allowed));
      const ptrace = await refusal(
        () => admin.create(pool(NET_RAW_NAMESPACE, { add: ['NET_RAW', 'SYS_PTRACE'] })),
        'a pool adding SYS_PTRACE',
      );
      expect(ptrace.code, ptrace.message).toBe(403);
      expect(ptrace.message).toContain(`adds SYS_PTRACE, beyond`);
      expect(ptrace.message).toContain(`namespace "${NET_RAW_NAMESPACE}"`);
    } finally {
      await admin.delete({ apiVersion: 'v1', kind: 'Namespace', name: NET_RAW_NAMESPACE });
    }
  });
});
