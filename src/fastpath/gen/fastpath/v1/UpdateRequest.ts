// Original file: fastpath/v1/fastpath.proto

import type { FailurePolicy as _fastpath_v1_FailurePolicy, FailurePolicy__Output as _fastpath_v1_FailurePolicy__Output } from '../../fastpath/v1/FailurePolicy.js';
import type { Long } from '@grpc/proto-loader';

export interface UpdateRequest {
  'sandboxName'?: (string);
  'namespace'?: (string);
  /**
   * Unix seconds; 0 removes the expiry
   */
  'expireTimeSeconds'?: (number | string | Long);
  /**
   * RFC 3339 (nanoseconds allowed)
   */
  'resetRevision'?: (string);
  'failurePolicy'?: (_fastpath_v1_FailurePolicy);
  'recoveryTimeoutSeconds'?: (number);
  'labels'?: ({[key: string]: string});
  'update'?: "expireTimeSeconds"|"resetRevision"|"failurePolicy"|"recoveryTimeoutSeconds";
}

export interface UpdateRequest__Output {
  'sandboxName': (string);
  'namespace': (string);
  /**
   * Unix seconds; 0 removes the expiry
   */
  'expireTimeSeconds'?: (number);
  /**
   * RFC 3339 (nanoseconds allowed)
   */
  'resetRevision'?: (string);
  'failurePolicy'?: (_fastpath_v1_FailurePolicy__Output);
  'recoveryTimeoutSeconds'?: (number);
  'labels': ({[key: string]: string});
  'update'?: "expireTimeSeconds"|"resetRevision"|"failurePolicy"|"recoveryTimeoutSeconds";
}
