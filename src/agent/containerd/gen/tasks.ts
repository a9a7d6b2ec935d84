import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { CloseIORequest as _containerd_services_tasks_v1_CloseIORequest, CloseIORequest__Output as _containerd_services_tasks_v1_CloseIORequest__Output } from './containerd/services/tasks/v1/CloseIORequest.js';
import type { CreateTaskRequest as _containerd_services_tasks_v1_CreateTaskRequest, CreateTaskRequest__Output as _containerd_services_tasks_v1_CreateTaskRequest__Output } from './containerd/services/tasks/v1/CreateTaskRequest.js';
import type { CreateTaskResponse as _containerd_services_tasks_v1_CreateTaskResponse, CreateTaskResponse__Output as _containerd_services_tasks_v1_CreateTaskResponse__Output } from './containerd/services/tasks/v1/CreateTaskResponse.js';
import type { DeleteProcessRequest as _containerd_services_tasks_v1_DeleteProcessRequest, DeleteProcessRequest__Output as _containerd_services_tasks_v1_DeleteProcessRequest__Output } from './containerd/services/tasks/v1/DeleteProcessRequest.js';
import type { DeleteResponse as _containerd_services_tasks_v1_DeleteResponse, DeleteResponse__Output as _containerd_services_tasks_v1_DeleteResponse__Output } from './containerd/services/tasks/v1/DeleteResponse.js';
import type { DeleteTaskRequest as _containerd_services_tasks_v1_DeleteTaskRequest, DeleteTaskRequest__Output as _containerd_services_tasks_v1_DeleteTaskRequest__Output } from './containerd/services/tasks/v1/DeleteTaskRequest.js';
import type { ExecProcessRequest as _containerd_services_tasks_v1_ExecProcessRequest, ExecProcessRequest__Output as _containerd_services_tasks_v1_ExecProcessRequest__Output } from './containerd/services/tasks/v1/ExecProcessRequest.js';
import type { GetRequest as _containerd_services_tasks_v1_GetRequest, GetRequest__Output as _containerd_services_tasks_v1_GetRequest__Output } from './containerd/services/tasks/v1/GetRequest.js';
import type { GetResponse as _containerd_services_tasks_v1_GetResponse, GetResponse__Output as _containerd_services_tasks_v1_GetResponse__Output } from './containerd/services/tasks/v1/GetResponse.js';
import type { KillRequest as _containerd_services_tasks_v1_KillRequest, KillRequest__Output as _containerd_services_tasks_v1_KillRequest__Output } from './containerd/services/tasks/v1/KillRequest.js';
import type { StartRequest as _containerd_services_tasks_v1_StartRequest, StartRequest__Output as _containerd_services_tasks_v1_StartRequest__Output } from './containerd/services/tasks/v1/StartRequest.js';
import type { StartResponse as _containerd_services_tasks_v1_StartResponse, StartResponse__Output as _containerd_services_tasks_v1_StartResponse__Output } from './containerd/services/tasks/v1/StartResponse.js';
import type { TasksClient as _containerd_services_tasks_v1_TasksClient, TasksDefinition as _containerd_services_tasks_v1_TasksDefinition } from './containerd/services/tasks/v1/Tasks.js';
import type { UpdateTaskRequest as _containerd_services_tasks_v1_UpdateTaskRequest, UpdateTaskRequest__Output as _containerd_services_tasks_v1_UpdateTaskRequest__Output } from './containerd/services/tasks/v1/UpdateTaskRequest.js';
import type { WaitRequest as _containerd_services_tasks_v1_WaitRequest, WaitRequest__Output as _containerd_services_tasks_v1_WaitRequest__Output } from './containerd/services/tasks/v1/WaitRequest.js';
import type { WaitResponse as _containerd_services_tasks_v1_WaitResponse, WaitResponse__Output as _containerd_services_tasks_v1_WaitResponse__Output } from './containerd/services/tasks/v1/WaitResponse.js';
import type { Mount as _containerd_types_Mount, Mount__Output as _containerd_types_Mount__Output } from './containerd/types/Mount.js';
import type { Process as _containerd_v1_types_Process, Process__Output as _containerd_v1_types_Process__Output } from './containerd/v1/types/Process.js';
import type { Any as _google_protobuf_Any, Any__Output as _google_protobuf_Any__Output } from './google/protobuf/Any.js';
import type { Empty as _google_protobuf_Empty, Empty__Output as _google_protobuf_Empty__Output } from './google/protobuf/Empty.js';
import type { Timestamp as _google_protobuf_Timestamp, Timestamp__Output as _google_protobuf_Timestamp__Output } from './google/protobuf/Timestamp.js';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  containerd: {
    services: {
      tasks: {
        v1: {
          CloseIORequest: MessageTypeDefinition<_containerd_services_tasks_v1_CloseIORequest, _containerd_services_tasks_v1_CloseIORequest__Output>
          CreateTaskRequest: MessageTypeDefinition<_containerd_services_tasks_v1_CreateTaskRequest, _containerd_services_tasks_v1_CreateTaskRequest__Output>
          CreateTaskResponse: MessageTypeDefinition<_containerd_services_tasks_v1_CreateTaskResponse, _containerd_services_tasks_v1_CreateTaskResponse__Output>
          DeleteProcessRequest: MessageTypeDefinition<_containerd_services_tasks_v1_DeleteProcessRequest, _containerd_services_tasks_v1_DeleteProcessRequest__Output>
          DeleteResponse: MessageTypeDefinition<_containerd_services_tasks_v1_DeleteResponse, _containerd_services_tasks_v1_DeleteResponse__Output>
          DeleteTaskRequest: MessageTypeDefinition<_containerd_services_tasks_v1_DeleteTaskRequest, _containerd_services_tasks_v1_DeleteTaskRequest__Output>
          ExecProcessRequest: MessageTypeDefinition<_containerd_services_tasks_v1_ExecProcessRequest, _containerd_services_tasks_v1_ExecProcessRequest__Output>
          GetRequest: MessageTypeDefinition<_containerd_services_tasks_v1_GetRequest, _containerd_services_tasks_v1_GetRequest__Output>
          GetResponse: MessageTypeDefinition<_containerd_services_tasks_v1_GetResponse, _containerd_services_tasks_v1_GetResponse__Output>
          KillRequest: MessageTypeDefinition<_containerd_services_tasks_v1_KillRequest, _containerd_services_tasks_v1_KillRequest__Output>
          StartRequest: MessageTypeDefinition<_containerd_services_tasks_v1_StartRequest, _containerd_services_tasks_v1_StartRequest__Output>
          StartResponse: MessageTypeDefinition<_containerd_services_tasks_v1_StartResponse, _containerd_services_tasks_v1_StartResponse__Output>
          Tasks: SubtypeConstructor<typeof grpc.Client, _containerd_services_tasks_v1_TasksClient> & { service: _containerd_services_tasks_v1_TasksDefinition }
          UpdateTaskRequest: MessageTypeDefinition<_containerd_services_tasks_v1_UpdateTaskRequest, _containerd_services_tasks_v1_UpdateTaskRequest__Output>
          WaitRequest: MessageTypeDefinition<_containerd_services_tasks_v1_WaitRequest, _containerd_services_tasks_v1_WaitRequest__Output>
          WaitResponse: MessageTypeDefinition<_containerd_services_tasks_v1_WaitResponse, _containerd_services_tasks_v1_WaitResponse__Output>
        }
      }
    }
    types: {
      Mount: MessageTypeDefinition<_containerd_types_Mount, _containerd_types_Mount__Output>
    }
    v1: {
      types: {
        Process: MessageTypeDefinition<_containerd_v1_types_Process, _containerd_v1_types_Process__Output>
        Status: EnumTypeDefinition
      }
    }
  }
  google: {
    protobuf: {
      Any: MessageTypeDefinition<_google_protobuf_Any, _google_protobuf_Any__Output>
      Empty: MessageTypeDefinition<_google_protobuf_Empty, _google_protobuf_Empty__Output>
      Timestamp: MessageTypeDefinition<_google_protobuf_Timestamp, _google_protobuf_Timestamp__Output>
    }
  }
}

