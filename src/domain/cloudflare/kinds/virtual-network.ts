/**
 * VirtualNetwork (cluster-scoped, account-scoped in Cloudflare): one Zero Trust virtual network,
 * named `spec.name` or the object's name. Its target is the network name in the account, so two
 * objects wanting the same name meet in one target and the first by priority wins. The ownership
 * marker goes in the network's `comment`.
 */
import { VirtualNetworkKind, type VirtualNetworkSpec } from '../../../api/cloudflare-zerotrust.js';
import { marker } from '../markers.js';
import type { SourceKindRules, SourceObjectMeta } from './types.js';

/** Cloudflare's limits on a virtual network's name and comment. */
export const VIRTUAL_NETWORK_NAME_MAX = 255;
export const VIRTUAL_NETWORK_COMMENT_MAX = 500;
/** The longest cluster id a marker may carry (CLUSTER_ID_PATTERN): validation reserves room for it. */
const LONGEST_CLUSTER_ID = 'x'.repeat(63);

/** The network's name in Cloudflare: `spec.name`, or the object's name when the spec has none. */
export function networkNameOf(spec: VirtualNetworkSpec, object: SourceObjectMeta): string {
  return spec.name ?? object.name;
}

/** How long the comment may be so that ` [managed-by:<cluster>:VirtualNetwork/<name>]` still fits in 500. */
export function commentRoom(object: SourceObjectMeta): number {
  const mark = marker(LONGEST_CLUSTER_ID, { kind: VirtualNetworkKind.kind, name: object.name });
  return VIRTUAL_NETWORK_COMMENT_MAX - mark.length - 1;
}

export const virtualNetworkRules: SourceKindRules<VirtualNetworkSpec> = {
  definition: VirtualNetworkKind,
  clusterScoped: true,
  oneSourcePerTarget: true,
  statusIdField: 'virtualNetworkId',
  priority: () => 100,
  credentialsRef: (spec) => spec.cloudflare?.credentialsRef?.name,
  zone: () => undefined,
  validate(spec, object) {
    const problems: string[] = [];
    const name = networkNameOf(spec, object);
    const field = spec.name === undefined ? 'metadata.name (spec.name is not set)' : 'spec.name';
    if (!name.trim()) problems.push(`${field}: the network name must not be empty`);
    else if (name.length > VIRTUAL_NETWORK_NAME_MAX)
      problems.push(`${field}: the network name is ${name.length} characters; at most ${VIRTUAL_NETWORK_NAME_MAX}`);
    const comment = spec.comment ?? '';
    if (/[\r\n]/.test(comment)) problems.push('spec.comment: must be a single line (it contains a line break)');
    const room = commentRoom(object);
    if (comment.length > room)
      problems.push(
        `spec.comment: ${comment.length} characters; at most ${room}, so that the ownership marker fits in Cloudflare's ${VIRTUAL_NETWORK_COMMENT_MAX}`,
      );
    return problems;
  },
  targets: (spec, place, object) => [
    { resourceType: 'VirtualNetwork', accountId: place.accountId, name: networkNameOf(spec, object) },
  ],
  contribution(spec, target, object) {
    const name = networkNameOf(spec, object);
    if (target.resourceType !== 'VirtualNetwork' || target.name !== name) return { entries: [] };
    return { entries: [{ name, comment: spec.comment ?? '', is_default_network: spec.isDefaultNetwork ?? false }] };
  },
};
