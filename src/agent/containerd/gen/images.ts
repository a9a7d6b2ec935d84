import type * as grpc from '@grpc/grpc-js';
import type { MessageTypeDefinition } from '@grpc/proto-loader';

import type { GetImageRequest as _containerd_services_images_v1_GetImageRequest, GetImageRequest__Output as _containerd_services_images_v1_GetImageRequest__Output } from './containerd/services/images/v1/GetImageRequest.js';
import type { GetImageResponse as _containerd_services_images_v1_GetImageResponse, GetImageResponse__Output as _containerd_services_images_v1_GetImageResponse__Output } from './containerd/services/images/v1/GetImageResponse.js';
import type { Image as _containerd_services_images_v1_Image, Image__Output as _containerd_services_images_v1_Image__Output } from './containerd/services/images/v1/Image.js';
import type { ImagesClient as _containerd_services_images_v1_ImagesClient, ImagesDefinition as _containerd_services_images_v1_ImagesDefinition } from './containerd/services/images/v1/Images.js';
import type { ListImagesRequest as _containerd_services_images_v1_ListImagesRequest, ListImagesRequest__Output as _containerd_services_images_v1_ListImagesRequest__Output } from './containerd/services/images/v1/ListImagesRequest.js';
import type { ListImagesResponse as _containerd_services_images_v1_ListImagesResponse, ListImagesResponse__Output as _containerd_services_images_v1_ListImagesResponse__Output } from './containerd/services/images/v1/ListImagesResponse.js';
import type { Descriptor as _containerd_types_Descriptor, Descriptor__Output as _containerd_types_Descriptor__Output } from './containerd/types/Descriptor.js';
import type { Timestamp as _google_protobuf_Timestamp, Timestamp__Output as _google_protobuf_Timestamp__Output } from './google/protobuf/Timestamp.js';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  containerd: {
    services: {
      images: {
        v1: {
          GetImageRequest: MessageTypeDefinition<_containerd_services_images_v1_GetImageRequest, _containerd_services_images_v1_GetImageRequest__Output>
          GetImageResponse: MessageTypeDefinition<_containerd_services_images_v1_GetImageResponse, _containerd_services_images_v1_GetImageResponse__Output>
          Image: MessageTypeDefinition<_containerd_services_images_v1_Image, _containerd_services_images_v1_Image__Output>
          Images: SubtypeConstructor<typeof grpc.Client, _containerd_services_images_v1_ImagesClient> & { service: _containerd_services_images_v1_ImagesDefinition }
          ListImagesRequest: MessageTypeDefinition<_containerd_services_images_v1_ListImagesRequest, _containerd_services_images_v1_ListImagesRequest__Output>
          ListImagesResponse: MessageTypeDefinition<_containerd_services_images_v1_ListImagesResponse, _containerd_services_images_v1_ListImagesResponse__Output>
        }
      }
    }
    types: {
      Descriptor: MessageTypeDefinition<_containerd_types_Descriptor, _containerd_types_Descriptor__Output>
    }
  }
  google: {
    protobuf: {
      Timestamp: MessageTypeDefinition<_google_protobuf_Timestamp, _google_protobuf_Timestamp__Output>
    }
  }
}

