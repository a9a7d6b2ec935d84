/**
 * Zero Trust virtual networks: each network is one item, its target is (account, network name).
 * Read: the account's live networks of that name (names are unique per account: at most one).
 * Write: object by object (./per-object.ts).
 */
import { desiredNetworks } from '../../../domain/cloudflare/aggregate.js';
import { virtualNetworkCodec, type VirtualNetworkItem } from '../../../domain/cloudflare/items.js';
import type { SyncTarget } from '../../../domain/cloudflare/targets.js';
import type { TargetAdapter } from './adapter.js';
import { writeObjects } from './per-object.js';

type NetworkTarget = Extract<SyncTarget, { resourceType: 'VirtualNetwork' }>;

export const virtualNetworkAdapter: TargetAdapter<VirtualNetworkItem> = {
  codec: virtualNetworkCodec,
  desired: desiredNetworks,
  // Cloudflare cannot un-default a network (another one becomes the default instead), so
  // `isDefaultNetwork: false` means "not asking", not "take it away": a network of ours that is
  // the default stays wanted as it is, instead of showing as drift on every sync.
  complete: async (desired, _ctx, live) =>
    desired.map((d) =>
      !d.item.is_default_network &&
      live.some((l) => l.name === d.item.name && l.is_default_network && l.comment === d.item.comment)
        ? { ...d, item: { ...d.item, is_default_network: true } }
        : d,
    ),
  async read(cf, target) {
    const t = target as NetworkTarget;
    const items: VirtualNetworkItem[] = [];
    for await (const n of cf.zeroTrust.networks.virtualNetworks.list({
      account_id: t.accountId,
      name: t.name,
      is_deleted: false,
    }))
      if (n.name === t.name && !n.deleted_at)
        items.push({ id: n.id, name: n.name, comment: n.comment, is_default_network: n.is_default_network });
    return { items, ...(items.length === 1 && items[0]!.id ? { cloudflareId: items[0]!.id } : {}) };
  },
  async write(cf, target, plan, live) {
    const t = target as NetworkTarget;
    const api = cf.zeroTrust.networks.virtualNetworks;
    const cloudflareId = await writeObjects(plan, live, virtualNetworkCodec, {
      // A network of ours that another of our sources held before (it was deleted): take it over in place.
      reuses: (removed, item) => removed.name === item.name,
      remove: async (id) => void (await api.delete(id, { account_id: t.accountId })),
      update: async (id, item) =>
        void (await api.edit(id, {
          account_id: t.accountId,
          name: item.name,
          comment: item.comment ?? '',
          // Cloudflare cannot un-default a network (another one becomes the default instead).
          ...(item.is_default_network ? { is_default_network: true } : {}),
        })),
      create: async (item) =>
        (
          await api.create({
            account_id: t.accountId,
            name: item.name,
            comment: item.comment ?? '',
            is_default_network: item.is_default_network ?? false,
          })
        ).id,
    });
    return cloudflareId ? { cloudflareId } : {};
  },
};
