/** A small client for the emulator's `/__emulator` hooks (tests, benchmarks, `dev`). */
import type { RateLimitBudget, TokenSpec } from './auth.js';
import type { Fault, FaultSpec } from './faults.js';
import type { LoggedRequest, RequestFilter } from './request-log.js';
import type { Account, DnsRecord, SeedDocument, Zone } from './store.js';

export class EmulatorAdmin {
  constructor(
    private readonly url: string,
    private readonly adminToken: string,
  ) {}

  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await fetch(`${this.url}/__emulator${path}`, {
      method,
      headers: {
        authorization: `Bearer ${this.adminToken}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const envelope = (await res.json()) as { success: boolean; result: T; errors: unknown[] };
    if (!res.ok || !envelope.success) {
      throw new Error(`emulator hook ${method} ${path}: HTTP ${res.status} ${JSON.stringify(envelope.errors)}`);
    }
    return envelope.result;
  }

  reset(): Promise<unknown> {
    return this.call('POST', '/reset');
  }

  seed(doc: SeedDocument): Promise<{ accounts: Account[]; zones: Zone[]; dns_records: DnsRecord[] }> {
    return this.call('POST', '/seed', doc);
  }

  requests(filter: RequestFilter = {}): Promise<LoggedRequest[]> {
    const q = new URLSearchParams();
    if (filter.method) q.set('method', filter.method);
    if (filter.path) q.set('path', filter.path);
    return this.call('GET', `/requests${q.size ? `?${q}` : ''}`);
  }

  clearRequests(): Promise<unknown> {
    return this.call('DELETE', '/requests');
  }

  addFault(spec: FaultSpec): Promise<Fault> {
    return this.call('POST', '/faults', spec);
  }

  faults(): Promise<Fault[]> {
    return this.call('GET', '/faults');
  }

  clearFaults(): Promise<unknown> {
    return this.call('DELETE', '/faults');
  }

  setRateLimit(budget: RateLimitBudget): Promise<RateLimitBudget> {
    return this.call('PUT', '/rate-limit', budget);
  }

  addToken(spec: TokenSpec): Promise<unknown> {
    return this.call('POST', '/tokens', spec);
  }

  /** A cloudflared connects to the tunnel (and reconnects after a connections DELETE) until stopped. */
  startConnector(tunnelId: string, clientId?: string): Promise<{ client_id: string }> {
    return this.call(
      'POST',
      `/tunnels/${encodeURIComponent(tunnelId)}/connectors`,
      clientId ? { client_id: clientId } : {},
    );
  }

  /** Every cloudflared running the tunnel stops: its connections close. */
  stopConnectors(tunnelId: string): Promise<unknown> {
    return this.call('DELETE', `/tunnels/${encodeURIComponent(tunnelId)}/connectors`);
  }
}
