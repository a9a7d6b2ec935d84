/** How the dispatcher treats each refusal from Temporal (src/temporal/dispatch.ts). */
import { ServiceError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { classifyDispatchFailure } from '../../src/temporal/dispatch.js';

/** What @grpc/grpc-js rejects with, wrapped by the client as it does for a start. */
const refused = (code: number, details: string) =>
  new ServiceError('Failed to start Workflow', {
    cause: Object.assign(new Error(details), { code, details, metadata: {} }),
  });

describe('classifyDispatchFailure', () => {
  it('credentials refused (an expired API key, a revoked certificate) wait for an operator, never drop', () => {
    expect(classifyDispatchFailure(refused(16, 'Request unauthenticated'))).toMatchObject({
      action: 'wait',
      cause: 'UNAUTHENTICATED',
    });
    expect(classifyDispatchFailure(refused(7, 'Request unauthorized.'))).toMatchObject({
      action: 'wait',
      cause: 'PERMISSION_DENIED',
      reason: expect.stringContaining('Request unauthorized.') as unknown,
    });
  });

  it('an unregistered search attribute waits and is named; any other INVALID_ARGUMENT is dropped with its code', () => {
    expect(
      classifyDispatchFailure(refused(3, 'Namespace default has no mapping defined for search attribute K8sKind')),
    ).toMatchObject({
      action: 'wait',
      cause: 'search_attribute',
      reason: expect.stringContaining('K8sKind is not registered') as unknown,
    });
    expect(classifyDispatchFailure(refused(3, 'WorkflowId exceeds length limit.'))).toMatchObject({
      action: 'drop',
      code: 'INVALID_ARGUMENT',
    });
  });

  it('Temporal unavailable, or anything that is not a gRPC refusal, is retried', () => {
    expect(classifyDispatchFailure(refused(14, 'connection refused'))).toEqual({ action: 'retry' });
    expect(classifyDispatchFailure(new Error('socket hang up'))).toEqual({ action: 'retry' });
  });
});
