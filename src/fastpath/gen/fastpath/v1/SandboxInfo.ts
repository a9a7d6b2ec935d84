// Original file: fastpath/v1/fastpath.proto

import type { Long } from '@grpc/proto-loader';

export interface SandboxInfo {
  'sandboxId'?: (string);
  'phase'?: (string);
  'agentPod'?: (string);
  'endpoints'?: (string)[];
  /**
   * the Sandbox's creationTimestamp, Unix seconds
   */
  'createdAt'?: (number | string | Long);
  'image'?: (string);
  'poolRef'?: (string);
  'sandboxName'?: (string);
}

export interface SandboxInfo__Output {
  'sandboxId': (string);
  'phase': (string);
  'agentPod': (string);
  'endpoints': (string)[];
  /**
   * the Sandbox's creationTimestamp, Unix seconds
   */
  'createdAt': (number);
  'image': (string);
  'poolRef': (string);
  'sandboxName': (string);
}
