/**
 * A minimal OTLP/HTTP trace receiver for tests: `POST /v1/traces` with a protobuf
 * ExportTraceServiceRequest (gzip or not), decoded with protobufjs from the part of OTLP's
 * trace.proto the tests read (unknown fields are skipped), kept as flat spans.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import protobuf from 'protobufjs';

// Field numbers as in opentelemetry/proto/{collector/trace/v1/trace_service,trace/v1/trace,common/v1/common}.proto.
const OTLP_TRACE_SUBSET = `
syntax = "proto3";
package otlp;
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
message Resource { repeated KeyValue attributes = 1; }
message ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; }
message InstrumentationScope { string name = 1; }
message Span {
  bytes trace_id = 1; bytes span_id = 2; bytes parent_span_id = 4; string name = 5; int32 kind = 6;
  repeated KeyValue attributes = 9; Status status = 15;
}
message Status { string message = 2; int32 code = 3; }
message KeyValue { string key = 1; AnyValue value = 2; }
message AnyValue {
  oneof value { string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4; bytes bytes_value = 7; }
}
`;
const Request = protobuf.parse(OTLP_TRACE_SUBSET).root.lookupType('otlp.ExportTraceServiceRequest');

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  kind: number;
  /** The span's attributes, values as strings. */
  attributes: Record<string, string>;
  /** The resource's attributes (service.name…), values as strings. */
  resource: Record<string, string>;
  scope: string;
  statusCode: number;
}

type KeyValue = { key: string; value?: Record<string, unknown> };
const flat = (kvs: KeyValue[] = []) =>
  Object.fromEntries(kvs.map((kv) => [kv.key, String(Object.values(kv.value ?? {})[0] ?? '')]));
const hex = (b?: Uint8Array) => Buffer.from(b ?? []).toString('hex');

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Export requests that were not what an OTLP/HTTP protobuf exporter sends. */
  readonly refused: string[] = [];

  private server!: Server;

  /** Where it listens. */
  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** The endpoint for OTEL_EXPORTER_OTLP_ENDPOINT (the exporter appends /v1/traces). */
  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  static async start(port = 0): Promise<OtlpReceiver> {
    const receiver = new OtlpReceiver();
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const type = req.headers['content-type'] ?? '';
        if (req.method !== 'POST' || req.url !== '/v1/traces' || type !== 'application/x-protobuf') {
          receiver.refused.push(`${req.method} ${req.url} ${type}`);
          return void res.writeHead(415).end();
        }
        let body = Buffer.concat(chunks);
        if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
        receiver.add(Request.toObject(Request.decode(body), { longs: String, defaults: true }));
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
    receiver.server = server;
    return receiver;
  }

  /** The spans of one trace. */
  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((s) => s.traceId === traceId);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private add(request: Record<string, unknown>): void {
    type Decoded = {
      resourceSpans: {
        resource?: { attributes: KeyValue[] };
        scopeSpans: {
          scope?: { name: string };
          spans: {
            traceId: Uint8Array;
            spanId: Uint8Array;
            parentSpanId: Uint8Array;
            name: string;
            kind: number;
            attributes: KeyValue[];
            status?: { code: number };
          }[];
        }[];
      }[];
    };
    for (const rs of (request as Decoded).resourceSpans)
      for (const ss of rs.scopeSpans)
        for (const s of ss.spans)
          this.spans.push({
            traceId: hex(s.traceId),
            spanId: hex(s.spanId),
            parentSpanId: hex(s.parentSpanId),
            name: s.name,
            kind: s.kind,
            attributes: flat(s.attributes),
            resource: flat(rs.resource?.attributes),
            scope: ss.scope?.name ?? '',
            statusCode: s.status?.code ?? 0,
          });
  }
}
