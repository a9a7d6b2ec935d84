// Original file: containerd/services/tasks/v1/tasks.proto


export interface GetRequest {
  'containerId'?: (string);
  'execId'?: (string);
}

export interface GetRequest__Output {
  'containerId': (string);
  'execId': (string);
}
