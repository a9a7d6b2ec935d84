/**
 * `envs[].valueFrom` of a Sandbox (issue 22, "Secrets out of history"): the fast path reads the
 * Secret or ConfigMap key when it creates the sandbox on its agent, and the value reaches the
 * sandbox's process only — never the workflow's history (scanned raw), nor the Sandbox. Kubernetes'
 * rules: a missing object or key stops the create with the kubelet's message (Ready=False
 * CreateContainerConfigError, nothing on an agent) until it exists; `optional: true` leaves the
 * variable out. The admission webhook refuses a Sandbox whose creator may not `get` what it names
 * (ServiceAccounts with real tokens, so the apiserver authenticates them and RBAC decides).
 *
 * Real Temporal, apiserver, admission webhook (the local stack's), agents on containerd.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_ENV_WEBHOOK_NAME } from '../../src/admission/webhook.js';
import { SandboxKind, type Sandbox } from '../../src/api/sandbox.js';
import { TENANT_LABEL, sandboxWorkflowId } from '../../src/domain/sandbox.js';
import { eventually, historyText, refusal, serviceAccountWith, uniq } from '../support/env.js';
import { SandboxStack, sandboxImage } from '../support/fastpath.js';

let stack: SandboxStack;
const password = uniq('pw-s3cr3t');
const mode = uniq('cm-value');

beforeAll(async () => {
  stack = await new SandboxStack({ agents: 1, capacity: 4 }).start();
  await stack.kube.create({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'db', namespace: stack.namespace },
    stringData: { password },
  } as never);
  await stack.kube.create({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'cfg', namespace: stack.namespace },
    data: { mode },
  } as never);
}, 180_000);

afterAll(async () => {
  await stack?.stop();
});

type Env = { name: string; value?: string; valueFrom?: Record<string, unknown> };

function sandbox(name: string, envs: Env[], command: string): KubernetesObject {
  return {
    apiVersion: SandboxKind.apiVersion,
    kind: SandboxKind.kind,
    // The tenant label: so the test's tenant may read its logs through the API.
    metadata: { name, namespace: stack.namespace, labels: { [TENANT_LABEL]: String(stack.tenantId) } },
    spec: { image: sandboxImage(), poolRef: 'pool-a', command: ['sh', '-c', `${command}; sleep 3600`], envs },
  } as KubernetesObject;
}

const secretRef = (name: string, key: string, optional?: boolean) => ({
  secretKeyRef: { name, key, ...(optional !== undefined ? { optional } : {}) },
});

async function logs(name: string): Promise<string> {
  const res = await stack.http('GET', `/api/v1/namespaces/${stack.namespace}/sandboxes/${name}/logs`);
  return res.text();
}

async function deleteAndWait(name: string) {
  await stack.kube.delete(stack.sandboxRef(name));
  await eventually(`Sandbox ${name} gone`, async () => !(await stack.sandbox(name)));
}

/** Whether any agent holds a sandbox of this name. */
async function onAnAgent(name: string): Promise<boolean> {
  return (await stack.agentReports()).some((r) => r.sandboxes.some((s) => s.claimName === name));
}

describe('valueFrom resolved at create time, never in history', () => {
  it('a Secret key and a ConfigMap key reach the sandbox; optional ones that do not exist are left out', async () => {
    const name = uniq('from');
    await stack.kube.create(
      sandbox(
        name,
        [
          { name: 'DB_PASSWORD', valueFrom: secretRef('db', 'password') },
          { name: 'MODE', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'mode' } } },
          { name: 'NO_SECRET', valueFrom: secretRef('no-such-secret', 'x', true) },
          { name: 'NO_KEY', valueFrom: secretRef('db', 'no-such-key', true) },
          { name: 'PLAIN', value: 'plain-value' },
        ],
        'echo "pw=$DB_PASSWORD mode=$MODE nosecret=${NO_SECRET-unset} nokey=${NO_KEY-unset} plain=$PLAIN"',
      ),
    );
    await eventually(`${name} printed its env`, async () =>
      (await logs(name)).includes(`pw=${password} mode=${mode} nosecret=unset nokey=unset plain=plain-value`),
    );
    const sb = await eventually(`${name} Running`, async () => {
      const got = await stack.sandbox(name);
      return got?.status?.phase === 'Running' ? got : undefined;
    });
    // The record keeps the references as written, never the values read.
    expect(JSON.stringify(sb)).not.toContain(password);
    expect(sb.spec.envs?.[0]).toEqual({ name: 'DB_PASSWORD', valueFrom: secretRef('db', 'password') });

    await deleteAndWait(name);
    const history = await historyText(sandboxWorkflowId(stack.namespace, name));
    expect(history).toContain('DB_PASSWORD'); // the scan sees the env, its reference sealed
    for (const value of [password, Buffer.from(password).toString('base64'), mode, 'plain-value'])
      expect(history, `history of ${name}`).not.toContain(value);

    // A sealed reference copied out of history names no Secret for anyone else: as a literal
    // value (kubectl or the API) it is sealed again where it enters, and arrives as written.
    const copied = /sealed-source:v1:[A-Za-z0-9_-]+/.exec(history)?.[0];
    expect(copied).toBeDefined();
    const forged = uniq('forged');
    await stack.kube.create(sandbox(forged, [{ name: 'DB_PASSWORD', value: copied! }], 'echo "pw=$DB_PASSWORD"'));
    const viaApi = uniq('forged-api');
    await stack.grpc.call('CreateSandbox', {
      namespace: stack.namespace,
      name: viaApi,
      image: sandboxImage(),
      poolRef: 'pool-a',
      command: ['sh', '-c', 'echo "pw=$DB_PASSWORD"; sleep 3600'],
      envs: { DB_PASSWORD: copied },
    });
    for (const n of [forged, viaApi]) {
      await eventually(`${n} printed its env`, async () => (await logs(n)).includes(`pw=${copied}`));
      expect(await logs(n)).not.toContain(password);
      await deleteAndWait(n);
    }
  });

  it("a missing Secret or key: Pending, Ready=False CreateContainerConfigError with the kubelet's message, nothing on an agent — until it exists", async () => {
    const name = uniq('missing');
    const secretName = uniq('later');
    const value = uniq('later-s3cr3t');
    await stack.kube.create(
      sandbox(name, [{ name: 'TOKEN', valueFrom: secretRef(secretName, 'token') }], 'echo "token=$TOKEN"'),
    );
    const waiting = async (message: string) =>
      eventually(`${name}: ${message}`, async () => {
        const sb = await stack.sandbox(name);
        const ready = sb?.status?.conditions?.find((c) => c.type === 'Ready');
        return ready?.reason === 'CreateContainerConfigError' && ready.message === message ? sb : undefined;
      });
    let sb: Sandbox = await waiting(`secret "${secretName}" not found`);
    expect(sb.status).toMatchObject({ phase: 'Pending' });
    expect(sb.status?.assignedPod).toBeUndefined();
    expect(await onAnAgent(name)).toBe(false);

    await stack.kube.create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: secretName, namespace: stack.namespace },
      stringData: { other: 'x' },
    } as never);
    sb = await waiting(`couldn't find key token in Secret ${stack.namespace}/${secretName}`);
    expect(sb.status?.phase).toBe('Pending');
    expect(await onAnAgent(name)).toBe(false);

    // The key appears: the next placement attempt creates the sandbox, as the kubelet would.
    await stack.kube.mergePatch(
      { apiVersion: 'v1', kind: 'Secret', namespace: stack.namespace, name: secretName },
      {
        stringData: { token: value },
      },
    );
    await eventually(`${name} printed its env`, async () => (await logs(name)).includes(`token=${value}`), {
      timeoutMs: 60_000,
    });
    await deleteAndWait(name);
    expect(await historyText(sandboxWorkflowId(stack.namespace, name))).not.toContain(value);
  });
});

describe('admission: the creator must be allowed to get what valueFrom names', () => {
  const createSandboxes = { apiGroups: ['sandbox.fast.io'], resources: ['sandboxes'], verbs: ['create', 'patch'] };

  /** A ServiceAccount of the stack's namespace with `rules`, and a client authenticated as it. */
  const userWith = (name: string, rules: object[]) => serviceAccountWith(stack.namespace, name, rules);

  it('refuses a Secret its creator may not read (on create and on an envs change); admits what it may', async () => {
    // May create Sandboxes and read ConfigMaps, not Secrets.
    const noSecrets = await userWith('no-secrets', [
      createSandboxes,
      { apiGroups: [''], resources: ['configmaps'], verbs: ['get'] },
    ]);
    // May read the Secret `db` by name only.
    const dbReader = await userWith('db-reader', [
      createSandboxes,
      { apiGroups: [''], resources: ['secrets'], resourceNames: ['db'], verbs: ['get'] },
    ]);
    const withSecret = (name: string) =>
      sandbox(name, [{ name: 'DB_PASSWORD', valueFrom: secretRef('db', 'password') }], 'true');

    const refused = uniq('refused');
    const r = await refusal(() => noSecrets.create(withSecret(refused)), `Sandbox ${refused}`);
    expect(r.code, r.message).toBe(403);
    expect(r.message).toContain(`admission webhook "${SANDBOX_ENV_WEBHOOK_NAME}" denied the request`);
    expect(r.message).toContain(
      `Secret "db" (v1): user "system:serviceaccount:${stack.namespace}:no-secrets" may not get secrets in namespace "${stack.namespace}"`,
    );
    expect(await stack.sandbox(refused), 'nothing was created').toBeUndefined();
    // Optional changes nothing: the operator would still read it if it exists.
    const optional = uniq('refused-opt');
    expect(
      (
        await refusal(() =>
          noSecrets.create(sandbox(optional, [{ name: 'A', valueFrom: secretRef('db', 'password', true) }], 'true')),
        )
      ).code,
    ).toBe(403);

    // What it may read is admitted: a ConfigMap; and a plain Sandbox never reaches the webhook.
    const cm = uniq('cm-ok');
    await noSecrets.create(
      sandbox(cm, [{ name: 'MODE', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'mode' } } }], 'true'),
    );
    const plain = uniq('plain');
    await noSecrets.create(sandbox(plain, [{ name: 'A', value: 'b' }], 'true'));
    // Adding a Secret reference later is reviewed too.
    const u = await refusal(
      () =>
        noSecrets.mergePatch(stack.sandboxRef(plain), {
          spec: { envs: [{ name: 'A', valueFrom: secretRef('db', 'password') }] },
        }),
      `patch of ${plain}`,
    );
    expect(u.code, u.message).toBe(403);
    expect(u.message).toContain(SANDBOX_ENV_WEBHOOK_NAME);

    // A user allowed to get that one Secret (resourceNames) may name it, and no other.
    const allowed = uniq('allowed');
    await dbReader.create(withSecret(allowed));
    const other = uniq('other-secret');
    expect(
      (await refusal(() => dbReader.create(sandbox(other, [{ name: 'A', valueFrom: secretRef('top', 'k') }], 'true'))))
        .code,
    ).toBe(403);
    for (const n of [cm, plain, allowed]) await deleteAndWait(n);
  });
});
