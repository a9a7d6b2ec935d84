// Original file: fastpath/v1/fastpath.proto


export interface CreateResponse {
  'sandboxId'?: (string);
  'agentPod'?: (string);
  /**
   * "IP:port"
   */
  'endpoints'?: (string)[];
  'sandboxName'?: (string);
}

export interface CreateResponse__Output {
  'sandboxId': (string);
  'agentPod': (string);
  /**
   * "IP:port"
   */
  'endpoints': (string)[];
  'sandboxName': (string);
}
