// Original file: fastpath/v1/fastpath.proto

export const FailurePolicy = {
  /**
   * agent lost → phase Lost
   */
  MANUAL: 'MANUAL',
  /**
   * agent lost → rescheduled
   */
  AUTO_RECREATE: 'AUTO_RECREATE',
} as const;

export type FailurePolicy =
  /**
   * agent lost → phase Lost
   */
  | 'MANUAL'
  | 0
  /**
   * agent lost → rescheduled
   */
  | 'AUTO_RECREATE'
  | 1

export type FailurePolicy__Output = typeof FailurePolicy[keyof typeof FailurePolicy]
