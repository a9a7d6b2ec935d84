/**
 * Whose a Cloudflare tunnel is (issue 33, N1). A tunnel's ID is public (every hostname's CNAME is
 * `<id>.cfargotunnel.com`) and Cloudflare's tunnel permissions are account-wide, so neither
 * knowing an ID nor a name, nor an annotation a user can write, may make a tunnel someone's:
 *
 * - **Made by this object**: the worker records it when it creates the tunnel, as the annotation
 *   `cloudflare-operator.io/cloudflare-id` plus a proof beside it — an HMAC, keyed with the
 *   credentials' secret (which users never read), of the account, the tunnel and the object's
 *   kind, namespace, name and UID. A proof holds for that object only: never for a fresh object
 *   (another UID), never for another tunnel. The annotations are set only by the worker (the
 *   admission webhook refuses anyone else, ../../admission/cloudflare-id.ts), and honoured only
 *   with the proof or with the worker's status agreeing.
 * - **Managed by an object**: the tunnel's configuration target (`TunnelConfiguration/<account>/<id>`,
 *   a cluster-scoped CloudflareSyncState only the worker writes) lists the Tunnel or ClusterTunnel
 *   that feeds it. One of another namespace holds the tunnel: no other namespace binds, runs or
 *   deletes it (`TunnelInUse`), whatever its credentials' grants.
 *
 * The proof itself is computed in src/activities/cloudflare/tunnel-proof.ts (node:crypto).
 */
import type { SourceRef } from './markers.js';

/** Beside `cloudflare-operator.io/cloudflare-id`: the worker's proof that this object made that tunnel. */
export const CLOUDFLARE_ID_PROOF_ANNOTATION = 'cloudflare-operator.io/cloudflare-id-proof';

/**
 * The Tunnel or ClusterTunnel of another namespace that manages the tunnel, from the sources its
 * configuration's SyncState lists (one deleted with the Orphan policy no longer holds it). A
 * ClusterTunnel counts as its own namespace (`''`). Objects of the same namespace are one team's.
 */
export function otherNamespaceManager(
  sources: ReadonlyArray<{ ref: SourceRef; orphaned?: boolean }>,
  self: SourceRef,
): SourceRef | undefined {
  const ns = (r: SourceRef) => (r.kind === 'ClusterTunnel' ? '' : (r.namespace ?? ''));
  return sources.find(
    (s) =>
      !s.orphaned &&
      (s.ref.kind === 'Tunnel' || s.ref.kind === 'ClusterTunnel') &&
      !(s.ref.kind === self.kind && s.ref.name === self.name && ns(s.ref) === ns(self)) &&
      ns(s.ref) !== ns(self),
  )?.ref;
}

/** The refusal of a tunnel another namespace manages: names the tunnel (public), never that namespace or object. */
export function tunnelInUse(tunnelId: string, field: string): { reason: 'TunnelInUse'; message: string } {
  return {
    reason: 'TunnelInUse',
    message: `${field}: tunnel ${tunnelId} is managed by a Tunnel or ClusterTunnel of another namespace; a tunnel is bound, run and deleted only by the namespace that manages it`,
  };
}
