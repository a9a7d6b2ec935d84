/**
 * A server span around one call of the fast path's API, continuing the caller's trace: the W3C
 * `traceparent`/`tracestate` of the gRPC metadata or the HTTP headers, read by OpenTelemetry's
 * propagator. The Temporal client's spans started inside (update-with-start of the sandbox
 * workflow) are its children, and through the workflow's headers so are the workflow's and its
 * activities'. With tracing off the call runs as is.
 *
 * Attributes are the call's method and route and its outcome, never its headers or body (API
 * keys, sandbox env values).
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, propagation, trace, type Attributes } from '@opentelemetry/api';
import { activeTracing } from './tracing.js';

const tracer = () => trace.getTracer('durable-operators/fastpath');

/** What the call's outcome was, once known: whether it is a server error, and attributes to add. */
export type Outcome = { error: boolean; attributes: Attributes };

export async function inServerSpan<T>(
  name: string,
  /** gRPC metadata (getMap()) or HTTP headers. */
  carrier: Record<string, unknown>,
  attributes: Attributes,
  fn: () => Promise<T>,
  outcome: (result: { value: T } | { err: unknown }) => Outcome,
): Promise<T> {
  if (!activeTracing()) return fn();
  const parent = propagation.extract(ROOT_CONTEXT, carrier);
  return tracer().startActiveSpan(name, { kind: SpanKind.SERVER, attributes }, parent, async (span) => {
    const end = (ending: Outcome) => {
      span.setAttributes(ending.attributes);
      if (ending.error) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    };
    try {
      const value = await fn();
      end(outcome({ value }));
      return value;
    } catch (err) {
      end(outcome({ err }));
      throw err;
    }
  });
}
