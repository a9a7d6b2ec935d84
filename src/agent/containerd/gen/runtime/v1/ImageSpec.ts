// Original file: containerd/cri/runtime/v1/api.proto


export interface ImageSpec {
  'image'?: (string);
  'annotations'?: ({[key: string]: string});
}

export interface ImageSpec__Output {
  'image': (string);
  'annotations': ({[key: string]: string});
}
