/**
 * The one logger (pino: structured JSON, cheap when a level is off). Set DO_LOG_LEVEL to change
 * the level; DO_LOG_PRETTY is not supported on purpose — pipe through `pino-pretty` if wanted.
 *
 * Each line carries what log pipelines (Loki, Cloud Logging, Datadog) read without a parser of
 * their own: `level` as a word, `time` in ISO 8601, `trace_id`/`span_id` of the span active
 * when the line was written (with tracing on), and `err` as `{type, message, stack}` whether the
 * caller passed an Error or only its message.
 */
import { context, isSpanContextValid, trace } from '@opentelemetry/api';
import { pino, stdSerializers, stdTimeFunctions, type DestinationStream, type Level } from 'pino';

/** An `err` of any shape as pino serializes an Error; a string is an error's message. */
function serializeError(err: unknown): unknown {
  if (err instanceof Error) return stdSerializers.err(err);
  if (typeof err === 'string') return { type: 'Error', message: err };
  return err;
}

/** The OTel span active now (a traced request, workflow or activity), if any. */
function traceFields(): { trace_id?: string; span_id?: string } {
  const span = trace.getSpan(context.active());
  const sc = span?.spanContext();
  return sc && isSpanContextValid(sc) ? { trace_id: sc.traceId, span_id: sc.spanId } : {};
}

export function createLogger(destination?: DestinationStream, level: Level | string = 'info') {
  return pino(
    {
      level,
      base: { pid: process.pid },
      timestamp: stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      serializers: { err: serializeError },
      mixin: traceFields,
      redact: {
        paths: [
          'token',
          'apiKey',
          '*.token',
          '*.apiKey',
          'headers.authorization',
          // A Temporal connection's client key (TemporalConfig.tls), wherever a config is logged.
          'tls.clientCertPair.key',
          '*.tls.clientCertPair.key',
          '*.*.tls.clientCertPair.key',
          '*.temporal.apiKey',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}

export const logger = createLogger(undefined, process.env.DO_LOG_LEVEL ?? 'info');

export type Logger = typeof logger;
