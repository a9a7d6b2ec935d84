import type * as grpc from '@grpc/grpc-js';
import type { MessageTypeDefinition } from '@grpc/proto-loader';

import type { ExecOutput as _fastpath_v1_ExecOutput, ExecOutput__Output as _fastpath_v1_ExecOutput__Output } from './fastpath/v1/ExecOutput.js';
import type { ExecRequest as _fastpath_v1_ExecRequest, ExecRequest__Output as _fastpath_v1_ExecRequest__Output } from './fastpath/v1/ExecRequest.js';
import type { LogChunk as _fastpath_v1_LogChunk, LogChunk__Output as _fastpath_v1_LogChunk__Output } from './fastpath/v1/LogChunk.js';
import type { LogsRequest as _fastpath_v1_LogsRequest, LogsRequest__Output as _fastpath_v1_LogsRequest__Output } from './fastpath/v1/LogsRequest.js';
import type { SandboxIOServiceClient as _fastpath_v1_SandboxIOServiceClient, SandboxIOServiceDefinition as _fastpath_v1_SandboxIOServiceDefinition } from './fastpath/v1/SandboxIOService.js';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  fastpath: {
    v1: {
      ExecOutput: MessageTypeDefinition<_fastpath_v1_ExecOutput, _fastpath_v1_ExecOutput__Output>
      ExecRequest: MessageTypeDefinition<_fastpath_v1_ExecRequest, _fastpath_v1_ExecRequest__Output>
      LogChunk: MessageTypeDefinition<_fastpath_v1_LogChunk, _fastpath_v1_LogChunk__Output>
      LogsRequest: MessageTypeDefinition<_fastpath_v1_LogsRequest, _fastpath_v1_LogsRequest__Output>
      SandboxIOService: SubtypeConstructor<typeof grpc.Client, _fastpath_v1_SandboxIOServiceClient> & { service: _fastpath_v1_SandboxIOServiceDefinition }
    }
  }
}

