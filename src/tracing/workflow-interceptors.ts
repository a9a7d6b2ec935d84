/**
 * The workflow interceptors every bundle carries (bundled into the workflow code, so it runs in
 * the workflow sandbox): Temporal's OpenTelemetry interceptors, but only in a run that was
 * started with a trace context.
 *
 * Why: with tracing off, the OpenTelemetry interceptors still made a span around every workflow
 * call, activity and timer — 13% of the workflow code's CPU per sandbox life on a quiet machine,
 * 21% on a loaded one (bench/workflow-cpu.ts: 73 → 64 ms; bench/RESULTS.md).
 * A client with tracing on always sends its trace context in the `_tracer-data` header, so the
 * header decides, and it is in the run's history: a replay decides the same way.
 *
 * `deprecatePatch(TRACING_ONLY_WHEN_TRACED)` keeps runs that carry the patch's marker replaying;
 * removed in 0.3.0 (docs/compatibility.md, "Workflow patches").
 */
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { deprecatePatch, type WorkflowInterceptors } from '@temporalio/workflow';
import { interceptors as openTelemetryInterceptors } from '@temporalio/interceptors-opentelemetry/lib/workflow-interceptors.js';

/** Patch (deprecated): a run started without a trace context makes no spans. */
export const TRACING_ONLY_WHEN_TRACED = 'tracing-only-when-traced';
/** The header Temporal's OpenTelemetry client interceptor puts the caller's trace context in. */
const TRACE_HEADER = '_tracer-data';

/**
 * Whether a call's headers carry a caller's trace context. (Temporal's client interceptor sends
 * the header even when its tracer makes no spans, then with no `traceparent` in it.)
 */
function carriesTraceContext(headers: Record<string, Payload>): boolean {
  const header = headers[TRACE_HEADER];
  if (!header) return false;
  try {
    const carrier: unknown = defaultPayloadConverter.fromPayload(header);
    return typeof (carrier as { traceparent?: unknown } | null)?.traceparent === 'string';
  } catch {
    return false;
  }
}

type Method = (input: unknown, next: (input: unknown) => unknown) => unknown;

/**
 * `target`'s interceptor methods (its class's) as a plain object whose methods call `target` only
 * when `traced()`, and otherwise go straight to `next`.
 */
function onlyWhen<T extends object>(target: T, traced: () => boolean): T {
  const gated: Record<string, Method> = {};
  for (const key of Object.getOwnPropertyNames(Object.getPrototypeOf(target))) {
    const method: unknown = Reflect.get(target, key);
    if (key === 'constructor' || typeof method !== 'function') continue;
    gated[key] = (input, next) => (traced() ? (method as Method).call(target, input, next) : next(input));
  }
  return gated as T;
}

export const interceptors = (): WorkflowInterceptors => {
  const otel = openTelemetryInterceptors();
  // Decided when the run starts (`execute` is the first inbound call: handlers are set by the
  // workflow function, so the signals and updates of the first task wait for it), and turned on
  // by a signal or update that carries a trace context — so a long-lived run started before
  // tracing was turned on is traced from its next traced message. Queries and update validators
  // are not in the history (a replay does not run them): they only read the decision.
  let traced = true;
  const isTraced = () => traced;
  const turnedOnBy = (headers: Record<string, Payload>) => {
    if (carriesTraceContext(headers)) traced = true;
    return traced;
  };
  const [inbound] = otel.inbound ?? [];
  const [outbound] = otel.outbound ?? [];
  return {
    inbound: inbound
      ? [
          {
            ...onlyWhen(inbound, isTraced),
            execute: (input, next) => {
              traced = carriesTraceContext(input.headers);
              if (!traced) deprecatePatch(TRACING_ONLY_WHEN_TRACED);
              return traced ? inbound.execute!(input, next) : next(input);
            },
            handleSignal: (input, next) =>
              turnedOnBy(input.headers) ? inbound.handleSignal!(input, next) : next(input),
            handleUpdate: (input, next) =>
              turnedOnBy(input.headers) ? inbound.handleUpdate!(input, next) : next(input),
          },
        ]
      : [],
    outbound: outbound ? [onlyWhen(outbound, isTraced)] : [],
    // Only `dispose` (releases the context manager): always run.
    internals: otel.internals ?? [],
  };
};
