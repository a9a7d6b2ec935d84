// Original file: fastpath/v1/fastpath.proto


export interface DeleteResponse {
  'success'?: (boolean);
}

export interface DeleteResponse__Output {
  'success': (boolean);
}
