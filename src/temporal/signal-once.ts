/**
 * A signal Temporal records at most once per run for one request ID: the server drops a signal
 * whose request ID the run already holds. Two processes that learn the same fact (the fast path's
 * DeleteSandbox and the watcher both see a deletion start) send it under one ID, so the run gets
 * one hint, never a second that would race into the task that ends it. The SDK's `signal()` picks
 * a random request ID, hence the call made here with the client's own data converter.
 */
import { status } from '@grpc/grpc-js';
import { WorkflowNotFoundError, isGrpcServiceError, type Client } from '@temporalio/client';
import type { Payload, SignalDefinition } from '@temporalio/common';

export async function signalOnce<Args extends unknown[]>(
  client: Client,
  workflowId: string,
  signal: SignalDefinition<Args>,
  requestId: string,
  ...args: Args
): Promise<void> {
  const { loadedDataConverter, namespace, identity } = client.options;
  let payloads: Payload[] = args.map((arg) => loadedDataConverter.payloadConverter.toPayload(arg));
  for (const codec of loadedDataConverter.payloadCodecs) payloads = await codec.encode(payloads);
  try {
    await client.workflowService.signalWorkflowExecution({
      namespace,
      identity,
      workflowExecution: { workflowId },
      signalName: signal.name,
      input: { payloads },
      requestId,
    });
  } catch (err) {
    if (isGrpcServiceError(err) && err.code === status.NOT_FOUND)
      throw new WorkflowNotFoundError(err.details || `workflow ${workflowId} not found`, workflowId, undefined);
    throw err;
  }
}
