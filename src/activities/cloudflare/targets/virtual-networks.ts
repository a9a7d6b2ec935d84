/**
 * Zero Trust virtual networks: each network is one item, its target is (account, network name).
 * Read: the account's live networks of that name (names are unique per account: at most one).
 * Write, per network: DELETE ours no longer wanted, PATCH ours whose fields changed (by id,
 * so the network keeps its id and its routes), POST the wanted ones that do not exist yet.
 */
import { desiredNetworks } from '../../../domain/cloudflare/aggregate.js';
import { canonical } from '../../../domain/cloudflare/merge.js';
import { virtualNetworkCodec, type VirtualNetworkItem } from '../../../domain/cloudflare/items.js';
import type { SyncTarget } from '../../../domain/cloudflare/targets.js';
import type { TargetAdapter } from './adapter.js';

type NetworkTarget = Extract<SyncTarget, { resourceType: 'VirtualNetwork' }>;

const same = (a: VirtualNetworkItem, b: VirtualNetworkItem) =>
  canonical(virtualNetworkCodec.comparable(a)) === canonical(virtualNetworkCodec.comparable(b));

export const virtualNetworkAdapter: TargetAdapter<VirtualNetworkItem> = {
  codec: virtualNetworkCodec,
  desired: desiredNetworks,
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
    // The plan keeps everyone else's networks as the very objects read; the others in it are ours.
    const kept = new Set(plan.items.filter((i) => live.includes(i)));
    const ours = plan.items.filter((i) => !kept.has(i));
    const removed = live.filter((l) => !kept.has(l) && !ours.some((o) => o.id !== undefined && o.id === l.id));
    let cloudflareId: string | undefined;
    const results: { item: VirtualNetworkItem; live?: VirtualNetworkItem }[] = ours.map((item) => {
      if (item.id !== undefined) return { item, live: live.find((l) => l.id === item.id) };
      // A network of ours that another of our sources held before (it was deleted): take it over in place.
      const i = removed.findIndex((l) => l.name === item.name);
      return i < 0 ? { item } : { item: { ...item, id: removed[i]!.id }, live: removed.splice(i, 1)[0] };
    });
    // Deletes first: they free the names the creates may need.
    for (const l of removed) if (l.id) await api.delete(l.id, { account_id: t.accountId });
    for (const { item, live: was } of results) {
      if (item.id !== undefined) {
        cloudflareId = item.id;
        if (was && same(item, was)) continue;
        await api.edit(item.id, {
          account_id: t.accountId,
          name: item.name,
          comment: item.comment ?? '',
          // Cloudflare cannot un-default a network (another one becomes the default instead).
          ...(item.is_default_network ? { is_default_network: true } : {}),
        });
        continue;
      }
      const created = await api.create({
        account_id: t.accountId,
        name: item.name,
        comment: item.comment ?? '',
        is_default_network: item.is_default_network ?? false,
      });
      cloudflareId = created.id;
    }
    return cloudflareId ? { cloudflareId } : {};
  },
};
