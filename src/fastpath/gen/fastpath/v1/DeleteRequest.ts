// Original file: fastpath/v1/fastpath.proto


export interface DeleteRequest {
  'sandboxName'?: (string);
  'namespace'?: (string);
}

export interface DeleteRequest__Output {
  'sandboxName': (string);
  'namespace': (string);
}
