// Original file: fastpath/v1/fastpath.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { CreateRequest as _fastpath_v1_CreateRequest, CreateRequest__Output as _fastpath_v1_CreateRequest__Output } from '../../fastpath/v1/CreateRequest.js';
import type { CreateResponse as _fastpath_v1_CreateResponse, CreateResponse__Output as _fastpath_v1_CreateResponse__Output } from '../../fastpath/v1/CreateResponse.js';
import type { DeleteRequest as _fastpath_v1_DeleteRequest, DeleteRequest__Output as _fastpath_v1_DeleteRequest__Output } from '../../fastpath/v1/DeleteRequest.js';
import type { DeleteResponse as _fastpath_v1_DeleteResponse, DeleteResponse__Output as _fastpath_v1_DeleteResponse__Output } from '../../fastpath/v1/DeleteResponse.js';
import type { GetRequest as _fastpath_v1_GetRequest, GetRequest__Output as _fastpath_v1_GetRequest__Output } from '../../fastpath/v1/GetRequest.js';
import type { ListRequest as _fastpath_v1_ListRequest, ListRequest__Output as _fastpath_v1_ListRequest__Output } from '../../fastpath/v1/ListRequest.js';
import type { ListResponse as _fastpath_v1_ListResponse, ListResponse__Output as _fastpath_v1_ListResponse__Output } from '../../fastpath/v1/ListResponse.js';
import type { SandboxInfo as _fastpath_v1_SandboxInfo, SandboxInfo__Output as _fastpath_v1_SandboxInfo__Output } from '../../fastpath/v1/SandboxInfo.js';
import type { UpdateRequest as _fastpath_v1_UpdateRequest, UpdateRequest__Output as _fastpath_v1_UpdateRequest__Output } from '../../fastpath/v1/UpdateRequest.js';
import type { UpdateResponse as _fastpath_v1_UpdateResponse, UpdateResponse__Output as _fastpath_v1_UpdateResponse__Output } from '../../fastpath/v1/UpdateResponse.js';

export interface FastPathServiceClient extends grpc.Client {
  /**
   * Creates a sandbox on a warm agent (Fast: agent first, record after; Strong: record first).
   */
  CreateSandbox(argument: _fastpath_v1_CreateRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fastpath_v1_CreateResponse__Output>): grpc.ClientUnaryCall;
  CreateSandbox(argument: _fastpath_v1_CreateRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fastpath_v1_CreateResponse__Output>): grpc.ClientUnaryCall;
  CreateSandbox(argument: _fastpath_v1_CreateRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fastpath_v1_CreateResponse__Output>): grpc.ClientUnaryCall;
  CreateSandbox(argument: _fastpath_v1_CreateRequest, callback: grpc.requestCallback<_fastpath_v1_CreateResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Creates a sandbox on a warm agent (Fast: agent first, record after; Strong: record first).
   */
  createSandbox(argument: _fastpath_v1_CreateRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fastpath_v1_CreateResponse__Output>): grpc.ClientUnaryCall;
  createSandbox(argument: _fastpath_v1_CreateRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fastpath_v1_CreateResponse__Output>): grpc.ClientUnaryCall;
  createSandbox(argument: _fastpath_v1_CreateRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fastpath_v1_CreateResponse__Output>): grpc.ClientUnaryCall;
  createSandbox(argument: _fastpath_v1_CreateRequest, callback: grpc.requestCallback<_fastpath_v1_CreateResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Deletes the Sandbox object; the agent side is cleaned up through its finalizer.
   */
  DeleteSandbox(argument: _fastpath_v1_DeleteRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fastpath_v1_DeleteResponse__Output>): grpc.ClientUnaryCall;
  DeleteSandbox(argument: _fastpath_v1_DeleteRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fastpath_v1_DeleteResponse__Output>): grpc.ClientUnaryCall;
  DeleteSandbox(argument: _fastpath_v1_DeleteRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fastpath_v1_DeleteResponse__Output>): grpc.ClientUnaryCall;
  DeleteSandbox(argument: _fastpath_v1_DeleteRequest, callback: grpc.requestCallback<_fastpath_v1_DeleteResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Deletes the Sandbox object; the agent side is cleaned up through its finalizer.
   */
  deleteSandbox(argument: _fastpath_v1_DeleteRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fastpath_v1_DeleteResponse__Output>): grpc.ClientUnaryCall;
  deleteSandbox(argument: _fastpath_v1_DeleteRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fastpath_v1_DeleteResponse__Output>): grpc.ClientUnaryCall;
  deleteSandbox(argument: _fastpath_v1_DeleteRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fastpath_v1_DeleteResponse__Output>): grpc.ClientUnaryCall;
  deleteSandbox(argument: _fastpath_v1_DeleteRequest, callback: grpc.requestCallback<_fastpath_v1_DeleteResponse__Output>): grpc.ClientUnaryCall;
  
  GetSandbox(argument: _fastpath_v1_GetRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fastpath_v1_SandboxInfo__Output>): grpc.ClientUnaryCall;
  GetSandbox(argument: _fastpath_v1_GetRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fastpath_v1_SandboxInfo__Output>): grpc.ClientUnaryCall;
  GetSandbox(argument: _fastpath_v1_GetRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fastpath_v1_SandboxInfo__Output>): grpc.ClientUnaryCall;
  GetSandbox(argument: _fastpath_v1_GetRequest, callback: grpc.requestCallback<_fastpath_v1_SandboxInfo__Output>): grpc.ClientUnaryCall;
  getSandbox(argument: _fastpath_v1_GetRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fastpath_v1_SandboxInfo__Output>): grpc.ClientUnaryCall;
  getSandbox(argument: _fastpath_v1_GetRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fastpath_v1_SandboxInfo__Output>): grpc.ClientUnaryCall;
  getSandbox(argument: _fastpath_v1_GetRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fastpath_v1_SandboxInfo__Output>): grpc.ClientUnaryCall;
  getSandbox(argument: _fastpath_v1_GetRequest, callback: grpc.requestCallback<_fastpath_v1_SandboxInfo__Output>): grpc.ClientUnaryCall;
  
  ListSandboxes(argument: _fastpath_v1_ListRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fastpath_v1_ListResponse__Output>): grpc.ClientUnaryCall;
  ListSandboxes(argument: _fastpath_v1_ListRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fastpath_v1_ListResponse__Output>): grpc.ClientUnaryCall;
  ListSandboxes(argument: _fastpath_v1_ListRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fastpath_v1_ListResponse__Output>): grpc.ClientUnaryCall;
  ListSandboxes(argument: _fastpath_v1_ListRequest, callback: grpc.requestCallback<_fastpath_v1_ListResponse__Output>): grpc.ClientUnaryCall;
  listSandboxes(argument: _fastpath_v1_ListRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fastpath_v1_ListResponse__Output>): grpc.ClientUnaryCall;
  listSandboxes(argument: _fastpath_v1_ListRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fastpath_v1_ListResponse__Output>): grpc.ClientUnaryCall;
  listSandboxes(argument: _fastpath_v1_ListRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fastpath_v1_ListResponse__Output>): grpc.ClientUnaryCall;
  listSandboxes(argument: _fastpath_v1_ListRequest, callback: grpc.requestCallback<_fastpath_v1_ListResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Changes expiry, reset revision, failure policy or recovery timeout (one at a time), and labels.
   */
  UpdateSandbox(argument: _fastpath_v1_UpdateRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fastpath_v1_UpdateResponse__Output>): grpc.ClientUnaryCall;
  UpdateSandbox(argument: _fastpath_v1_UpdateRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fastpath_v1_UpdateResponse__Output>): grpc.ClientUnaryCall;
  UpdateSandbox(argument: _fastpath_v1_UpdateRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fastpath_v1_UpdateResponse__Output>): grpc.ClientUnaryCall;
  UpdateSandbox(argument: _fastpath_v1_UpdateRequest, callback: grpc.requestCallback<_fastpath_v1_UpdateResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Changes expiry, reset revision, failure policy or recovery timeout (one at a time), and labels.
   */
  updateSandbox(argument: _fastpath_v1_UpdateRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fastpath_v1_UpdateResponse__Output>): grpc.ClientUnaryCall;
  updateSandbox(argument: _fastpath_v1_UpdateRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fastpath_v1_UpdateResponse__Output>): grpc.ClientUnaryCall;
  updateSandbox(argument: _fastpath_v1_UpdateRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fastpath_v1_UpdateResponse__Output>): grpc.ClientUnaryCall;
  updateSandbox(argument: _fastpath_v1_UpdateRequest, callback: grpc.requestCallback<_fastpath_v1_UpdateResponse__Output>): grpc.ClientUnaryCall;
  
}

export interface FastPathServiceHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Creates a sandbox on a warm agent (Fast: agent first, record after; Strong: record first).
   */
  CreateSandbox: grpc.handleUnaryCall<_fastpath_v1_CreateRequest__Output, _fastpath_v1_CreateResponse>;
  
  /**
   * Deletes the Sandbox object; the agent side is cleaned up through its finalizer.
   */
  DeleteSandbox: grpc.handleUnaryCall<_fastpath_v1_DeleteRequest__Output, _fastpath_v1_DeleteResponse>;
  
  GetSandbox: grpc.handleUnaryCall<_fastpath_v1_GetRequest__Output, _fastpath_v1_SandboxInfo>;
  
  ListSandboxes: grpc.handleUnaryCall<_fastpath_v1_ListRequest__Output, _fastpath_v1_ListResponse>;
  
  /**
   * Changes expiry, reset revision, failure policy or recovery timeout (one at a time), and labels.
   */
  UpdateSandbox: grpc.handleUnaryCall<_fastpath_v1_UpdateRequest__Output, _fastpath_v1_UpdateResponse>;
  
}

export interface FastPathServiceDefinition extends grpc.ServiceDefinition {
  CreateSandbox: MethodDefinition<_fastpath_v1_CreateRequest, _fastpath_v1_CreateResponse, _fastpath_v1_CreateRequest__Output, _fastpath_v1_CreateResponse__Output>
  DeleteSandbox: MethodDefinition<_fastpath_v1_DeleteRequest, _fastpath_v1_DeleteResponse, _fastpath_v1_DeleteRequest__Output, _fastpath_v1_DeleteResponse__Output>
  GetSandbox: MethodDefinition<_fastpath_v1_GetRequest, _fastpath_v1_SandboxInfo, _fastpath_v1_GetRequest__Output, _fastpath_v1_SandboxInfo__Output>
  ListSandboxes: MethodDefinition<_fastpath_v1_ListRequest, _fastpath_v1_ListResponse, _fastpath_v1_ListRequest__Output, _fastpath_v1_ListResponse__Output>
  UpdateSandbox: MethodDefinition<_fastpath_v1_UpdateRequest, _fastpath_v1_UpdateResponse, _fastpath_v1_UpdateRequest__Output, _fastpath_v1_UpdateResponse__Output>
}
