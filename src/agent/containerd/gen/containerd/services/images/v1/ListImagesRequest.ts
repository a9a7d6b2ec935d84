// Original file: containerd/services/images/v1/images.proto


export interface ListImagesRequest {
  'filters'?: (string)[];
}

export interface ListImagesRequest__Output {
  'filters': (string)[];
}
