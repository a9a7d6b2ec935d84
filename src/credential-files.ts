/**
 * Credentials read from files that a rotation rewrites in place (a mounted Secret: cert-manager's
 * renewal, a new API key or password): the re-read step every reloader of the project shares
 * (the fast path's serving TLS, the Temporal connections, the tenant etcd client). A set that
 * does not load — a file missing mid-rotation, a key that does not match its certificate yet —
 * is not taken: the last good set stays in use, and each distinct problem is said once, not at
 * every interval while it lasts.
 */
import type { Logger } from './log.js';

export class LastGoodCredentials {
  private problem?: string;

  /** `what` names the files in the warning, e.g. "etcd credential files". */
  constructor(
    private readonly log: Logger,
    private readonly what: string,
  ) {}

  /** The set `read` loads now when it differs from `current`; undefined to keep `current`. */
  next<T>(read: () => T, current: T, same: (a: T, b: T) => boolean): T | undefined {
    let loaded: T;
    try {
      loaded = read();
    } catch (err) {
      const problem = err instanceof Error ? err.message : String(err);
      if (problem !== this.problem)
        this.log.warn({ err: problem }, `${this.what} unreadable or invalid: still using the last good set`);
      this.problem = problem;
      return undefined;
    }
    this.problem = undefined;
    return same(loaded, current) ? undefined : loaded;
  }
}

/** Two optional buffers hold the same bytes. */
export const sameBytes = (a?: Uint8Array, b?: Uint8Array): boolean => (a && b ? Buffer.from(a).equals(b) : a === b);
