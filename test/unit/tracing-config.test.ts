/** When the OTEL_* variables turn tracing on, and the settings it refuses rather than ignores. */
import { describe, expect, it } from 'vitest';
import { tracingRequested } from '../../src/tracing/tracing.js';

const ENDPOINT = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };

describe('tracingRequested', () => {
  it.each<[string, NodeJS.ProcessEnv, boolean]>([
    ['nothing set', {}, false],
    ['an empty endpoint', { OTEL_EXPORTER_OTLP_ENDPOINT: '' }, false],
    ['the endpoint', ENDPOINT, true],
    ['the traces endpoint', { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }, true],
    ['OTEL_TRACES_EXPORTER=otlp alone (the default endpoint)', { OTEL_TRACES_EXPORTER: 'otlp' }, true],
    ['OTEL_TRACES_EXPORTER=none', { ...ENDPOINT, OTEL_TRACES_EXPORTER: 'none' }, false],
    ['OTEL_SDK_DISABLED=true', { ...ENDPOINT, OTEL_SDK_DISABLED: 'TRUE' }, false],
    ['OTEL_SDK_DISABLED=false', { ...ENDPOINT, OTEL_SDK_DISABLED: 'false' }, true],
    ['http/protobuf', { ...ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' }, true],
    ['another protocol while off', { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, false],
  ])('%s', (_, env, on) => expect(tracingRequested(env)).toBe(on));

  it.each<[NodeJS.ProcessEnv, RegExp]>([
    [{ ...ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, /grpc: traces are exported as http\/protobuf only/],
    [{ ...ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' }, /http\/json/],
    [{ ...ENDPOINT, OTEL_TRACES_EXPORTER: 'zipkin' }, /OTEL_TRACES_EXPORTER=zipkin: only otlp/],
    [{ OTEL_TRACES_EXPORTER: 'otlp,console' }, /only otlp/],
  ])('refuses %j', (env, message) => expect(() => tracingRequested(env)).toThrow(message));
});
