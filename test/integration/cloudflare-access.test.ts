/**
 * AccessGroup on the aggregation's one mechanism: its target is (account, group name); a group
 * has no field for a marker, so the operator owns the group whose ID its SyncState remembers.
 * The create survives a crash between Cloudflare's answer and recording the ID without making a
 * second group. Real Temporal, kube-apiserver and etcd; Cloudflare is the emulator, read and
 * seeded only through the official SDK; the crash is a SIGKILL of a real worker process.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ManagedProcess } from '../../src/infra/process.js';
import {
  CLOUDFLARE_API_VERSION,
  CLOUDFLARE_ID_ANNOTATION,
  CloudflareSyncStateKind,
  type CloudflareSyncState,
} from '../../src/api/cloudflare.js';
import { sourceWorkflowId, syncStateName, syncWorkflowId } from '../../src/domain/cloudflare/targets.js';
import { eventually, historyText, spawnRole, temporal, uniq, waitForWorker } from '../support/env.js';
import { clearStatus, cloudflareSuite, hexId, secret, sourceObject } from '../support/cloudflare.js';

const account = hexId();
const creds = uniq('cf-acc-acct');
const children: ManagedProcess[] = [];
const suite = cloudflareSuite({
  taskQueue: 'cf-acc',
  namespace: 'cf-acc',
  account: { id: account, name: 'access' },
  credentials: { name: creds },
  configOverrides: { debounceMs: 200 },
  inProcessWorker: false, // the crash test runs a child-process worker first
  afterWorkerStop: async () => {
    for (const p of children) await p.stop();
  },
});
const { k } = suite;

interface Group {
  id: string;
  name: string;
  include: unknown[];
  exclude: unknown[];
}

async function groups(): Promise<Group[]> {
  const out: Group[] = [];
  for await (const g of suite.fx.cf.zeroTrust.access.groups.list({ account_id: account }))
    out.push({ id: g.id!, name: g.name!, include: g.include ?? [], exclude: g.exclude ?? [] });
  return out;
}

const accessGroup = (name: string, spec: Record<string, unknown>) =>
  sourceObject('AccessGroup', name, { ...spec, cloudflare: { credentialsRef: { name: creds } } });
const ref = (name: string) => ({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'AccessGroup', name });
const ready = (name: string) => suite.readyOf('AccessGroup', name);
const statusOf = async (name: string) =>
  ((await k.get<{ status?: { groupId?: string } } & never>(ref(name))) as { status?: { groupId?: string } } | undefined)
    ?.status;

describe('AccessGroup', () => {
  it('a crash between the create and recording the ID leaves exactly one group, and it is ours', async () => {
    const doomed = spawnRole('worker', suite.taskQueue, 'cf-access-created', {
      CLOUDFLARE_API_BASE_URL: suite.fx.emulator.baseURL,
      DO_CLUSTER_ID: 'default', // as the in-process worker (test/support/cloudflare.ts)
      DO_FAULT_KILL_AT: 'cloudflare-created',
      DO_CLOUDFLARE_DEBOUNCE: '200ms',
    });
    children.push(doomed);
    await waitForWorker(suite.taskQueue, doomed);
    const name = uniq('crash');
    await k.apply(accessGroup(name, { include: [{ emailDomain: { domain: 'example.com' } }] }));
    const code = await Promise.race([
      doomed.exited,
      new Promise<'alive'>((r) => setTimeout(() => r('alive'), 120_000)),
    ]);
    expect(code, doomed.logTail()).not.toBe('alive');
    expect(doomed.logTail(50)).toContain('fault injection: SIGKILL at cloudflare-created');
    expect((await groups()).filter((g) => g.name === name)).toHaveLength(1); // the POST went through

    await suite.startWorker();
    await eventually('Ready after the retry', async () => (await ready(name))?.reason === 'Synced', {
      timeoutMs: 150_000,
    });
    const mine = (await groups()).filter((g) => g.name === name);
    expect(mine).toHaveLength(1);
    expect((await statusOf(name))?.groupId).toBe(mine[0]!.id);
    const posts = await suite.fx.admin.requests({ method: 'POST', path: `^/accounts/${account}/access/groups$` });
    expect(posts.filter((r) => r.status === 200)).toHaveLength(1);
    const st = await k.get<CloudflareSyncState>({
      apiVersion: CLOUDFLARE_API_VERSION,
      kind: 'CloudflareSyncState',
      name: syncStateName({ resourceType: 'AccessGroup', accountId: account, name }),
    });
    const remembered = st?.status?.resultData as Record<string, string> | undefined;
    expect(remembered).toMatchObject({ id: mine[0]!.id });
    expect(remembered?.creating).toBeUndefined(); // the intent is cleared once the ID is recorded

    await k.delete(ref(name));
    await eventually('deleted with its resource', async () => !(await groups()).some((g) => g.name === name));
  });

  it('creates, updates in place (same ID, shown in status.groupId) and deletes its group; never adopts one of the same name', async () => {
    const byHand = await suite.fx.cf.zeroTrust.access.groups.create({
      account_id: account,
      name: 'made-by-hand',
      include: [{ everyone: {} }] as never,
    });
    const staff = uniq('staff');
    await k.apply(
      accessGroup(staff, { name: `Staff ${staff}`, include: [{ emailDomain: { domain: 'example.com' } }] }),
    );
    const created = await eventually('the group created', async () =>
      (await groups()).find((g) => g.name === `Staff ${staff}`),
    );
    expect(created.include).toEqual([{ email_domain: { domain: 'example.com' } }]);
    await eventually('status.groupId', async () => (await statusOf(staff))?.groupId === created.id);

    await k.apply(
      accessGroup(staff, {
        name: `Staff ${staff}`,
        include: [{ emailDomain: { domain: 'example.com' } }],
        exclude: [{ ipRanges: { ip: ['203.0.113.0/24', '198.51.100.7'] } }],
      }),
    );
    const updated = await eventually('updated in place', async () => {
      const g = (await groups()).find((x) => x.name === `Staff ${staff}`);
      return g?.exclude.length === 2 ? g : undefined;
    });
    expect(updated.id).toBe(created.id);
    // Cloudflare stores an address in CIDR form: the bare IP comes back as its one-host block.
    expect(updated.exclude).toEqual([{ ip: { ip: '203.0.113.0/24' } }, { ip: { ip: '198.51.100.7/32' } }]);

    // A resource wanting the hand-made group's name: never adopted.
    const taker = uniq('taker');
    await k.apply(accessGroup(taker, { name: 'made-by-hand', include: [{ everyone: true }] }));
    const conflict = await eventually('the conflict reported', async () => {
      const r = await ready(taker);
      return r?.reason === 'Conflict' ? r : undefined;
    });
    expect(conflict.message).toContain(
      'Access group "made-by-hand" is already held by one this operator does not manage',
    );
    expect((await groups()).find((g) => g.id === byHand.id)).toMatchObject({
      name: 'made-by-hand',
      include: [{ everyone: {} }],
    });

    await k.delete(ref(staff));
    await k.delete(ref(taker));
    await eventually('ours deleted, the hand-made one kept', async () => {
      const all = await groups();
      return !all.some((g) => g.name === `Staff ${staff}`) && all.some((g) => g.id === byHand.id);
    });
  });

  it('the group stays ours when its SyncState forgets it (status lost as in a restore, SyncState deleted): updated in place, never a Conflict, deleted with its resource', async () => {
    if (!suite.worker) await suite.startWorker(); // when run alone (the first test starts it)
    const name = uniq('restored');
    const spec = (exclude: string[]) => ({
      include: [{ emailDomain: { domain: 'example.com' } }],
      ...(exclude.length ? { exclude: [{ ipRanges: { ip: exclude } }] } : {}),
    });
    await k.apply(accessGroup(name, spec([])));
    const created = await eventually('the group created', async () => (await groups()).find((g) => g.name === name));
    await eventually('Synced', async () => (await ready(name))?.reason === 'Synced');
    const annotations = async () =>
      ((await k.get(ref(name))) as { metadata?: { annotations?: Record<string, string> } } | undefined)?.metadata
        ?.annotations ?? {};
    expect((await annotations())[CLOUDFLARE_ID_ANNOTATION]).toBe(created.id);
    const state = {
      apiVersion: CLOUDFLARE_API_VERSION,
      kind: 'CloudflareSyncState',
      plural: CloudflareSyncStateKind.plural,
      name: syncStateName({ resourceType: 'AccessGroup', accountId: account, name }),
    };

    await clearStatus(k, state); // as a restore brings it back
    await k.apply(accessGroup(name, spec(['203.0.113.0/24'])));
    const updated = await eventually('updated in place', async () =>
      (await groups()).find((g) => g.name === name && g.exclude.length === 1),
    );
    expect(updated.id).toBe(created.id);
    await eventually('Synced again', async () => (await ready(name))?.reason === 'Synced');

    await k.delete(state); // deleted by a user
    await k.apply(accessGroup(name, spec(['203.0.113.0/24', '198.51.100.7'])));
    const again = await eventually('updated in place again', async () =>
      (await groups()).find((g) => g.name === name && g.exclude.length === 2),
    );
    expect(again.id).toBe(created.id);
    await eventually('Synced, not Conflict', async () => (await ready(name))?.reason === 'Synced');
    expect((await groups()).filter((g) => g.name === name)).toHaveLength(1);
    expect((await statusOf(name))?.groupId).toBe(created.id);

    await clearStatus(k, state);
    await k.delete(ref(name));
    await eventually('deleted with its resource', async () => !(await groups()).some((g) => g.name === name));
  });

  it('a create Cloudflare refused leaves no intent: a group of that name made by hand later is never taken, nor deleted with the resource', async () => {
    if (!suite.worker) await suite.startWorker(); // run alone (-t), the crash test has not started it
    const name = uniq('refused');
    await suite.fx.admin.addFault({
      method: 'POST',
      path: `^/accounts/${account}/access/groups$`,
      status: 400,
      code: 12000,
      message: 'invalid request',
      times: 1,
    });
    await k.apply(accessGroup(name, { include: [{ emailDomain: { domain: 'example.com' } }] }));
    await eventually('the refusal on its status', async () => (await ready(name))?.reason === 'CloudflareInvalid');
    const byHand = await suite.fx.cf.zeroTrust.access.groups.create({
      account_id: account,
      name,
      include: [{ everyone: {} }] as never,
    });
    const target = { resourceType: 'AccessGroup' as const, accountId: account, name };
    await (await temporal()).workflow.getHandle(syncWorkflowId(target)).signal('reaggregate');
    const conflict = await eventually('held by the hand-made group', async () => {
      const r = await ready(name);
      return r?.reason === 'Conflict' ? r : undefined;
    });
    expect(conflict.message).toContain('one this operator does not manage');
    await k.delete(ref(name));
    await eventually('the resource gone', async () => !(await k.get(ref(name))));
    expect((await groups()).filter((g) => g.name === name)).toEqual([
      { id: byHand.id, name, include: [{ everyone: {} }], exclude: [] },
    ]);
    await suite.fx.cf.zeroTrust.access.groups.delete(byHand.id!, { account_id: account });
  });

  it('bad input names the rule and the field', async () => {
    const bad = uniq('bad');
    await k.apply(
      accessGroup(bad, {
        include: [{ emailDomain: { domain: 'example.com' }, everyone: true }, { country: { country: ['Germany'] } }],
      }),
    );
    const r = await eventually('InvalidSpec', async () => {
      const c = await ready(bad);
      return c?.reason === 'InvalidSpec' ? c : undefined;
    });
    expect(r.message).toBe(
      'spec.include[0]: set exactly one selector (it sets emailDomain, everyone); spec.include[1].country.country[0]: "Germany" is not a two-letter country code',
    );
    await k.delete(ref(bad));
  });
});

describe('AccessIdentityProvider', () => {
  const provider = (name: string, spec: Record<string, unknown>) =>
    sourceObject('AccessIdentityProvider', name, { ...spec, cloudflare: { credentialsRef: { name: creds } } });
  const idpRef = (name: string) => ({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'AccessIdentityProvider', name });
  const secretValue = (n: number) => secret(`oauth-client-secret-${n}-${uniq('s')}`);
  const setSecret = (name: string, value: string) =>
    k.apply({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace: suite.namespace },
      stringData: { clientSecret: value },
    } as never);
  const writesOf = async (name: string) =>
    (await suite.fx.admin.requests({ path: `^/accounts/${account}/access/identity_providers` }))
      .filter((r) => (r.method === 'POST' || r.method === 'PUT') && r.status === 200)
      .map((r) => r.body as { name: string; config: { client_secret?: string; client_id?: string } })
      .filter((b) => b.name === name);

  it('the client secret comes from its Secret, never enters history or the SyncState, and a rotation is written', async () => {
    const name = uniq('github');
    const secretName = uniq('idp-secret');
    const first = secretValue(1);
    await setSecret(secretName, first);
    await k.apply(
      provider(name, {
        type: 'github',
        config: { clientId: 'client-123' },
        configSecretRef: { name: secretName, key: 'clientSecret', namespace: suite.namespace },
      }),
    );
    const created = await eventually('the provider created with the Secret’s value', async () => {
      const w = await writesOf(name);
      return w.length ? w : undefined;
    });
    expect(created[0]!.config).toEqual({ client_id: 'client-123', client_secret: first });
    const listed: { id?: string; name?: string; config?: Record<string, unknown> }[] = [];
    for await (const p of suite.fx.cf.zeroTrust.identityProviders.list({ account_id: account }))
      listed.push(p as never);
    const mine = listed.filter((p) => p.name === name);
    expect(mine).toHaveLength(1);
    expect(mine[0]!.config).toEqual({ client_id: 'client-123' }); // Cloudflare never answers the secret
    await eventually('status.providerId', async () => {
      const o = (await k.get(idpRef(name))) as { status?: { providerId?: string } } | undefined;
      return o?.status?.providerId === mine[0]!.id;
    });

    // The SyncState (cluster-scoped, widely readable) keeps a digest keyed by what only the worker
    // holds, not the plain SHA-256 of the secret, which would let its readers test guesses (D25).
    const target = { resourceType: 'AccessIdentityProvider' as const, accountId: account, name };
    const storedDigest = async () =>
      (
        (await k.get({
          apiVersion: CLOUDFLARE_API_VERSION,
          kind: 'CloudflareSyncState',
          name: syncStateName(target),
        })) as { status?: { resultData?: { secretDigest?: string } } } | undefined
      )?.status?.resultData?.secretDigest;
    const firstDigest = await eventually('the digest recorded', storedDigest);
    const sha256 = (v: string) => createHash('sha256').update(v).digest('hex');
    expect(sha256(first)).not.toContain(firstDigest.replace(/^hmac-sha256:/, ''));
    expect(firstDigest).toMatch(/^hmac-sha256:[0-9a-f]{32}$/);

    // Rotated: the next sync (here a user's reaggregate) writes the new value.
    const second = secretValue(2);
    await setSecret(secretName, second);
    const c = await temporal();
    await c.workflow.getHandle(syncWorkflowId(target)).signal('reaggregate');
    await eventually('the rotated secret written', async () =>
      (await writesOf(name)).some((w) => w.config.client_secret === second),
    );
    await eventually('the digest of the rotated secret recorded', async () => {
      const d = await storedDigest();
      return d && d !== firstDigest && !sha256(second).includes(d.replace(/^hmac-sha256:/, ''));
    });

    // Neither value is in any history or in the SyncState.
    // (Payloads decoded: a JSON.stringify of the history would show them only in base64.)
    for (const workflowId of [syncWorkflowId(target), sourceWorkflowId({ kind: 'AccessIdentityProvider', name })]) {
      const history = await historyText(workflowId);
      expect(history).toContain(name); // the scan does see what the history holds
      expect(history).not.toContain(first);
      expect(history).not.toContain(second);
    }
    const state = JSON.stringify(
      await k.get({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'CloudflareSyncState', name: syncStateName(target) }),
    );
    expect(state).not.toContain(first);
    expect(state).not.toContain(second);

    await k.delete(idpRef(name));
    await eventually('deleted with its resource', async () => {
      for await (const p of suite.fx.cf.zeroTrust.identityProviders.list({ account_id: account }))
        if ((p as { name?: string }).name === name) return false;
      return true;
    });
  });

  it('bad input: an inline secret and a missing client ID are named; a missing Secret is the status', async () => {
    const inline = uniq('inline');
    // Inline secrets (the original's legacy fields) are refused, and never reach a workflow's
    // history on the way (cloudflareSuite scans every history of this file for them at the end).
    const inlineSecrets = {
      clientSecret: secret(uniq('inline-client-secret')),
      apiToken: secret(uniq('inline-token')),
    };
    await k.apply(
      provider(inline, {
        type: 'google',
        config: inlineSecrets,
        scimConfig: { enabled: true, secret: secret(uniq('inline-scim')) },
      }),
    );
    const r = await eventually('InvalidSpec', async () => {
      const c = await suite.readyOf('AccessIdentityProvider', inline);
      return c?.reason === 'InvalidSpec' ? c : undefined;
    });
    expect(r.message).toContain('spec.config.clientSecret: inline secrets are not accepted');
    expect(r.message).toContain('spec.config.apiToken: inline secrets are not accepted');
    expect(r.message).toContain('spec.scimConfig.secret: inline secrets are not accepted');
    expect(r.message).toContain('spec.config.clientId: a google provider needs its client ID');
    await k.delete(idpRef(inline));

    const missing = uniq('missing');
    await k.apply(
      provider(missing, {
        type: 'github',
        config: { clientId: 'x' },
        configSecretRef: { name: 'no-such-secret', key: 'clientSecret', namespace: suite.namespace },
      }),
    );
    const m = await eventually('the missing Secret on its status', async () => {
      const c = await suite.readyOf('AccessIdentityProvider', missing);
      return c?.status === 'False' && c.message.includes('no-such-secret') ? c : undefined;
    });
    expect(m.message).toContain(`Secret ${suite.namespace}/no-such-secret does not exist`);
    await k.delete(idpRef(missing));
  });
});
