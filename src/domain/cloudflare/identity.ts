/**
 * Which CloudflareCredentials write a target, decided purely: one identity per target, never
 * "whoever registered last". The target keeps the credentials it was first written with (its
 * CloudflareSyncState records them) while any source still names them; otherwise the oldest
 * source's credentials. A source naming other credentials is not written with them, nor are
 * its items written with someone else's: it shows `CredentialsConflict` and what it wrote before
 * stays as it is — so a team's read-only or foreign token can neither break nor borrow another
 * team's writes. A zone's tunnel CNAMEs are the exception (`plansByCredentials`): separate
 * records, each written with its own source's credentials.
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

/**
 * A target whose items are separate Cloudflare objects that teams share one of (a zone's tunnel
 * CNAMEs, issue 33 N10) is written per source identity instead: each source's records with the
 * credentials it registered with, so two teams with their own credentials both get their CNAMEs.
 * The plan (every source's items, one priority order) is cut into one plan per credentials: each
 * holds the items of the sources that registered with them — and the removals of their records —
 * and keeps everyone else's records exactly as they are live. A record whose source is no longer
 * registered is removed with the target's own credentials (`fallback`). Plans that change nothing
 * are left out; those with removals come first (a hostname one team gives up may be another's next).
 */
export function plansByCredentials<T extends { id?: string }>(
  plan: { items: T[] },
  live: readonly T[],
  credentialsOf: (item: T) => string | undefined,
  fallback: string,
  same: (a: T, b: T) => boolean,
): Array<{ credentials: string; items: T[] }> {
  const kept = new Set(plan.items.filter((i) => live.includes(i)));
  const ours = plan.items.filter((i) => !kept.has(i));
  const removed = live.filter((l) => !kept.has(l) && !ours.some((o) => o.id !== undefined && o.id === l.id));
  const owner = (i: T) => credentialsOf(i) ?? fallback;
  const groups = new Map<string, { removes: boolean; changes: boolean }>();
  const mark = (c: string, what: 'removes' | 'changes') => {
    const g = groups.get(c) ?? { removes: false, changes: false };
    g[what] = true;
    groups.set(c, g);
  };
  for (const l of removed) mark(owner(l), 'removes');
  for (const o of ours) {
    const was = o.id === undefined ? undefined : live.find((l) => l.id === o.id);
    if (!was || !same(o, was)) mark(owner(o), 'changes');
  }
  const order = [...groups].sort(
    ([a, ga], [b, gb]) =>
      Number(gb.removes) - Number(ga.removes) ||
      Number(b === fallback) - Number(a === fallback) ||
      (a < b ? -1 : a > b ? 1 : 0),
  );
  return order.map(([credentials]) => {
    const items: T[] = [];
    for (const i of plan.items) {
      if (kept.has(i) || owner(i) === credentials) items.push(i);
      else if (i.id !== undefined) {
        const was = live.find((l) => l.id === i.id);
        if (was) items.push(was); // another team's update: its record stays as it is here
      }
    }
    for (const l of removed) if (owner(l) !== credentials) items.push(l); // another team's removal
    return { credentials, items };
  });
}
