/**
 * Schedules the worker keeps in place on start. Idempotent: an existing schedule is updated to
 * the current settings, so changing DO_REQUEST_TTL_SWEEP_INTERVAL takes effect on the next rollout.
 */
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client, type ScheduleOptions } from '@temporalio/client';
import type { OperatorConfig } from '../config.js';
import { requestTtlSweepWorkflow } from '../workflows/requests/contract.js';

/** One sweep schedule per task queue, so several installations can share a namespace. */
export function requestTtlSweepScheduleId(taskQueue: string): string {
  return `request-ttl-sweep/${taskQueue}`;
}

export async function ensureRequestTtlSweep(client: Client, cfg: OperatorConfig): Promise<string> {
  const scheduleId = requestTtlSweepScheduleId(cfg.temporal.taskQueue);
  const spec = { intervals: [{ every: cfg.requests.ttlSweepIntervalMs }] };
  const action = {
    type: 'startWorkflow' as const,
    workflowType: requestTtlSweepWorkflow,
    taskQueue: cfg.temporal.taskQueue,
    workflowId: `request-ttl-sweep/${cfg.temporal.taskQueue}`,
    args: [] as [],
    workflowExecutionTimeout: '1 hour',
  };
  await upsertSchedule(client, {
    scheduleId,
    spec,
    action,
    // Never two sweeps at once (the original ran its scanner leader-only).
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute' },
    memo: { description: 'Deletes fire-and-forget requests whose TTL has expired (the TTL scanner).' },
  });
  return scheduleId;
}

/**
 * Creates a Schedule, or brings an existing one to these settings (spec and action): every
 * replica calls this on start, so a changed interval takes effect on the next rollout.
 */
export async function upsertSchedule(client: Client, options: ScheduleOptions): Promise<void> {
  try {
    await client.schedule.create(options);
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    await client.schedule
      .getHandle(options.scheduleId)
      .update((prev) => ({ ...prev, spec: options.spec, action: options.action }));
  }
}
