// Original file: containerd/services/containers/v1/containers.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { CreateContainerRequest as _containerd_services_containers_v1_CreateContainerRequest, CreateContainerRequest__Output as _containerd_services_containers_v1_CreateContainerRequest__Output } from '../../../../containerd/services/containers/v1/CreateContainerRequest.js';
import type { CreateContainerResponse as _containerd_services_containers_v1_CreateContainerResponse, CreateContainerResponse__Output as _containerd_services_containers_v1_CreateContainerResponse__Output } from '../../../../containerd/services/containers/v1/CreateContainerResponse.js';
import type { DeleteContainerRequest as _containerd_services_containers_v1_DeleteContainerRequest, DeleteContainerRequest__Output as _containerd_services_containers_v1_DeleteContainerRequest__Output } from '../../../../containerd/services/containers/v1/DeleteContainerRequest.js';
import type { Empty as _google_protobuf_Empty, Empty__Output as _google_protobuf_Empty__Output } from '../../../../google/protobuf/Empty.js';
import type { GetContainerRequest as _containerd_services_containers_v1_GetContainerRequest, GetContainerRequest__Output as _containerd_services_containers_v1_GetContainerRequest__Output } from '../../../../containerd/services/containers/v1/GetContainerRequest.js';
import type { GetContainerResponse as _containerd_services_containers_v1_GetContainerResponse, GetContainerResponse__Output as _containerd_services_containers_v1_GetContainerResponse__Output } from '../../../../containerd/services/containers/v1/GetContainerResponse.js';
import type { ListContainersRequest as _containerd_services_containers_v1_ListContainersRequest, ListContainersRequest__Output as _containerd_services_containers_v1_ListContainersRequest__Output } from '../../../../containerd/services/containers/v1/ListContainersRequest.js';
import type { ListContainersResponse as _containerd_services_containers_v1_ListContainersResponse, ListContainersResponse__Output as _containerd_services_containers_v1_ListContainersResponse__Output } from '../../../../containerd/services/containers/v1/ListContainersResponse.js';
import type { UpdateContainerRequest as _containerd_services_containers_v1_UpdateContainerRequest, UpdateContainerRequest__Output as _containerd_services_containers_v1_UpdateContainerRequest__Output } from '../../../../containerd/services/containers/v1/UpdateContainerRequest.js';
import type { UpdateContainerResponse as _containerd_services_containers_v1_UpdateContainerResponse, UpdateContainerResponse__Output as _containerd_services_containers_v1_UpdateContainerResponse__Output } from '../../../../containerd/services/containers/v1/UpdateContainerResponse.js';

export interface ContainersClient extends grpc.Client {
  Create(argument: _containerd_services_containers_v1_CreateContainerRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_containers_v1_CreateContainerResponse__Output>): grpc.ClientUnaryCall;
  Create(argument: _containerd_services_containers_v1_CreateContainerRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_containerd_services_containers_v1_CreateContainerResponse__Output>): grpc.ClientUnaryCall;
  Create(argument: _containerd_services_containers_v1_CreateContainerRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_containers_v1_CreateContainerResponse__Output>): grpc.ClientUnaryCall;
  Create(argument: _containerd_services_containers_v1_CreateContainerRequest, callback: grpc.requestCallback<_containerd_services_containers_v1_CreateContainerResponse__Output>): grpc.ClientUnaryCall;
  create(argument: _containerd_services_containers_v1_CreateContainerRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_containers_v1_CreateContainerResponse__Output>): grpc.ClientUnaryCall;
  create(argument: _containerd_services_containers_v1_CreateContainerRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_containerd_services_containers_v1_CreateContainerResponse__Output>): grpc.ClientUnaryCall;
  create(argument: _containerd_services_containers_v1_CreateContainerRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_containers_v1_CreateContainerResponse__Output>): grpc.ClientUnaryCall;
  create(argument: _containerd_services_containers_v1_CreateContainerRequest, callback: grpc.requestCallback<_containerd_services_containers_v1_CreateContainerResponse__Output>): grpc.ClientUnaryCall;
  
  Delete(argument: _containerd_services_containers_v1_DeleteContainerRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_google_protobuf_Empty__Output>): grpc.ClientUnaryCall;
  Delete(argument: _containerd_services_containers_v1_DeleteContainerRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_google_protobuf_Empty__Output>): grpc.ClientUnaryCall;
  Delete(argument: _containerd_services_containers_v1_DeleteContainerRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_google_protobuf_Empty__Output>): grpc.ClientUnaryCall;
  Delete(argument: _containerd_services_containers_v1_DeleteContainerRequest, callback: grpc.requestCallback<_google_protobuf_Empty__Output>): grpc.ClientUnaryCall;
  delete(argument: _containerd_services_containers_v1_DeleteContainerRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_google_protobuf_Empty__Output>): grpc.ClientUnaryCall;
  delete(argument: _containerd_services_containers_v1_DeleteContainerRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_google_protobuf_Empty__Output>): grpc.ClientUnaryCall;
  delete(argument: _containerd_services_containers_v1_DeleteContainerRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_google_protobuf_Empty__Output>): grpc.ClientUnaryCall;
  delete(argument: _containerd_services_containers_v1_DeleteContainerRequest, callback: grpc.requestCallback<_google_protobuf_Empty__Output>): grpc.ClientUnaryCall;
  
  Get(argument: _containerd_services_containers_v1_GetContainerRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_containers_v1_GetContainerResponse__Output>): grpc.ClientUnaryCall;
  Get(argument: _containerd_services_containers_v1_GetContainerRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_containerd_services_containers_v1_GetContainerResponse__Output>): grpc.ClientUnaryCall;
  Get(argument: _containerd_services_containers_v1_GetContainerRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_containers_v1_GetContainerResponse__Output>): grpc.ClientUnaryCall;
  Get(argument: _containerd_services_containers_v1_GetContainerRequest, callback: grpc.requestCallback<_containerd_services_containers_v1_GetContainerResponse__Output>): grpc.ClientUnaryCall;
  get(argument: _containerd_services_containers_v1_GetContainerRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_containers_v1_GetContainerResponse__Output>): grpc.ClientUnaryCall;
  get(argument: _containerd_services_containers_v1_GetContainerRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_containerd_services_containers_v1_GetContainerResponse__Output>): grpc.ClientUnaryCall;
  get(argument: _containerd_services_containers_v1_GetContainerRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_containers_v1_GetContainerResponse__Output>): grpc.ClientUnaryCall;
  get(argument: _containerd_services_containers_v1_GetContainerRequest, callback: grpc.requestCallback<_containerd_services_containers_v1_GetContainerResponse__Output>): grpc.ClientUnaryCall;
  
  List(argument: _containerd_services_containers_v1_ListContainersRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_containers_v1_ListContainersResponse__Output>): grpc.ClientUnaryCall;
  List(argument: _containerd_services_containers_v1_ListContainersRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_containerd_services_containers_v1_ListContainersResponse__Output>): grpc.ClientUnaryCall;
  List(argument: _containerd_services_containers_v1_ListContainersRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_containers_v1_ListContainersResponse__Output>): grpc.ClientUnaryCall;
  List(argument: _containerd_services_containers_v1_ListContainersRequest, callback: grpc.requestCallback<_containerd_services_containers_v1_ListContainersResponse__Output>): grpc.ClientUnaryCall;
  list(argument: _containerd_services_containers_v1_ListContainersRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_containers_v1_ListContainersResponse__Output>): grpc.ClientUnaryCall;
  list(argument: _containerd_services_containers_v1_ListContainersRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_containerd_services_containers_v1_ListContainersResponse__Output>): grpc.ClientUnaryCall;
  list(argument: _containerd_services_containers_v1_ListContainersRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_containers_v1_ListContainersResponse__Output>): grpc.ClientUnaryCall;
  list(argument: _containerd_services_containers_v1_ListContainersRequest, callback: grpc.requestCallback<_containerd_services_containers_v1_ListContainersResponse__Output>): grpc.ClientUnaryCall;
  
  Update(argument: _containerd_services_containers_v1_UpdateContainerRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_containers_v1_UpdateContainerResponse__Output>): grpc.ClientUnaryCall;
  Update(argument: _containerd_services_containers_v1_UpdateContainerRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_containerd_services_containers_v1_UpdateContainerResponse__Output>): grpc.ClientUnaryCall;
  Update(argument: _containerd_services_containers_v1_UpdateContainerRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_containers_v1_UpdateContainerResponse__Output>): grpc.ClientUnaryCall;
  Update(argument: _containerd_services_containers_v1_UpdateContainerRequest, callback: grpc.requestCallback<_containerd_services_containers_v1_UpdateContainerResponse__Output>): grpc.ClientUnaryCall;
  update(argument: _containerd_services_containers_v1_UpdateContainerRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_containers_v1_UpdateContainerResponse__Output>): grpc.ClientUnaryCall;
  update(argument: _containerd_services_containers_v1_UpdateContainerRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_containerd_services_containers_v1_UpdateContainerResponse__Output>): grpc.ClientUnaryCall;
  update(argument: _containerd_services_containers_v1_UpdateContainerRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_containers_v1_UpdateContainerResponse__Output>): grpc.ClientUnaryCall;
  update(argument: _containerd_services_containers_v1_UpdateContainerRequest, callback: grpc.requestCallback<_containerd_services_containers_v1_UpdateContainerResponse__Output>): grpc.ClientUnaryCall;
  
}

export interface ContainersHandlers extends grpc.UntypedServiceImplementation {
  Create: grpc.handleUnaryCall<_containerd_services_containers_v1_CreateContainerRequest__Output, _containerd_services_containers_v1_CreateContainerResponse>;
  
  Delete: grpc.handleUnaryCall<_containerd_services_containers_v1_DeleteContainerRequest__Output, _google_protobuf_Empty>;
  
  Get: grpc.handleUnaryCall<_containerd_services_containers_v1_GetContainerRequest__Output, _containerd_services_containers_v1_GetContainerResponse>;
  
  List: grpc.handleUnaryCall<_containerd_services_containers_v1_ListContainersRequest__Output, _containerd_services_containers_v1_ListContainersResponse>;
  
  Update: grpc.handleUnaryCall<_containerd_services_containers_v1_UpdateContainerRequest__Output, _containerd_services_containers_v1_UpdateContainerResponse>;
  
}

export interface ContainersDefinition extends grpc.ServiceDefinition {
  Create: MethodDefinition<_containerd_services_containers_v1_CreateContainerRequest, _containerd_services_containers_v1_CreateContainerResponse, _containerd_services_containers_v1_CreateContainerRequest__Output, _containerd_services_containers_v1_CreateContainerResponse__Output>
  Delete: MethodDefinition<_containerd_services_containers_v1_DeleteContainerRequest, _google_protobuf_Empty, _containerd_services_containers_v1_DeleteContainerRequest__Output, _google_protobuf_Empty__Output>
  Get: MethodDefinition<_containerd_services_containers_v1_GetContainerRequest, _containerd_services_containers_v1_GetContainerResponse, _containerd_services_containers_v1_GetContainerRequest__Output, _containerd_services_containers_v1_GetContainerResponse__Output>
  List: MethodDefinition<_containerd_services_containers_v1_ListContainersRequest, _containerd_services_containers_v1_ListContainersResponse, _containerd_services_containers_v1_ListContainersRequest__Output, _containerd_services_containers_v1_ListContainersResponse__Output>
  Update: MethodDefinition<_containerd_services_containers_v1_UpdateContainerRequest, _containerd_services_containers_v1_UpdateContainerResponse, _containerd_services_containers_v1_UpdateContainerRequest__Output, _containerd_services_containers_v1_UpdateContainerResponse__Output>
}
