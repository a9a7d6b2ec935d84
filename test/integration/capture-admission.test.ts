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
import type { KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  WEBHOOK_CONFIGURATION_NAME,
  WEBHOOK_NAME,
  validatingWebhookConfiguration,
} from '../../src/admission/webhook.js';
import { KubeClient, apiMessage, isNotFound } from '../../src/kube/client.js';
import { eventually, kube, refusal, serviceAccountKubeconfig, uniq, waitUntilAllowed } from '../support/env.js';

const SNAPSHOTTER = 'state-snapshotter.deckhouse.io/v1alpha1';
const STORAGE = 'storage.deckhouse.io/v1alpha1';
const admin = kube();
const ns = uniq('admission');

/** A ServiceAccount in `ns` bound to a Role with `rules`, and a client authenticated as it. */
async function userWith(name: string, rules: object[]): Promise<KubeClient> {
  await admin.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: ns } });
  await admin.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name, namespace: ns },
    rules,
  } as never);
  await admin.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name, namespace: ns },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [{ kind: 'ServiceAccount', name, namespace: ns }],
  } as never);
  const file = await serviceAccountKubeconfig(ns, name, ns);
  const first = rules[0] as { apiGroups: string[]; resources: string[]; verbs: string[] };
  await waitUntilAllowed(
    { namespace: ns, name },
    { namespace: ns, group: first.apiGroups[0]!, resource: first.resources[0]!, verb: first.verbs[0]! },
  );
  return KubeClient.fromKubeconfig(file);
}

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

afterAll(async () => {
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
    const expected = validatingWebhookConfiguration({ url: '' }).webhooks[0]!;
    expect(registered!.webhooks).toHaveLength(1);
    expect(registered!.webhooks[0]).toMatchObject({
      name: WEBHOOK_NAME,
      failurePolicy: 'Fail',
      sideEffects: 'None',
      rules: expected.rules,
    });
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
    await admin.mergePatch(vwc, {
      webhooks: [
        {
          ...registered.webhooks[0],
          clientConfig: { ...registered.webhooks[0]!.clientConfig, url: 'https://127.0.0.1:1/unreachable' },
        },
      ],
    });
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
      await admin.mergePatch(vwc, {
        webhooks: [{ ...registered.webhooks[0], clientConfig: { ...registered.webhooks[0]!.clientConfig, url } }],
      });
      await eventually(
        'the webhook answers again',
        async () => (await admin.create(mcr([configMap('readable')]))).metadata?.uid,
      );
    }
  });
});
