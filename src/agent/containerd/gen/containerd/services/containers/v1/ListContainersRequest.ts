// Original file: containerd/services/containers/v1/containers.proto


export interface ListContainersRequest {
  'filters'?: (string)[];
}

export interface ListContainersRequest__Output {
  'filters': (string)[];
}
