/**
 * The zone lookups of the Cloudflare sources' workflows, run on the account's task queue beside
 * the syncs: a zone's id by name, and where each hostname of a tunnel source gets its CNAME.
 */
import type { SourceRef } from '../../domain/cloudflare/markers.js';
import { dnsHostnamesOf, isSourceKind, zoneIdOf, zoneOf } from '../../domain/cloudflare/sources.js';
import {
  MAX_UNPLACED_SHOWN,
  inZone,
  placeHostnames,
  zoneSuffixes,
  type HostnameZone,
  type UnplacedHostname,
} from '../../domain/cloudflare/tunnels.js';
import { failedWith, ok, type Failed, type Ok } from '../../domain/results.js';
import { clientFor } from './credentials.js';
import { cloudflareFailure } from './errors.js';
import { expandSource, isExpanded } from './expand.js';
import { getSource, type SyncDeps } from './sync-read.js';

type LookupDeps = Pick<SyncDeps, 'kube' | 'config' | 'pacing'>;

/** The zone id of a zone name, with the source's credentials (a zone the token cannot see is not found). */
export async function resolveZone(
  deps: LookupDeps,
  req: { credentials: string; zone: string; accountId: string },
): Promise<Ok<{ zoneId: string }> | Failed<{ reason: string; message: string }>> {
  try {
    const cf = await clientFor(deps.kube, req.credentials, deps.config.baseURL, deps.pacing('change'));
    for await (const z of cf.zones.list({ name: req.zone, account: { id: req.accountId } }))
      return ok({ zoneId: z.id });
    return failedWith({
      reason: 'ZoneNotFound',
      message: `zone ${req.zone} not found in account ${req.accountId} with credentials ${req.credentials}`,
    });
  } catch (err) {
    const failure = cloudflareFailure(err, `look up zone ${req.zone}`, 'Zone Read (zone-level)');
    if (!failure.nonRetryable) throw failure;
    return failedWith({ reason: failure.type ?? 'CloudflareInvalid', message: failure.message });
  }
}

/**
 * Where the CNAME of each hostname of a tunnel source goes (src/domain/cloudflare/tunnels.ts
 * decides): the source read fresh here — a class config's Ingresses and routes stay out of its
 * workflow's history —, the zones that may hold its hostnames looked up by name (one
 * `ends_with` query per registrable suffix: an Ingress edit costs a call or two, not a listing of
 * every zone of the account — issue 33, N13), none when the Tunnel gives its zone's ID and that
 * zone holds every hostname. Only the zones used and the first unplaced hostnames go back to the
 * workflow.
 */
export async function placeTunnelHostnames(
  deps: LookupDeps,
  req: { ref: SourceRef; credentials: string; accountId: string; allowedZones?: string[] },
): Promise<
  | Ok<{ zones: HostnameZone[]; unplaced: UnplacedHostname[]; unplacedCount: number }>
  | Failed<{ reason: string; message: string }>
> {
  const kind = req.ref.kind;
  if (!isSourceKind(kind)) return ok({ zones: [], unplaced: [], unplacedCount: 0 });
  const obj = await getSource(deps.kube, req.ref);
  const spec = obj && (isExpanded(kind) ? await expandSource(deps.kube, kind, obj) : obj.spec);
  const hostnames = (spec && dnsHostnamesOf(kind, spec)) ?? [];
  const tunnelDomain = spec ? zoneOf(kind, spec) : undefined;
  const givenZoneId = spec ? zoneIdOf(spec) : undefined;
  const named = hostnames.filter((h) => !h.startsWith('*'));
  let zones: Array<{ id: string; name: string }> = [];
  if (tunnelDomain && givenZoneId && named.every((h) => inZone(h, tunnelDomain)))
    zones = [{ id: givenZoneId, name: tunnelDomain.toLowerCase() }];
  else if (named.length)
    try {
      zones = await zonesHolding(deps, req, named);
    } catch (err) {
      const failure = cloudflareFailure(err, 'list the zones');
      if (!failure.nonRetryable) throw failure;
      return failedWith({ reason: failure.type ?? 'CloudflareInvalid', message: failure.message });
    }
  const placed = placeHostnames(hostnames, zones, {
    credentials: req.credentials,
    ...(req.allowedZones ? { allowedZones: req.allowedZones } : {}),
  });
  return ok({
    zones: placed.zones,
    unplaced: placed.unplaced.slice(0, MAX_UNPLACED_SHOWN),
    unplacedCount: placed.unplaced.length,
  });
}

/** The account's zones that may hold one of the hostnames, looked up by registrable suffix. */
async function zonesHolding(
  deps: LookupDeps,
  req: { credentials: string; accountId: string },
  hostnames: string[],
): Promise<Array<{ id: string; name: string }>> {
  const cf = await clientFor(deps.kube, req.credentials, deps.config.baseURL, deps.pacing('change'));
  const zones: Array<{ id: string; name: string }> = [];
  const seen = new Set<string>();
  for (const suffix of zoneSuffixes(hostnames))
    for await (const z of cf.zones.list({ account: { id: req.accountId }, name: `ends_with:${suffix}`, per_page: 50 }))
      if (!seen.has(z.id) && hostnames.some((h) => inZone(h, z.name))) {
        seen.add(z.id);
        zones.push({ id: z.id, name: z.name.toLowerCase() });
      }
  return zones;
}
