import type * as grpc from '@grpc/grpc-js';
import type { MessageTypeDefinition } from '@grpc/proto-loader';

import type { Envelope as _containerd_services_events_v1_Envelope, Envelope__Output as _containerd_services_events_v1_Envelope__Output } from './containerd/services/events/v1/Envelope.js';
import type { EventsClient as _containerd_services_events_v1_EventsClient, EventsDefinition as _containerd_services_events_v1_EventsDefinition } from './containerd/services/events/v1/Events.js';
import type { SubscribeRequest as _containerd_services_events_v1_SubscribeRequest, SubscribeRequest__Output as _containerd_services_events_v1_SubscribeRequest__Output } from './containerd/services/events/v1/SubscribeRequest.js';
import type { Any as _google_protobuf_Any, Any__Output as _google_protobuf_Any__Output } from './google/protobuf/Any.js';
import type { Timestamp as _google_protobuf_Timestamp, Timestamp__Output as _google_protobuf_Timestamp__Output } from './google/protobuf/Timestamp.js';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  containerd: {
    services: {
      events: {
        v1: {
          Envelope: MessageTypeDefinition<_containerd_services_events_v1_Envelope, _containerd_services_events_v1_Envelope__Output>
          Events: SubtypeConstructor<typeof grpc.Client, _containerd_services_events_v1_EventsClient> & { service: _containerd_services_events_v1_EventsDefinition }
          SubscribeRequest: MessageTypeDefinition<_containerd_services_events_v1_SubscribeRequest, _containerd_services_events_v1_SubscribeRequest__Output>
        }
      }
    }
  }
  google: {
    protobuf: {
      Any: MessageTypeDefinition<_google_protobuf_Any, _google_protobuf_Any__Output>
      Timestamp: MessageTypeDefinition<_google_protobuf_Timestamp, _google_protobuf_Timestamp__Output>
    }
  }
}

