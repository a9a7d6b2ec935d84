import { expect, it } from 'vitest';
import { VERSION } from '../../src/build-info.js';
import { loadConfig } from '../../src/config.js';

it('reads the environment, with flags taking precedence', () => {
  const cfg = loadConfig({ taskQueue: 'flag-q' }, { TEMPORAL_ADDRESS: 'temporal:7233', DO_TASK_QUEUE: 'env-q' });
  expect(cfg.temporal).toMatchObject({
    address: 'temporal:7233',
    taskQueue: 'flag-q',
    namespace: 'default',
  });
  expect(cfg.temporal.tls).toBeUndefined();
  expect(cfg.metricsPort).toBeUndefined();
});

it('turns TLS on when an API key is given', () => {
  expect(loadConfig({}, { TEMPORAL_API_KEY: 'k' }).temporal.tls).toBe(true);
});

it('rejects a malformed number with the variable name', () => {
  expect(() => loadConfig({}, { DO_KEEPER_VERIFY_INTERVAL_MS: 'soon' })).toThrow(/DO_KEEPER_VERIFY_INTERVAL_MS/);
});

it('reads the request policy: TTL, sweep interval, wait deadline, snapshot mode', () => {
  expect(loadConfig({}, {}).requests).toEqual({
    ttlMs: 24 * 3_600_000,
    ttlSweepIntervalMs: 5 * 60_000,
    waitTimeoutMs: 30 * 60_000,
    snapshotMode: 'VolumeSnapshot',
  });
  const cfg = loadConfig(
    {},
    {
      DO_REQUEST_TTL: '10m',
      DO_REQUEST_TTL_SWEEP_INTERVAL: '30s',
      DO_REQUEST_WAIT_TIMEOUT: '1h30m',
      DO_VOLUME_SNAPSHOT_MODE: 'Content',
    },
  );
  expect(cfg.requests).toEqual({
    ttlMs: 600_000,
    ttlSweepIntervalMs: 30_000,
    waitTimeoutMs: 5_400_000,
    snapshotMode: 'Content',
  });
  expect(loadConfig({}, { DO_REQUEST_TTL: '0s' }).requests.ttlMs).toBe(0);
  expect(loadConfig({}, { DO_REQUEST_TTL: '0' }).requests.ttlMs).toBe(0);
});

it('rejects a malformed request policy with the variable named', () => {
  expect(() => loadConfig({}, { DO_REQUEST_TTL: 'a day' })).toThrow(/DO_REQUEST_TTL must be a Go duration/);
  expect(() => loadConfig({}, { DO_VOLUME_SNAPSHOT_MODE: 'Snap' })).toThrow(
    /DO_VOLUME_SNAPSHOT_MODE must be VolumeSnapshot or Content/,
  );
});

it('Worker Deployment Versioning: off unless asked, the build ID from DO_BUILD_ID or the package version', () => {
  expect(loadConfig({}, {}).versioning).toEqual({ mode: 'off', buildId: VERSION });
  expect(loadConfig({}, { DO_WORKER_VERSIONING: 'auto-promote', DO_BUILD_ID: '0.3.0' }).versioning).toEqual({
    mode: 'auto-promote',
    buildId: '0.3.0',
  });
  expect(() => loadConfig({}, { DO_WORKER_VERSIONING: 'yes' })).toThrow(/DO_WORKER_VERSIONING must be one of off, on/);
  expect(() => loadConfig({}, { DO_WORKER_VERSIONING: 'on', DO_BUILD_ID: 'a b' })).toThrow(/DO_BUILD_ID/);
});
