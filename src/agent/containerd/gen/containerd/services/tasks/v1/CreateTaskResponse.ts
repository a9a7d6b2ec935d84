// Original file: containerd/services/tasks/v1/tasks.proto


export interface CreateTaskResponse {
  'containerId'?: (string);
  'pid'?: (number);
}

export interface CreateTaskResponse__Output {
  'containerId': (string);
  'pid': (number);
}
