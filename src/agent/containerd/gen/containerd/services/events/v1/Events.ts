// Original file: containerd/services/events/v1/events.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { Envelope as _containerd_services_events_v1_Envelope, Envelope__Output as _containerd_services_events_v1_Envelope__Output } from '../../../../containerd/services/events/v1/Envelope.js';
import type { SubscribeRequest as _containerd_services_events_v1_SubscribeRequest, SubscribeRequest__Output as _containerd_services_events_v1_SubscribeRequest__Output } from '../../../../containerd/services/events/v1/SubscribeRequest.js';

export interface EventsClient extends grpc.Client {
  Subscribe(argument: _containerd_services_events_v1_SubscribeRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_containerd_services_events_v1_Envelope__Output>;
  Subscribe(argument: _containerd_services_events_v1_SubscribeRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_containerd_services_events_v1_Envelope__Output>;
  subscribe(argument: _containerd_services_events_v1_SubscribeRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_containerd_services_events_v1_Envelope__Output>;
  subscribe(argument: _containerd_services_events_v1_SubscribeRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_containerd_services_events_v1_Envelope__Output>;
  
}

export interface EventsHandlers extends grpc.UntypedServiceImplementation {
  Subscribe: grpc.handleServerStreamingCall<_containerd_services_events_v1_SubscribeRequest__Output, _containerd_services_events_v1_Envelope>;
  
}

export interface EventsDefinition extends grpc.ServiceDefinition {
  Subscribe: MethodDefinition<_containerd_services_events_v1_SubscribeRequest, _containerd_services_events_v1_Envelope, _containerd_services_events_v1_SubscribeRequest__Output, _containerd_services_events_v1_Envelope__Output>
}
