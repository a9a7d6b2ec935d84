// Original file: containerd/services/content/v1/content.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { ReadContentRequest as _containerd_services_content_v1_ReadContentRequest, ReadContentRequest__Output as _containerd_services_content_v1_ReadContentRequest__Output } from '../../../../containerd/services/content/v1/ReadContentRequest.js';
import type { ReadContentResponse as _containerd_services_content_v1_ReadContentResponse, ReadContentResponse__Output as _containerd_services_content_v1_ReadContentResponse__Output } from '../../../../containerd/services/content/v1/ReadContentResponse.js';

export interface ContentClient extends grpc.Client {
  Read(argument: _containerd_services_content_v1_ReadContentRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_containerd_services_content_v1_ReadContentResponse__Output>;
  Read(argument: _containerd_services_content_v1_ReadContentRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_containerd_services_content_v1_ReadContentResponse__Output>;
  read(argument: _containerd_services_content_v1_ReadContentRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_containerd_services_content_v1_ReadContentResponse__Output>;
  read(argument: _containerd_services_content_v1_ReadContentRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_containerd_services_content_v1_ReadContentResponse__Output>;
  
}

export interface ContentHandlers extends grpc.UntypedServiceImplementation {
  Read: grpc.handleServerStreamingCall<_containerd_services_content_v1_ReadContentRequest__Output, _containerd_services_content_v1_ReadContentResponse>;
  
}

export interface ContentDefinition extends grpc.ServiceDefinition {
  Read: MethodDefinition<_containerd_services_content_v1_ReadContentRequest, _containerd_services_content_v1_ReadContentResponse, _containerd_services_content_v1_ReadContentRequest__Output, _containerd_services_content_v1_ReadContentResponse__Output>
}
