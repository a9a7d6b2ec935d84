// Original file: containerd/services/images/v1/images.proto


export interface GetImageRequest {
  'name'?: (string);
}

export interface GetImageRequest__Output {
  'name': (string);
}
