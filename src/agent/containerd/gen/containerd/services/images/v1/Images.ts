// Original file: containerd/services/images/v1/images.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { GetImageRequest as _containerd_services_images_v1_GetImageRequest, GetImageRequest__Output as _containerd_services_images_v1_GetImageRequest__Output } from '../../../../containerd/services/images/v1/GetImageRequest.js';
import type { GetImageResponse as _containerd_services_images_v1_GetImageResponse, GetImageResponse__Output as _containerd_services_images_v1_GetImageResponse__Output } from '../../../../containerd/services/images/v1/GetImageResponse.js';
import type { ListImagesRequest as _containerd_services_images_v1_ListImagesRequest, ListImagesRequest__Output as _containerd_services_images_v1_ListImagesRequest__Output } from '../../../../containerd/services/images/v1/ListImagesRequest.js';
import type { ListImagesResponse as _containerd_services_images_v1_ListImagesResponse, ListImagesResponse__Output as _containerd_services_images_v1_ListImagesResponse__Output } from '../../../../containerd/services/images/v1/ListImagesResponse.js';

export interface ImagesClient extends grpc.Client {
  Get(argument: _containerd_services_images_v1_GetImageRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_images_v1_GetImageResponse__Output>): grpc.ClientUnaryCall;
  Get(argument: _containerd_services_images_v1_GetImageRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_containerd_services_images_v1_GetImageResponse__Output>): grpc.ClientUnaryCall;
  Get(argument: _containerd_services_images_v1_GetImageRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_images_v1_GetImageResponse__Output>): grpc.ClientUnaryCall;
  Get(argument: _containerd_services_images_v1_GetImageRequest, callback: grpc.requestCallback<_containerd_services_images_v1_GetImageResponse__Output>): grpc.ClientUnaryCall;
  get(argument: _containerd_services_images_v1_GetImageRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_images_v1_GetImageResponse__Output>): grpc.ClientUnaryCall;
  get(argument: _containerd_services_images_v1_GetImageRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_containerd_services_images_v1_GetImageResponse__Output>): grpc.ClientUnaryCall;
  get(argument: _containerd_services_images_v1_GetImageRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_images_v1_GetImageResponse__Output>): grpc.ClientUnaryCall;
  get(argument: _containerd_services_images_v1_GetImageRequest, callback: grpc.requestCallback<_containerd_services_images_v1_GetImageResponse__Output>): grpc.ClientUnaryCall;
  
  List(argument: _containerd_services_images_v1_ListImagesRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_images_v1_ListImagesResponse__Output>): grpc.ClientUnaryCall;
  List(argument: _containerd_services_images_v1_ListImagesRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_containerd_services_images_v1_ListImagesResponse__Output>): grpc.ClientUnaryCall;
  List(argument: _containerd_services_images_v1_ListImagesRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_images_v1_ListImagesResponse__Output>): grpc.ClientUnaryCall;
  List(argument: _containerd_services_images_v1_ListImagesRequest, callback: grpc.requestCallback<_containerd_services_images_v1_ListImagesResponse__Output>): grpc.ClientUnaryCall;
  list(argument: _containerd_services_images_v1_ListImagesRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_images_v1_ListImagesResponse__Output>): grpc.ClientUnaryCall;
  list(argument: _containerd_services_images_v1_ListImagesRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_containerd_services_images_v1_ListImagesResponse__Output>): grpc.ClientUnaryCall;
  list(argument: _containerd_services_images_v1_ListImagesRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_containerd_services_images_v1_ListImagesResponse__Output>): grpc.ClientUnaryCall;
  list(argument: _containerd_services_images_v1_ListImagesRequest, callback: grpc.requestCallback<_containerd_services_images_v1_ListImagesResponse__Output>): grpc.ClientUnaryCall;
  
}

export interface ImagesHandlers extends grpc.UntypedServiceImplementation {
  Get: grpc.handleUnaryCall<_containerd_services_images_v1_GetImageRequest__Output, _containerd_services_images_v1_GetImageResponse>;
  
  List: grpc.handleUnaryCall<_containerd_services_images_v1_ListImagesRequest__Output, _containerd_services_images_v1_ListImagesResponse>;
  
}

export interface ImagesDefinition extends grpc.ServiceDefinition {
  Get: MethodDefinition<_containerd_services_images_v1_GetImageRequest, _containerd_services_images_v1_GetImageResponse, _containerd_services_images_v1_GetImageRequest__Output, _containerd_services_images_v1_GetImageResponse__Output>
  List: MethodDefinition<_containerd_services_images_v1_ListImagesRequest, _containerd_services_images_v1_ListImagesResponse, _containerd_services_images_v1_ListImagesRequest__Output, _containerd_services_images_v1_ListImagesResponse__Output>
}
