/**
 * The CNAMEs of a zone's tunnel hostnames: one target per zone, so every Tunnel source wanting a
 * hostname of the zone meets in one place (priority decides; the loser is told who holds it).
 * Read: the zone's records, every type, one page of 5,000 (a CNAME cannot share its name with
 * any record, so a record of any type at a hostname is in the way). Write: in `dns_records/batch`
 * calls of up to 200 changes, like a DNSRecord set. Only records marked by a tunnel source of this cluster are ours here: a
 * DNSRecord's record is its own target's, and an unmarked one is never taken over — except the
 * original operator's CNAME for the very tunnel (its comment, and its `_managed.<fqdn>` TXT naming
 * that tunnel): taken over, and its TXT removed in the same write.
 */
import { desiredRecords } from '../../../domain/cloudflare/aggregate.js';
import { dnsRecordCodec, type DnsRecordItem } from '../../../domain/cloudflare/items.js';
import type { ItemCodec } from '../../../domain/cloudflare/merge.js';
import type { SyncTarget } from '../../../domain/cloudflare/targets.js';
import type { TargetAdapter } from './adapter.js';
import { readRecords, writeRecordBatches } from './dns-records.js';
import { objectChanges } from './per-object.js';
import { isOriginalTunnelRecord, originalTxtTunnel } from '../../../domain/cloudflare/markers.js';
import type { DesiredItem, WritePlan } from '../../../domain/cloudflare/merge.js';

type TunnelDnsTarget = Extract<SyncTarget, { resourceType: 'TunnelDNS' }>;

/** A name holds our CNAME or nothing else: any record there is in the way. */
export const tunnelRecordCodec: ItemCodec<DnsRecordItem> = {
  ...dnsRecordCodec,
  keyOf: (r) => `name ${r.name.toLowerCase()}`,
};

export const TUNNEL_SOURCE_KINDS = [
  'Tunnel',
  'ClusterTunnel',
  'TunnelBinding',
  'TunnelIngressClassConfig',
  'TunnelGatewayClassConfig',
] as const;

/** The tunnels the original's `_managed.<fqdn>` TXT records name, by fqdn. */
function originalTxts(live: readonly DnsRecordItem[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const r of live) {
    const txt = originalTxtTunnel(r);
    if (txt) out.set(txt.fqdn, txt.tunnelId);
  }
  return out;
}

/** A wanted CNAME takes over the original's record for the same tunnel at its name (no `adoptExisting` needed). */
export function adoptOriginalRecords(
  desired: DesiredItem<DnsRecordItem>[],
  live: readonly DnsRecordItem[],
): DesiredItem<DnsRecordItem>[] {
  const txts = originalTxts(live);
  return desired.map((d) =>
    !d.adopt && live.some((l) => isOriginalTunnelRecord(l, d.item, txts)) ? { ...d, adopt: true } : d,
  );
}

const MARKED = /\[managed-by:/;
const cnameOf = (items: readonly DnsRecordItem[], fqdn: string) =>
  items.find((r) => r.type === 'CNAME' && r.name.toLowerCase() === fqdn && MARKED.test(r.comment ?? ''));
const pointsTo = (r: DnsRecordItem, tunnelId: string) =>
  (r.content ?? '').toLowerCase().replace(/\.$/, '') === `${tunnelId}.cfargotunnel.com`.toLowerCase();

/**
 * The original's `_managed.` TXT records read as belonging to the marked CNAME beside them that
 * points to the tunnel they name: a takeover left them, so they are removed like anything of
 * that source's nobody wants (the CNAME of another cluster keeps its TXT as it is).
 */
export function withOriginalTxtsOwned(live: DnsRecordItem[]): DnsRecordItem[] {
  return live.map((r) => {
    const txt = originalTxtTunnel(r);
    const cname = txt && cnameOf(live, txt.fqdn);
    return cname && pointsTo(cname, txt.tunnelId) ? { ...r, comment: cname.comment ?? null } : r;
  });
}

/**
 * The plan without the original's TXT records beside the CNAMEs it writes as ours (the plan's
 * items that are not the very objects read): they go in the same write.
 */
export function withoutTakenOverTxts(
  plan: WritePlan<DnsRecordItem>,
  live: readonly DnsRecordItem[],
): WritePlan<DnsRecordItem> {
  const ours = plan.items.filter((r) => !live.includes(r));
  const items = plan.items.filter((r) => {
    const txt = originalTxtTunnel(r);
    const cname = txt && cnameOf(ours, txt.fqdn);
    return !(cname && pointsTo(cname, txt.tunnelId));
  });
  return items.length === plan.items.length ? plan : { ...plan, items };
}

export const tunnelDnsAdapter: TargetAdapter<DnsRecordItem> = {
  codec: tunnelRecordCodec,
  ownedKinds: TUNNEL_SOURCE_KINDS,
  desired: desiredRecords,
  complete: (desired, _ctx, live) => Promise.resolve(adoptOriginalRecords(desired, live)),
  async read(cf, target) {
    const t = target as TunnelDnsTarget;
    return { items: withOriginalTxtsOwned(await readRecords(cf, { zone_id: t.zoneId })) };
  },
  async write(cf, target, plan, live) {
    const t = target as TunnelDnsTarget;
    const changes = objectChanges(
      withoutTakenOverTxts(plan, live),
      live,
      tunnelRecordCodec,
      (removed, item) => removed.name.toLowerCase() === item.name.toLowerCase() && removed.type === item.type,
    );
    await writeRecordBatches(cf, t.zoneId, changes);
    return {};
  },
};
