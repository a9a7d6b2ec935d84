/**
 * Which CloudflareCredentials write a target, decided purely: one identity per target, never
 * "whoever registered last". The target keeps the credentials it was first written with (its
 * CloudflareSyncState records them) while any source still names them; otherwise the oldest
 * source's credentials. A source naming other credentials is not written with them, nor are
 * its items written with someone else's: it shows `CredentialsConflict` and what it wrote before
 * stays as it is — so a team's read-only or foreign token can neither break nor borrow another
 * team's writes.
 */

/** What one live source says about the credentials it writes with. */
export interface CredentialsClaim {
  /** `refString` of the source. */
  key: string;
  /** The CloudflareCredentials the source resolved (its credentialsRef, or the default). */
  credentials: string;
  /** The source object's creationTimestamp (ISO; '' when unknown, which sorts last). */
  createdAt: string;
}

export interface TargetIdentity {
  /** The credentials every write to the target uses (undefined: nothing to write with yet). */
  credentials: string | undefined;
  /** Keys of the sources naming other credentials: left out of this target's writes. */
  conflicting: string[];
}

/**
 * @param established the credentials the target was last written with (its SyncState's)
 * @param fallback what to write with when no live source names any (removals only)
 */
export function targetIdentity(
  claims: readonly CredentialsClaim[],
  established: string | undefined,
  fallback?: string,
): TargetIdentity {
  if (claims.length === 0) return { credentials: established ?? fallback, conflicting: [] };
  const keeps = established !== undefined && claims.some((c) => c.credentials === established);
  const credentials = keeps ? established : oldest(claims).credentials;
  return { credentials, conflicting: claims.filter((c) => c.credentials !== credentials).map((c) => c.key) };
}

function oldest(claims: readonly CredentialsClaim[]): CredentialsClaim {
  const at = (c: CredentialsClaim) => c.createdAt || '\uffff';
  return [...claims].sort((a, b) => at(a).localeCompare(at(b)) || a.key.localeCompare(b.key))[0]!;
}

/** The message a source in conflict shows: which credentials write the target, and how to join it. */
export function credentialsConflictMessage(target: string, credentials: string, own: string): string {
  return `${target} is written with CloudflareCredentials ${credentials} (named by its earlier sources); this source names ${own}, so nothing of it is written there and what it wrote before stays as it is: one target is written with one identity`;
}
