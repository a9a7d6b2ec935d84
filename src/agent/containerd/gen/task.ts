import type * as grpc from '@grpc/grpc-js';
import type { MessageTypeDefinition } from '@grpc/proto-loader';

import type { TaskExit as _containerd_events_TaskExit, TaskExit__Output as _containerd_events_TaskExit__Output } from './containerd/events/TaskExit.js';
import type { TaskOOM as _containerd_events_TaskOOM, TaskOOM__Output as _containerd_events_TaskOOM__Output } from './containerd/events/TaskOOM.js';
import type { Timestamp as _google_protobuf_Timestamp, Timestamp__Output as _google_protobuf_Timestamp__Output } from './google/protobuf/Timestamp.js';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  containerd: {
    events: {
      TaskExit: MessageTypeDefinition<_containerd_events_TaskExit, _containerd_events_TaskExit__Output>
      TaskOOM: MessageTypeDefinition<_containerd_events_TaskOOM, _containerd_events_TaskOOM__Output>
    }
  }
  google: {
    protobuf: {
      Timestamp: MessageTypeDefinition<_google_protobuf_Timestamp, _google_protobuf_Timestamp__Output>
    }
  }
}

