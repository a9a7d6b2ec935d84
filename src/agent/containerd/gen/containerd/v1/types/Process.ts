// Original file: containerd/types/task.proto

import type { Status as _containerd_v1_types_Status, Status__Output as _containerd_v1_types_Status__Output } from '../../../containerd/v1/types/Status.js';
import type { Timestamp as _google_protobuf_Timestamp, Timestamp__Output as _google_protobuf_Timestamp__Output } from '../../../google/protobuf/Timestamp.js';

export interface Process {
  'containerId'?: (string);
  'id'?: (string);
  'pid'?: (number);
  'status'?: (_containerd_v1_types_Status);
  'stdin'?: (string);
  'stdout'?: (string);
  'stderr'?: (string);
  'terminal'?: (boolean);
  'exitStatus'?: (number);
  'exitedAt'?: (_google_protobuf_Timestamp | null);
}

export interface Process__Output {
  'containerId': (string);
  'id': (string);
  'pid': (number);
  'status': (_containerd_v1_types_Status__Output);
  'stdin': (string);
  'stdout': (string);
  'stderr': (string);
  'terminal': (boolean);
  'exitStatus': (number);
  'exitedAt': (_google_protobuf_Timestamp__Output | null);
}
