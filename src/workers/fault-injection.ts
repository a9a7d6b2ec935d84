/**
 * Crash drills. `DO_FAULT_KILL_AFTER_ACTIVITY=<activityType>[,<activityType>…]` makes the worker
 * SIGKILL itself right after such an activity has done its work and before Temporal learns it
 * finished — the harshest crash point between two steps of an operation (the side effect
 * happened, the history does not show it). Temporal retries the activity on another worker once
 * its timeout passes; the tests use this to prove every step is idempotent.
 * `DO_FAULT_DELAY_ACTIVITY=<activityType>=<duration>[,…]` holds the first attempt of such an
 * activity that long before it starts — a worker too busy to get to it (a late step, not a lost
 * one). Never set either in production.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { parseGoDuration } from '../domain/duration.js';

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

export function delayActivityInterceptors(env: NodeJS.ProcessEnv = process.env): ActivityInterceptorsFactory[] {
  const spec = env.DO_FAULT_DELAY_ACTIVITY;
  if (!spec) return [];
  const delays = new Map(
    spec
      .split(',')
      .map((s) => s.trim().split('='))
      .filter((p): p is [string, string] => p.length === 2)
      .map(([type, d]) => [type, parseGoDuration(d)] as const),
  );
  return [
    (ctx) => ({
      inbound: {
        async execute(input, next) {
          const ms = delays.get(ctx.info.activityType);
          if (ms !== undefined && ctx.info.attempt === 1) {
            process.stderr.write(`fault injection: ${ctx.info.activityType} held ${ms} ms\n`);
            // A worker too busy to start the step: once the attempt is given up on (its timeout
            // passed, it was cancelled), it never starts.
            await sleep(ms, undefined, { signal: ctx.cancellationSignal });
          }
          return next(input);
        },
      },
    }),
  ];
}
