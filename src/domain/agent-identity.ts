/**
 * Who is who on the fast path ↔ agent channel (mutual TLS, src/fastpath/agent-pki.ts): the URI an
 * agent certificate of a pool carries, the fast path's, and the checks each side makes on the
 * other's verified certificate. Pure: no I/O, no key.
 */

/** A SandboxPool as its agents' credentials name it: a pool recreated under the same name has a new UID. */
export interface PoolIdentity {
  namespace: string;
  name: string;
  uid: string;
}

export const FASTPATH_IDENTITY = 'urn:sandbox.fast.io:fastpath';

/** The URI an agent certificate of the pool carries (Kubernetes names hold no `:`). */
export function agentIdentity(pool: PoolIdentity): string {
  return `urn:sandbox.fast.io:agent:${pool.namespace}:${pool.name}:${pool.uid}`;
}

/** The URI names of a certificate, from Node's `subjectaltname` (`URI:a, DNS:b, …`). */
export function uriNames(subjectaltname: string | undefined): string[] {
  return (subjectaltname ?? '')
    .split(', ')
    .filter((n) => n.startsWith('URI:'))
    .map((n) => n.slice(4));
}

/**
 * Why the agent's certificate is not the admitted pool's (undefined when it is): for
 * `checkServerIdentity`, which Node calls once the chain to the CA is verified.
 */
export function agentIdentityProblem(cert: { subjectaltname?: string }, pool: PoolIdentity) {
  const want = agentIdentity(pool);
  const names = uriNames(cert.subjectaltname);
  if (names.includes(want)) return undefined;
  return new Error(
    `the agent's certificate names ${names.join(', ') || 'no pool'}, not ${want}: not an agent of pool ${pool.namespace}/${pool.name}`,
  );
}

/** Whether a verified client certificate is the fast path's (not an agent's, which shares the CA). */
export function isFastPathCertificate(cert: { subjectaltname?: string } | undefined): boolean {
  return uriNames(cert?.subjectaltname).includes(FASTPATH_IDENTITY);
}
