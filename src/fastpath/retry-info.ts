/**
 * When to try a refused call again, in gRPC's rich error model: the trailer
 * `grpc-status-details-bin` holds a `google.rpc.Status` whose details carry a
 * `google.rpc.RetryInfo` (`retry_delay`), as Google's APIs send it and gRPC clients decode it
 * (Go's `status.Details()`, grpc-java's `StatusProto`); `retry-after` (seconds) says the same to
 * clients that do not decode it. The four messages are defined here (field numbers as in
 * googleapis' google/rpc/status.proto and error_details.proto) rather than loaded: nothing else
 * of googleapis is needed.
 */
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';

const root = protobuf.Root.fromJSON({
  nested: {
    google: {
      nested: {
        protobuf: {
          nested: {
            Any: { fields: { typeUrl: { type: 'string', id: 1 }, value: { type: 'bytes', id: 2 } } },
            Duration: { fields: { seconds: { type: 'int64', id: 1 }, nanos: { type: 'int32', id: 2 } } },
          },
        },
        rpc: {
          nested: {
            Status: {
              fields: {
                code: { type: 'int32', id: 1 },
                message: { type: 'string', id: 2 },
                details: { rule: 'repeated', type: 'google.protobuf.Any', id: 3 },
              },
            },
            RetryInfo: { fields: { retryDelay: { type: 'google.protobuf.Duration', id: 1 } } },
          },
        },
      },
    },
  },
});
const Status = root.lookupType('google.rpc.Status');
const RetryInfo = root.lookupType('google.rpc.RetryInfo');
const RETRY_INFO_TYPE_URL = 'type.googleapis.com/google.rpc.RetryInfo';

/** The trailers of a refusal to retry after `seconds`: the rich status and `retry-after`. */
export function retryMetadata(code: grpc.status, message: string, seconds: number): grpc.Metadata {
  const retryInfo = RetryInfo.encode(RetryInfo.create({ retryDelay: { seconds, nanos: 0 } })).finish();
  const status = Status.encode(
    Status.create({ code, message, details: [{ typeUrl: RETRY_INFO_TYPE_URL, value: retryInfo }] }),
  ).finish();
  const md = new grpc.Metadata();
  md.set('grpc-status-details-bin', Buffer.from(status));
  md.set('retry-after', String(seconds));
  return md;
}

/** The retry delay (seconds) a failed call's rich status carries, if it carries one. */
export function retryDelayOf(metadata: grpc.Metadata | undefined): number | undefined {
  const [bin] = metadata?.get('grpc-status-details-bin') ?? [];
  if (!Buffer.isBuffer(bin)) return undefined;
  const status = Status.toObject(Status.decode(bin), { longs: Number }) as {
    details?: { typeUrl: string; value: Uint8Array }[];
  };
  const detail = status.details?.find((d) => d.typeUrl === RETRY_INFO_TYPE_URL);
  if (!detail) return undefined;
  const info = RetryInfo.toObject(RetryInfo.decode(detail.value), { longs: Number }) as {
    retryDelay?: { seconds?: number; nanos?: number };
  };
  return (info.retryDelay?.seconds ?? 0) + (info.retryDelay?.nanos ?? 0) / 1e9;
}
