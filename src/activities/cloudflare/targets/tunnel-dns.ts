/**
 * The CNAMEs of a zone's tunnel hostnames: one target per zone, so every Tunnel source wanting a
 * hostname of the zone meets in one place (priority decides; the loser is told who holds it).
 * Read: the zone's records, every type, one page of 5,000 (a CNAME cannot share its name with
 * any record, so a record of any type at a hostname is in the way). Write: in `dns_records/batch`
 * calls of up to 200 changes, like a DNSRecord set. Only records marked by a tunnel source of this cluster are ours here: a
 * DNSRecord's record is its own target's, and an unmarked one is never taken over.
 */
import { desiredRecords } from '../../../domain/cloudflare/aggregate.js';
import { dnsRecordCodec, type DnsRecordItem } from '../../../domain/cloudflare/items.js';
import type { ItemCodec } from '../../../domain/cloudflare/merge.js';
import type { SyncTarget } from '../../../domain/cloudflare/targets.js';
import type { TargetAdapter } from './adapter.js';
import { readRecords, writeRecordBatches } from './dns-records.js';
import { objectChanges } from './per-object.js';

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

export const tunnelDnsAdapter: TargetAdapter<DnsRecordItem> = {
  codec: tunnelRecordCodec,
  ownedKinds: TUNNEL_SOURCE_KINDS,
  desired: desiredRecords,
  async read(cf, target) {
    const t = target as TunnelDnsTarget;
    return { items: await readRecords(cf, { zone_id: t.zoneId }) };
  },
  async write(cf, target, plan, live) {
    const t = target as TunnelDnsTarget;
    const changes = objectChanges(
      plan,
      live,
      tunnelRecordCodec,
      (removed, item) => removed.name.toLowerCase() === item.name.toLowerCase() && removed.type === item.type,
    );
    await writeRecordBatches(cf, t.zoneId, changes);
    return {};
  },
};
