// Original file: containerd/services/snapshots/v1/snapshots.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { Empty as _google_protobuf_Empty, Empty__Output as _google_protobuf_Empty__Output } from '../../../../google/protobuf/Empty.js';
import type { MountsRequest as _containerd_services_snapshots_v1_MountsRequest, MountsRequest__Output as _containerd_services_snapshots_v1_MountsRequest__Output } from '../../../../containerd/services/snapshots/v1/MountsRequest.js';
import type { MountsResponse as _containerd_services_snapshots_v1_MountsResponse, MountsResponse__Output as _containerd_services_snapshots_v1_MountsResponse__Output } from '../../../../containerd/services/snapshots/v1/MountsResponse.js';
import type { PrepareSnapshotRequest as _containerd_services_snapshots_v1_PrepareSnapshotRequest, PrepareSnapshotRequest__Output as _containerd_services_snapshots_v1_PrepareSnapshotRequest__Output } from '../../../../containerd/services/snapshots/v1/PrepareSnapshotRequest.js';
import type { PrepareSnapshotResponse as _containerd_services_snapshots_v1_PrepareSnapshotResponse, PrepareSnapshotResponse__Output as _containerd_services_snapshots_v1_PrepareSnapshotResponse__Output } from '../../../../containerd/services/snapshots/v1/PrepareSnapshotResponse.js';
import type { RemoveSnapshotRequest as _containerd_services_snapshots_v1_RemoveSnapshotRequest, RemoveSnapshotRequest__Output as _containerd_services_snapshots_v1_RemoveSnapshotRequest__Output } from '../../../../containerd/services/snapshots/v1/RemoveSnapshotRequest.js';
import type { UsageRequest as _containerd_services_snapshots_v1_UsageRequest, UsageRequest__Output as _containerd_services_snapshots_v1_UsageRequest__Output } from '../../../../containerd/services/snapshots/v1/UsageRequest.js';
import type { UsageResponse as _containerd_services_snapshots_v1_UsageResponse, UsageResponse__Output as _containerd_services_snapshots_v1_UsageResponse__Output } from '../../../../containerd/services/snapshots/v1/UsageResponse.js';

export interface SnapshotsClient extends grpc.Client {
  Mounts(argument: _containerd_services_snapshots_v1_MountsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_snapshots_v1_MountsResponse__Output>): grpc.ClientUnaryCall;
  Mounts(argument: _containerd_services_snapshots_v1_MountsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_containerd_services_snapshots_v1_MountsResponse__Output>): grpc.ClientUnaryCall;
  Mounts(argument: _containerd_services_snapshots_v1_MountsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_snapshots_v1_MountsResponse__Output>): grpc.ClientUnaryCall;
  Mounts(argument: _containerd_services_snapshots_v1_MountsRequest, callback: grpc.requestCallback<_containerd_services_snapshots_v1_MountsResponse__Output>): grpc.ClientUnaryCall;
  mounts(argument: _containerd_services_snapshots_v1_MountsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_snapshots_v1_MountsResponse__Output>): grpc.ClientUnaryCall;
  mounts(argument: _containerd_services_snapshots_v1_MountsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_containerd_services_snapshots_v1_MountsResponse__Output>): grpc.ClientUnaryCall;
  mounts(argument: _containerd_services_snapshots_v1_MountsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_snapshots_v1_MountsResponse__Output>): grpc.ClientUnaryCall;
  mounts(argument: _containerd_services_snapshots_v1_MountsRequest, callback: grpc.requestCallback<_containerd_services_snapshots_v1_MountsResponse__Output>): grpc.ClientUnaryCall;
  
  Prepare(argument: _containerd_services_snapshots_v1_PrepareSnapshotRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_snapshots_v1_PrepareSnapshotResponse__Output>): grpc.ClientUnaryCall;
  Prepare(argument: _containerd_services_snapshots_v1_PrepareSnapshotRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_containerd_services_snapshots_v1_PrepareSnapshotResponse__Output>): grpc.ClientUnaryCall;
  Prepare(argument: _containerd_services_snapshots_v1_PrepareSnapshotRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_snapshots_v1_PrepareSnapshotResponse__Output>): grpc.ClientUnaryCall;
  Prepare(argument: _containerd_services_snapshots_v1_PrepareSnapshotRequest, callback: grpc.requestCallback<_containerd_services_snapshots_v1_PrepareSnapshotResponse__Output>): grpc.ClientUnaryCall;
  prepare(argument: _containerd_services_snapshots_v1_PrepareSnapshotRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_snapshots_v1_PrepareSnapshotResponse__Output>): grpc.ClientUnaryCall;
  prepare(argument: _containerd_services_snapshots_v1_PrepareSnapshotRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_containerd_services_snapshots_v1_PrepareSnapshotResponse__Output>): grpc.ClientUnaryCall;
  prepare(argument: _containerd_services_snapshots_v1_PrepareSnapshotRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_snapshots_v1_PrepareSnapshotResponse__Output>): grpc.ClientUnaryCall;
  prepare(argument: _containerd_services_snapshots_v1_PrepareSnapshotRequest, callback: grpc.requestCallback<_containerd_services_snapshots_v1_PrepareSnapshotResponse__Output>): grpc.ClientUnaryCall;
  
  Remove(argument: _containerd_services_snapshots_v1_RemoveSnapshotRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_google_protobuf_Empty__Output>): grpc.ClientUnaryCall;
  Remove(argument: _containerd_services_snapshots_v1_RemoveSnapshotRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_google_protobuf_Empty__Output>): grpc.ClientUnaryCall;
  Remove(argument: _containerd_services_snapshots_v1_RemoveSnapshotRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_google_protobuf_Empty__Output>): grpc.ClientUnaryCall;
  Remove(argument: _containerd_services_snapshots_v1_RemoveSnapshotRequest, callback: grpc.requestCallback<_google_protobuf_Empty__Output>): grpc.ClientUnaryCall;
  remove(argument: _containerd_services_snapshots_v1_RemoveSnapshotRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_google_protobuf_Empty__Output>): grpc.ClientUnaryCall;
  remove(argument: _containerd_services_snapshots_v1_RemoveSnapshotRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_google_protobuf_Empty__Output>): grpc.ClientUnaryCall;
  remove(argument: _containerd_services_snapshots_v1_RemoveSnapshotRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_google_protobuf_Empty__Output>): grpc.ClientUnaryCall;
  remove(argument: _containerd_services_snapshots_v1_RemoveSnapshotRequest, callback: grpc.requestCallback<_google_protobuf_Empty__Output>): grpc.ClientUnaryCall;
  
  Usage(argument: _containerd_services_snapshots_v1_UsageRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_snapshots_v1_UsageResponse__Output>): grpc.ClientUnaryCall;
  Usage(argument: _containerd_services_snapshots_v1_UsageRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_containerd_services_snapshots_v1_UsageResponse__Output>): grpc.ClientUnaryCall;
  Usage(argument: _containerd_services_snapshots_v1_UsageRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_snapshots_v1_UsageResponse__Output>): grpc.ClientUnaryCall;
  Usage(argument: _containerd_services_snapshots_v1_UsageRequest, callback: grpc.requestCallback<_containerd_services_snapshots_v1_UsageResponse__Output>): grpc.ClientUnaryCall;
  usage(argument: _containerd_services_snapshots_v1_UsageRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_snapshots_v1_UsageResponse__Output>): grpc.ClientUnaryCall;
  usage(argument: _containerd_services_snapshots_v1_UsageRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_containerd_services_snapshots_v1_UsageResponse__Output>): grpc.ClientUnaryCall;
  usage(argument: _containerd_services_snapshots_v1_UsageRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_snapshots_v1_UsageResponse__Output>): grpc.ClientUnaryCall;
  usage(argument: _containerd_services_snapshots_v1_UsageRequest, callback: grpc.requestCallback<_containerd_services_snapshots_v1_UsageResponse__Output>): grpc.ClientUnaryCall;
  
}

export interface SnapshotsHandlers extends grpc.UntypedServiceImplementation {
  Mounts: grpc.handleUnaryCall<_containerd_services_snapshots_v1_MountsRequest__Output, _containerd_services_snapshots_v1_MountsResponse>;
  
  Prepare: grpc.handleUnaryCall<_containerd_services_snapshots_v1_PrepareSnapshotRequest__Output, _containerd_services_snapshots_v1_PrepareSnapshotResponse>;
  
  Remove: grpc.handleUnaryCall<_containerd_services_snapshots_v1_RemoveSnapshotRequest__Output, _google_protobuf_Empty>;
  
  Usage: grpc.handleUnaryCall<_containerd_services_snapshots_v1_UsageRequest__Output, _containerd_services_snapshots_v1_UsageResponse>;
  
}

export interface SnapshotsDefinition extends grpc.ServiceDefinition {
  Mounts: MethodDefinition<_containerd_services_snapshots_v1_MountsRequest, _containerd_services_snapshots_v1_MountsResponse, _containerd_services_snapshots_v1_MountsRequest__Output, _containerd_services_snapshots_v1_MountsResponse__Output>
  Prepare: MethodDefinition<_containerd_services_snapshots_v1_PrepareSnapshotRequest, _containerd_services_snapshots_v1_PrepareSnapshotResponse, _containerd_services_snapshots_v1_PrepareSnapshotRequest__Output, _containerd_services_snapshots_v1_PrepareSnapshotResponse__Output>
  Remove: MethodDefinition<_containerd_services_snapshots_v1_RemoveSnapshotRequest, _google_protobuf_Empty, _containerd_services_snapshots_v1_RemoveSnapshotRequest__Output, _google_protobuf_Empty__Output>
  Usage: MethodDefinition<_containerd_services_snapshots_v1_UsageRequest, _containerd_services_snapshots_v1_UsageResponse, _containerd_services_snapshots_v1_UsageRequest__Output, _containerd_services_snapshots_v1_UsageResponse__Output>
}
