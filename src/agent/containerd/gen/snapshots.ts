import type * as grpc from '@grpc/grpc-js';
import type { MessageTypeDefinition } from '@grpc/proto-loader';

import type { MountsRequest as _containerd_services_snapshots_v1_MountsRequest, MountsRequest__Output as _containerd_services_snapshots_v1_MountsRequest__Output } from './containerd/services/snapshots/v1/MountsRequest.js';
import type { MountsResponse as _containerd_services_snapshots_v1_MountsResponse, MountsResponse__Output as _containerd_services_snapshots_v1_MountsResponse__Output } from './containerd/services/snapshots/v1/MountsResponse.js';
import type { PrepareSnapshotRequest as _containerd_services_snapshots_v1_PrepareSnapshotRequest, PrepareSnapshotRequest__Output as _containerd_services_snapshots_v1_PrepareSnapshotRequest__Output } from './containerd/services/snapshots/v1/PrepareSnapshotRequest.js';
import type { PrepareSnapshotResponse as _containerd_services_snapshots_v1_PrepareSnapshotResponse, PrepareSnapshotResponse__Output as _containerd_services_snapshots_v1_PrepareSnapshotResponse__Output } from './containerd/services/snapshots/v1/PrepareSnapshotResponse.js';
import type { RemoveSnapshotRequest as _containerd_services_snapshots_v1_RemoveSnapshotRequest, RemoveSnapshotRequest__Output as _containerd_services_snapshots_v1_RemoveSnapshotRequest__Output } from './containerd/services/snapshots/v1/RemoveSnapshotRequest.js';
import type { SnapshotsClient as _containerd_services_snapshots_v1_SnapshotsClient, SnapshotsDefinition as _containerd_services_snapshots_v1_SnapshotsDefinition } from './containerd/services/snapshots/v1/Snapshots.js';
import type { UsageRequest as _containerd_services_snapshots_v1_UsageRequest, UsageRequest__Output as _containerd_services_snapshots_v1_UsageRequest__Output } from './containerd/services/snapshots/v1/UsageRequest.js';
import type { UsageResponse as _containerd_services_snapshots_v1_UsageResponse, UsageResponse__Output as _containerd_services_snapshots_v1_UsageResponse__Output } from './containerd/services/snapshots/v1/UsageResponse.js';
import type { Mount as _containerd_types_Mount, Mount__Output as _containerd_types_Mount__Output } from './containerd/types/Mount.js';
import type { Empty as _google_protobuf_Empty, Empty__Output as _google_protobuf_Empty__Output } from './google/protobuf/Empty.js';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  containerd: {
    services: {
      snapshots: {
        v1: {
          MountsRequest: MessageTypeDefinition<_containerd_services_snapshots_v1_MountsRequest, _containerd_services_snapshots_v1_MountsRequest__Output>
          MountsResponse: MessageTypeDefinition<_containerd_services_snapshots_v1_MountsResponse, _containerd_services_snapshots_v1_MountsResponse__Output>
          PrepareSnapshotRequest: MessageTypeDefinition<_containerd_services_snapshots_v1_PrepareSnapshotRequest, _containerd_services_snapshots_v1_PrepareSnapshotRequest__Output>
          PrepareSnapshotResponse: MessageTypeDefinition<_containerd_services_snapshots_v1_PrepareSnapshotResponse, _containerd_services_snapshots_v1_PrepareSnapshotResponse__Output>
          RemoveSnapshotRequest: MessageTypeDefinition<_containerd_services_snapshots_v1_RemoveSnapshotRequest, _containerd_services_snapshots_v1_RemoveSnapshotRequest__Output>
          Snapshots: SubtypeConstructor<typeof grpc.Client, _containerd_services_snapshots_v1_SnapshotsClient> & { service: _containerd_services_snapshots_v1_SnapshotsDefinition }
          UsageRequest: MessageTypeDefinition<_containerd_services_snapshots_v1_UsageRequest, _containerd_services_snapshots_v1_UsageRequest__Output>
          UsageResponse: MessageTypeDefinition<_containerd_services_snapshots_v1_UsageResponse, _containerd_services_snapshots_v1_UsageResponse__Output>
        }
      }
    }
    types: {
      Mount: MessageTypeDefinition<_containerd_types_Mount, _containerd_types_Mount__Output>
    }
  }
  google: {
    protobuf: {
      Empty: MessageTypeDefinition<_google_protobuf_Empty, _google_protobuf_Empty__Output>
    }
  }
}

