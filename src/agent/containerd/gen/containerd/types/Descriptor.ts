// Original file: containerd/types/descriptor.proto

import type { Long } from '@grpc/proto-loader';

export interface Descriptor {
  'mediaType'?: (string);
  'digest'?: (string);
  'size'?: (number | string | Long);
  'annotations'?: ({[key: string]: string});
}

export interface Descriptor__Output {
  'mediaType': (string);
  'digest': (string);
  'size': (number);
  'annotations': ({[key: string]: string});
}
