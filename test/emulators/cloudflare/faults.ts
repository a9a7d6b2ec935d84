/**
 * Fault injection for tests: a rule matches by method and a path regex (on the path below the
 * API prefix) and answers with a status (429 with Retry-After, 5xx, 409, …) and/or a delay,
 * N times or always.
 */
import { Type, type Static } from '@sinclair/typebox';

export const FaultSpec = Type.Object({
  /** HTTP method to match; absent = any. */
  method: Type.Optional(Type.String()),
  /** Regular expression on the path below `/client/v4` (e.g. `^/zones/[^/]+/rulesets`); absent = any. */
  path: Type.Optional(Type.String()),
  /** Status to answer with; absent = no error (latency only). */
  status: Type.Optional(Type.Integer({ minimum: 400, maximum: 599 })),
  /** Cloudflare error code in the body (default: 971 for 429, 10001 otherwise). */
  code: Type.Optional(Type.Integer()),
  message: Type.Optional(Type.String()),
  /** `Retry-After` header in seconds. */
  retryAfter: Type.Optional(Type.Number({ minimum: 0 })),
  /** `retry-after-ms` header. */
  retryAfterMs: Type.Optional(Type.Number({ minimum: 0 })),
  /** `x-should-retry` header (the SDK obeys it before anything else). */
  shouldRetry: Type.Optional(Type.Boolean()),
  /** Delay before answering (or before the fault answers). */
  latencyMs: Type.Optional(Type.Integer({ minimum: 0 })),
  /** How many requests it applies to; absent = always. */
  times: Type.Optional(Type.Integer({ minimum: 1 })),
});
export type FaultSpec = Static<typeof FaultSpec>;

export interface Fault extends FaultSpec {
  id: number;
  /** How many requests it has applied to. */
  hits: number;
}

export interface FaultOutcome {
  latencyMs: number;
  error?: { status: number; code?: number; message?: string; headers: Record<string, string> };
}

export class FaultInjector {
  private faults: Fault[] = [];
  private nextId = 1;

  add(spec: FaultSpec): Fault {
    if (spec.path !== undefined) new RegExp(spec.path); // throws on a bad pattern, at registration
    const fault: Fault = { ...spec, id: this.nextId++, hits: 0 };
    this.faults.push(fault);
    return fault;
  }

  list(): Fault[] {
    return this.faults.map((f) => ({ ...f }));
  }

  clear(): void {
    this.faults = [];
  }

  /** The first live fault matching the request (its count consumed), as latency and/or an error. */
  apply(method: string, path: string): FaultOutcome | undefined {
    const fault = this.faults.find(
      (f) =>
        (f.times === undefined || f.hits < f.times) &&
        (f.method === undefined || f.method.toUpperCase() === method.toUpperCase()) &&
        (f.path === undefined || new RegExp(f.path).test(path)),
    );
    if (!fault) return undefined;
    fault.hits++;
    const outcome: FaultOutcome = { latencyMs: fault.latencyMs ?? 0 };
    if (fault.status !== undefined) {
      const headers: Record<string, string> = {};
      if (fault.retryAfter !== undefined) headers['retry-after'] = String(fault.retryAfter);
      if (fault.retryAfterMs !== undefined) headers['retry-after-ms'] = String(fault.retryAfterMs);
      if (fault.shouldRetry !== undefined) headers['x-should-retry'] = String(fault.shouldRetry);
      outcome.error = {
        status: fault.status,
        ...(fault.code !== undefined ? { code: fault.code } : {}),
        ...(fault.message !== undefined ? { message: fault.message } : {}),
        headers,
      };
    }
    return outcome;
  }
}
