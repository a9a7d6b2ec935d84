// Original file: fastpath/v1/fastpath.proto


export interface ListRequest {
  'namespace'?: (string);
}

export interface ListRequest__Output {
  'namespace': (string);
}
