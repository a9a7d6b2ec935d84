import { expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';

it('reads the environment, with flags taking precedence', () => {
  const cfg = loadConfig({ taskQueue: 'flag-q' }, { TEMPORAL_ADDRESS: 'temporal:7233', DO_TASK_QUEUE: 'env-q' });
  expect(cfg.temporal).toMatchObject({
    address: 'temporal:7233',
    taskQueue: 'flag-q',
    namespace: 'default',
    tls: false,
  });
  expect(cfg.metricsPort).toBeUndefined();
});

it('turns TLS on when an API key is given', () => {
  expect(loadConfig({}, { TEMPORAL_API_KEY: 'k' }).temporal.tls).toBe(true);
});

it('rejects a malformed number with the variable name', () => {
  expect(() => loadConfig({}, { DO_KEEPER_VERIFY_INTERVAL_MS: 'soon' })).toThrow(/DO_KEEPER_VERIFY_INTERVAL_MS/);
});
