/**
 * VirtualNetwork on the aggregation's one mechanism: the watcher starts the object's source
 * workflow, it registers with the target `VirtualNetwork/<account>/<network name>`, and that
 * target's sync reads the account's networks of that name, merges (the marker is in `comment`)
 * and creates, patches or deletes the one network. Real Temporal, kube-apiserver and etcd;
 * Cloudflare is the emulator, read and seeded only through the official SDK.
 */
import { describe, expect, it } from 'vitest';
import { CLOUDFLARE_API_VERSION } from '../../src/api/cloudflare.js';
import { eventually, temporal, uniq } from '../support/env.js';
import { cloudflareSuite, createCredentials, hexId, requestMark, requestsSince } from '../support/cloudflare.js';
import { syncWorkflowId } from '../../src/domain/cloudflare/targets.js';

const account = hexId();
const creds = uniq('cf-vn-acct');
/** A VirtualNetwork object whose name (no spec.name) is also that of a network made by hand. */
const taken = uniq('taken');
const suite = cloudflareSuite({
  taskQueue: 'cf-vn',
  namespace: 'cf-vn',
  account: { id: account, name: 'virtual networks' },
  credentials: { name: creds },
  configOverrides: { debounceMs: 200 },
});
const { k } = suite;

interface Network {
  id: string;
  name: string;
  comment: string;
  is_default_network: boolean;
}

/** The account's live networks (not deleted), through the SDK. */
async function networks(): Promise<Network[]> {
  const out: Network[] = [];
  for await (const n of suite.fx.cf.zeroTrust.networks.virtualNetworks.list({ account_id: account, is_deleted: false }))
    out.push({ id: n.id, name: n.name, comment: n.comment, is_default_network: n.is_default_network });
  return out;
}

const ref = (name: string) => ({ apiVersion: CLOUDFLARE_API_VERSION, kind: 'VirtualNetwork', name });

const virtualNetwork = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: CLOUDFLARE_API_VERSION,
  kind: 'VirtualNetwork',
  metadata: { name },
  spec: { ...spec, cloudflare: { credentialsRef: { name: creds } } },
});

type Ready = { status: string; reason: string; message: string; observedGeneration?: number };

async function readyOf(name: string): Promise<Ready | undefined> {
  const obj = await k.get<
    { metadata?: { generation?: number }; status?: { conditions?: (Ready & { type: string })[] } } & never
  >(ref(name));
  const o = obj as
    { metadata?: { generation?: number }; status?: { conditions?: (Ready & { type: string })[] } } | undefined;
  const ready = o?.status?.conditions?.find((c) => c.type === 'Ready');
  // Only a verdict about the current generation counts.
  return ready && ready.observedGeneration === o?.metadata?.generation ? ready : undefined;
}

const marker = (name: string) => `[managed-by:default:VirtualNetwork/${name}]`;

describe('VirtualNetwork', () => {
  it('creates, patches and deletes its one network; never adopts nor touches a hand-made one', async () => {
    // Made by hand in the dashboard before anything else (so it is the account's default network).
    const other = await suite.fx.cf.zeroTrust.networks.virtualNetworks.create({
      account_id: account,
      name: 'made-by-hand',
      comment: 'An admin made this one',
    });
    const handTaken = await suite.fx.cf.zeroTrust.networks.virtualNetworks.create({
      account_id: account,
      name: taken,
      comment: 'Also made by hand, with the name a VirtualNetwork wants',
    });
    const untouched = async () => {
      const all = await networks();
      expect(all.find((n) => n.id === other.id)).toEqual({
        id: other.id,
        name: 'made-by-hand',
        comment: 'An admin made this one',
        is_default_network: true,
      });
      expect(all.find((n) => n.id === handTaken.id)).toEqual({
        id: handTaken.id,
        name: taken,
        comment: 'Also made by hand, with the name a VirtualNetwork wants',
        is_default_network: false,
      });
    };

    // A VirtualNetwork → exactly one network of that name, the marker in its comment.
    const staging = uniq('staging');
    await k.apply(virtualNetwork(staging, { name: 'staging-net', comment: 'Private network of staging' }));
    const created = await eventually('the network in Cloudflare', async () => {
      const found = (await networks()).filter((n) => n.name === 'staging-net');
      return found.length === 1 ? found[0] : undefined;
    });
    expect(created.comment).toBe(`Private network of staging ${marker(staging)}`);
    expect(created.is_default_network).toBe(false);
    const synced = await eventually('the source Ready', async () => {
      const r = await readyOf(staging);
      return r?.status === 'True' ? r : undefined;
    });
    expect(synced.reason).toBe('Synced');
    await untouched();

    // A changed comment → the same network patched (same id), still one.
    await k.apply(virtualNetwork(staging, { name: 'staging-net', comment: 'Staging, second edition' }));
    const patched = await eventually('the comment patched', async () => {
      const found = (await networks()).filter((n) => n.name === 'staging-net');
      return found.length === 1 && found[0]!.comment.startsWith('Staging, second') ? found[0] : undefined;
    });
    expect(patched).toEqual({ ...created, comment: `Staging, second edition ${marker(staging)}` });
    await eventually(
      'the source Ready for the new generation',
      async () => (await readyOf(staging))?.reason === 'Synced',
    );

    // The name of a hand-made network (no spec.name: the object's name is the network's) → not adopted.
    await k.apply(virtualNetwork(taken, { comment: 'Wants the hand-made name' }));
    const conflict = await eventually('the conflict reported', async () => {
      const r = await readyOf(taken);
      return r?.reason === 'Conflict' ? r : undefined;
    });
    expect(conflict.message).toContain(
      `virtual network "${taken}" is already held by one this operator does not manage`,
    );
    expect(conflict.message).toContain('never adopted');
    expect(conflict.status).toBe('False'); // nothing of it is in Cloudflare
    await untouched();
    expect((await networks()).filter((n) => n.name === taken)).toHaveLength(1);

    // Bad input: a comment with a line break → InvalidSpec naming the field, nothing in Cloudflare.
    const bad = uniq('bad');
    await k.apply(virtualNetwork(bad, { name: 'bad-net', comment: 'first line\nsecond line' }));
    const invalid = await eventually('InvalidSpec', async () => {
      const r = await readyOf(bad);
      return r?.reason === 'InvalidSpec' ? r : undefined;
    });
    expect(invalid.status).toBe('False');
    expect(invalid.message).toContain('spec.comment');
    expect((await networks()).some((n) => n.name === 'bad-net')).toBe(false);

    // Delete → our network gone from Cloudflare, the object released; the hand-made ones remain.
    for (const name of [staging, taken, bad]) await k.delete(ref(name));
    await eventually('the network deleted', async () => !(await networks()).some((n) => n.name === 'staging-net'));
    for (const name of [staging, taken, bad])
      await eventually(`${name} gone (finalizer released)`, async () => !(await k.get(ref(name))), {
        timeoutMs: 120_000,
      });
    await untouched();
    expect((await networks()).map((n) => n.name).sort()).toEqual(['made-by-hand', taken].sort());
  });
  it('a network of ours that Cloudflare made the default is not drift: a reaggregate writes nothing', async () => {
    // A fresh account: its first network becomes the default, whatever the create asked.
    const other = hexId();
    await suite.fx.admin.seed({ accounts: [{ id: other, name: 'first network' }] });
    const otherCreds = uniq('cf-vn-first');
    await createCredentials(k, { name: otherCreds, namespace: suite.namespace, accountId: other });
    const first = uniq('first');
    await k.apply({
      ...virtualNetwork(first, { comment: 'the first one' }),
      spec: { comment: 'the first one', cloudflare: { credentialsRef: { name: otherCreds } } },
    });
    await eventually('Ready', async () => (await readyOf(first))?.reason === 'Synced');
    const list = async () => {
      const out: Network[] = [];
      for await (const n of suite.fx.cf.zeroTrust.networks.virtualNetworks.list({
        account_id: other,
        is_deleted: false,
      }))
        out.push({ id: n.id, name: n.name, comment: n.comment, is_default_network: n.is_default_network });
      return out;
    };
    expect(await list()).toEqual([expect.objectContaining({ name: first, is_default_network: true })]);

    const mark = await requestMark(suite.fx.admin);
    const target = { resourceType: 'VirtualNetwork' as const, accountId: other, name: first };
    const handle = (await temporal()).workflow.getHandle(syncWorkflowId(target));
    await handle.signal('reaggregate');
    await eventually('the reaggregate ran', async () => {
      const gets = await requestsSince(suite.fx.admin, mark, {
        method: 'GET',
        path: `^/accounts/${other}/teamnet/virtual_networks`,
      });
      return gets.length > 0;
    });
    // The write, if any, follows the GET within the same activity: give it time to land.
    await new Promise((r) => setTimeout(r, 2000));
    expect((await handle.query<{ lastResult?: string }>('syncState')).lastResult).toBe('no change needed');
    const writes = await requestsSince(suite.fx.admin, mark, { path: `^/accounts/${other}/teamnet/virtual_networks` });
    expect(writes.filter((r) => r.method !== 'GET')).toEqual([]);

    await k.delete(ref(first));
    await eventually('deleted', async () => (await list()).length === 0);
  });
});
