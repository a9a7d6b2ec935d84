/**
 * Zero Trust Access groups: the target is (account, group name); its one item is the group,
 * owned by the ID the SyncState remembers (./owned-by-id.ts: no field can carry a marker).
 */
import { desiredOwnedObjects } from '../../../domain/cloudflare/aggregate.js';
import { accessGroupCodec, type AccessGroupItem } from '../../../domain/cloudflare/items.js';
import type { SyncTarget } from '../../../domain/cloudflare/targets.js';
import type Cloudflare from 'cloudflare';
import type { TargetAdapter } from './adapter.js';
import { unlessNotFound } from '../errors.js';
import { readOwnedById, writeOwnedById, type OwnedObjectCalls } from './owned-by-id.js';

type GroupTarget = Extract<SyncTarget, { resourceType: 'AccessGroup' }>;

/** The SDK's access rules (ours are its rule objects, loosely typed), and its list filter (the API also takes `name`). */
type AccessRules = Parameters<Cloudflare['zeroTrust']['access']['groups']['create']>[0]['include'];
type GroupListParams = Parameters<Cloudflare['zeroTrust']['access']['groups']['list']>[0];

interface LiveGroup {
  id?: string;
  name?: string;
  include?: unknown[];
  exclude?: unknown[];
  require?: unknown[];
}

const item = (g: LiveGroup): AccessGroupItem => ({
  id: g.id,
  name: g.name ?? '',
  include: (g.include ?? []) as Record<string, unknown>[],
  exclude: (g.exclude ?? []) as Record<string, unknown>[],
  require: (g.require ?? []) as Record<string, unknown>[],
});

function calls(cf: Cloudflare, t: GroupTarget): OwnedObjectCalls<AccessGroupItem> {
  const api = cf.zeroTrust.access.groups;
  const account = { account_id: t.accountId };
  const body = (g: AccessGroupItem) => ({
    ...account,
    name: g.name,
    include: g.include as unknown as AccessRules,
    exclude: g.exclude as unknown as AccessRules,
    require: g.require as unknown as AccessRules,
  });
  return {
    get: async (id) => {
      const g = await unlessNotFound(api.get(id, account));
      return g && item(g);
    },
    async named(name) {
      const out: AccessGroupItem[] = [];
      for await (const g of api.list({ ...account, name } as GroupListParams)) if (g.name === name) out.push(item(g));
      return out;
    },
    create: async (g) => (await api.create(body(g))).id!,
    update: async (id, g) => void (await api.update(id, body(g))),
    remove: async (id) => void (await unlessNotFound(api.delete(id, account))),
  };
}

export const accessGroupAdapter: TargetAdapter<AccessGroupItem> = {
  codec: accessGroupCodec,
  desired: (sources, clusterId) => desiredOwnedObjects<AccessGroupItem>(sources, clusterId),
  read: (cf, target, ctx) => readOwnedById((target as GroupTarget).name, ctx, calls(cf, target as GroupTarget)),
  async write(cf, target, plan, live, ctx) {
    const id = await writeOwnedById(plan, live, accessGroupCodec, ctx, calls(cf, target as GroupTarget));
    return id ? { cloudflareId: id } : {};
  },
};
