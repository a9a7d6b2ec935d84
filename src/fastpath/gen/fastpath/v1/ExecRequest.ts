// Original file: fastpath/v1/sandbox_io.proto


export interface ExecRequest {
  'sandboxName'?: (string);
  'namespace'?: (string);
  'command'?: (string)[];
  /**
   * What the command reads, then EOF; empty: EOF at once. At most 1 MiB (more is INVALID_ARGUMENT).
   */
  'stdin'?: (Buffer | Uint8Array | string);
}

export interface ExecRequest__Output {
  'sandboxName': (string);
  'namespace': (string);
  'command': (string)[];
  /**
   * What the command reads, then EOF; empty: EOF at once. At most 1 MiB (more is INVALID_ARGUMENT).
   */
  'stdin': (Buffer);
}
