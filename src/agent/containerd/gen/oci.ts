import type * as grpc from '@grpc/grpc-js';
import type { MessageTypeDefinition } from '@grpc/proto-loader';

import type { Options as _containerd_runc_v1_Options, Options__Output as _containerd_runc_v1_Options__Output } from './containerd/runc/v1/Options.js';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  containerd: {
    runc: {
      v1: {
        Options: MessageTypeDefinition<_containerd_runc_v1_Options, _containerd_runc_v1_Options__Output>
      }
    }
  }
}

