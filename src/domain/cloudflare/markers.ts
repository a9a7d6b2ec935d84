/**
 * Ownership markers: how an item in a shared Cloudflare object (a ruleset rule, a split-tunnel
 * entry, a fallback domain) says which Kubernetes resource of which cluster put it there.
 *
 *   `<user description> [managed-by:<clusterId>:Kind/Namespace/Name]`   (namespaced source)
 *   `<user description> [managed-by:<clusterId>:Kind/Name]`             (cluster-scoped source)
 *
 * The cluster id keeps two clusters that share an account from treating each other's items as
 * their own (the original's plain `managed-by:` substring test did). The original's format,
 * `[managed-by:Kind/Namespace/Name]` without a cluster id, is still recognised: such items are
 * "legacy" — adopted (replaced by ours) only when the operator is told to, kept untouched
 * otherwise.
 */

export interface SourceRef {
  kind: string;
  /** Absent for cluster-scoped kinds (DeviceSettingsPolicy). */
  namespace?: string;
  name: string;
}

/** `Kind/Namespace/Name`, or `Kind/Name` for a cluster-scoped source (the original's `ref.String()`). */
export function refString(ref: SourceRef): string {
  return ref.namespace ? `${ref.kind}/${ref.namespace}/${ref.name}` : `${ref.kind}/${ref.name}`;
}

export function parseRefString(s: string): SourceRef | undefined {
  const [kind, a, b, ...rest] = s.split('/');
  if (rest.length || !kind || !a) return undefined;
  if (b === undefined) return { kind, name: a };
  return b ? { kind, namespace: a, name: b } : undefined;
}

/** A cluster id: what may stand between `managed-by:` and the kind (no `:`, `/`, `]` or spaces). */
export const CLUSTER_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

export function marker(clusterId: string, ref: SourceRef): string {
  return `[managed-by:${clusterId}:${refString(ref)}]`;
}

/** The user's description with our marker appended (just the marker when there is none). */
export function describe(description: string | undefined, clusterId: string, ref: SourceRef): string {
  const text = stripMarkers(description ?? '').trim();
  return text ? `${text} ${marker(clusterId, ref)}` : marker(clusterId, ref);
}

const MARKER_RE = /\s*\[managed-by:([^\]]*)\]/g;

/** The description without any marker (what the user wrote). */
export function stripMarkers(description: string): string {
  return description.replace(MARKER_RE, '');
}

export type Ownership =
  | { owner: 'ours'; ref: SourceRef }
  | { owner: 'legacy'; ref: SourceRef }
  | { owner: 'other-cluster'; clusterId: string; ref: SourceRef }
  | { owner: 'external' };

/**
 * Who owns an item, by its description or comment. The last marker counts (markers are
 * appended). Anything without a well-formed marker is external: kept, never modified.
 */
export function ownershipOf(description: string | undefined | null, clusterId: string): Ownership {
  if (!description) return { owner: 'external' };
  let last: string | undefined;
  for (const m of description.matchAll(MARKER_RE)) last = m[1];
  if (last === undefined) return { owner: 'external' };
  const slash = last.indexOf('/');
  if (slash < 0) return { owner: 'external' };
  const head = last.slice(0, slash);
  const colon = head.indexOf(':');
  if (colon < 0) {
    const ref = parseRefString(last);
    return ref ? { owner: 'legacy', ref } : { owner: 'external' };
  }
  const cluster = head.slice(0, colon);
  const ref = parseRefString(last.slice(colon + 1));
  if (!ref || !CLUSTER_ID_PATTERN.test(cluster)) return { owner: 'external' };
  return cluster === clusterId ? { owner: 'ours', ref } : { owner: 'other-cluster', clusterId: cluster, ref };
}

// ---------------------------------------------------------------------------------------------
// The original operator's tunnel DNS records (StringKe/cloudflare-operator, internal/clients/cf)
// ---------------------------------------------------------------------------------------------

/** The comment the original put on the tunnel CNAMEs it made (and on their TXT records). */
export const ORIGINAL_DNS_COMMENT = 'Managed by cloudflare-operator';
/** The original's TXT record beside each tunnel CNAME: `_managed.<fqdn>`, naming the tunnel. */
export const ORIGINAL_TXT_PREFIX = '_managed.';

/**
 * The tunnel an original `_managed.<fqdn>` TXT record names (its content is the JSON
 * `{"DnsId","TunnelName","TunnelId"}`, possibly quoted as Cloudflare answers TXT content), or
 * undefined when the record is not one.
 */
export function originalTxtTunnel(record: {
  name: string;
  type: string;
  content?: string;
  comment?: string | null;
}): { fqdn: string; tunnelId: string } | undefined {
  if (record.type !== 'TXT' || record.comment !== ORIGINAL_DNS_COMMENT) return undefined;
  if (!record.name.toLowerCase().startsWith(ORIGINAL_TXT_PREFIX)) return undefined;
  let text = (record.content ?? '').trim();
  try {
    if (text.startsWith('"')) text = JSON.parse(text) as string;
    const parsed = JSON.parse(text) as { TunnelId?: unknown };
    if (typeof parsed.TunnelId !== 'string' || !parsed.TunnelId) return undefined;
    return { fqdn: record.name.slice(ORIGINAL_TXT_PREFIX.length).toLowerCase(), tunnelId: parsed.TunnelId };
  } catch {
    return undefined;
  }
}

/**
 * Whether a live tunnel CNAME is the original's record for the tunnel `content` points to: its
 * comment is the original's, it points where ours would, and the `_managed.` TXT beside it (when
 * there is one) names that tunnel. Such a record is taken over without `adoptExisting`: it
 * already routes to this tunnel, made by the operator this one replaces.
 */
export function isOriginalTunnelRecord(
  live: { name: string; type: string; content?: string; comment?: string | null },
  wanted: { name: string; type: string; content?: string },
  txts: ReadonlyMap<string, string>,
): boolean {
  if (live.type !== 'CNAME' || wanted.type !== 'CNAME' || live.comment !== ORIGINAL_DNS_COMMENT) return false;
  const name = live.name.toLowerCase();
  if (name !== wanted.name.toLowerCase()) return false;
  const target = (live.content ?? '').toLowerCase().replace(/\.$/, '');
  if (!wanted.content || target !== wanted.content.toLowerCase()) return false;
  const named = txts.get(name);
  return named === undefined || `${named}.cfargotunnel.com`.toLowerCase() === target;
}
