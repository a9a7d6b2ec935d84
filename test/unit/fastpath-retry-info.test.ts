/**
 * The retry hint of a refusal that will pass (a pool scaling up from zero), in gRPC's rich error
 * model: `grpc-status-details-bin` = google.rpc.Status{details: [Any(google.rpc.RetryInfo)]}. The
 * golden bytes are written out by hand from googleapis' field numbers, so a wrong number or type
 * fails here whatever the decoder beside it thinks.
 */
import * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { retryDelayOf, retryMetadata } from '../../src/fastpath/retry-info.js';

const TYPE_URL = 'type.googleapis.com/google.rpc.RetryInfo';

describe('retryMetadata', () => {
  it('encodes google.rpc.Status with a RetryInfo detail, and retry-after in seconds', () => {
    const md = retryMetadata(grpc.status.UNAVAILABLE, 'x', 2);
    // RetryInfo{retry_delay(1): Duration{seconds(1): 2}}
    const retryInfo = Buffer.from([0x0a, 0x02, 0x08, 0x02]);
    // Any{type_url(1): TYPE_URL, value(2): retryInfo}
    const any = Buffer.concat([
      Buffer.from([0x0a, TYPE_URL.length]),
      Buffer.from(TYPE_URL),
      Buffer.from([0x12, retryInfo.length]),
      retryInfo,
    ]);
    // Status{code(1): 14, message(2): "x", details(3): [any]}
    const status = Buffer.concat([Buffer.from([0x08, 0x0e, 0x12, 0x01, 0x78, 0x1a, any.length]), any]);
    expect(md.get('grpc-status-details-bin')).toEqual([status]);
    expect(md.get('retry-after')).toEqual(['2']);
  });

  it('reads the delay back, and nothing from a status without one', () => {
    expect(retryDelayOf(retryMetadata(grpc.status.UNAVAILABLE, 'scaling up', 7))).toBe(7);
    expect(retryDelayOf(new grpc.Metadata())).toBeUndefined();
    expect(retryDelayOf(undefined)).toBeUndefined();
  });
});
