/**
 * The roles' JSON log lines as log pipelines read them: `level` a word, `time` ISO 8601,
 * `trace_id`/`span_id` of the active span, `err` one shape whether an Error or its message was
 * given, and secrets redacted.
 */
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';

const lines: Record<string, unknown>[] = [];
const log = createLogger({ write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
const last = () => lines.at(-1)!;
const manager = new AsyncLocalStorageContextManager();

beforeAll(() => {
  context.setGlobalContextManager(manager.enable());
});
afterAll(() => {
  context.disable();
});

describe('log lines', () => {
  it('say the level as a word and the time in ISO 8601', () => {
    log.warn({ apiKey: 'k3y' }, 'careful');
    expect(last()).toMatchObject({ level: 'warn', msg: 'careful', apiKey: '[redacted]' });
    expect(last().time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('carry the active span’s trace_id and span_id, and none without one', () => {
    const span = trace.wrapSpanContext({ traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: 1 });
    context.with(trace.setSpan(context.active(), span), () => log.info('in a span'));
    expect(last()).toMatchObject({ trace_id: 'a'.repeat(32), span_id: 'b'.repeat(16) });
    log.info('outside');
    expect(last()).not.toHaveProperty('trace_id');
  });

  it('serialize err one way, given an Error or only its message', () => {
    log.error({ err: new TypeError('boom') }, 'failed');
    expect(last().err).toMatchObject({ type: 'TypeError', message: 'boom', stack: expect.stringContaining('boom') });
    log.error({ err: 'boom' }, 'failed');
    expect(last().err).toEqual({ type: 'Error', message: 'boom' });
  });
});
