// Original file: containerd/services/snapshots/v1/snapshots.proto

import type { Long } from '@grpc/proto-loader';

export interface UsageResponse {
  'size'?: (number | string | Long);
  'inodes'?: (number | string | Long);
}

export interface UsageResponse__Output {
  'size': (number);
  'inodes': (number);
}
