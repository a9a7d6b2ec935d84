/**
 * Keeps the janitor workflow running (`sandbox-janitor/<task queue>`): every fast-path replica
 * signals-with-start it on start, which starts it when it is not running and otherwise hands it
 * this replica's settings.
 */
import { ScheduleNotFoundError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { FastPathConfig } from '../config.js';
import { configureJanitorSignal, sandboxJanitorWorkflow, type JanitorSettings } from '../workflows/sandbox/contract.js';

export function janitorWorkflowId(taskQueue: string): string {
  return `sandbox-janitor/${taskQueue}`;
}

export async function ensureSandboxJanitor(client: Client, taskQueue: string, fp: FastPathConfig): Promise<string> {
  const workflowId = janitorWorkflowId(taskQueue);
  const settings: JanitorSettings = {
    orphanTimeoutSeconds: Math.ceil(fp.orphanTimeoutMs / 1000),
    intervalMs: fp.janitorIntervalMs,
  };
  // Until 0.4: a 0.2 installation's janitor Schedule would keep starting passes (docs/compatibility.md).
  await deleteLegacySchedule(client, workflowId);
  const start = () =>
    client.workflow.signalWithStart(sandboxJanitorWorkflow, {
      workflowId,
      taskQueue,
      args: [settings],
      signal: configureJanitorSignal,
      signalArgs: [settings],
    });
  const handle = await start();
  // Until 0.4: a pass the 0.2 Schedule started runs with an execution timeout; the loop has none.
  const desc = await handle.describe();
  if (desc.raw.executionConfig?.workflowExecutionTimeout?.seconds) {
    await handle.terminate('replaced by the long-lived janitor').catch((err: unknown) => {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    });
    await start();
  }
  return workflowId;
}

async function deleteLegacySchedule(client: Client, scheduleId: string): Promise<void> {
  try {
    await client.schedule.getHandle(scheduleId).delete();
  } catch (err) {
    if (!(err instanceof ScheduleNotFoundError)) throw err; // none: nothing to migrate
  }
}
