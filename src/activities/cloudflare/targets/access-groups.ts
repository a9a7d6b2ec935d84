/**
 * Zero Trust Access groups: the target is (account, group name); its one item is the group. A
 * group has no description or comment, so ownership is by ID: the SyncState remembers the ID of
 * the group the operator created (`status.resultData.id`) and the marker of the source it was
 * made for (`marker`). The create is idempotent across crashes: the intent (`creating`) is
 * recorded before the POST and the ID right after it; a retry that finds the intent and a group
 * of that name takes it as the one it created, instead of creating a second. A group of that name
 * the operator did not create is never adopted (the source reports the conflict).
 */
import { desiredAccessGroups } from '../../../domain/cloudflare/aggregate.js';
import { accessGroupCodec, type AccessGroupItem } from '../../../domain/cloudflare/items.js';
import type { SyncTarget } from '../../../domain/cloudflare/targets.js';
import { faultPoint } from '../../fault-points.js';
import type { TargetAdapter } from './adapter.js';
import { writeObjects } from './per-object.js';

type GroupTarget = Extract<SyncTarget, { resourceType: 'AccessGroup' }>;

interface LiveGroup {
  id: string;
  name: string;
  include?: unknown[];
  exclude?: unknown[];
  require?: unknown[];
}

const item = (g: LiveGroup, marker?: string): AccessGroupItem => ({
  id: g.id,
  name: g.name,
  include: (g.include ?? []) as Record<string, unknown>[],
  exclude: (g.exclude ?? []) as Record<string, unknown>[],
  require: (g.require ?? []) as Record<string, unknown>[],
  ...(marker ? { marker } : {}),
});

const notFound = (err: unknown) => (err as { status?: number }).status === 404;

export const accessGroupAdapter: TargetAdapter<AccessGroupItem> = {
  codec: accessGroupCodec,
  desired: desiredAccessGroups,
  async read(cf, target, memory) {
    const t = target as GroupTarget;
    const api = cf.zeroTrust.access.groups;
    const { id, marker, creating } = memory.data;
    if (id) {
      const found = (await api.get(id, { account_id: t.accountId }).catch((err: unknown) => {
        if (notFound(err)) return undefined; // deleted in the dashboard: made again below
        throw err;
      })) as LiveGroup | undefined;
      if (found) return { items: [item(found, marker)], cloudflareId: found.id };
      await memory.remember({ id: null });
    }
    const named: LiveGroup[] = [];
    for await (const g of api.list({ account_id: t.accountId, name: t.name } as never))
      if ((g as LiveGroup).name === t.name) named.push(g as LiveGroup);
    // An intent with no ID: the crashed attempt's POST went through. That group is ours.
    const ours = creating ? named.find((g) => g.name === creating) : undefined;
    if (ours) {
      await memory.remember({
        id: ours.id,
        marker: memory.data.creatingMarker ?? null,
        creating: null,
        creatingMarker: null,
      });
      return { items: [item(ours, memory.data.marker)], cloudflareId: ours.id };
    }
    return { items: named.map((g) => item(g)) }; // someone else's: kept, its name held
  },
  async write(cf, target, plan, live, memory) {
    const t = target as GroupTarget;
    const api = cf.zeroTrust.access.groups;
    const body = (g: AccessGroupItem) => ({
      account_id: t.accountId,
      name: g.name,
      include: g.include,
      exclude: g.exclude,
      require: g.require,
    });
    const cloudflareId = await writeObjects(plan, live, accessGroupCodec, {
      reuses: () => true, // one name per target: a group of ours being dropped is the one to keep
      async remove(id) {
        await api.delete(id, { account_id: t.accountId }).catch((err: unknown) => {
          if (!notFound(err)) throw err;
        });
        await memory.remember({ id: null, marker: null });
      },
      async update(id, g) {
        await api.update(id, body(g) as never);
        if (g.marker !== memory.data.marker) await memory.remember({ marker: g.marker ?? null });
      },
      async create(g) {
        await memory.remember({ creating: g.name, creatingMarker: g.marker ?? null });
        const created = await api.create(body(g) as never);
        faultPoint('cloudflare-created');
        await memory.remember({ id: created.id!, marker: g.marker ?? null, creating: null, creatingMarker: null });
        return created.id!;
      },
    });
    return cloudflareId ? { cloudflareId } : {};
  },
};
