// Original file: fastpath/v1/fastpath.proto

import type { ConsistencyMode as _fastpath_v1_ConsistencyMode, ConsistencyMode__Output as _fastpath_v1_ConsistencyMode__Output } from '../../fastpath/v1/ConsistencyMode.js';

export interface CreateRequest {
  'image'?: (string);
  'poolRef'?: (string);
  'exposedPorts'?: (number)[];
  'command'?: (string)[];
  'args'?: (string)[];
  /**
   * optional, "default" when empty
   */
  'namespace'?: (string);
  'consistencyMode'?: (_fastpath_v1_ConsistencyMode);
  /**
   * optional Sandbox name
   */
  'name'?: (string);
  'envs'?: ({[key: string]: string});
  'workingDir'?: (string);
}

export interface CreateRequest__Output {
  'image': (string);
  'poolRef': (string);
  'exposedPorts': (number)[];
  'command': (string)[];
  'args': (string)[];
  /**
   * optional, "default" when empty
   */
  'namespace': (string);
  'consistencyMode': (_fastpath_v1_ConsistencyMode__Output);
  /**
   * optional Sandbox name
   */
  'name': (string);
  'envs': ({[key: string]: string});
  'workingDir': (string);
}
