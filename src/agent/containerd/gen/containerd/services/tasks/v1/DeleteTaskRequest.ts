// Original file: containerd/services/tasks/v1/tasks.proto


export interface DeleteTaskRequest {
  'containerId'?: (string);
}

export interface DeleteTaskRequest__Output {
  'containerId': (string);
}
