// Original file: fastpath/v1/sandbox_io.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { ExecOutput as _fastpath_v1_ExecOutput, ExecOutput__Output as _fastpath_v1_ExecOutput__Output } from '../../fastpath/v1/ExecOutput.js';
import type { ExecRequest as _fastpath_v1_ExecRequest, ExecRequest__Output as _fastpath_v1_ExecRequest__Output } from '../../fastpath/v1/ExecRequest.js';
import type { LogChunk as _fastpath_v1_LogChunk, LogChunk__Output as _fastpath_v1_LogChunk__Output } from '../../fastpath/v1/LogChunk.js';
import type { LogsRequest as _fastpath_v1_LogsRequest, LogsRequest__Output as _fastpath_v1_LogsRequest__Output } from '../../fastpath/v1/LogsRequest.js';

export interface SandboxIOServiceClient extends grpc.Client {
  /**
   * Runs a command in the sandbox's environment (its env and working directory), stdin its input;
   * its output as it comes, then one message with its exit code.
   */
  Exec(argument: _fastpath_v1_ExecRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_fastpath_v1_ExecOutput__Output>;
  Exec(argument: _fastpath_v1_ExecRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_fastpath_v1_ExecOutput__Output>;
  /**
   * Runs a command in the sandbox's environment (its env and working directory), stdin its input;
   * its output as it comes, then one message with its exit code.
   */
  exec(argument: _fastpath_v1_ExecRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_fastpath_v1_ExecOutput__Output>;
  exec(argument: _fastpath_v1_ExecRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_fastpath_v1_ExecOutput__Output>;
  
  /**
   * The sandbox's output so far (both streams, in order), then — with follow — as it comes,
   * until the sandbox ends or the caller cancels.
   */
  StreamLogs(argument: _fastpath_v1_LogsRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_fastpath_v1_LogChunk__Output>;
  StreamLogs(argument: _fastpath_v1_LogsRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_fastpath_v1_LogChunk__Output>;
  /**
   * The sandbox's output so far (both streams, in order), then — with follow — as it comes,
   * until the sandbox ends or the caller cancels.
   */
  streamLogs(argument: _fastpath_v1_LogsRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_fastpath_v1_LogChunk__Output>;
  streamLogs(argument: _fastpath_v1_LogsRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_fastpath_v1_LogChunk__Output>;
  
}

export interface SandboxIOServiceHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Runs a command in the sandbox's environment (its env and working directory), stdin its input;
   * its output as it comes, then one message with its exit code.
   */
  Exec: grpc.handleServerStreamingCall<_fastpath_v1_ExecRequest__Output, _fastpath_v1_ExecOutput>;
  
  /**
   * The sandbox's output so far (both streams, in order), then — with follow — as it comes,
   * until the sandbox ends or the caller cancels.
   */
  StreamLogs: grpc.handleServerStreamingCall<_fastpath_v1_LogsRequest__Output, _fastpath_v1_LogChunk>;
  
}

export interface SandboxIOServiceDefinition extends grpc.ServiceDefinition {
  Exec: MethodDefinition<_fastpath_v1_ExecRequest, _fastpath_v1_ExecOutput, _fastpath_v1_ExecRequest__Output, _fastpath_v1_ExecOutput__Output>
  StreamLogs: MethodDefinition<_fastpath_v1_LogsRequest, _fastpath_v1_LogChunk, _fastpath_v1_LogsRequest__Output, _fastpath_v1_LogChunk__Output>
}
