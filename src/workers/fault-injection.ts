/**
 * Crash drills. `DO_FAULT_KILL_AFTER_ACTIVITY=<activityType>[,<activityType>…]` makes the worker
 * SIGKILL itself right after such an activity has done its work and before Temporal learns it
 * finished — the harshest crash point between two steps of an operation (the side effect
 * happened, the history does not show it). Temporal retries the activity on another worker once
 * its timeout passes; the tests use this to prove every step is idempotent. Never set it in
 * production.
 */
import type { ActivityInterceptorsFactory } from '@temporalio/worker';

export function killAfterActivityInterceptors(env: NodeJS.ProcessEnv = process.env): ActivityInterceptorsFactory[] {
  const spec = env.DO_FAULT_KILL_AFTER_ACTIVITY;
  if (!spec) return [];
  const types = new Set(
    spec
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  );
  return [
    (ctx) => ({
      inbound: {
        async execute(input, next) {
          const result = await next(input);
          if (types.has(ctx.info.activityType)) {
            process.stderr.write(`fault injection: SIGKILL after ${ctx.info.activityType}\n`);
            process.kill(process.pid, 'SIGKILL');
          }
          return result;
        },
      },
    }),
  ];
}
