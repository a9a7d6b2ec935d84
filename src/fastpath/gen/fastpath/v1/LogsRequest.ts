// Original file: fastpath/v1/sandbox_io.proto


export interface LogsRequest {
  'sandboxName'?: (string);
  'namespace'?: (string);
  'follow'?: (boolean);
}

export interface LogsRequest__Output {
  'sandboxName': (string);
  'namespace': (string);
  'follow': (boolean);
}
