/**
 * OpenTelemetry tracing of the fast path, run as its own process (as deployed, on the pre-built
 * sandbox workflow bundle) with an OTLP/HTTP receiver of the test. Without the OTEL variables
 * nothing is exported — the receiver listens where an exporter sends by default
 * (127.0.0.1:4318), so tracing that were on by default would be seen. With them, a gRPC and an
 * HTTP create that carry a W3C traceparent each make one trace: the fast path's server span,
 * child of the caller's span; the Temporal client's update-with-start; the sandbox workflow's
 * RunWorkflow, its update handler and its activities — every span's parent in the same trace.
 * A run started without a trace context makes no spans (tracing off costs the workflows nothing)
 * until a message that carries one arrives.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import path from 'node:path';
import { Client, type WorkflowClientInterceptor } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runJanitorPassUpdate, sandboxJanitorWorkflow } from '../../src/workflows/sandbox/contract.js';
import { eventually, temporal, uniq } from '../support/env.js';
import { SandboxStack, grpcClient } from '../support/fastpath.js';
import { OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';

let stack: SandboxStack;
let receiver: OtlpReceiver;

/** An env value of the sandboxes: it must appear in no span. */
const SECRET = `sekret-${randomBytes(6).toString('hex')}`;

beforeAll(async () => {
  receiver = await OtlpReceiver.start(4318).catch((err: Error) => {
    throw new Error(`port 4318 (OTLP/HTTP's default) must be free for this test: ${err.message}`);
  });
  stack = await new SandboxStack({ agents: 1, capacity: 6, runtime: 'process', spawned: true }).start();
}, 240_000);

afterAll(async () => {
  await stack?.stop();
  await receiver?.close();
});

/** A caller's span: its W3C traceparent (sampled). */
function callerSpan() {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}

const create = (name: string) => ({
  name,
  namespace: stack.namespace,
  image: 'node:22',
  poolRef: stack.pool,
  command: ['sleep', '3600'],
  envs: { TOKEN: SECRET },
});

async function createBoth(grpcName: string, httpName: string) {
  const viaGrpc = callerSpan();
  const viaHttp = callerSpan();
  await stack.grpc.call('CreateSandbox', create(grpcName), undefined, { traceparent: viaGrpc.traceparent });
  const res = await stack.http('POST', '/api/v1/sandboxes', create(httpName), undefined, {
    traceparent: viaHttp.traceparent,
    tracestate: 'caller=1',
  });
  expect(res.status, await res.clone().text()).toBe(201);
  return { viaGrpc, viaHttp };
}

async function deleteSandbox(name: string) {
  await stack.grpc.call('DeleteSandbox', { sandboxName: name, namespace: stack.namespace });
}

const fastPathLog = () => readFile(path.join(stack.stateDir, 'fastpath.log'), 'utf8');

describe('tracing', () => {
  it('is off without the OTEL variables: nothing reaches the default endpoint', async () => {
    const { viaGrpc, viaHttp } = await createBoth('plain-grpc', 'plain-http');
    await eventually('both Running', async () => {
      const [a, b] = [await stack.sandbox('plain-grpc'), await stack.sandbox('plain-http')];
      return a?.status?.phase === 'Running' && b?.status?.phase === 'Running';
    });
    // A workflow that ends would export its RunWorkflow span.
    await deleteSandbox('plain-grpc');
    await eventually('plain-grpc gone', async () => (await stack.sandbox('plain-grpc')) === undefined);
    // Longer than the batch processor's default delay (5 s).
    await new Promise((r) => setTimeout(r, 6_000));
    expect(receiver.spans).toEqual([]);
    expect(receiver.refused).toEqual([]);
    expect(receiver.trace(viaGrpc.traceId)).toEqual([]);
    expect(receiver.trace(viaHttp.traceId)).toEqual([]);
    expect(await fastPathLog()).not.toContain('tracing:');
  }, 90_000);

  it('names a span without parsing the path: a malformed one is answered, the server stays up', async () => {
    const { port } = new URL(stack.httpBase);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () => socket.end('GET //[ HTTP/1.1\r\nHost: x\r\n\r\n'));
      let text = '';
      socket.on('data', (d: Buffer) => (text += d.toString()));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 [45]\d\d /);
    expect((await fetch(`${stack.httpBase}/healthz`)).status).toBe(200);
  });

  it('with OTEL_EXPORTER_OTLP_ENDPOINT, a gRPC and an HTTP create each make one trace through the workflow', async () => {
    await stack.child!.stop();
    stack.grpc.close();
    await stack.startFastPath({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_BSP_SCHEDULE_DELAY: '200',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=tracing-test',
    });
    stack.grpc = grpcClient(stack.grpcAddress, String(stack.tenantId));
    expect(await fastPathLog()).toContain('tracing: exporting spans over OTLP');

    const { viaGrpc, viaHttp } = await createBoth('traced-grpc', 'traced-http');
    const has = (spans: ReceivedSpan[], prefix: string) => spans.some((s) => s.name.startsWith(prefix));
    for (const caller of [viaGrpc, viaHttp])
      await eventually(
        `spans of trace ${caller.traceId}: server, update-with-start, update handler, activity`,
        async () => {
          const spans = receiver.trace(caller.traceId);
          return ['UpdateWithStartWorkflow:', 'HandleUpdate:', 'StartActivity:', 'RunActivity:'].every((p) =>
            has(spans, p),
          );
        },
        { timeoutMs: 30_000 },
      );
    // The workflows end: their RunWorkflow spans are exported too.
    await deleteSandbox('traced-grpc');
    await deleteSandbox('traced-http');
    for (const caller of [viaGrpc, viaHttp])
      await eventually(
        `RunWorkflow span of trace ${caller.traceId}`,
        async () => has(receiver.trace(caller.traceId), 'RunWorkflow:'),
        { timeoutMs: 60_000 },
      );

    const grpcSpans = receiver.trace(viaGrpc.traceId);
    const httpSpans = receiver.trace(viaHttp.traceId);
    // The server spans: children of the caller's span, with the call's method and outcome.
    const grpcServer = grpcSpans.filter((s) => s.parentSpanId === viaGrpc.spanId);
    expect(grpcServer.map((s) => [s.name, s.kind, s.attributes['rpc.grpc.status_code']])).toEqual([
      ['fastpath.v1.FastPathService/CreateSandbox', 2, '0'],
    ]);
    const httpServer = httpSpans.filter((s) => s.parentSpanId === viaHttp.spanId);
    expect(httpServer.map((s) => [s.name, s.kind, s.attributes['http.response.status_code']])).toEqual([
      ['POST /api/v1/sandboxes', 2, '201'],
    ]);
    for (const [spans, caller] of [
      [grpcSpans, viaGrpc],
      [httpSpans, viaHttp],
    ] as const) {
      // One tree: every span's parent is the caller's span or another span of the trace.
      const ids = new Set([caller.spanId, ...spans.map((s) => s.spanId)]);
      expect(spans.filter((s) => !ids.has(s.parentSpanId))).toEqual([]);
      const byId = new Map(spans.map((s) => [s.spanId, s]));
      const parentName = (s: ReceivedSpan) => byId.get(s.parentSpanId)?.name ?? '';
      // The workflow under the client's update-with-start, the activity run under its start.
      const run = spans.find((s) => s.name.startsWith('RunWorkflow:'))!;
      expect(parentName(run)).toMatch(/^UpdateWithStartWorkflow:/);
      const activity = spans.find((s) => s.name.startsWith('RunActivity:'))!;
      expect(parentName(activity)).toMatch(/^StartActivity:/);
      expect(new Set(spans.map((s) => s.resource['service.name']))).toEqual(new Set(['durable-operators-fastpath']));
      expect(spans[0]!.resource['deployment.environment']).toBe('tracing-test');
    }
    // Nothing secret in any span: not the sandboxes' env values, not the agents' key or token.
    const everything = JSON.stringify(receiver.spans);
    for (const secret of [SECRET, stack.agentKey, stack.token]) expect(everything).not.toContain(secret);
    expect(receiver.refused).toEqual([]);
  }, 150_000);

  it('a run started without a trace context makes no spans, until a message with one arrives', async () => {
    // The fast path traces (the test above restarted it with the OTEL variables); this run is
    // started and updated by a client that does not trace, as `temporal workflow start` would.
    const plain = await temporal();
    const workflowId = uniq('janitor-untraced');
    const handle = await plain.workflow.start(sandboxJanitorWorkflow, {
      workflowId,
      taskQueue: stack.sandboxTaskQueue,
      args: [{ orphanTimeoutSeconds: 3600, intervalMs: 3_600_000 }],
    });
    try {
      await handle.executeUpdate(runJanitorPassUpdate, { updateId: 'untraced-pass' });
      // A caller's trace context in the header Temporal's client interceptor writes.
      const caller = callerSpan();
      const withTraceContext: WorkflowClientInterceptor = {
        startUpdate: (input, next) =>
          next({
            ...input,
            headers: {
              ...input.headers,
              '_tracer-data': defaultPayloadConverter.toPayload({ traceparent: caller.traceparent }),
            },
          }),
      };
      const traced = new Client({
        connection: plain.connection,
        namespace: plain.options.namespace,
        interceptors: { workflow: [withTraceContext] },
      });
      await traced.workflow.getHandle(workflowId).executeUpdate(runJanitorPassUpdate, { updateId: 'traced-pass' });
      const updateSpan = (id: string) =>
        receiver.spans.find((s) => s.name === 'HandleUpdate:runPass' && s.attributes.temporalUpdateId === id);
      await eventually("the traced update's span, in the caller's trace", async () => updateSpan('traced-pass'), {
        timeoutMs: 30_000,
      });
      expect(updateSpan('traced-pass')!.traceId).toBe(caller.traceId);
      // Exported together with the traced one (the batch waits 200 ms): the untraced one made none.
      expect(updateSpan('untraced-pass')).toBeUndefined();
    } finally {
      await handle.terminate('test done');
    }
  }, 90_000);
});
