/**
 * Routes the Temporal SDK's own logs (worker state changes, workflow `log` calls) into the
 * project's pino logger, once per process.
 */
import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';
import type { Logger } from '../log.js';

let installed = false;

const LOG_LEVELS: readonly LogLevel[] = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'];

/** `DO_TEMPORAL_LOG_LEVEL` (any case); unset or empty: `fallback`; anything else is refused, naming the variable. */
export function temporalLogLevel(value: string | undefined, fallback: LogLevel): LogLevel {
  if (value === undefined || value === '') return fallback;
  const level = LOG_LEVELS.find((l) => l === value.toUpperCase());
  if (!level) throw new Error(`DO_TEMPORAL_LOG_LEVEL=${value}: expected one of ${LOG_LEVELS.join(', ')}`);
  return level;
}

/**
 * @param metricsAddress when set (e.g. `0.0.0.0:9465`), the SDK serves its worker metrics
 *   (task slots, schedule-to-start latency, activity/workflow task outcomes) on /metrics there.
 */
export function installTemporalRuntime(log: Logger, level: LogLevel = 'WARN', metricsAddress?: string): void {
  if (installed) return;
  installed = true;
  const pinoLevel = { TRACE: 'trace', DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' } as const;
  Runtime.install({
    ...(metricsAddress
      ? { telemetryOptions: { metrics: { prometheus: { bindAddress: metricsAddress, countersTotalSuffix: true } } } }
      : {}),
    logger: new DefaultLogger(level, (entry) => {
      log[pinoLevel[entry.level]]({ ...entry.meta, sdk: true }, entry.message);
    }),
  });
}
