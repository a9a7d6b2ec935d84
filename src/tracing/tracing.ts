/**
 * OpenTelemetry tracing, off unless the standard OpenTelemetry variables ask for it:
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_TRACES_EXPORTER=otlp`)
 * turns it on; `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` keeps it off. Once per
 * process, by the role (src/cli/main.ts): a tracer provider with a batch span processor and an
 * OTLP exporter, the W3C propagators, and an AsyncLocalStorage context manager so that a server
 * span of the fast path is the parent of the Temporal client's spans started under it.
 *
 * Temporal's part (@temporalio/interceptors-opentelemetry) is wired by connectClient (client
 * interceptor: the trace context goes into the workflow's headers) and by tracedWorkerOptions
 * (activity interceptors, and the sink that hands the workflow's spans to the same processor).
 */
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { Resource, envDetectorSync } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { VERSION } from '../build-info.js';
import type { Logger } from '../log.js';

export interface Tracing {
  readonly resource: Resource;
  readonly spanProcessor: SpanProcessor;
  /** Exports what is still buffered and stops: the last spans of a role reach the collector. */
  shutdown(): Promise<void>;
}

let active: Tracing | undefined;

/** The process's tracing, when it is on. */
export function activeTracing(): Tracing | undefined {
  return active;
}

/** Whether the variables ask for traces; a setting we cannot honour is refused with its reason. */
export function tracingRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((e) => e.trim().toLowerCase())
    .filter(Boolean);
  if (exporters.includes('none')) return false;
  const unsupported = exporters.filter((e) => e !== 'otlp');
  if (unsupported.length)
    throw new Error(`OTEL_TRACES_EXPORTER=${env.OTEL_TRACES_EXPORTER}: only otlp (or none) is supported`);
  const on =
    exporters.includes('otlp') || !!env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || !!env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL;
  if (on && protocol && protocol !== 'http/protobuf')
    throw new Error(
      `OTLP protocol ${protocol}: traces are exported as http/protobuf only (point the endpoint at the collector's OTLP/HTTP port, usually 4318)`,
    );
  return on;
}

/**
 * Starts tracing for `role` when the variables ask for it (idempotent). The service is
 * `durable-operators-<role>` unless OTEL_SERVICE_NAME says otherwise; OTEL_RESOURCE_ATTRIBUTES
 * adds to it. No host or process detector: a process's command line may carry credentials.
 */
export function startTracing(role: string, log: Logger, env: NodeJS.ProcessEnv = process.env): Tracing | undefined {
  if (active || !tracingRequested(env)) return active;
  const resource = Resource.default()
    .merge(new Resource({ 'service.name': `durable-operators-${role}`, 'service.version': VERSION }))
    .merge(envDetectorSync.detect());
  // OTLP over HTTP with protobuf bodies: the protocol's default, which every OTLP receiver takes
  // (JSON is optional for receivers, and some, e.g. Elastic's APM server, refuse it); over HTTP
  // rather than gRPC, so no second gRPC stack and no HTTP/2 through proxies. The exporter reads
  // the endpoint, headers, timeout and compression from the OTEL_EXPORTER_OTLP_* variables.
  const spanProcessor = new BatchSpanProcessor(new OTLPTraceExporter());
  const provider = new BasicTracerProvider({ resource, spanProcessors: [spanProcessor] });
  // Propagators from OTEL_PROPAGATORS (default: W3C tracecontext and baggage).
  provider.register({ contextManager: new AsyncLocalStorageContextManager() });
  active = {
    resource,
    spanProcessor,
    async shutdown() {
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
      active = undefined;
    },
  };
  log.info(
    { service: resource.attributes['service.name'], endpoint: endpointHost(env) },
    'tracing: exporting spans over OTLP',
  );
  return active;
}

/** Where spans go, without any credentials a URL may carry. */
function endpointHost(env: NodeJS.ProcessEnv): string {
  const url = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!url) return 'default (localhost:4318)';
  try {
    return new URL(url).host;
  } catch {
    return 'unparsable';
  }
}
