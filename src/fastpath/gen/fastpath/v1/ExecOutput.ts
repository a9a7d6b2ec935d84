// Original file: fastpath/v1/sandbox_io.proto


export interface ExecOutput {
  'stdout'?: (Buffer | Uint8Array | string);
  'stderr'?: (Buffer | Uint8Array | string);
  'exitCode'?: (number);
  /**
   * with exit_code: the signal that ended the command, if one did
   */
  'signal'?: (string);
  'output'?: "stdout"|"stderr"|"exitCode";
}

export interface ExecOutput__Output {
  'stdout'?: (Buffer);
  'stderr'?: (Buffer);
  'exitCode'?: (number);
  /**
   * with exit_code: the signal that ended the command, if one did
   */
  'signal': (string);
  'output'?: "stdout"|"stderr"|"exitCode";
}
