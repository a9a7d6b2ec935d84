// Original file: fastpath/v1/fastpath.proto


export interface GetRequest {
  'sandboxName'?: (string);
  'namespace'?: (string);
}

export interface GetRequest__Output {
  'sandboxName': (string);
  'namespace': (string);
}
