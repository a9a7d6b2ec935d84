// Original file: fastpath/v1/fastpath.proto

import type { SandboxInfo as _fastpath_v1_SandboxInfo, SandboxInfo__Output as _fastpath_v1_SandboxInfo__Output } from '../../fastpath/v1/SandboxInfo.js';

export interface ListResponse {
  'items'?: (_fastpath_v1_SandboxInfo)[];
}

export interface ListResponse__Output {
  'items': (_fastpath_v1_SandboxInfo__Output)[];
}
