import type * as grpc from '@grpc/grpc-js';
import type { MessageTypeDefinition } from '@grpc/proto-loader';

import type { Container as _containerd_services_containers_v1_Container, Container__Output as _containerd_services_containers_v1_Container__Output } from './containerd/services/containers/v1/Container.js';
import type { ContainersClient as _containerd_services_containers_v1_ContainersClient, ContainersDefinition as _containerd_services_containers_v1_ContainersDefinition } from './containerd/services/containers/v1/Containers.js';
import type { CreateContainerRequest as _containerd_services_containers_v1_CreateContainerRequest, CreateContainerRequest__Output as _containerd_services_containers_v1_CreateContainerRequest__Output } from './containerd/services/containers/v1/CreateContainerRequest.js';
import type { CreateContainerResponse as _containerd_services_containers_v1_CreateContainerResponse, CreateContainerResponse__Output as _containerd_services_containers_v1_CreateContainerResponse__Output } from './containerd/services/containers/v1/CreateContainerResponse.js';
import type { DeleteContainerRequest as _containerd_services_containers_v1_DeleteContainerRequest, DeleteContainerRequest__Output as _containerd_services_containers_v1_DeleteContainerRequest__Output } from './containerd/services/containers/v1/DeleteContainerRequest.js';
import type { GetContainerRequest as _containerd_services_containers_v1_GetContainerRequest, GetContainerRequest__Output as _containerd_services_containers_v1_GetContainerRequest__Output } from './containerd/services/containers/v1/GetContainerRequest.js';
import type { GetContainerResponse as _containerd_services_containers_v1_GetContainerResponse, GetContainerResponse__Output as _containerd_services_containers_v1_GetContainerResponse__Output } from './containerd/services/containers/v1/GetContainerResponse.js';
import type { ListContainersRequest as _containerd_services_containers_v1_ListContainersRequest, ListContainersRequest__Output as _containerd_services_containers_v1_ListContainersRequest__Output } from './containerd/services/containers/v1/ListContainersRequest.js';
import type { ListContainersResponse as _containerd_services_containers_v1_ListContainersResponse, ListContainersResponse__Output as _containerd_services_containers_v1_ListContainersResponse__Output } from './containerd/services/containers/v1/ListContainersResponse.js';
import type { UpdateContainerRequest as _containerd_services_containers_v1_UpdateContainerRequest, UpdateContainerRequest__Output as _containerd_services_containers_v1_UpdateContainerRequest__Output } from './containerd/services/containers/v1/UpdateContainerRequest.js';
import type { UpdateContainerResponse as _containerd_services_containers_v1_UpdateContainerResponse, UpdateContainerResponse__Output as _containerd_services_containers_v1_UpdateContainerResponse__Output } from './containerd/services/containers/v1/UpdateContainerResponse.js';
import type { Any as _google_protobuf_Any, Any__Output as _google_protobuf_Any__Output } from './google/protobuf/Any.js';
import type { Empty as _google_protobuf_Empty, Empty__Output as _google_protobuf_Empty__Output } from './google/protobuf/Empty.js';
import type { FieldMask as _google_protobuf_FieldMask, FieldMask__Output as _google_protobuf_FieldMask__Output } from './google/protobuf/FieldMask.js';
import type { Timestamp as _google_protobuf_Timestamp, Timestamp__Output as _google_protobuf_Timestamp__Output } from './google/protobuf/Timestamp.js';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  containerd: {
    services: {
      containers: {
        v1: {
          Container: MessageTypeDefinition<_containerd_services_containers_v1_Container, _containerd_services_containers_v1_Container__Output>
          Containers: SubtypeConstructor<typeof grpc.Client, _containerd_services_containers_v1_ContainersClient> & { service: _containerd_services_containers_v1_ContainersDefinition }
          CreateContainerRequest: MessageTypeDefinition<_containerd_services_containers_v1_CreateContainerRequest, _containerd_services_containers_v1_CreateContainerRequest__Output>
          CreateContainerResponse: MessageTypeDefinition<_containerd_services_containers_v1_CreateContainerResponse, _containerd_services_containers_v1_CreateContainerResponse__Output>
          DeleteContainerRequest: MessageTypeDefinition<_containerd_services_containers_v1_DeleteContainerRequest, _containerd_services_containers_v1_DeleteContainerRequest__Output>
          GetContainerRequest: MessageTypeDefinition<_containerd_services_containers_v1_GetContainerRequest, _containerd_services_containers_v1_GetContainerRequest__Output>
          GetContainerResponse: MessageTypeDefinition<_containerd_services_containers_v1_GetContainerResponse, _containerd_services_containers_v1_GetContainerResponse__Output>
          ListContainersRequest: MessageTypeDefinition<_containerd_services_containers_v1_ListContainersRequest, _containerd_services_containers_v1_ListContainersRequest__Output>
          ListContainersResponse: MessageTypeDefinition<_containerd_services_containers_v1_ListContainersResponse, _containerd_services_containers_v1_ListContainersResponse__Output>
          UpdateContainerRequest: MessageTypeDefinition<_containerd_services_containers_v1_UpdateContainerRequest, _containerd_services_containers_v1_UpdateContainerRequest__Output>
          UpdateContainerResponse: MessageTypeDefinition<_containerd_services_containers_v1_UpdateContainerResponse, _containerd_services_containers_v1_UpdateContainerResponse__Output>
        }
      }
    }
  }
  google: {
    protobuf: {
      Any: MessageTypeDefinition<_google_protobuf_Any, _google_protobuf_Any__Output>
      Empty: MessageTypeDefinition<_google_protobuf_Empty, _google_protobuf_Empty__Output>
      FieldMask: MessageTypeDefinition<_google_protobuf_FieldMask, _google_protobuf_FieldMask__Output>
      Timestamp: MessageTypeDefinition<_google_protobuf_Timestamp, _google_protobuf_Timestamp__Output>
    }
  }
}

