import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { CreateRequest as _fastpath_v1_CreateRequest, CreateRequest__Output as _fastpath_v1_CreateRequest__Output } from './fastpath/v1/CreateRequest.js';
import type { CreateResponse as _fastpath_v1_CreateResponse, CreateResponse__Output as _fastpath_v1_CreateResponse__Output } from './fastpath/v1/CreateResponse.js';
import type { DeleteRequest as _fastpath_v1_DeleteRequest, DeleteRequest__Output as _fastpath_v1_DeleteRequest__Output } from './fastpath/v1/DeleteRequest.js';
import type { DeleteResponse as _fastpath_v1_DeleteResponse, DeleteResponse__Output as _fastpath_v1_DeleteResponse__Output } from './fastpath/v1/DeleteResponse.js';
import type { FastPathServiceClient as _fastpath_v1_FastPathServiceClient, FastPathServiceDefinition as _fastpath_v1_FastPathServiceDefinition } from './fastpath/v1/FastPathService.js';
import type { GetRequest as _fastpath_v1_GetRequest, GetRequest__Output as _fastpath_v1_GetRequest__Output } from './fastpath/v1/GetRequest.js';
import type { ListRequest as _fastpath_v1_ListRequest, ListRequest__Output as _fastpath_v1_ListRequest__Output } from './fastpath/v1/ListRequest.js';
import type { ListResponse as _fastpath_v1_ListResponse, ListResponse__Output as _fastpath_v1_ListResponse__Output } from './fastpath/v1/ListResponse.js';
import type { SandboxInfo as _fastpath_v1_SandboxInfo, SandboxInfo__Output as _fastpath_v1_SandboxInfo__Output } from './fastpath/v1/SandboxInfo.js';
import type { UpdateRequest as _fastpath_v1_UpdateRequest, UpdateRequest__Output as _fastpath_v1_UpdateRequest__Output } from './fastpath/v1/UpdateRequest.js';
import type { UpdateResponse as _fastpath_v1_UpdateResponse, UpdateResponse__Output as _fastpath_v1_UpdateResponse__Output } from './fastpath/v1/UpdateResponse.js';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  fastpath: {
    v1: {
      ConsistencyMode: EnumTypeDefinition
      CreateRequest: MessageTypeDefinition<_fastpath_v1_CreateRequest, _fastpath_v1_CreateRequest__Output>
      CreateResponse: MessageTypeDefinition<_fastpath_v1_CreateResponse, _fastpath_v1_CreateResponse__Output>
      DeleteRequest: MessageTypeDefinition<_fastpath_v1_DeleteRequest, _fastpath_v1_DeleteRequest__Output>
      DeleteResponse: MessageTypeDefinition<_fastpath_v1_DeleteResponse, _fastpath_v1_DeleteResponse__Output>
      FailurePolicy: EnumTypeDefinition
      FastPathService: SubtypeConstructor<typeof grpc.Client, _fastpath_v1_FastPathServiceClient> & { service: _fastpath_v1_FastPathServiceDefinition }
      GetRequest: MessageTypeDefinition<_fastpath_v1_GetRequest, _fastpath_v1_GetRequest__Output>
      ListRequest: MessageTypeDefinition<_fastpath_v1_ListRequest, _fastpath_v1_ListRequest__Output>
      ListResponse: MessageTypeDefinition<_fastpath_v1_ListResponse, _fastpath_v1_ListResponse__Output>
      SandboxInfo: MessageTypeDefinition<_fastpath_v1_SandboxInfo, _fastpath_v1_SandboxInfo__Output>
      UpdateRequest: MessageTypeDefinition<_fastpath_v1_UpdateRequest, _fastpath_v1_UpdateRequest__Output>
      UpdateResponse: MessageTypeDefinition<_fastpath_v1_UpdateResponse, _fastpath_v1_UpdateResponse__Output>
    }
  }
}

