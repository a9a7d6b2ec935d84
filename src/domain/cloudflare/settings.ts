/**
 * Settings targets, decided purely: a Cloudflare object made of named scalar settings (a zone's
 * settings; an account's gateway configuration) where no item can carry a marker. Who holds a
 * setting is what the CloudflareSyncState remembers (`status.managedSettings`), written before
 * the setting is first changed, so a crash between the two never loses the value it had before.
 *
 * - Per setting, the first source in aggregation order (priority, creation time, ref) that sets
 *   it wins; the others are told who holds it (a conflict).
 * - A setting is written only when its live value differs from the winner's (drift included).
 * - A setting no source sets any more is released: left as it is, or — when its last holder asked
 *   for it (`restoreOnDelete`) — written back to the value it had before the operator first took it.
 * - Settings nobody here sets are never touched. Settings held by a source whose spec is invalid
 *   (frozen) stay exactly as they are until it is fixed.
 */
import type { ManagedSetting } from '../../api/cloudflare.js';
import { refString } from './markers.js';
import { canonical, type Conflict, type DesiredItem, type WritePlan } from './merge.js';

/** One setting as read, wanted or written: Cloudflare's name and value. */
export interface SettingItem {
  id: string;
  value: unknown;
  /** Desired items only: release to the previous value when no source sets it any more. */
  restoreOnDelete?: boolean;
}

export interface SettingsPlan {
  /** `plan.items` are the settings to write (each with its new value), not the whole object. */
  plan: WritePlan<SettingItem>;
  /** What the SyncState remembers after this sync. */
  held: ManagedSetting[];
  /**
   * What it must remember while the write runs: `held` and every setting the write releases —
   * a crash before a released setting's restore must not lose the value to restore.
   */
  heldWhileWriting: ManagedSetting[];
  /** True when `held` takes a setting it did not hold before: record `heldWhileWriting` before writing. */
  takesNew: boolean;
}

const json = (v: unknown) => (v === undefined ? undefined : canonical(v));

export function planSettings(
  live: readonly SettingItem[],
  desired: readonly DesiredItem<SettingItem>[],
  held: readonly ManagedSetting[],
  frozenOwners: ReadonlySet<string> = new Set(),
): SettingsPlan {
  const liveById = new Map(live.map((s) => [s.id, s.value]));
  const heldById = new Map(held.map((h) => [h.setting, h]));
  const frozen = new Map(held.filter((h) => frozenOwners.has(h.heldBy)).map((h) => [h.setting, h]));
  const winners = new Map<string, DesiredItem<SettingItem>>();
  const conflicts: Conflict[] = [];
  for (const d of desired) {
    const id = d.item.id;
    const holder = frozen.get(id)?.heldBy;
    const first = winners.get(id);
    if (holder !== undefined || first) {
      conflicts.push({
        owner: refString(d.owner),
        key: `setting ${id}`,
        heldBy: holder !== undefined ? `${holder} (invalid spec, left as it is)` : refString(first!.owner),
      });
      continue;
    }
    winners.set(id, d);
  }

  const writes: SettingItem[] = [];
  const differences: string[] = [];
  const next: ManagedSetting[] = [...frozen.values()];
  let takesNew = false;
  for (const [id, d] of winners) {
    const was = heldById.get(id);
    const liveJson = json(liveById.get(id));
    if (!was) takesNew = true;
    next.push({
      setting: id,
      // The value before the operator first took the setting, whoever holds it now.
      ...(was
        ? was.previous !== undefined
          ? { previous: was.previous }
          : {}
        : liveJson !== undefined
          ? { previous: liveJson }
          : {}),
      heldBy: refString(d.owner),
      ...(d.item.restoreOnDelete ? { restoreOnDelete: true } : {}),
    });
    if (liveJson !== json(d.item.value)) {
      writes.push({ id, value: d.item.value });
      differences.push(`setting ${id}: ${liveJson ?? 'unset'} in Cloudflare, ${json(d.item.value)} wanted`);
    }
  }
  const released: ManagedSetting[] = [];
  for (const h of held) {
    if (winners.has(h.setting) || frozen.has(h.setting)) continue;
    // Released: nobody sets it any more.
    released.push(h);
    if (h.restoreOnDelete && h.previous !== undefined && json(liveById.get(h.setting)) !== h.previous) {
      writes.push({ id: h.setting, value: JSON.parse(h.previous) as unknown });
      differences.push(`setting ${h.setting}: released by ${h.heldBy}, restored to ${h.previous}`);
    }
  }
  const write = writes.length > 0;
  return {
    plan: {
      items: writes,
      write,
      differences,
      conflicts,
      counts: {
        ours: held.length,
        external: live.filter((s) => !winners.has(s.id) && !heldById.has(s.id)).length,
        otherClusters: 0,
        legacy: 0,
        frozen: frozen.size,
        desired: winners.size,
        adopted: 0,
      },
    },
    held: next,
    heldWhileWriting: [...next, ...released],
    takesNew,
  };
}
