// Original file: fastpath/v1/fastpath.proto

import type { SandboxInfo as _fastpath_v1_SandboxInfo, SandboxInfo__Output as _fastpath_v1_SandboxInfo__Output } from '../../fastpath/v1/SandboxInfo.js';

export interface UpdateResponse {
  'success'?: (boolean);
  'message'?: (string);
  'sandbox'?: (_fastpath_v1_SandboxInfo | null);
}

export interface UpdateResponse__Output {
  'success': (boolean);
  'message': (string);
  'sandbox': (_fastpath_v1_SandboxInfo__Output | null);
}
