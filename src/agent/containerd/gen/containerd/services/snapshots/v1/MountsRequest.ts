// Original file: containerd/services/snapshots/v1/snapshots.proto


export interface MountsRequest {
  'snapshotter'?: (string);
  'key'?: (string);
}

export interface MountsRequest__Output {
  'snapshotter': (string);
  'key': (string);
}
