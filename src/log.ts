/**
 * The one logger (pino: structured JSON, cheap when a level is off). Set DO_LOG_LEVEL to change
 * the level; DO_LOG_PRETTY is not supported on purpose — pipe through `pino-pretty` if wanted.
 */
import { pino } from 'pino';

export const logger = pino({
  level: process.env.DO_LOG_LEVEL ?? 'info',
  base: { pid: process.pid },
  redact: {
    paths: [
      'token',
      'apiKey',
      '*.token',
      '*.apiKey',
      'headers.authorization',
      // A Temporal connection's client key (TemporalConfig.tls), wherever a config is logged.
      'tls.clientCertPair.key',
      '*.tls.clientCertPair.key',
      '*.*.tls.clientCertPair.key',
      '*.temporal.apiKey',
    ],
    censor: '[redacted]',
  },
});

export type Logger = typeof logger;
