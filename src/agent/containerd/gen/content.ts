import type * as grpc from '@grpc/grpc-js';
import type { MessageTypeDefinition } from '@grpc/proto-loader';

import type { ContentClient as _containerd_services_content_v1_ContentClient, ContentDefinition as _containerd_services_content_v1_ContentDefinition } from './containerd/services/content/v1/Content.js';
import type { ReadContentRequest as _containerd_services_content_v1_ReadContentRequest, ReadContentRequest__Output as _containerd_services_content_v1_ReadContentRequest__Output } from './containerd/services/content/v1/ReadContentRequest.js';
import type { ReadContentResponse as _containerd_services_content_v1_ReadContentResponse, ReadContentResponse__Output as _containerd_services_content_v1_ReadContentResponse__Output } from './containerd/services/content/v1/ReadContentResponse.js';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  containerd: {
    services: {
      content: {
        v1: {
          Content: SubtypeConstructor<typeof grpc.Client, _containerd_services_content_v1_ContentClient> & { service: _containerd_services_content_v1_ContentDefinition }
          ReadContentRequest: MessageTypeDefinition<_containerd_services_content_v1_ReadContentRequest, _containerd_services_content_v1_ReadContentRequest__Output>
          ReadContentResponse: MessageTypeDefinition<_containerd_services_content_v1_ReadContentResponse, _containerd_services_content_v1_ReadContentResponse__Output>
        }
      }
    }
  }
}

