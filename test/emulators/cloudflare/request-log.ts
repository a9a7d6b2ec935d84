/** Every API request the emulator answered (faulted and refused ones included), for assertions. */

export interface LoggedRequest {
  seq: number;
  at: string;
  method: string;
  /** Path below `/client/v4`. */
  path: string;
  query: string;
  status: number;
  /** The parsed JSON body of writes. */
  body?: unknown;
  /** The token's id tag (never the token), when one authenticated. */
  tokenId?: string;
}

export interface RequestFilter {
  method?: string;
  /** Regular expression on the path. */
  path?: string;
}

export class RequestLog {
  private entries: LoggedRequest[] = [];
  private seq = 0;

  constructor(private readonly limit = 10_000) {}

  record(entry: Omit<LoggedRequest, 'seq' | 'at'>): void {
    this.entries.push({ seq: ++this.seq, at: new Date().toISOString(), ...entry });
    if (this.entries.length > this.limit) this.entries.splice(0, this.entries.length - this.limit);
  }

  list(filter: RequestFilter = {}): LoggedRequest[] {
    const re = filter.path ? new RegExp(filter.path) : undefined;
    return this.entries.filter(
      (e) => (!filter.method || e.method === filter.method.toUpperCase()) && (!re || re.test(e.path)),
    );
  }

  clear(): void {
    this.entries = [];
  }
}
