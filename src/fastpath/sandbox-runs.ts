/**
 * A sandbox name's running workflow (`sandbox/<namespace>/<name>`) and what it is doing, for the
 * calls that must not act behind its back: Get's answer while the record is being written,
 * Delete's reach into a creation before its record exists, and the janitor sparing a sandbox whose
 * record is late rather than refused.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { sandboxWorkflowId } from '../domain/sandbox.js';
import { Tenant } from '../temporal/search-attributes.js';
import { sandboxStateQuery } from '../workflows/sandbox/contract.js';

/** The running workflow and its state; undefined when none runs. Throws when Temporal cannot tell. */
export async function runningSandbox(client: Client, namespace: string, name: string) {
  const handle = client.workflow.getHandle(sandboxWorkflowId(namespace, name));
  try {
    const desc = await handle.describe();
    if (desc.status.name !== 'RUNNING') return undefined;
    return {
      handle,
      startTime: desc.startTime,
      tenant: desc.typedSearchAttributes.get(Tenant),
      state: await handle.query(sandboxStateQuery),
    };
  } catch (err) {
    // Ended between the describe and the query, or never started.
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
}
