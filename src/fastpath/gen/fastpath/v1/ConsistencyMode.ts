// Original file: fastpath/v1/fastpath.proto

export const ConsistencyMode = {
  /**
   * agent create first, the Sandbox object is written after the answer
   */
  FAST: 'FAST',
  /**
   * the Sandbox object is written first, then the agent create
   */
  STRONG: 'STRONG',
} as const;

export type ConsistencyMode =
  /**
   * agent create first, the Sandbox object is written after the answer
   */
  | 'FAST'
  | 0
  /**
   * the Sandbox object is written first, then the agent create
   */
  | 'STRONG'
  | 1

export type ConsistencyMode__Output = typeof ConsistencyMode[keyof typeof ConsistencyMode]
