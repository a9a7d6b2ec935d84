/**
 * Routes the Temporal SDK's own logs (worker state changes, workflow `log` calls) into the
 * project's pino logger, once per process.
 */
import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';
import type { Logger } from '../log.js';

let installed = false;

export function installTemporalRuntime(log: Logger, level: LogLevel = 'WARN'): void {
  if (installed) return;
  installed = true;
  const pinoLevel = { TRACE: 'trace', DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' } as const;
  Runtime.install({
    logger: new DefaultLogger(level, (entry) => {
      log[pinoLevel[entry.level]]({ ...entry.meta, sdk: true }, entry.message);
    }),
  });
}
