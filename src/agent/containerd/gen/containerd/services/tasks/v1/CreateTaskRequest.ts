// Original file: containerd/services/tasks/v1/tasks.proto

import type { Mount as _containerd_types_Mount, Mount__Output as _containerd_types_Mount__Output } from '../../../../containerd/types/Mount.js';
import type { Any as _google_protobuf_Any, Any__Output as _google_protobuf_Any__Output } from '../../../../google/protobuf/Any.js';

export interface CreateTaskRequest {
  'containerId'?: (string);
  'rootfs'?: (_containerd_types_Mount)[];
  'stdin'?: (string);
  'stdout'?: (string);
  'stderr'?: (string);
  'terminal'?: (boolean);
  'options'?: (_google_protobuf_Any | null);
  'runtimePath'?: (string);
}

export interface CreateTaskRequest__Output {
  'containerId': (string);
  'rootfs': (_containerd_types_Mount__Output)[];
  'stdin': (string);
  'stdout': (string);
  'stderr': (string);
  'terminal': (boolean);
  'options': (_google_protobuf_Any__Output | null);
  'runtimePath': (string);
}
