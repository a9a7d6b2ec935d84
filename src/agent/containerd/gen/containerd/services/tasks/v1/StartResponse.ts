// Original file: containerd/services/tasks/v1/tasks.proto


export interface StartResponse {
  'pid'?: (number);
}

export interface StartResponse__Output {
  'pid': (number);
}
