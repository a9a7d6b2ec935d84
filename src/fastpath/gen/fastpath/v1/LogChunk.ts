// Original file: fastpath/v1/sandbox_io.proto


export interface LogChunk {
  'data'?: (Buffer | Uint8Array | string);
}

export interface LogChunk__Output {
  'data': (Buffer);
}
